/**
 * The discrete-event simulator: it runs a workload on a cluster shape (both from src/workloads),
 * driving an unchanged Policy. Comparisons of policies and \`minimr sim\` are in src/experiments.
 */
export type * from './types.js';
export { DEFAULT_SIM_SETTINGS } from './types.js';
export { EventHeap, hashSeed, streamFor, type HeapEntry } from '../util/index.js';
export { ProcessorSharing, workUnderSharingMs, type ProjectedEnd } from './cpu-sharing.js';
export { RackIndex, misestimatedPenalty, placeReplicas, transferMs } from './model.js';
export {
  Simulator,
  defaultHeartbeatMs,
  pickSettings,
  simulate,
  type DecisionRecord,
  type SimulationOptions,
  type SimulationProgress,
  type SimulationResult,
  type SimulationStats,
} from './simulator.js';
