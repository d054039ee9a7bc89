/**
 * Skew handling (DynamicShare): virtual partitions, a count-min sketch of map output keys, and the
 * partition-to-reducer assignments. A folder of its own rather than part of src/shuffle: the shuffle
 * moves and sorts bytes for whatever partitioning it is given, while this is planning (pure functions
 * and a data structure, no I/O) used by three places at once: the submitting client builds the
 * sketch, the JobTracker assigns partitions, and map tasks partition with the chosen row's hash.
 */
export { CountMinSketch, partitionOfKey, sketchSeeds, type SketchWire } from './count-min.js';
export {
  SKEW_STRATEGIES,
  hashAssignment,
  simpleAssignment,
  sketchAssignment,
  partitionsByReducer,
  type PartitionAssignment,
  type SketchAssignment,
  type SkewStrategy,
} from './assign.js';
