/**
 * The discrete-event simulator: workloads, cluster shapes, the simulator that drives an unchanged
 * Policy, and policy comparisons.
 */
export type * from './types.js';
export { DEFAULT_SIM_SETTINGS } from './types.js';
export { EventHeap, type HeapEntry } from './heap.js';
export { RackIndex, hashSeed, minimumMemoryMb, penalizedMs, placeReplicas, spilledBytes, streamFor, transferMs } from './model.js';
export {
  Simulator,
  defaultHeartbeatMs,
  simulate,
  type DecisionRecord,
  type SimulationOptions,
  type SimulationProgress,
  type SimulationResult,
  type SimulationStats,
} from './simulator.js';
