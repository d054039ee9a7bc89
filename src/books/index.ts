/**
 * The books both engines keep: job, task, attempt and worker state with every transition, the
 * snapshots policies see, and the check their decisions must pass (see books.ts).
 */
export {
  Books,
  DEFAULT_WORKER_LIMITS,
  MAX_FETCH_FAILURES_PER_REDUCE,
  hadoopAttemptId,
  hasEnded,
  jobIdOfAttempt,
  type BooksOptions,
  type WorkerLimits,
} from './books.js';
export { DEFAULT_WORKER_HEALTH, WorkerHealth, type HealthChange, type WorkerHealthOptions } from './worker-health.js';
export {
  DEFAULT_SPECULATION,
  percentile,
  speculationProblem,
  speculativeCap,
  timeLeftMs,
  type SpeculationOptions,
} from './speculation.js';
export {
  MrClusters,
  type BlockReport,
  type MrClusterOptions,
  type MrClusterRecord,
  type MrClusterRequest,
  type StoredBlock,
} from './mr-clusters.js';
export {
  JobSkew,
  WorkerSpeedBook,
  planReducerSlots,
  type ReducerSlot,
  type SkewPlan,
  type SkewReducerStatus,
  type SkewStatus,
} from './skew.js';
export type {
  AttemptMeasures,
  AttemptRecord,
  AttemptState,
  Effect,
  EngineData,
  JobPlan,
  JobRecord,
  JobState,
  MigrationRecord,
  ReplicaCause,
  TaskPlan,
  TaskRecord,
  TaskState,
  WorkerRecord,
  WorkerRegistration,
} from './records.js';
