/**
 * One metrics module for the simulator and the real cluster: a run record in, the comparison
 * figures (slowdown quantiles, V_F, JCT, phases, utilization, data movement, partitions) out.
 */
export type * from './types.js';
export {
  computeMetrics,
  meanAttemptMs,
  quantile,
  responseBreakdown,
  summarizeSlowdowns,
  variability,
  type DataMovement,
  type JobFigures,
  type MetricsOptions,
  type PartitionFigures,
  type PolicyMetrics,
  type ResponseBreakdown,
  type SlowdownSummary,
} from './compute.js';
export { jobDurations, perJobAgreement, type JobDurations } from './agreement.js';
export { mrClusterMetrics, type MrClusterFigures, type MrClusterMetrics } from './mr-clusters.js';
export {
  metricsTable,
  mrClusterTable,
  slowdownCdfChart,
  writeReport,
  type MetricsTableOptions,
  type PolicyRow,
} from './report.js';
