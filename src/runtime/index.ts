export { JobTracker, type JobTrackerOptions } from './jobtracker.js';
export { Worker, type WorkerOptions } from './tasktracker.js';
export { JobClient, type SubmitOptions, type WaitOptions } from './job-client.js';
export { LocalCluster, type LocalClusterOptions, type LocalWorkerProcess } from './local-cluster.js';
export { encodeFrame, decodeFrame } from './frame-codec.js';
export { RpcPeer, connectPeer } from './rpc-peer.js';
export { PROTOCOL_VERSION, MAX_FRAME_BYTES } from './protocol.js';
export { JOB_CONF_DEFAULTS, TASK_OVERHEAD_MB } from './protocol.js';
export type { JobStatus, JobSubmission, JobConf, AttemptSummary, ClusterInfoResult, WorkerStatus, Message, AttemptSpec, JobProfile, BufferBucket, ProfileUse, PhaseFitSummary } from './protocol.js';
export { parseConfPairs, validateJobConf } from './submission.js';
export { mrClusterOfPath, mrClusterRoot, type MrClusterListing, type MrClusterRow } from './mr-cluster-runtime.js';
export {
  profileJob,
  profileMarkdown,
  profileSvg,
  mapSpilledBytesModel,
  reduceSpilledBytesModel,
  fitSpillModel,
  type ElasticityProfile,
  type ProfileOptions,
  type ProfilePoint,
} from './elasticity-profile.js';
export { estimatesFor, phaseEstimate, neededBufferBytes, addObservations, observationsOf, profileObservations, validateElasticityProfile, MAX_BUCKET_ATTEMPTS, type AttemptObservation, type TaskEstimate } from './job-profile.js';
export type { FinishedJobsPage } from './job-history.js';
export type { FinishedCursor } from './job-journal.js';
export {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  MAX_LOG_READ_BYTES,
  isAttemptLogStream,
  type AttemptLogSlice,
  type AttemptLogStream,
} from './attempt-logs.js';
export { THROTTLE_BASES, type ThrottleBasis } from './cpu-throttle.js';
export { CpuQuotaGroup } from './cpu-quota.js';
