/** Task processes (Hadoop's Child, Spark's executor task): what other folders may use of them. */
export { readJobModuleSource, jobModuleHash, storeJobModule, importJobModule } from './job-loader.js';
export { taskProcessEntry } from './task-process-entry.js';
export { THROTTLE_BASES, type ThrottleBasis } from './cpu-throttle.js';
export type { TaskProcessConfig } from './task-config.js';
export { openTaskInput } from './input.js';
export { STREAMING_MODULE_FILE, STREAMING_MODULE_NAME, streamingModuleSource } from './streaming-module.js';
