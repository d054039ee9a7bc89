/** The worker process (Hadoop's TaskTracker and DataNode): what other folders may use of it. */
export { Worker, taskProcessEnv, HUGE_PAGES_MIN_BUFFER_BYTES, type WorkerOptions } from './worker.js';
export { CpuQuotaGroup } from './cpu-quota.js';
export { isLoopbackAddress } from './advertised-host.js';
export {
  fetchAttemptLog,
  attemptLogTokenId,
  DEFAULT_ATTEMPT_LOG_MAX_BYTES,
  DEFAULT_LOG_RETAIN_HOURS,
} from './attempt-logs.js';
