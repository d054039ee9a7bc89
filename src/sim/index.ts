/**
 * The discrete-event simulator: workloads, cluster shapes, the simulator that drives an unchanged
 * Policy, and policy comparisons.
 */
export type * from './types.js';
export { DEFAULT_SIM_SETTINGS } from './types.js';
export { EventHeap, type HeapEntry } from '../util/index.js';
export { ProcessorSharing, workUnderSharingMs, type ProjectedEnd } from './cpu-sharing.js';
export { RackIndex, hashSeed, misestimatedPenalty, placeReplicas, streamFor, transferMs } from './model.js';
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
export {
  SLS_NODE_DEFAULTS,
  clusterPreset,
  clusterPresetNames,
  meganode,
  parseClusterJson,
  parseSlsNodes,
  readClusterFile,
  uniformCluster,
  type SlsNodesOptions,
  type UniformClusterOptions,
} from './clusters.js';
export {
  BLOCK_BYTES,
  TYREX_TARGETS,
  WORKLOAD_NAMES,
  defaultClusterFor,
  estimatedAloneMs,
  fawkesReferenceCluster,
  fawkesWorkload,
  fitSampleCv2,
  hyperExponential,
  improvedFairWorkload,
  listScheduleMs,
  namedWorkload,
  sizeClassOf,
  squaredCv,
  tyrexWorkload,
  yarnMeTrace,
  type FawkesOptions,
  type FawkesVariant,
  type ImprovedFairOptions,
  type NamedWorkloadOptions,
  type TyrexOptions,
  type TyrexVariant,
  type YarnMeOptions,
} from './workloads.js';
export type { SkewSpec } from './skew-model.js';
export { clusterFromSlsTrace, parseSlsTrace, readWorkloadFile, readWorkloadJson, workloadToJson, type SlsOptions } from './traces.js';
export { clusterFromRumenTrace, parseRumenTrace, type RumenOptions } from './rumen.js';
export {
  comparePolicies,
  runtimesAlone,
  writeComparison,
  type CompareOptions,
  type ComparisonResult,
  type PolicyFactory,
  type PolicyResult,
} from './compare.js';
export { loadCluster, loadWorkload, runSimCommand, type SimCommandArgs } from './command.js';
