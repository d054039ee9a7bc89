import type { SerializedError } from '../errors.js';
import type { AttemptSpec, Counters, MapOutputSummary } from './protocol.js';

/** What a task process needs to know about the worker that forked it. */
export interface TaskProcessConfig {
  jobTrackerUrl: string;
  workerId: string;
  rack: string;
  blockDir: string;
  shuffleRoot: string;
}

export type TaskProcessRequest = { type: 'run'; spec: AttemptSpec; modulePath: string };

export type TaskProcessReport =
  | { type: 'ready' }
  | { type: 'progress'; attemptId: string; progress: number; counters: Counters }
  | {
      type: 'done';
      attemptId: string;
      state: 'succeeded' | 'failed';
      counters: Counters;
      error?: SerializedError;
      mapOutput?: MapOutputSummary;
    };
