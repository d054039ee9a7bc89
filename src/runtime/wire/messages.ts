/** Frames typed by their tables: what a peer played by hand (tests) receives and sends. */
import type { ClientProtocol } from './client-protocol.js';
import type { HANDSHAKE } from './handshake.js';
import type { ArgsOf, Table } from './operations.js';
import type { TaskToWorker, WorkerToTask } from './task-protocol.js';
import type { JobTrackerToWorker, WorkerToJobTracker } from './worker-protocol.js';

/** A frame of operation K of table T as it arrives: its type and its arguments. */
export type FrameOf<T extends Table, K extends keyof T & string = keyof T & string> = K extends unknown
  ? { readonly type: K } & ArgsOf<T[K]>
  : never;

/** Any operation frame of the WebSocket links, for peers played by hand (tests). */
export type Message =
  | FrameOf<typeof HANDSHAKE>
  | FrameOf<ClientProtocol>
  | FrameOf<WorkerToJobTracker>
  | FrameOf<JobTrackerToWorker>;
export type TaskMessage = FrameOf<TaskToWorker> | FrameOf<WorkerToTask>;
export type MapOutputsChanged = FrameOf<JobTrackerToWorker, 'map-outputs'>;
export type AttemptFinished = FrameOf<WorkerToJobTracker, 'attempt-finished'>;
