/**
 * The workload library: what a run is made of, apart from what runs it. Workloads (jobs with
 * per-task work, memory and penalty model) from the papers' generators or read from files (minimr
 * workload JSON, Hadoop SLS and Rumen traces, the YARN-ME simulator's, SWIM's TSV samples), and cluster shapes from
 * presets or files. The simulator (src/sim) runs them; the experiments (src/experiments) run them
 * on real local clusters too. Depends on neither of those.
 */
export type * from './types.js';
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
} from './generators.js';
export {
  dssUniformConfiguration,
  dssUniformJobs,
  dssUniformTrace,
  type DssRange,
  type DssTraceJob,
  type DssUniformTraceOptions,
} from './dss-traces.js';
export { parseSkewSpec, type SkewSpec } from './skew-spec.js';
export {
  clusterFromSlsTrace,
  parseDssPenalty,
  parseSlsTrace,
  readWorkloadFile,
  readWorkloadJson,
  workloadToJson,
  type DssPenalty,
  type SlsOptions,
} from './traces.js';
export { clusterFromRumenTrace, parseRumenTrace, type RumenOptions } from './rumen.js';
export {
  SWIM_DEFAULTS,
  SWIM_FIELDS,
  SWIM_SIZE_CLASSES,
  SWIM_SIZE_CLASS_EDGES,
  parseSwimOptions,
  parseSwimTrace,
  swimSizeClass,
  type SwimOptions,
  type SwimSizeClass,
} from './swim.js';
export { SWIM_PREFIX, loadCluster, loadWorkload } from './load.js';
