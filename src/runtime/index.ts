/**
 * The runtime, one folder per process (Hadoop's and Spark's topology, visible in the tree):
 * - wire/: what crosses between processes: the protocol tables, their dispatcher, stubs and types;
 * - jobtracker/: the master (JobTracker and NameNode) around the books;
 * - worker/: the workers (TaskTracker and DataNode);
 * - task/: the task processes a worker forks;
 * - client/: submitting and following jobs.
 * An embedded cluster of all of them is src/local.
 */
export { JobTracker, type JobTrackerOptions } from './jobtracker/index.js';
export { Worker, CpuQuotaGroup, type WorkerOptions } from './worker/index.js';
export { JobClient, type SubmitOptions, type WaitOptions } from './client/index.js';
export { THROTTLE_BASES, type ThrottleBasis } from './task/index.js';
export { STREAMING_MODULE_FILE } from './task/index.js';
export {
  encodeFrame,
  decodeFrame,
  RpcPeer,
  connectPeer,
  PROTOCOL_VERSION,
  MAX_FRAME_BYTES,
  JOB_CONF_DEFAULTS,
  TASK_OVERHEAD_MB,
  ATTEMPT_LOG_STREAMS,
  DEFAULT_LOG_READ_BYTES,
  MAX_LOG_READ_BYTES,
  isAttemptLogStream,
  parseConfPairs,
  validateJobConf,
  MAX_STREAMING_FILES_BYTES,
  clientCredentials,
  recordClusterSecret,
  forgetClusterSecret,
  webPassword,
  readSecretFile,
  osUserName,
  authorityToTrust,
  certificateFingerprint,
  makeJoinToken,
  parseJoinToken,
  reachableAddress,
  AUTHORITY_CERT_FILE,
  type JoinToken,
  type PeerSecurity,
  type Credentials,
  type JobStatus,
  type JobSubmission,
  type JobConf,
  type AttemptSummary,
  type ClusterInfoResult,
  type WorkerStatus,
  type Message,
  type AttemptSpec,
  type JobProfile,
  type BufferBucket,
  type ProfileUse,
  type PhaseFitSummary,
  type FinishedJobsPage,
  type FinishedCursor,
  type AttemptLogSlice,
  type AttemptLogStream,
  type StreamingFile,
  type StreamingSubmission,
} from './wire/index.js';
export { mrClusterOfPath, mrClusterRoot, type MrClusterListing, type MrClusterRow } from './jobtracker/index.js';
export {
  profileJob,
  profileMarkdown,
  profileChart,
  mapSpilledBytesModel,
  reduceSpilledBytesModel,
  fitSpillModel,
  type ElasticityProfile,
  type ProfileOptions,
  type ProfilePoint,
} from './client/index.js';
export {
  estimatesFor,
  phaseEstimate,
  neededBufferBytes,
  addObservations,
  observationsOf,
  profileObservations,
  validateElasticityProfile,
  MAX_BUCKET_ATTEMPTS,
  type AttemptObservation,
  type TaskEstimate,
} from './jobtracker/index.js';
