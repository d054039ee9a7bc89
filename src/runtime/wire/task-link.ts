/**
 * The part of the wire a task process loads: the task link's tables and transport, and the types
 * of what it is given. A second entry beside index.ts because index.ts also brings the WebSocket
 * links (`ws`, msgpack framing, authentication), which a task process never uses and should not
 * pay for at every launch.
 */
export { TASK_TO_WORKER, WORKER_TO_TASK, type TaskToWorker, type WorkerToTask } from './task-protocol.js';
export { IpcLink, type IpcChannel } from './ipc-link.js';
export { Dispatcher, type Caller } from './dispatch.js';
export { stubOf, type Stub } from './stubs.js';
export { namenodeOverLink } from './namenode-operations.js';
export type {
  AttemptSpec,
  Counters,
  LostMapOutput,
  MapOutputAnnouncement,
  MapOutputSummary,
  SerializedInputFormat,
  TaskInput,
} from './types.js';
