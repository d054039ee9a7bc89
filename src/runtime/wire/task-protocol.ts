/**
 * A task process and the worker that forked it (Hadoop's TaskUmbilicalProtocol), over the Node
 * IPC channel between them. A task opens no socket to the JobTracker: its file system calls go to
 * its worker (`fs-*`), which forwards them on its own link as calls for the task's job.
 */
import { namenodeRows } from './namenode-operations.js';
import { args, table } from './operations.js';
import { CountersSchema, IdSchema, SerializedErrorSchema, Type } from './schema.js';
import { AttemptSpecSchema, MapOutputSummarySchema, MapOutputsChangedSchema, PendingPartSchema } from './types.js';

export const TASK_TO_WORKER = {
  ...table({
    ready: {
      summary: 'the process has loaded the runtime and waits for an attempt',
      args: args({}),
      result: null,
      allowed: ['task'],
    },
    idle: {
      summary:
        'after a successful attempt: the process is as clean as it ' +
        'started and may run another attempt of the same module',
      args: args({}),
      result: null,
      allowed: ['task'],
    },
    progress: {
      summary: "the running attempt's progress and counters",
      args: args({
        attemptId: IdSchema('the attempt'),
        progress: Type.Number({ description: '0..1; the books clamp what lies outside' }),
        counters: CountersSchema,
      }),
      result: null,
      allowed: ['task'],
    },
    done: {
      summary:
        "the attempt ended: its state, counters, error, (maps) output sizes and (another store's output) its pending part",
      args: args({
        attemptId: IdSchema('the attempt'),
        state: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
        counters: CountersSchema,
        error: Type.Optional(SerializedErrorSchema),
        mapOutput: Type.Optional(MapOutputSummarySchema),
        outputPart: Type.Optional(PendingPartSchema),
      }),
      result: null,
      allowed: ['task'],
    },
    'link-block': {
      summary:
        "a replica of a block on this worker, for a local read: the worker checks the read token and links the block's " +
        "files into the attempt's input directory (the only place the task may read them); linked: false when it " +
        'stores no replica',
      args: args({
        attemptId: IdSchema('the attempt'),
        blockId: Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$' }),
        token: Type.String({ maxLength: 256, description: 'the read token the NameNode gave with the block' }),
      }),
      result: Type.Object({ linked: Type.Boolean(), dir: Type.Optional(Type.String()) }),
      allowed: ['task'],
    },
  }),
  ...table(namenodeRows('fs-', ['task'])),
};
export type TaskToWorker = typeof TASK_TO_WORKER;

export const WORKER_TO_TASK = table({
  run: {
    summary: 'run this attempt with the job module stored at modulePath',
    args: args({ spec: AttemptSpecSchema, modulePath: Type.String({ minLength: 1 }) }),
    result: null,
    allowed: ['worker-process'],
  },
  'map-outputs': {
    summary: 'for a reduce attempt: map outputs that became available or were lost since its spec was made',
    args: MapOutputsChangedSchema,
    result: null,
    allowed: ['worker-process'],
  },
});
export type WorkerToTask = typeof WORKER_TO_TASK;
