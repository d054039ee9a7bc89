/**
 * The two directions of a worker's link (Hadoop's InterTrackerProtocol and DatanodeProtocol):
 * what a worker tells and asks its JobTracker, and what the JobTracker tells a worker. A worker's
 * reports are events, valid only from the connection that registered that worker id (the
 * JobTracker ignores a report naming another worker). A task's file system calls arrive here as
 * `task-fs-*`, forwarded by the worker that runs the task, with the job they are for.
 */
import { namenodeRowsForJob } from './namenode-operations.js';
import { args, table } from './operations.js';
import { WEBHDFS_DATANODE_ROWS } from './webhdfs.js';
import { CountersSchema, IdSchema, SerializedErrorSchema, Type, type Static } from './schema.js';
import {
  AttemptProgressSchema,
  AttemptSpecSchema,
  DatanodeAddressSchema,
  HeldMapOutputSchema,
  MapOutputsChangedSchema,
  MapOutputSummarySchema,
  PendingPartSchema,
  RegisterResultSchema,
  StreamingFileSchema,
  WorkerClaimSchema,
} from './types.js';

const WorkerId = IdSchema('the reporting worker');
/**
 * What a worker needs to start a process for a job before any attempt of it: the job's module, owner
 * (the account), and its map attempts' kind and buffers (the process's malloc settings). No token, no
 * shuffle secret: the process gets those with its attempt.
 */
const WarmJobSchema = Type.Pick(AttemptSpecSchema, ['jobId', 'owner', 'moduleHash', 'kind', 'shuffle']);
export type WarmJob = Static<typeof WarmJobSchema>;
const BlockIds = Type.Array(IdSchema('a block'), { maxItems: 10_000_000 });
const DiskSpace = Type.Object(
  {
    capacityBytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    freeBytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false, description: "the block directory's file system: its size and the bytes free" },
);
const ReplicaLengths = Type.Array(
  Type.Object({ blockId: IdSchema('a block'), length: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
  { maxItems: 10_000_000 },
);
const ScannedReplicas = Type.Array(
  Type.Object(
    {
      blockId: IdSchema('a block'),
      length: Type.Integer({ minimum: 0 }),
      crc32: Type.Integer({ minimum: 0, maximum: 0xffffffff }),
    },
    { additionalProperties: false },
  ),
  { maxItems: 100_000 },
);

const reports = table({
  register: {
    summary: "join the cluster: the worker's slots, memory and data port, the blocks and map outputs on its disk",
    args: args({
      worker: WorkerClaimSchema,
      blockIds: BlockIds,
      mapOutputs: Type.Optional(Type.Array(HeldMapOutputSchema)),
      space: Type.Optional(DiskSpace),
      /**
       * In a TLS cluster: the public key (ECDSA P-256, SPKI PEM) of the worker's data port, for the
       * JobTracker to certify for the worker's advertised host (tls.ts).
       */
      tlsPublicKey: Type.Optional(Type.String({ maxLength: 4096 })),
    }),
    result: RegisterResultSchema,
    allowed: ['daemon'],
  },
  heartbeat: {
    summary: "the worker is alive; its running attempts' progress and counters",
    args: args({ workerId: WorkerId, attempts: Type.Array(AttemptProgressSchema), space: Type.Optional(DiskSpace) }),
    result: null,
    allowed: ['worker'],
  },
  'attempt-finished': {
    summary:
      "an attempt ended: its state, counters, error, (maps) output sizes and (another store's output) its pending part",
    args: args({
      workerId: WorkerId,
      attemptId: IdSchema('the attempt'),
      state: Type.Union([Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('killed')]),
      counters: CountersSchema,
      error: Type.Optional(SerializedErrorSchema),
      mapOutput: Type.Optional(MapOutputSummarySchema),
      outputPart: Type.Optional(PendingPartSchema),
    }),
    result: null,
    allowed: ['worker'],
  },
  'block-replicated': {
    summary: 'a block this worker was asked to copy now has replicas on these workers (and these had no room for it)',
    args: args({
      workerId: WorkerId,
      blockId: IdSchema('the block'),
      targets: Type.Array(IdSchema('a worker')),
      full: Type.Optional(Type.Array(IdSchema('a worker that refused the copy for lack of room'))),
    }),
    result: null,
    allowed: ['worker'],
  },
  'replica-corrupt': {
    summary: "a replica the NameNode asked this worker to verify does not match the NameNode's checksum (or is gone)",
    args: args({ workerId: WorkerId, blockId: IdSchema('the block'), reason: Type.String({ maxLength: 10_000 }) }),
    result: null,
    allowed: ['worker'],
  },
  'block-report': {
    summary: "every replica on the worker's disk with its length: the NameNode makes its map match (periodic)",
    args: args({ workerId: WorkerId, replicas: ReplicaLengths }),
    result: null,
    allowed: ['worker'],
  },
  'blocks-scanned': {
    summary: "replicas the worker's block scanner read whole, with the length and CRC-32 it found",
    args: args({ workerId: WorkerId, replicas: ScannedReplicas }),
    result: null,
    allowed: ['worker'],
  },
  'get-job-module': {
    summary: "a job's module source: for the workers that run it, its owner and the admin",
    args: args({ jobId: IdSchema('the job') }),
    result: Type.Object({ source: Type.String(), name: Type.String() }),
    allowed: ['worker', 'owner', 'admin'],
    owner: { resource: 'job', arg: 'jobId', action: 'read the module of' },
  },
  'get-job-files': {
    summary: "a streaming job's shipped files (`--file`): for the workers that run it, its owner and the admin",
    args: args({ jobId: IdSchema('the job') }),
    result: Type.Object({ files: Type.Array(StreamingFileSchema) }),
    allowed: ['worker', 'owner', 'admin'],
    owner: { resource: 'job', arg: 'jobId', action: 'read the files of' },
  },
});

export const WORKER_TO_JOBTRACKER = {
  ...reports,
  ...table(namenodeRowsForJob('task-fs-', ['worker'])),
  ...WEBHDFS_DATANODE_ROWS,
};
export type WorkerToJobTracker = typeof WORKER_TO_JOBTRACKER;

export const JOBTRACKER_TO_WORKER = table({
  launch: {
    summary: 'run this attempt',
    args: args({ attempt: AttemptSpecSchema }),
    result: null,
    allowed: ['jobtracker'],
  },
  kill: {
    summary: 'kill this attempt',
    args: args({ attemptId: IdSchema('the attempt'), reason: Type.String({ maxLength: 100_000 }) }),
    result: null,
    allowed: ['jobtracker'],
  },
  'delete-blocks': {
    summary: 'delete these replicas',
    args: args({ blockIds: BlockIds }),
    result: null,
    allowed: ['jobtracker'],
  },
  'verify-blocks': {
    summary:
      "read these replicas against the NameNode's checksums; answer replica-corrupt for each that does not match",
    args: args({
      blocks: Type.Array(
        Type.Object({
          blockId: IdSchema('the block'),
          length: Type.Integer({ minimum: 0 }),
          crc32: Type.Integer({ minimum: 0, maximum: 0xffffffff }),
        }),
      ),
    }),
    result: null,
    allowed: ['jobtracker'],
  },
  'replicate-block': {
    summary: 'copy this block to these workers (write token from the NameNode)',
    args: args({ blockId: IdSchema('the block'), targets: Type.Array(DatanodeAddressSchema), token: Type.String() }),
    result: null,
    allowed: ['jobtracker'],
  },
  'warm-job': {
    summary:
      "the job's first attempt started on another worker: start a task process for it here ahead of its first launch",
    args: args({ job: WarmJobSchema }),
    result: null,
    allowed: ['jobtracker'],
  },
  'cleanup-job': {
    summary: 'the job ended: drop its map outputs and cached module',
    args: args({ jobId: IdSchema('the job') }),
    result: null,
    allowed: ['jobtracker'],
  },
  'block-keys': {
    summary:
      'the NameNode rolled its block token keys: check tokens with these from now on (the current and the previous key)',
    args: args({ blockKey: Type.String({ maxLength: 200 }) }),
    result: null,
    allowed: ['jobtracker'],
  },
  'map-outputs': {
    summary:
      'map outputs a running reduce attempt has to know of: those that became available and those lost, in order',
    args: MapOutputsChangedSchema,
    result: null,
    allowed: ['jobtracker'],
  },
});
export type JobTrackerToWorker = typeof JOBTRACKER_TO_WORKER;
