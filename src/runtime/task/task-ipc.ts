import type { SerializedError } from '../../errors.js';
import type { AttemptSpec, Counters, LostMapOutput, MapOutputAnnouncement, MapOutputSummary, NamenodeOp } from '../wire/protocol.js';
import type { ThrottleBasis } from './cpu-throttle.js';

/**
 * What a task process needs to know about the worker that forked it. A task process talks only to
 * its worker: NameNode calls go over the IPC channel and the worker forwards them on its own
 * JobTracker connection, so tasks open no sockets to the master and load no WebSocket code.
 */
export interface TaskProcessConfig {
  workerId: string;
  rack: string;
  blockDir: string;
  shuffleRoot: string;
  /** `--cpu-throttle`: task CPU time is stretched by this factor (see cpu-throttle.ts); 1 = full speed. */
  cpuThrottle?: number;
  /** What the throttle stretches (see cpu-throttle.ts); default 'working'. */
  cpuThrottleBasis?: ThrottleBasis;
}

export type TaskProcessRequest =
  | { type: 'run'; spec: AttemptSpec; modulePath: string }
  /** For a reduce attempt: map outputs that became available or were lost since its spec was made. */
  | { type: 'map-outputs'; attemptId: string; available: MapOutputAnnouncement[]; lost: LostMapOutput[] }
  | { type: 'fs-result'; id: number; ok: true; result: unknown }
  | { type: 'fs-result'; id: number; ok: false; error: SerializedError };

export type TaskProcessReport =
  | { type: 'ready' }
  /** After a successful attempt: the process is as clean as it started and may run another attempt of the same job module. */
  | { type: 'idle' }
  | { type: 'fs'; id: number; op: NamenodeOp; args: unknown[] }
  | { type: 'progress'; attemptId: string; progress: number; counters: Counters }
  | {
      type: 'done';
      attemptId: string;
      state: 'succeeded' | 'failed';
      counters: Counters;
      error?: SerializedError;
      mapOutput?: MapOutputSummary;
    };
