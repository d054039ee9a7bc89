/**
 * The NameNode's operations as rows: declared once here, served on three links. A client calls
 * them as its own user (`fs-*` on the client link); a task process calls them on its worker (the
 * task link), and the worker forwards them on its JobTracker link as `task-fs-*` with the job id,
 * so that they act as the job's owner (the JobTracker checks that the job is one the worker runs).
 * The NameNode itself checks every path's permissions; these rows check shapes.
 *
 * `namenodeOverCalls` turns any function that can call the rows into a `NamenodeApi`, the storage
 * layer's view of a NameNode (fs-client.ts): one method per row, spelled out, no reflection.
 */
import type {
  BlockAllocation,
  BlockInfo,
  Caller,
  FileStatus,
  Namenode,
  NamenodeApi,
  WrittenBlock,
} from '../../storage/index.js';
import type { TObject, TProperties, TString } from '@sinclair/typebox';
import type { Static } from './schema.js';
import { CountSchema, IdSchema, PathSchema, Type, type TSchema } from './schema.js';
import { args, Done, type Role } from './operations.js';
import type { Link } from './stubs.js';
import { BlockInfoResult, DatanodeAddressSchema, FileStatusResult, described } from './types.js';

const ClientLocationSchema = Type.Object(
  {
    workerId: Type.Optional(IdSchema('the worker the caller runs on')),
    rack: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  {
    additionalProperties: false,
    description: 'where the caller is: replicas are sorted, and a first replica placed, by it',
  },
);
const WorkerIdsSchema = Type.Array(IdSchema('a worker'), { maxItems: 1024 });
/** A block as its writer wrote it (storage's WrittenBlock). */
const writtenBlockFields = {
  blockId: IdSchema('the block'),
  length: CountSchema(),
  crc32: Type.Integer({ minimum: 0, maximum: 0xffffffff }),
  workerIds: WorkerIdsSchema,
};

interface NamenodeOperation<P extends TProperties, R extends TSchema> {
  readonly summary: string;
  readonly args: P;
  readonly result: R;
  /** Carries the call out on the NameNode, as `caller`: a peer never names its caller. */
  readonly serve: (namenode: Namenode, args: Static<TObject<P>>, caller: Caller) => Promise<unknown>;
}
function namenodeOperation<P extends TProperties, R extends TSchema>(
  op: NamenodeOperation<P, R>,
): NamenodeOperation<P, R> {
  return op;
}

/**
 * Each NameNode operation: its summary, arguments, result, and the NameNode method that serves
 * it; the rows of the three links are made from these.
 */
export const NAMENODE_OPERATIONS = {
  mkdir: namenodeOperation({
    summary: 'make a directory (with parents: and its missing parents)',
    args: { path: PathSchema(), parents: Type.Optional(Type.Boolean()) },
    result: Done,
    serve: (nn, a, caller) => nn.mkdir(a.path, { parents: a.parents === true }, caller),
  }),
  stat: namenodeOperation({
    summary: "a path's status",
    args: { path: PathSchema() },
    result: FileStatusResult,
    serve: (nn, a, caller) => nn.stat(a.path, caller),
  }),
  list: namenodeOperation({
    summary: "a directory's entries (a file: itself)",
    args: { path: PathSchema() },
    result: Type.Array(FileStatusResult),
    serve: (nn, a, caller) => nn.list(a.path, caller),
  }),
  remove: namenodeOperation({
    summary: 'remove a path (a non-empty directory: with recursive)',
    args: { path: PathSchema(), recursive: Type.Optional(Type.Boolean()) },
    result: Done,
    serve: (nn, a, caller) => nn.remove(a.path, { recursive: a.recursive === true }, caller),
  }),
  rename: namenodeOperation({
    summary: 'rename a path',
    args: { from: PathSchema(), to: PathSchema() },
    result: Done,
    serve: (nn, a, caller) => nn.rename(a.from, a.to, caller),
  }),
  create: namenodeOperation({
    summary: 'start a new file, invisible to readers until complete; answers the effective block size and replication',
    args: {
      path: PathSchema(),
      overwrite: Type.Optional(Type.Boolean()),
      replication: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
      blockSize: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
      parents: Type.Optional(Type.Boolean()),
      favoredWorkers: Type.Optional(WorkerIdsSchema),
    },
    result: Type.Object({ blockSize: Type.Integer(), replication: Type.Integer() }),
    serve: (nn, { path, ...options }, caller) => nn.create(path, options, caller),
  }),
  allocateBlock: namenodeOperation({
    summary: 'allocate the next block of a file under construction: its id, targets and write token',
    args: { path: PathSchema(), client: Type.Optional(ClientLocationSchema) },
    result: described<BlockAllocation>(
      Type.Object({ blockId: Type.String(), targets: Type.Array(DatanodeAddressSchema), token: Type.String() }),
    ),
    serve: (nn, a, caller) => nn.allocateBlock(a.path, a.client, caller),
  }),
  commitBlock: namenodeOperation({
    summary: 'record a written block and the workers that stored it',
    args: { path: PathSchema(), ...writtenBlockFields },
    result: Done,
    serve: (nn, { path, ...block }, caller) => nn.commitBlock(path, block, caller),
  }),
  complete: namenodeOperation({
    summary:
      'close a file under construction, committing its last block first when given: readers see it; ' +
      'answers its status',
    args: {
      path: PathSchema(),
      lastBlock: Type.Optional(
        Type.Object(writtenBlockFields, {
          additionalProperties: false,
          description: 'the last block, not committed yet (as commitBlock takes it)',
        }),
      ),
    },
    result: FileStatusResult,
    serve: (nn, a, caller) => nn.complete(a.path, a.lastBlock, caller),
  }),
  abandon: namenodeOperation({
    summary: 'drop a file under construction; its blocks are deleted',
    args: { path: PathSchema() },
    result: Done,
    serve: (nn, a, caller) => nn.abandon(a.path, caller),
  }),
  getBlocks: namenodeOperation({
    summary: "a file's blocks with their live replicas and a read token",
    args: { path: PathSchema(), client: Type.Optional(ClientLocationSchema) },
    result: Type.Array(BlockInfoResult),
    serve: (nn, a, caller) => nn.getBlocks(a.path, a.client, caller),
  }),
  reportBadReplica: namenodeOperation({
    summary: 'a replica looked bad to a reader: its worker is asked to verify it',
    args: { blockId: IdSchema('the block'), workerId: IdSchema('the worker holding the replica') },
    result: Done,
    serve: (nn, a) => nn.reportBadReplica(a.blockId, a.workerId),
  }),
  chmod: namenodeOperation({
    summary: "set a path's mode bits (its owner or the admin)",
    args: {
      path: PathSchema(),
      mode: Type.Union([Type.String({ pattern: '^[0-7]{1,4}$' }), Type.Integer({ minimum: 0, maximum: 0o7777 })]),
    },
    result: Done,
    serve: (nn, a, caller) => nn.chmod(a.path, a.mode, caller),
  }),
  chown: namenodeOperation({
    summary: "set a path's owner and/or group (the admin)",
    args: {
      path: PathSchema(),
      owner: Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()]),
      group: Type.Union([Type.String({ minLength: 1, maxLength: 256 }), Type.Null()]),
      recursive: Type.Optional(Type.Boolean()),
    },
    result: Done,
    serve: (nn, a, caller) => nn.chown(a.path, a.owner, a.group, { recursive: a.recursive === true }, caller),
  }),
} satisfies Record<keyof NamenodeApi, unknown>;

export type NamenodeOp = keyof typeof NAMENODE_OPERATIONS;
export const NAMENODE_OPS = Object.keys(NAMENODE_OPERATIONS) as NamenodeOp[];
type Ops = typeof NAMENODE_OPERATIONS;
export type NamenodeArgs<K extends NamenodeOp> = Static<TObject<Ops[K]['args']>>;
export type NamenodeResult<K extends NamenodeOp> = Static<Ops[K]['result']>;

type Prefixed<P extends string> = {
  [K in NamenodeOp as `${P}${K}`]: {
    summary: string;
    args: TObject<Ops[K]['args']>;
    result: Ops[K]['result'];
    allowed: readonly Role[];
  };
};
type WithJob<A> = A extends TProperties ? TObject<A & { jobId: TString; jobToken: TString }> : never;
type PrefixedWithJob<P extends string> = {
  [K in NamenodeOp as `${P}${K}`]: {
    summary: string;
    args: WithJob<Ops[K]['args']>;
    result: Ops[K]['result'];
    allowed: readonly Role[];
  };
};

/** `fs-mkdir`, `fs-stat`, ...: the rows of one link, callable by `allowed`, acting as the caller. */
export function namenodeRows<P extends string>(prefix: P, allowed: readonly Role[]): Prefixed<P> {
  const rows: Record<string, unknown> = {};
  for (const op of NAMENODE_OPS) {
    const spec = NAMENODE_OPERATIONS[op];
    rows[`${prefix}${op}`] = { summary: spec.summary, args: args(spec.args), result: spec.result, allowed };
  }
  return rows as Prefixed<P>;
}

/** The same rows with the job the call is for: a worker forwarding its task's call. */
export function namenodeRowsForJob<P extends string>(prefix: P, allowed: readonly Role[]): PrefixedWithJob<P> {
  const rows: Record<string, unknown> = {};
  for (const op of NAMENODE_OPS) {
    const spec = NAMENODE_OPERATIONS[op];
    rows[`${prefix}${op}`] = {
      summary: `for a task of job jobId, as the job's owner within its job token's scope: ${spec.summary}`,
      args: args({
        ...spec.args,
        jobId: IdSchema('the job whose task makes the call'),
        jobToken: Type.String({ maxLength: 1024, description: "the attempt's job token (launch's jobToken)" }),
      }),
      result: spec.result,
      allowed,
    };
  }
  return rows as PrefixedWithJob<P>;
}

/** Serves one NameNode operation's row on the NameNode, as `caller`. */
export function serveNamenodeOperation<K extends NamenodeOp>(
  namenode: Namenode,
  op: K,
  args: NamenodeArgs<K>,
  caller: Caller,
): Promise<unknown> {
  const { serve } = NAMENODE_OPERATIONS[op] as unknown as NamenodeOperation<TProperties, TSchema>;
  return serve(namenode, args as Static<TObject<TProperties>>, caller);
}

/** Calls one NameNode operation by name with its arguments. */
type NamenodeCaller = <K extends NamenodeOp>(op: K, args: NamenodeArgs<K>) => Promise<NamenodeResult<K>>;

/** A written block as the rows take it: exactly `writtenBlockFields` (a row's fields are exact). */
function writtenBlockArgs(block: WrittenBlock): Static<TObject<typeof writtenBlockFields>> {
  return { blockId: block.blockId, length: block.length, crc32: block.crc32, workerIds: [...block.workerIds] };
}

/** Drops undefined fields: msgpack and JSON carry no undefined, and a row's fields are exact. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * A `NamenodeApi` whose every method is one call of its `fs-<operation>` row over the link
 * `link()` returns at the time (the client link and the task link both name the rows so).
 */
export function namenodeOverLink(link: () => Link): NamenodeApi {
  const call: NamenodeCaller = (op, args) => link().call(`fs-${op}`, args) as Promise<never>;
  return {
    mkdir: async (path, options) => void (await call('mkdir', defined({ path, parents: options?.parents }))),
    stat: (path) => call('stat', { path }) as Promise<FileStatus>,
    list: (path) => call('list', { path }) as Promise<FileStatus[]>,
    remove: async (path, options) => void (await call('remove', defined({ path, recursive: options?.recursive }))),
    rename: async (from, to) => void (await call('rename', { from, to })),
    create: (path, options) =>
      call(
        'create',
        defined({
          path,
          overwrite: options?.overwrite,
          replication: options?.replication,
          blockSize: options?.blockSize,
          parents: options?.parents,
          favoredWorkers: options?.favoredWorkers ? [...options.favoredWorkers] : undefined,
        }),
      ),
    allocateBlock: (path, client) =>
      call('allocateBlock', defined({ path, client: client && defined({ ...client }) })) as Promise<BlockAllocation>,
    commitBlock: async (path, block) => void (await call('commitBlock', { path, ...writtenBlockArgs(block) })),
    complete: (path, lastBlock) =>
      call('complete', defined({ path, lastBlock: lastBlock && writtenBlockArgs(lastBlock) })) as Promise<FileStatus>,
    abandon: async (path) => void (await call('abandon', { path })),
    getBlocks: (path, client) =>
      call('getBlocks', defined({ path, client: client && defined({ ...client }) })) as Promise<BlockInfo[]>,
    reportBadReplica: async (blockId, workerId) => void (await call('reportBadReplica', { blockId, workerId })),
    chmod: async (path, mode) => void (await call('chmod', { path, mode })),
    chown: async (path, owner, group, options) =>
      void (await call('chown', defined({ path, owner, group, recursive: options?.recursive }))),
  };
}
