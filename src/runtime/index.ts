export { JobTracker, type JobTrackerOptions } from './jobtracker/jobtracker.js';
export { Worker, type WorkerOptions } from './worker/worker.js';
export { JobClient, type SubmitOptions, type WaitOptions } from './client/job-client.js';
export { LocalCluster, type LocalClusterOptions, type LocalWorkerProcess } from './local/local-cluster.js';
export { encodeFrame, decodeFrame } from './wire/frame-codec.js';
export { RpcPeer, connectPeer } from './wire/rpc-peer.js';
export { PROTOCOL_VERSION, MAX_FRAME_BYTES } from './wire/protocol.js';
export { JOB_CONF_DEFAULTS, TASK_OVERHEAD_MB } from './wire/protocol.js';
export type { JobStatus, JobSubmission, JobConf, AttemptSummary, ClusterInfoResult, WorkerStatus, Message, AttemptSpec, JobProfile, BufferBucket, ProfileUse, PhaseFitSummary } from './wire/protocol.js';
export { parseConfPairs, validateJobConf } from './wire/submission.js';
export { mrClusterOfPath, mrClusterRoot, type MrClusterListing, type MrClusterRow } from './jobtracker/mr-cluster-runtime.js';
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
} from './client/elasticity-profile.js';
export { estimatesFor, phaseEstimate, neededBufferBytes, addObservations, observationsOf, profileObservations, validateElasticityProfile, MAX_BUCKET_ATTEMPTS, type AttemptObservation, type TaskEstimate } from './jobtracker/job-profile.js';
export type { FinishedJobsPage } from './jobtracker/job-history.js';
export type { FinishedCursor } from './jobtracker/job-journal.js';
export {
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  MAX_LOG_READ_BYTES,
  isAttemptLogStream,
  type AttemptLogSlice,
  type AttemptLogStream,
} from './worker/attempt-logs.js';
export { THROTTLE_BASES, type ThrottleBasis } from './task/cpu-throttle.js';
export { CpuQuotaGroup } from './worker/cpu-quota.js';
