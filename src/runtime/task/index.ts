/** Task processes (Hadoop's Child, Spark's executor task): what other folders may use of them. */
export { jobModuleHash, storeJobModule, importJobModule } from './job-loader.js';
export { readJobModuleSource, MAX_JOB_BUNDLE_BYTES } from './job-bundle.js';
export { taskProcessEntry } from './task-process-entry.js';
export { THROTTLE_BASES, type ThrottleBasis } from './cpu-throttle.js';
export type { TaskProcessConfig } from './task-config.js';
export { openTaskInput } from './input.js';
export { userStackOf, MAX_USER_STACK_CHARS, type UserStack } from './user-stack.js';
export { STREAMING_MODULE_FILE, STREAMING_MODULE_NAME, streamingModuleSource } from './streaming-module.js';
