import type { Level } from 'level';
import { MinimrError } from '../errors.js';
import { openExclusively } from '../util/index.js';
import type { Logger } from '../log.js';
import {
  BlockTokenKey,
  DEFAULT_BLOCK_TOKEN_LIFETIME_MS,
  replicationScope,
  type BlockOperation,
} from './block-token.js';
import { baseName, isSameOrBelow, joinPath, parentOf, validatePath } from './paths.js';
import {
  DEFAULT_DIR_MODE,
  DEFAULT_FILE_MODE,
  DEFAULT_GROUP,
  ROOT_MODE,
  parseMode,
  requireAccess,
  requireStickyOwnership,
  validateUserName,
  type Caller,
  type Ownership,
} from './permissions.js';
import type { BlockVerification } from './replica-check.js';
import type { BlockScope } from './block-scope.js';
import { fsckReport, type FsckFile, type FsckReport } from './fsck.js';
import { chooseTargets, sortByDistance, type PlacementNode } from './placement.js';
import type {
  BlockAllocation,
  BlockInfo,
  ClientLocation,
  CreateOptions,
  DatanodeAddress,
  FileStatus,
  NamenodeApi,
  WrittenBlock,
} from './types.js';

export const DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024;
export const DEFAULT_REPLICATION = 3;

export interface NamenodeOptions {
  readonly dbPath: string;
  readonly defaultBlockSize?: number;
  readonly defaultReplication?: number;
  /** A replication copy not confirmed within this time is handed out again (default 60 s). */
  readonly replicationTimeoutMs?: number;
  /** Lifetime of the block access tokens it issues (default one hour). */
  readonly blockTokenLifetimeMs?: number;
  readonly logger?: Logger;
  /**
   * The superuser: the NameNode's own callers (the JobTracker) act as this user, new paths they
   * make belong to it, and a caller of this name passes every permission check (default 'minimr').
   */
  readonly superuser?: string;
  /**
   * Bytes a datanode keeps free: one whose free space less what is being written to it would drop
   * below this gets no new replica (default: 1% of its capacity, at most 64 MiB).
   */
  readonly reservedBytes?: number;
  /**
   * How long `complete` waits for a file's blocks to reach their replication (a replica a writer
   * could not store is copied to another datanode meanwhile) before failing with ENOREPLICA
   * (default 60 s).
   */
  readonly replicationWaitMs?: number;
  /**
   * How long after a deletion of a block is handed to a datanode that datanode is no target for a
   * new copy of the block, unless a block report shows the deletion done first (default 10 s): a
   * copy landing before the deletion ran would be deleted by it.
   */
  readonly deletionGraceMs?: number;
  /**
   * A datanode not heard from for this long is stale (HDFS's stale datanode, 30 s): no target for new
   * replicas while others will do, and a write does not wait for copies it cannot take (default 30 s).
   */
  readonly staleAfterMs?: number;
}

/** What a datanode reports of its disk with each heartbeat (and at registration). */
export interface DatanodeSpace {
  readonly capacityBytes: number;
  readonly freeBytes: number;
}

/** One replica in a datanode's block report: what its disk holds. */
export interface ReportedReplica {
  readonly blockId: string;
  readonly length: number;
}

/** A replica the block scanner read whole: its length and CRC-32, checked against the NameNode's. */
export interface ScannedReplica {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
}

/** What a block report changed (for logs and tests). */
export interface BlockReportOutcome {
  /** Replicas the NameNode listed that the disk lacks (or holds with the wrong length): dropped, copied again. */
  readonly dropped: readonly string[];
  /** Replicas of known blocks on the disk the NameNode did not list: now listed. */
  readonly adopted: readonly string[];
  /** Blocks on the disk the NameNode does not want there (unknown, or one copy too many): to be deleted. */
  readonly deleted: readonly string[];
}

/** A replica listed less than this long ago may be missing from a report taken before it landed. */
const REPORT_GRACE_MS = 10_000;
const DEFAULT_RESERVE_CAP_BYTES = 64 * 1024 * 1024;

export interface BlockStoreUsage {
  readonly files: number;
  readonly dirs: number;
  readonly blocks: number;
  /** Bytes of the files (one replica). */
  readonly bytes: number;
  readonly underReplicatedBlocks: number;
  /** Replicas each live datanode holds. */
  readonly datanodes: readonly {
    readonly workerId: string;
    readonly rack: string;
    readonly blocks: number;
    readonly bytes: number;
  }[];
}

export interface ReplicationWork {
  readonly blockId: string;
  readonly targets: DatanodeAddress[];
  /** Write token the source hands its targets. */
  readonly token: string;
}

interface FileBlock {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
}

interface DirInode extends Ownership {
  readonly type: 'dir';
  readonly mtime: number;
}

interface FileInode extends Ownership {
  readonly type: 'file';
  readonly mtime: number;
  readonly replication: number;
  readonly blockSize: number;
  readonly blocks: readonly FileBlock[];
  readonly underConstruction: boolean;
}

type Inode = DirInode | FileInode;

type BatchOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };

interface DatanodeState {
  readonly address: DatanodeAddress;
  readonly blocks: Set<string>;
  /** Its disk as it last reported it; undefined until it does. */
  space?: DatanodeSpace;
  /** When it registered or last sent a heartbeat. */
  lastHeard: number;
  /** It refused a copy for lack of room: no target until its next space report. */
  refusedForSpace: boolean;
  /**
   * Bytes being written to it (blocks allocated to it, copies sent to it), by block: not yet in the
   * free space it reported. `settled` ones are written and leave at its next space report.
   */
  readonly incoming: Map<string, { readonly bytes: number; settled: boolean; readonly since: number }>;
  /** When each recently listed replica was listed (a block report may predate it). */
  readonly listedAt: Map<string, number>;
  /**
   * Deletions handed to it and not yet seen done (by a block report without the block), with when they
   * stop counting: it is no target for a new copy of these blocks meanwhile.
   */
  readonly deletionsSent: Map<string, number>;
}

interface PendingBlock {
  path: string;
  readonly targets: readonly string[];
}

const INODE_PREFIX = 'inode!';
const NEXT_BLOCK_ID_KEY = 'meta!nextBlockId';

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

/**
 * The NameNode: the namespace lives in memory and in `level` (every change is one atomic batch, so a
 * crash never leaves half a rename); block locations live only in memory and are rebuilt from the
 * datanodes' block reports, as in HDFS, because the workers are the truth about what they store.
 */
export class Namenode implements NamenodeApi {
  private db!: Level<string, unknown>;
  private readonly dbPath: string;
  /** Block size of files created without one; also the split size of inputs in other stores. */
  readonly defaultBlockSize: number;
  private readonly defaultReplication: number;
  private readonly replicationTimeoutMs: number;
  private readonly replicationWaitMs: number;
  private readonly deletionGraceMs: number;
  private readonly staleAfterMs: number;
  private readonly reservedBytes: number | undefined;
  private readonly log: Logger;
  /** Who the NameNode's own callers are. */
  private readonly superCaller: Caller;
  /**
   * Shared with the datanodes at registration; tokens it signs open their data ports. Never persisted: a restart
   * re-keys.
   */
  readonly blockKey = BlockTokenKey.generate();
  private readonly blockTokenLifetimeMs: number;

  private readonly inodes = new Map<string, Inode>();
  private readonly children = new Map<string, Set<string>>();
  /** Committed block -> path of the file it belongs to. */
  private readonly blockOwner = new Map<string, string>();
  /** Allocated, not yet committed: a writer is sending it to these targets. */
  private readonly pendingBlocks = new Map<string, PendingBlock>();
  private readonly locations = new Map<string, Set<string>>();
  private readonly datanodes = new Map<string, DatanodeState>();
  /**
   * Datanodes connected but silent past the heartbeat timeout: their replicas still count (no
   * re-replication before the datanode expiry), but new blocks go elsewhere and readers try them last.
   */
  private readonly suspectDatanodes = new Set<string>();
  /** Block copies handed out to repair under-replication since start (tests and status pages). */
  replicationWorkHandedOut = 0;
  private readonly deletions = new Map<string, Set<string>>();
  /** Replicas readers reported bad, by the worker asked to check them. */
  private readonly verifications = new Map<string, Set<string>>();
  private readonly underReplicated = new Set<string>();
  private readonly replicationInFlight = new Map<
    string,
    { readonly source: string; readonly targets: readonly string[]; readonly expires: number }
  >();
  private readonly warnedReplicationCap = new Set<string>();
  /** favoredWorkers of files being written (HDFS keeps favored nodes for the write only, too). */
  private readonly favoredWorkers = new Map<string, readonly string[]>();
  private nextBlockId = 1;
  private opened = false;
  private scope: BlockScope | undefined;
  /** Namespace mutations run one at a time so memory and the database never disagree. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: NamenodeOptions) {
    const blockSize = options.defaultBlockSize ?? DEFAULT_BLOCK_SIZE;
    const replication = options.defaultReplication ?? DEFAULT_REPLICATION;
    if (!isPositiveInteger(blockSize))
      throw new MinimrError('EBADJOB', `defaultBlockSize must be a positive integer, got ${blockSize}`);
    if (!isPositiveInteger(replication))
      throw new MinimrError('EBADJOB', `defaultReplication must be a positive integer, got ${replication}`);
    this.defaultBlockSize = blockSize;
    this.defaultReplication = replication;
    this.replicationTimeoutMs = options.replicationTimeoutMs ?? 60_000;
    this.replicationWaitMs = options.replicationWaitMs ?? 60_000;
    this.deletionGraceMs = options.deletionGraceMs ?? 10_000;
    this.staleAfterMs = options.staleAfterMs ?? 30_000;
    if (options.reservedBytes !== undefined && !(Number.isInteger(options.reservedBytes) && options.reservedBytes >= 0))
      throw new MinimrError('EBADCONF', `reservedBytes must be a non-negative integer, got ${options.reservedBytes}`);
    this.reservedBytes = options.reservedBytes;
    this.blockTokenLifetimeMs = options.blockTokenLifetimeMs ?? DEFAULT_BLOCK_TOKEN_LIFETIME_MS;
    // The JobTracker passes its logger; without one the NameNode is silent.
    this.log =
      options.logger ??
      ({
        info: () => undefined,
        warn: () => undefined,
        error: () => undefined,
        debug: () => undefined,
      } as unknown as Logger);
    this.dbPath = options.dbPath;
    this.superCaller = { user: validateUserName(options.superuser ?? 'minimr', 'superuser name'), superuser: true };
  }

  /** What a caller the JobTracker authenticated is: the superuser by name, else an ordinary user. */
  callerFor(user: string): Caller {
    return { user, superuser: user === this.superCaller.user };
  }

  async open(): Promise<void> {
    if (this.opened) return;
    // Loaded here, not at import: task processes import this folder but never open a NameNode.
    const { Level } = await import('level');
    this.db = new Level<string, unknown>(this.dbPath, { valueEncoding: 'json' });
    await openExclusively(this.db, this.dbPath);
    const abandoned: string[] = [];
    for await (const [key, value] of this.db.iterator({ gte: INODE_PREFIX, lt: `${INODE_PREFIX}\uffff` })) {
      const path = key.slice(INODE_PREFIX.length);
      const inode = this.withOwnership(path, value as Inode);
      // A file still under construction lost its writer with the previous process: nobody can finish it.
      if (inode.type === 'file' && inode.underConstruction) abandoned.push(path);
      else this.setInode(path, inode);
    }
    if (!this.inodes.has('/')) {
      const root: DirInode = {
        type: 'dir',
        mtime: Date.now(),
        owner: this.superCaller.user,
        group: DEFAULT_GROUP,
        mode: ROOT_MODE,
      };
      await this.db.put(`${INODE_PREFIX}/`, root);
      this.setInode('/', root);
    }
    if (abandoned.length > 0) {
      await this.db.batch(abandoned.map((path): BatchOp => ({ type: 'del', key: INODE_PREFIX + path })));
      this.log.warn({ paths: abandoned }, 'dropped files left under construction by a previous run');
    }
    const counter = await this.db.get(NEXT_BLOCK_ID_KEY);
    this.nextBlockId = typeof counter === 'number' ? counter : 1;
    this.opened = true;
  }

  /** Confines the blocks of part of the namespace to some datanodes (see block-scope.ts); undefined lifts it. */
  setScope(scope: BlockScope | undefined): void {
    this.scope = scope;
  }

  async close(): Promise<void> {
    if (!this.opened) return;
    await this.queue.catch(() => undefined);
    await this.db.close();
    this.opened = false;
  }

  // ---------------------------------------------------------------- namespace

  // Every operation takes the caller last (absent: the superuser); the JobTracker passes the user a
  // connection authenticated as, never an argument the connection sent (see permissions.ts).

  mkdir(path: string, options?: { parents?: boolean }, caller?: Caller): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const who = caller ?? this.superCaller;
      this.traverse(who, path);
      const changes = new Map<string, Inode | null>();
      const existing = this.inodes.get(path);
      if (options?.parents) {
        if (existing?.type === 'file') throw new MinimrError('EEXIST', `a file exists at ${path}`, { path });
        this.planMkdirs(path, changes, who);
      } else {
        if (existing) throw new MinimrError('EEXIST', `${path} already exists`, { path });
        const parent = this.requireParentDir(path);
        requireAccess(who, parent, parentOf(path), 'write', 'execute');
        changes.set(path, this.newDir(who, parent));
      }
      await this.applyChanges(changes);
    });
  }

  async stat(path: string, caller?: Caller): Promise<FileStatus> {
    validatePath(path);
    this.traverse(caller ?? this.superCaller, path);
    return this.statusOf(path, this.visibleInode(path));
  }

  async list(path: string, caller?: Caller): Promise<FileStatus[]> {
    validatePath(path);
    const who = caller ?? this.superCaller;
    this.traverse(who, path);
    const inode = this.visibleInode(path);
    if (inode.type === 'file') return [this.statusOf(path, inode)];
    requireAccess(who, inode, path, 'read', 'execute');
    const result: FileStatus[] = [];
    for (const name of [...(this.children.get(path) ?? [])].sort()) {
      const childPath = joinPath(path, name);
      const child = this.inodes.get(childPath);
      if (child && !(child.type === 'file' && child.underConstruction)) result.push(this.statusOf(childPath, child));
    }
    return result;
  }

  remove(path: string, options?: { recursive?: boolean }, caller?: Caller): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      if (path === '/') throw new MinimrError('EBADPATH', 'the root directory cannot be removed', { path });
      const who = caller ?? this.superCaller;
      this.traverse(who, path);
      const inode = this.inodes.get(path);
      if (!inode) throw new MinimrError('ENOENT', `no such file or directory: ${path}`, { path });
      if (inode.type === 'dir' && !options?.recursive && (this.children.get(path)?.size ?? 0) > 0) {
        throw new MinimrError('ENOTEMPTY', `directory not empty: ${path}`, { path });
      }
      const doomed = this.subtree(path);
      // As HDFS: a recursive remove needs the right to remove every entry below, not only the top.
      for (const p of doomed) this.requireRemovable(who, p);
      const changes = new Map<string, Inode | null>(doomed.map((p) => [p, null]));
      const files = doomed.map((p) => this.inodes.get(p)).filter((i): i is FileInode => i?.type === 'file');
      await this.applyChanges(changes);
      this.dropBlocksOf(new Set(doomed), files);
    });
  }

  rename(from: string, to: string, caller?: Caller): Promise<void> {
    return this.exclusive(() => this.move(from, to, false, caller));
  }

  /**
   * Moves `from` to `to`, replacing whatever is at `to` (a file or a whole tree), as HDFS's rename
   * with OVERWRITE: one batch, so a crash leaves either the old `to` or the moved `from`, never a
   * mix. A job's output replaced with `--overwrite` is committed this way. Removing the old `to`
   * needs the rights `remove -r` would.
   */
  renameReplacing(from: string, to: string, caller?: Caller): Promise<void> {
    return this.exclusive(() => this.move(from, to, true, caller));
  }

  /** Throws what `renameReplacing` onto `path` would for the old `path` (EPERM), without changing anything. */
  async checkReplaceable(path: string, caller?: Caller): Promise<void> {
    validatePath(path);
    const who = caller ?? this.superCaller;
    this.traverse(who, path);
    if (path === '/') throw new MinimrError('EBADPATH', 'the root directory cannot be replaced', { path });
    if (!this.inodes.has(path)) return;
    for (const p of this.subtree(path)) this.requireRemovable(who, p);
  }

  private async move(from: string, to: string, replacing: boolean, caller: Caller | undefined): Promise<void> {
    validatePath(from);
    validatePath(to);
    if (from === '/' || to === '/')
      throw new MinimrError('EBADPATH', 'the root directory cannot be renamed', { path: from, to });
    const who = caller ?? this.superCaller;
    this.traverse(who, from);
    this.traverse(who, to);
    const inode = this.inodes.get(from);
    if (!inode) throw new MinimrError('ENOENT', `no such file or directory: ${from}`, { path: from });
    if (from === to) return;
    if (isSameOrBelow(to, from))
      throw new MinimrError('EBADPATH', `cannot move ${from} into itself (${to})`, { path: from, to });
    if (replacing && isSameOrBelow(from, to))
      throw new MinimrError('EBADPATH', `cannot replace ${to} with a path inside it (${from})`, { path: from, to });
    if (this.inodes.has(to) && !replacing) throw new MinimrError('EEXIST', `destination exists: ${to}`, { path: to });
    this.requireRemovable(who, from);
    requireAccess(who, this.requireParentDir(to), parentOf(to), 'write', 'execute');
    const doomed = replacing && this.inodes.has(to) ? this.subtree(to) : [];
    for (const p of doomed) this.requireRemovable(who, p);
    const doomedFiles = doomed.map((p) => this.inodes.get(p)).filter((i): i is FileInode => i?.type === 'file');
    const changes = new Map<string, Inode | null>(doomed.map((p) => [p, null]));
    const moved = this.subtree(from);
    for (const oldPath of moved) changes.set(oldPath, null);
    for (const oldPath of moved) changes.set(to + oldPath.slice(from.length), this.inodes.get(oldPath)!);
    await this.applyChanges(changes);
    // Before the moved files' blocks take their new paths, some of which the replaced files had.
    if (doomed.length > 0) this.dropBlocksOf(new Set(doomed), doomedFiles);
    for (const oldPath of moved) {
      const newPath = to + oldPath.slice(from.length);
      const moving = this.inodes.get(newPath);
      if (moving?.type === 'file') for (const block of moving.blocks) this.blockOwner.set(block.blockId, newPath);
      for (const pending of this.pendingBlocks.values()) if (pending.path === oldPath) pending.path = newPath;
    }
  }

  // ---------------------------------------------------------------- writing

  create(path: string, options?: CreateOptions, caller?: Caller): Promise<{ blockSize: number; replication: number }> {
    return this.exclusive(async () => {
      validatePath(path);
      const who = caller ?? this.superCaller;
      this.traverse(who, path);
      if (path === '/') throw new MinimrError('EISDIR', 'cannot create a file at /', { path });
      const replication = options?.replication ?? this.defaultReplication;
      const blockSize = options?.blockSize ?? this.defaultBlockSize;
      if (!isPositiveInteger(replication))
        throw new MinimrError('EBADJOB', `replication must be a positive integer, got ${replication}`, { path });
      if (!isPositiveInteger(blockSize))
        throw new MinimrError('EBADJOB', `blockSize must be a positive integer, got ${blockSize}`, { path });
      const favored = options?.favoredWorkers;
      if (
        favored !== undefined &&
        (!Array.isArray(favored) || favored.some((w) => typeof w !== 'string' || w === ''))
      ) {
        throw new MinimrError('EBADJOB', 'favoredWorkers must be a list of worker ids', { path });
      }
      this.scope?.checkWritable(path);
      const existing = this.inodes.get(path);
      if (existing?.type === 'dir') throw new MinimrError('EISDIR', `a directory exists at ${path}`, { path });
      if (existing && !options?.overwrite) throw new MinimrError('EEXIST', `file exists: ${path}`, { path });
      if (existing) this.requireRemovable(who, path);
      const changes = new Map<string, Inode | null>();
      if (options?.parents === false) this.requireParentDir(path);
      else this.planMkdirs(parentOf(path), changes, who);
      const parent = (changes.get(parentOf(path)) ?? this.inodes.get(parentOf(path)))!;
      requireAccess(who, parent, parentOf(path), 'write', 'execute');
      const file: FileInode = {
        type: 'file',
        mtime: Date.now(),
        replication,
        blockSize,
        blocks: [],
        underConstruction: true,
        owner: who.user,
        group: parent.group,
        mode: DEFAULT_FILE_MODE,
      };
      changes.set(path, file);
      await this.applyChanges(changes);
      if (existing?.type === 'file') this.dropBlocksOf(new Set([path]), [existing]);
      this.warnedReplicationCap.delete(path);
      if (favored && favored.length > 0) this.favoredWorkers.set(path, [...favored]);
      else this.favoredWorkers.delete(path);
      return { blockSize, replication };
    });
  }

  allocateBlock(path: string, client?: ClientLocation, caller?: Caller): Promise<BlockAllocation> {
    return this.exclusive(async () => {
      validatePath(path);
      const file = this.fileUnderConstruction(path, caller);
      const storers = this.placementNodes(path, client?.workerId);
      if (storers.length === 0)
        throw new MinimrError(
          'ENOWORKERS',
          `no live datanode ${this.datanodes.size > 0 ? 'may store' : 'to store'} a block of ${path}`,
          { path },
        );
      // A full datanode gets no new replica until it reports room again.
      const roomy = storers.filter((n) => this.hasRoom(n.address.workerId, file.blockSize));
      // As HDFS: stale datanodes are avoided for writes while enough others will do.
      const fresh = roomy.filter((n) => !this.isStale(n.address.workerId));
      const nodes = fresh.length >= Math.min(file.replication, roomy.length) ? fresh : roomy;
      if (nodes.length === 0)
        throw new MinimrError(
          'EDISKFULL',
          `no datanode has room for another block of ${path} (${storers.length} full); free space on the workers`,
          { path, fullDatanodes: storers.length },
        );
      const live = nodes.length;
      if (file.replication > live && !this.warnedReplicationCap.has(path)) {
        this.warnedReplicationCap.add(path);
        this.log.warn(
          { path, replication: file.replication, liveDatanodes: live },
          'fewer live datanodes than the replication asked; writing fewer replicas',
        );
      }
      const blockId = `blk_${this.nextBlockId}`;
      await this.db.put(NEXT_BLOCK_ID_KEY, this.nextBlockId + 1);
      this.nextBlockId += 1;
      const count = Math.min(file.replication, live);
      const favored = this.favoredWorkers.get(path);
      let targets: DatanodeAddress[];
      if (favored) {
        // The least-loaded live favored workers first; the default policy places the rest around them.
        const mine = nodes
          .filter((n) => favored.includes(n.address.workerId))
          .sort((a, b) => a.blockCount - b.blockCount || (a.address.workerId < b.address.workerId ? -1 : 1));
        const first = mine.slice(0, count).map((n) => n.address);
        targets = [...first, ...chooseTargets({ nodes, count: count - first.length, existing: first })];
      } else {
        targets = chooseTargets({ nodes, count, writer: client });
      }
      this.pendingBlocks.set(blockId, { path, targets: targets.map((t) => t.workerId) });
      for (const t of targets) this.expectIncoming(t.workerId, blockId, file.blockSize);
      return { blockId, targets, token: this.issueBlockToken(blockId, 'write') };
    });
  }

  commitBlock(path: string, block: WrittenBlock, caller?: Caller): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const file = this.fileUnderConstruction(path, caller);
      const pending = this.pendingBlocks.get(block.blockId);
      if (!pending || pending.path !== path) {
        throw new MinimrError('EINTERNAL', `block ${block.blockId} was not allocated to ${path}`, {
          path,
          blockId: block.blockId,
        });
      }
      if (
        !Number.isInteger(block.length) ||
        block.length < 0 ||
        !Number.isInteger(block.crc32) ||
        block.crc32 < 0 ||
        block.crc32 > 0xffffffff
      ) {
        throw new MinimrError('EPROTOCOL', `bad length or crc32 for block ${block.blockId}`, {
          path,
          blockId: block.blockId,
        });
      }
      if (block.workerIds.length === 0) {
        throw new MinimrError('ENOREPLICA', `block ${block.blockId} was committed with no replica`, {
          path,
          blockId: block.blockId,
        });
      }
      const stored: FileBlock = { blockId: block.blockId, length: block.length, crc32: block.crc32 };
      await this.applyChanges(new Map([[path, { ...file, blocks: [...file.blocks, stored] }]]));
      this.pendingBlocks.delete(block.blockId);
      this.blockOwner.set(block.blockId, path);
      for (const workerId of pending.targets) this.settleIncoming(workerId, block.blockId);
      for (const workerId of block.workerIds) this.addLocation(block.blockId, workerId);
      if (this.scope)
        this.scope.blockCommitted(
          path,
          block.blockId,
          block.length,
          block.workerIds.filter((w) => this.datanodes.has(w)),
        );
      // A target the writer gave up on may still hold a copy; deleting a missing block is harmless.
      for (const workerId of pending.targets)
        if (!block.workerIds.includes(workerId)) this.scheduleDeletion(workerId, block.blockId);
      this.checkReplication(block.blockId);
    });
  }

  /**
   * Makes the file visible once every block has its replication on disk: a replica a writer could
   * not store (a full or failed target) is copied to another datanode with room first, so a
   * successful write never leaves a block under-replicated. EDISKFULL when no datanode that may
   * hold the block has room for it; ENOREPLICA when the copies do not land within the wait.
   */
  async complete(path: string, lastBlock?: WrittenBlock, caller?: Caller): Promise<FileStatus> {
    validatePath(path);
    if (lastBlock !== undefined) await this.commitBlock(path, lastBlock, caller);
    const before = this.inodes.get(path);
    if (before?.type === 'file' && before.underConstruction) {
      this.requireWriter(caller, before, path);
      await this.awaitReplication(path);
    }
    await this.exclusive(async () => {
      validatePath(path);
      const inode = this.inodes.get(path);
      if (inode?.type !== 'file') throw new MinimrError('ENOENT', `no file being written at ${path}`, { path });
      if (!inode.underConstruction) return;
      this.requireWriter(caller, inode, path);
      await this.applyChanges(new Map([[path, { ...inode, underConstruction: false, mtime: Date.now() }]]));
      this.warnedReplicationCap.delete(path);
      this.favoredWorkers.delete(path);
    });
    return this.stat(path, caller);
  }

  abandon(path: string, caller?: Caller): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const inode = this.inodes.get(path);
      if (inode?.type !== 'file' || !inode.underConstruction) {
        // Abandon runs on a writer's error path; a second call or a finished file must not make it fail again.
        this.log.debug({ path }, 'abandon: no file under construction');
        return;
      }
      this.requireWriter(caller, inode, path);
      await this.applyChanges(new Map([[path, null]]));
      this.dropBlocksOf(new Set([path]), [inode]);
      this.warnedReplicationCap.delete(path);
    });
  }

  // ---------------------------------------------------------------- reading

  async getBlocks(path: string, client?: ClientLocation, caller?: Caller): Promise<BlockInfo[]> {
    validatePath(path);
    const who = caller ?? this.superCaller;
    this.traverse(who, path);
    const inode = this.visibleInode(path);
    if (inode.type === 'dir') throw new MinimrError('EISDIR', `${path} is a directory`, { path });
    requireAccess(who, inode, path, 'read');
    let offset = 0;
    return inode.blocks.map((block) => {
      const live = [...(this.locations.get(block.blockId) ?? [])]
        .map((workerId) => this.datanodes.get(workerId)?.address)
        .filter((a): a is DatanodeAddress => a !== undefined)
        .sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
      const info: BlockInfo = {
        blockId: block.blockId,
        offset,
        length: block.length,
        crc32: block.crc32,
        locations: this.suspectLast(sortByDistance(live, client)),
        token: this.issueBlockToken(block.blockId, 'read'),
      };
      offset += block.length;
      return info;
    });
  }

  // ---------------------------------------------------------------- ownership

  /** Sets a path's mode bits: its owner or the superuser may (as HDFS's setPermission). */
  chmod(path: string, mode: string | number, caller?: Caller): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const who = caller ?? this.superCaller;
      this.traverse(who, path);
      const bits = parseMode(mode);
      const inode = this.visibleInode(path);
      if (!who.superuser && who.user !== inode.owner) {
        throw new MinimrError(
          'EPERM',
          `permission denied: only ${inode.owner} (the owner) or the admin may change the mode of ${path}`,
          { path },
        );
      }
      await this.applyChanges(new Map([[path, { ...inode, mode: bits }]]));
    });
  }

  /**
   * Gives a path (with `recursive`, everything below it too) another owner and/or group: the superuser only, as in
   * HDFS.
   */
  chown(
    path: string,
    owner: string | null,
    group: string | null,
    options?: { recursive?: boolean },
    caller?: Caller,
  ): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const who = caller ?? this.superCaller;
      if (!who.superuser)
        throw new MinimrError('EPERM', `permission denied: only the admin may change the owner of ${path}`, { path });
      if (owner !== null && owner !== undefined) validateUserName(owner, 'owner');
      if (group !== null && group !== undefined) validateUserName(group, 'group');
      this.visibleInode(path);
      const changes = new Map<string, Inode | null>();
      for (const p of options?.recursive ? this.subtree(path) : [path]) {
        const inode = this.inodes.get(p)!;
        changes.set(p, { ...inode, owner: owner ?? inode.owner, group: group ?? inode.group });
      }
      await this.applyChanges(changes);
    });
  }

  /**
   * A reader says a replica is bad. Its word deletes nothing (anyone may say it of every replica):
   * the worker holding the replica is asked to read it against this NameNode's checksum
   * (`takeVerifications`), and only its own `replicaCorrupt` removes it.
   */
  async reportBadReplica(blockId: string, workerId: string): Promise<void> {
    if (typeof blockId !== 'string' || typeof workerId !== 'string' || !this.locations.get(blockId)?.has(workerId))
      return;
    this.log.warn({ blockId, workerId }, 'bad replica reported; asking its datanode to verify it');
    let queue = this.verifications.get(workerId);
    if (!queue) this.verifications.set(workerId, (queue = new Set()));
    queue.add(blockId);
  }

  /** Replicas this worker should check (piggybacked on a heartbeat reply), each handed out once. */
  takeVerifications(workerId: string): BlockVerification[] {
    const pending = this.verifications.get(workerId);
    if (!pending) return [];
    this.verifications.delete(workerId);
    const result: BlockVerification[] = [];
    for (const blockId of pending) {
      const block = this.storedBlock(blockId);
      if (block && this.locations.get(blockId)?.has(workerId))
        result.push({ blockId, length: block.length, crc32: block.crc32 });
    }
    return result;
  }

  /** The replica's own datanode read it and found it corrupt: forget it, delete it there, copy the block again. */
  replicaCorrupt(workerId: string, blockId: string): void {
    if (!this.locations.get(blockId)?.has(workerId)) return;
    this.log.warn({ blockId, workerId }, 'datanode found its replica corrupt; scheduling its deletion');
    this.removeLocation(blockId, workerId);
    const path = this.blockOwner.get(blockId);
    if (path !== undefined) this.scope?.replicaRemoved(path, blockId, workerId);
    this.scheduleDeletion(workerId, blockId);
    this.checkReplication(blockId);
  }

  // ---------------------------------------------------------------- block access tokens (in-process, for the runtime)

  /** A token for `op` on `blockId`, valid for the configured lifetime. */
  issueBlockToken(blockId: string, op: BlockOperation): string {
    return this.blockKey.issue(blockId, op, Date.now() + this.blockTokenLifetimeMs);
  }

  /**
   * A token for a datanode's `POST /blocks/ID/replicate` to exactly `targets`: each must be a live
   * datanode at the address it registered, so nobody can have a block relayed to a host of theirs.
   */
  relayToken(blockId: string, targets: readonly DatanodeAddress[]): string {
    for (const target of targets) {
      const registered = this.datanodes.get(target.workerId)?.address;
      if (!registered || replicationScope([registered]) !== replicationScope([target])) {
        throw new MinimrError(
          'ETOKEN',
          `cannot relay block ${blockId} to ${target.workerId} ` +
            `at ${target.host}:${target.dataPort}: not a registered datanode`,
          {
            blockId,
            workerId: target.workerId,
          },
        );
      }
    }
    return this.blockKey.issue(blockId, 'replicate', Date.now() + this.blockTokenLifetimeMs, replicationScope(targets));
  }

  // ---------------------------------------------------------------- datanodes (in-process, for the runtime)

  /**
   * A datanode joined (or joined again), listing its blocks: its first block report (the periodic
   * ones are `blockReport`). Returns the listed blocks the namespace does not know (left by removed
   * files, failed writes or an older run): the worker should delete them.
   */
  registerDatanode(address: DatanodeAddress, blockIds: readonly string[], space?: DatanodeSpace): string[] {
    const previous = this.datanodes.get(address.workerId);
    if (previous) for (const blockId of previous.blocks) this.locations.get(blockId)?.delete(address.workerId);
    this.suspectDatanodes.delete(address.workerId);
    this.datanodes.set(address.workerId, {
      address,
      blocks: new Set(),
      space,
      lastHeard: Date.now(),
      refusedForSpace: false,
      incoming: new Map(),
      listedAt: new Map(),
      deletionsSent: new Map(),
    });
    const orphans: string[] = [];
    for (const blockId of blockIds) {
      if (this.pendingBlocks.has(blockId)) this.addLocation(blockId, address.workerId);
      else if (!this.blockOwner.has(blockId)) orphans.push(blockId);
      else if (this.deletions.get(address.workerId)?.has(blockId)) {
        // Its deletion is queued: the copy is going away, so it is not listed.
      } else if ((this.locations.get(blockId)?.size ?? 0) >= this.replicationOf(blockId)) {
        // The block was re-replicated while this node was away: its copy is one too many.
        this.scheduleDeletion(address.workerId, blockId);
      } else if (this.outOfScope(blockId, address.workerId)) {
        // A scoped block on a node that may no longer hold it (it left its MR-cluster meanwhile): a copy elsewhere
        // stays.
        this.scheduleDeletion(address.workerId, blockId);
      } else this.addLocation(blockId, address.workerId);
    }
    this.recheckAllReplication();
    this.log.info(
      { workerId: address.workerId, rack: address.rack, blocks: blockIds.length, orphans: orphans.length },
      'datanode registered',
    );
    return orphans;
  }

  /** A datanode finished storing a block outside a client write (re-replication). False: unknown block, delete it. */
  blockReceived(workerId: string, blockId: string): boolean {
    if (!this.datanodes.has(workerId)) return false;
    if (!this.blockOwner.has(blockId) && !this.pendingBlocks.has(blockId)) {
      this.scheduleDeletion(workerId, blockId);
      return false;
    }
    const path = this.blockOwner.get(blockId);
    this.settleIncoming(workerId, blockId);
    if (!this.locations.get(blockId)?.has(workerId) && this.outOfScope(blockId, workerId)) {
      // A copy that landed on a node its scope no longer lets hold it (it left meanwhile): not kept.
      this.scheduleDeletion(workerId, blockId);
      return true;
    }
    this.addLocation(blockId, workerId);
    if (path !== undefined) this.scope?.replicaAdded(path, blockId, workerId);
    this.checkReplication(blockId);
    return true;
  }

  /**
   * A datanode's heartbeat, with its disk as it measured it: what placement weighs, and whether it
   * has room for new replicas. Blocks written to it since are in that figure, so they stop counting
   * as incoming.
   */
  datanodeHeartbeat(workerId: string, space: DatanodeSpace | undefined, now = Date.now()): void {
    const datanode = this.datanodes.get(workerId);
    if (!datanode) return;
    datanode.lastHeard = now;
    if (!space) return;
    const hadRoom = this.hasRoom(workerId, this.defaultBlockSize);
    datanode.space = space;
    datanode.refusedForSpace = false;
    for (const [blockId, entry] of datanode.incoming) {
      // An entry never settled (a writer that vanished) stops counting after twice the replication timeout.
      if (entry.settled || now - entry.since > 2 * this.replicationTimeoutMs) datanode.incoming.delete(blockId);
    }
    const hasRoom = this.hasRoom(workerId, this.defaultBlockSize);
    if (hadRoom && !hasRoom)
      this.log.warn(
        { workerId, freeBytes: space.freeBytes, capacityBytes: space.capacityBytes },
        'datanode is full: no new replicas go there until it has room',
      );
    else if (!hadRoom && hasRoom) this.log.info({ workerId, freeBytes: space.freeBytes }, 'datanode has room again');
  }

  /**
   * A copy of the block sent to this datanode was refused for lack of room (its disk filled before it
   * said so): it is no target until its next space report, and the copy is handed out again at once,
   * to another datanode.
   */
  copyRefusedFull(workerId: string, blockId: string): void {
    const datanode = this.datanodes.get(workerId);
    if (!datanode) return;
    datanode.refusedForSpace = true;
    this.settleIncoming(workerId, blockId);
    if (this.replicationInFlight.get(blockId)?.targets.includes(workerId)) this.replicationInFlight.delete(blockId);
    this.log.warn({ workerId, blockId }, 'datanode refused a copy for lack of room: no new replicas go there for now');
  }

  /**
   * A datanode's periodic block report, every replica its disk holds: the NameNode's map is made to
   * match it, as HDFS's. A replica listed here that the disk lacks (or holds with another length) is
   * dropped and copied again; a replica on the disk of a block the namespace has is adopted when the
   * block wants it, else deleted (one too many, or its deletion is under way); a block the namespace
   * does not know (an orphan) is deleted. Blocks being written are left alone, and so are replicas
   * listed too recently for the report to show them.
   */
  blockReport(workerId: string, replicas: readonly ReportedReplica[], now = Date.now()): BlockReportOutcome {
    const datanode = this.datanodes.get(workerId);
    const dropped: string[] = [];
    const adopted: string[] = [];
    const deleted: string[] = [];
    if (!datanode) return { dropped, adopted, deleted };
    const onDisk = new Map(replicas.map((r) => [r.blockId, r.length]));
    for (const blockId of [...datanode.blocks]) {
      if (this.pendingBlocks.has(blockId)) continue;
      const length = onDisk.get(blockId);
      const stored = this.storedBlock(blockId);
      if (length !== undefined && (stored === undefined || length === stored.length)) continue;
      const listedAt = datanode.listedAt.get(blockId);
      if (length === undefined && listedAt !== undefined && now - listedAt < REPORT_GRACE_MS) continue;
      dropped.push(blockId);
      this.removeLocation(blockId, workerId);
      const path = this.blockOwner.get(blockId);
      if (path !== undefined) this.scope?.replicaRemoved(path, blockId, workerId);
      // A replica of the wrong length is deleted; one that is gone needs nothing more.
      if (length !== undefined) {
        this.scheduleDeletion(workerId, blockId);
        deleted.push(blockId);
      }
      this.checkReplication(blockId);
    }
    for (const [blockId, length] of onDisk) {
      if (datanode.blocks.has(blockId) || this.pendingBlocks.has(blockId)) continue;
      if (this.isDeleting(workerId, blockId, now)) continue;
      const stored = this.storedBlock(blockId);
      const wanted =
        stored !== undefined &&
        stored.length === length &&
        this.liveReplicas(blockId) < this.replicationOf(blockId) &&
        !this.outOfScope(blockId, workerId);
      if (!wanted) {
        this.scheduleDeletion(workerId, blockId);
        deleted.push(blockId);
        continue;
      }
      this.addLocation(blockId, workerId);
      const path = this.blockOwner.get(blockId);
      if (path !== undefined) this.scope?.replicaAdded(path, blockId, workerId);
      this.checkReplication(blockId);
      adopted.push(blockId);
    }
    // A deletion the report shows done no longer keeps copies away; nor do old listing times matter.
    for (const blockId of [...datanode.deletionsSent.keys()])
      if (!onDisk.has(blockId) || datanode.deletionsSent.get(blockId)! <= now) datanode.deletionsSent.delete(blockId);
    for (const [blockId, at] of datanode.listedAt) if (now - at >= REPORT_GRACE_MS) datanode.listedAt.delete(blockId);
    if (dropped.length + adopted.length + deleted.length > 0)
      this.log.warn(
        { workerId, replicas: replicas.length, dropped, adopted, deleted: deleted.length },
        'block report differed from the NameNode: map reconciled with the disk',
      );
    return { dropped, adopted, deleted };
  }

  /**
   * Replicas a datanode's block scanner read whole: one whose length or CRC-32 is not what the
   * block was written with is corrupt (dropped, deleted, copied again). Returns the corrupt ones.
   */
  blocksScanned(workerId: string, replicas: readonly ScannedReplica[]): string[] {
    const corrupt: string[] = [];
    for (const replica of replicas) {
      const stored = this.storedBlock(replica.blockId);
      if (!stored || !this.locations.get(replica.blockId)?.has(workerId)) continue;
      if (stored.length === replica.length && stored.crc32 === replica.crc32 >>> 0) continue;
      corrupt.push(replica.blockId);
      this.replicaCorrupt(workerId, replica.blockId);
    }
    return corrupt;
  }

  /**
   * Drops the worker's replicas of the blocks of files `inScope` accepts, each only while another
   * live replica remains (a node leaving an MR-cluster). Returns the blocks it had to keep.
   */
  dropReplicas(workerId: string, inScope: (path: string) => boolean): string[] {
    const kept: string[] = [];
    for (const blockId of [...(this.datanodes.get(workerId)?.blocks ?? [])]) {
      const path = this.blockOwner.get(blockId);
      if (path === undefined || !inScope(path)) continue;
      const others = [...(this.locations.get(blockId) ?? [])].filter(
        (w) => w !== workerId && this.datanodes.has(w),
      ).length;
      if (others === 0) {
        kept.push(blockId);
        continue;
      }
      this.removeLocation(blockId, workerId);
      this.scheduleDeletion(workerId, blockId);
      this.checkReplication(blockId);
    }
    return kept;
  }

  /**
   * The files under `path` with their blocks and live replicas (`minimr fs fsck`, see fsck.ts): what
   * the datanodes' block reports and scanners last confirmed. A caller sees only what it may list
   * (the files and directories of directories it may read and enter); the superuser sees all.
   */
  async fsck(path = '/', caller?: Caller): Promise<FsckReport> {
    validatePath(path);
    const who = caller ?? this.superCaller;
    this.traverse(who, path);
    this.visibleInode(path);
    const files: FsckFile[] = [];
    let directories = 0;
    for (const p of this.listableSubtree(who, path).sort()) {
      const inode = this.inodes.get(p);
      if (!inode) continue;
      if (inode.type === 'dir') {
        directories++;
        continue;
      }
      if (inode.underConstruction) continue;
      const blocks = inode.blocks.map((b) => ({
        blockId: b.blockId,
        length: b.length,
        replicas: [...(this.locations.get(b.blockId) ?? [])].filter((w) => this.datanodes.has(w)).sort(),
      }));
      files.push({
        path: p,
        length: blocks.reduce((sum, b) => sum + b.length, 0),
        replication: inode.replication,
        blocks,
      });
    }
    return fsckReport(path, files, directories, this.datanodes.size);
  }

  /**
   * The datanode is connected but silent (its worker is suspect): it keeps its replicas, which
   * still count toward their blocks' replication, but gets no new block and is read from last.
   * Only `datanodeLost` (the datanode expiry, or a dropped connection) gives its replicas up.
   */
  datanodeSuspect(workerId: string): void {
    if (!this.datanodes.has(workerId) || this.suspectDatanodes.has(workerId)) return;
    this.suspectDatanodes.add(workerId);
    this.log.warn(
      { workerId, blocks: this.datanodes.get(workerId)!.blocks.size },
      'datanode suspect: its replicas are kept, new blocks go elsewhere',
    );
  }

  /** A suspect datanode was heard from again: it takes blocks again, with the replicas it kept. */
  datanodeHeard(workerId: string): void {
    if (this.suspectDatanodes.delete(workerId)) this.log.info({ workerId }, 'suspect datanode heard from again');
  }

  /** Readers try a suspect datanode's replica only after every other one. */
  private suspectLast(locations: DatanodeAddress[]): DatanodeAddress[] {
    if (this.suspectDatanodes.size === 0) return locations;
    const suspect = (a: DatanodeAddress) => this.suspectDatanodes.has(a.workerId);
    return [...locations.filter((a) => !suspect(a)), ...locations.filter(suspect)];
  }

  datanodeLost(workerId: string): void {
    const state = this.datanodes.get(workerId);
    if (!state) return;
    this.suspectDatanodes.delete(workerId);
    this.datanodes.delete(workerId);
    this.deletions.delete(workerId);
    this.verifications.delete(workerId);
    for (const blockId of state.blocks) this.locations.get(blockId)?.delete(workerId);
    for (const [blockId, work] of this.replicationInFlight) {
      if (work.source === workerId || work.targets.includes(workerId)) this.replicationInFlight.delete(blockId);
    }
    this.recheckAllReplication();
    this.log.warn({ workerId, blocks: state.blocks.size, underReplicated: this.underReplicated.size }, 'datanode lost');
  }

  liveDatanodes(): DatanodeAddress[] {
    return [...this.datanodes.values()].map((d) => d.address).sort((a, b) => (a.workerId < b.workerId ? -1 : 1));
  }

  /**
   * Blocks this worker should delete; each is handed out once (piggybacked on a heartbeat reply).
   * Until a block report shows it gone (or `deletionGraceMs` passes), the worker is no target
   * for a new copy of such a block: the copy could land before the deletion runs and be deleted by it.
   */
  takeBlockDeletions(workerId: string, now = Date.now()): string[] {
    const pending = this.deletions.get(workerId);
    if (!pending) return [];
    this.deletions.delete(workerId);
    const sent = this.datanodes.get(workerId)?.deletionsSent;
    for (const blockId of pending) sent?.set(blockId, now + this.deletionGraceMs);
    return [...pending];
  }

  /**
   * Copies this worker should make: blocks below their replication for which it is the chosen source
   * (the smallest live holder, so two holders never copy the same block). The runtime reports each
   * success with `blockReceived`; an unconfirmed copy is handed out again after the timeout.
   */
  takeReplicationWork(workerId: string, now = Date.now()): ReplicationWork[] {
    const work: ReplicationWork[] = [];
    for (const blockId of this.underReplicated) {
      const inFlight = this.replicationInFlight.get(blockId);
      if (inFlight && inFlight.expires > now) continue;
      const holders = [...(this.locations.get(blockId) ?? [])].filter((w) => this.datanodes.has(w)).sort();
      if (holders[0] !== workerId) continue;
      const missing = this.desiredReplication(blockId) - holders.length;
      if (missing <= 0) continue;
      const targets = chooseTargets({
        nodes: this.repairCandidates(blockId, now),
        count: missing,
        existing: holders.map((w) => this.datanodes.get(w)!.address),
      });
      if (targets.length === 0) continue;
      const length = this.storedBlock(blockId)?.length ?? 0;
      for (const t of targets) this.expectIncoming(t.workerId, blockId, length, now);
      this.replicationInFlight.set(blockId, {
        source: workerId,
        targets: targets.map((t) => t.workerId),
        expires: now + this.replicationTimeoutMs,
      });
      work.push({ blockId, targets, token: this.issueBlockToken(blockId, 'write') });
      this.replicationWorkHandedOut += targets.length;
    }
    return work;
  }

  /** What the block store holds, for status pages and metrics: namespace totals, and each live datanode's replicas. */
  usage(): BlockStoreUsage {
    let files = 0;
    let dirs = 0;
    let blocks = 0;
    let bytes = 0;
    const blockBytes = new Map<string, number>();
    for (const inode of this.inodes.values()) {
      if (inode.type === 'dir') {
        dirs++;
        continue;
      }
      files++;
      for (const b of inode.blocks) {
        blocks++;
        bytes += b.length;
        blockBytes.set(b.blockId, b.length);
      }
    }
    const datanodes = this.liveDatanodes().map((address) => {
      const held = this.datanodes.get(address.workerId)!.blocks;
      let stored = 0;
      for (const id of held) stored += blockBytes.get(id) ?? 0;
      return { workerId: address.workerId, rack: address.rack, blocks: held.size, bytes: stored };
    });
    return { files, dirs, blocks, bytes, underReplicatedBlocks: this.underReplicated.size, datanodes };
  }

  /** Blocks with fewer live replicas than min(replication, live datanodes); for status pages and tests. */
  underReplicatedBlocks(): string[] {
    return [...this.underReplicated].sort();
  }

  // ---------------------------------------------------------------- internals

  private exclusive<T>(operation: () => Promise<T>): Promise<T> {
    if (!this.opened) return Promise.reject(new MinimrError('EINTERNAL', 'namenode is not open'));
    const result = this.queue.then(operation, operation);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private visibleInode(path: string): Inode {
    const inode = this.inodes.get(path);
    if (!inode || (inode.type === 'file' && inode.underConstruction)) {
      throw new MinimrError('ENOENT', `no such file or directory: ${path}`, { path });
    }
    return inode;
  }

  private fileUnderConstruction(path: string, caller: Caller | undefined): FileInode {
    const inode = this.inodes.get(path);
    if (inode?.type !== 'file' || !inode.underConstruction) {
      throw new MinimrError('ENOENT', `no file being written at ${path}`, { path });
    }
    this.requireWriter(caller, inode, path);
    return inode;
  }

  /** A file under construction is written by its creator alone (HDFS's lease holder). */
  private requireWriter(caller: Caller | undefined, inode: FileInode, path: string): void {
    const who = caller ?? this.superCaller;
    if (!who.superuser && who.user !== inode.owner) {
      throw new MinimrError('EPERM', `permission denied: ${path} is being written by ${inode.owner}, not ${who.user}`, {
        path,
      });
    }
  }

  private requireParentDir(path: string): DirInode {
    const parent = parentOf(path);
    const inode = this.inodes.get(parent);
    if (!inode) throw new MinimrError('ENOENT', `parent directory does not exist: ${parent}`, { path: parent });
    if (inode.type !== 'dir') throw new MinimrError('ENOTDIR', `not a directory: ${parent}`, { path: parent });
    return inode;
  }

  /** Every existing directory above `path` must let the caller in (execute), as in HDFS and POSIX. */
  private traverse(who: Caller, path: string): void {
    if (who.superuser) return;
    for (let dir = parentOf(path), last = path; dir !== last; last = dir, dir = parentOf(dir)) {
      const inode = this.inodes.get(dir);
      if (inode?.type === 'dir') requireAccess(who, inode, dir, 'execute');
    }
  }

  /** Removing or moving `path` away takes write access to its directory, and ownership in a sticky one. */
  private requireRemovable(who: Caller, path: string): void {
    const parent = this.inodes.get(parentOf(path));
    const inode = this.inodes.get(path);
    if (!parent || !inode) return;
    requireAccess(who, parent, parentOf(path), 'write', 'execute');
    requireStickyOwnership(who, parent, inode, path);
  }

  private newDir(who: Caller, parent: Ownership): DirInode {
    return { type: 'dir', mtime: Date.now(), owner: who.user, group: parent.group, mode: DEFAULT_DIR_MODE };
  }

  /** Plans the missing directories of `path`; each needs write access to the directory it is made in. */
  private planMkdirs(path: string, changes: Map<string, Inode | null>, who: Caller): void {
    let parent: Inode = this.inodes.get('/')!;
    let prefix = '';
    for (const segment of path === '/' ? [] : path.slice(1).split('/')) {
      const parentPath = prefix || '/';
      prefix = `${prefix}/${segment}`;
      let inode = changes.get(prefix) ?? this.inodes.get(prefix);
      if (!inode) {
        requireAccess(who, parent, parentPath, 'write', 'execute');
        inode = this.newDir(who, parent);
        changes.set(prefix, inode);
      } else if (inode.type !== 'dir') throw new MinimrError('ENOTDIR', `not a directory: ${prefix}`, { path: prefix });
      parent = inode;
    }
  }

  /** Inodes stored before paths had owners belong to the superuser, with the default modes. */
  private withOwnership(path: string, inode: Inode): Inode {
    if (typeof inode.owner === 'string' && typeof inode.mode === 'number') return inode;
    const mode = path === '/' ? ROOT_MODE : inode.type === 'dir' ? DEFAULT_DIR_MODE : DEFAULT_FILE_MODE;
    return { ...inode, owner: this.superCaller.user, group: DEFAULT_GROUP, mode };
  }

  private subtree(path: string): string[] {
    const result: string[] = [];
    const stack = [path];
    while (stack.length > 0) {
      const current = stack.pop()!;
      result.push(current);
      for (const name of this.children.get(current) ?? []) stack.push(joinPath(current, name));
    }
    return result;
  }

  private async applyChanges(changes: Map<string, Inode | null>): Promise<void> {
    const ops: BatchOp[] = [];
    for (const [path, inode] of changes) {
      ops.push(
        inode ? { type: 'put', key: INODE_PREFIX + path, value: inode } : { type: 'del', key: INODE_PREFIX + path },
      );
    }
    await this.db.batch(ops);
    for (const [path, inode] of changes) if (!inode) this.deleteInode(path);
    for (const [path, inode] of changes) if (inode) this.setInode(path, inode);
  }

  private setInode(path: string, inode: Inode): void {
    this.inodes.set(path, inode);
    if (inode.type === 'dir' && !this.children.has(path)) this.children.set(path, new Set());
    if (inode.type === 'file') for (const block of inode.blocks) this.blockOwner.set(block.blockId, path);
    if (path !== '/') {
      const parent = parentOf(path);
      let siblings = this.children.get(parent);
      if (!siblings) this.children.set(parent, (siblings = new Set()));
      siblings.add(baseName(path));
    }
  }

  private deleteInode(path: string): void {
    this.inodes.delete(path);
    this.children.delete(path);
    if (path !== '/') this.children.get(parentOf(path))?.delete(baseName(path));
  }

  /**
   * Forgets the blocks of files that left the namespace (`paths` for blocks still being written) and deletes their
   * replicas.
   */
  private dropBlocksOf(paths: ReadonlySet<string>, files: readonly FileInode[]): void {
    for (const file of files) {
      for (const block of file.blocks) this.forgetBlock(block.blockId);
    }
    for (const [blockId, pending] of this.pendingBlocks) {
      if (!paths.has(pending.path)) continue;
      for (const workerId of pending.targets) this.scheduleDeletion(workerId, blockId);
      this.forgetBlock(blockId);
    }
  }

  private forgetBlock(blockId: string): void {
    const path = this.blockOwner.get(blockId) ?? this.pendingBlocks.get(blockId)?.path;
    if (path !== undefined) this.scope?.blockForgotten(path, blockId);
    for (const workerId of this.locations.get(blockId) ?? []) {
      this.datanodes.get(workerId)?.blocks.delete(blockId);
      this.scheduleDeletion(workerId, blockId);
    }
    for (const datanode of this.datanodes.values()) {
      const entry = datanode.incoming.get(blockId);
      if (entry) entry.settled = true;
    }
    this.locations.delete(blockId);
    this.blockOwner.delete(blockId);
    this.pendingBlocks.delete(blockId);
    this.underReplicated.delete(blockId);
    this.replicationInFlight.delete(blockId);
  }

  private addLocation(blockId: string, workerId: string): void {
    const datanode = this.datanodes.get(workerId);
    if (!datanode) return;
    datanode.blocks.add(blockId);
    datanode.listedAt.set(blockId, Date.now());
    let holders = this.locations.get(blockId);
    if (!holders) this.locations.set(blockId, (holders = new Set()));
    holders.add(workerId);
  }

  private removeLocation(blockId: string, workerId: string): void {
    this.locations.get(blockId)?.delete(workerId);
    this.datanodes.get(workerId)?.blocks.delete(blockId);
  }

  private scheduleDeletion(workerId: string, blockId: string): void {
    if (!this.datanodes.has(workerId)) return;
    let queue = this.deletions.get(workerId);
    if (!queue) this.deletions.set(workerId, (queue = new Set()));
    queue.add(blockId);
  }

  private storedBlock(blockId: string): FileBlock | undefined {
    const path = this.blockOwner.get(blockId);
    const inode = path === undefined ? undefined : this.inodes.get(path);
    return inode?.type === 'file' ? inode.blocks.find((b) => b.blockId === blockId) : undefined;
  }

  /**
   * Whether a copy of the block on `workerId` is one its scope does not let it keep while a live replica is elsewhere.
   */
  private outOfScope(blockId: string, workerId: string): boolean {
    const path = this.blockOwner.get(blockId);
    if (path === undefined || !this.scope || this.scope.mayHold(path, workerId)) return false;
    return [...(this.locations.get(blockId) ?? [])].some((w) => w !== workerId && this.datanodes.has(w));
  }

  private replicationOf(blockId: string): number {
    const path = this.blockOwner.get(blockId);
    const inode = path === undefined ? undefined : this.inodes.get(path);
    return inode?.type === 'file' ? inode.replication : 0;
  }

  /** The file's replication, capped by the live datanodes that may hold the block (its holders among them). */
  private desiredReplication(blockId: string): number {
    const path = this.blockOwner.get(blockId);
    const storers = path === undefined ? undefined : this.scope?.storers(path);
    if (!storers) return Math.min(this.replicationOf(blockId), this.datanodes.size);
    const may = new Set([...storers].filter((w) => this.datanodes.has(w)));
    for (const w of this.locations.get(blockId) ?? []) if (this.datanodes.has(w)) may.add(w);
    return Math.min(this.replicationOf(blockId), may.size);
  }

  private checkReplication(blockId: string): void {
    if (!this.blockOwner.has(blockId)) return;
    const live = this.locations.get(blockId)?.size ?? 0;
    if (live < this.desiredReplication(blockId)) {
      this.underReplicated.add(blockId);
    } else {
      this.underReplicated.delete(blockId);
      this.replicationInFlight.delete(blockId);
    }
  }

  private recheckAllReplication(): void {
    for (const blockId of this.blockOwner.keys()) this.checkReplication(blockId);
  }

  /** The live datanodes that may hold a block of `path` (all without a scope), with their loads. */
  private placementNodes(path?: string, writerId?: string): PlacementNode[] {
    const storers = path === undefined ? undefined : this.scope?.storers(path, writerId);
    const pendingLoad = new Map<string, number>();
    for (const pending of this.pendingBlocks.values()) {
      for (const workerId of pending.targets) pendingLoad.set(workerId, (pendingLoad.get(workerId) ?? 0) + 1);
    }
    return [...this.datanodes.values()]
      .filter((d) => !this.suspectDatanodes.has(d.address.workerId))
      .filter((d) => !storers || storers.has(d.address.workerId))
      .map((d) => ({
        address: d.address,
        blockCount: d.blocks.size + (pendingLoad.get(d.address.workerId) ?? 0),
        ...(d.space && d.space.capacityBytes > 0
          ? { freeFraction: (d.space.freeBytes - this.incomingBytes(d)) / d.space.capacityBytes }
          : {}),
      }));
  }

  /**
   * Where a new copy of `blockId` may go: live datanodes its scope allows that neither hold it nor
   * are deleting it (a copy sent there could be removed by the deletion), with room for it.
   */
  private repairCandidates(blockId: string, now: number): PlacementNode[] {
    const length = this.storedBlock(blockId)?.length ?? 0;
    const holders = this.locations.get(blockId);
    return this.placementNodes(this.blockOwner.get(blockId)).filter(
      (n) =>
        !holders?.has(n.address.workerId) &&
        !this.isDeleting(n.address.workerId, blockId, now) &&
        !this.isStale(n.address.workerId, now) &&
        this.hasRoom(n.address.workerId, length),
    );
  }

  /** Not heard from for `staleAfterMs`: it may be stalled, and a copy sent there may never land. */
  private isStale(workerId: string, now = Date.now()): boolean {
    const datanode = this.datanodes.get(workerId);
    return datanode !== undefined && now - datanode.lastHeard > this.staleAfterMs;
  }

  /** Whether a deletion of the block is queued for the worker, or was handed to it and not yet seen done. */
  private isDeleting(workerId: string, blockId: string, now = Date.now()): boolean {
    if (this.deletions.get(workerId)?.has(blockId)) return true;
    const until = this.datanodes.get(workerId)?.deletionsSent.get(blockId);
    return until !== undefined && until > now;
  }

  /** Bytes kept free on a disk of this capacity (see NamenodeOptions.reservedBytes). */
  private reserveOf(space: DatanodeSpace): number {
    return this.reservedBytes ?? Math.min(DEFAULT_RESERVE_CAP_BYTES, Math.floor(space.capacityBytes / 100));
  }

  private incomingBytes(datanode: DatanodeState): number {
    let bytes = 0;
    for (const entry of datanode.incoming.values()) bytes += entry.bytes;
    return bytes;
  }

  /** Whether the datanode has room for `bytes` more beyond what is being written to it and its reserve. */
  private hasRoom(workerId: string, bytes: number): boolean {
    const datanode = this.datanodes.get(workerId);
    if (datanode?.refusedForSpace) return false;
    if (!datanode?.space) return true;
    return datanode.space.freeBytes - this.incomingBytes(datanode) - bytes >= this.reserveOf(datanode.space);
  }

  private expectIncoming(workerId: string, blockId: string, bytes: number, now = Date.now()): void {
    this.datanodes.get(workerId)?.incoming.set(blockId, { bytes, settled: false, since: now });
  }

  /** The block is written (or given up) there: its bytes count from the datanode's next space report on. */
  private settleIncoming(workerId: string, blockId: string): void {
    const entry = this.datanodes.get(workerId)?.incoming.get(blockId);
    if (entry) entry.settled = true;
  }

  /** Waits until every block of the file under construction at `path` has its replication (see `complete`). */
  private async awaitReplication(path: string): Promise<void> {
    const deadline = Date.now() + this.replicationWaitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      const inode = this.inodes.get(path);
      if (inode?.type !== 'file' || !inode.underConstruction) return;
      const short = inode.blocks.filter((b) => this.liveReplicas(b.blockId) < this.desiredReplication(b.blockId));
      if (short.length === 0) return;
      const now = Date.now();
      let waiting = false;
      for (const block of short) {
        const inFlight = this.replicationInFlight.get(block.blockId);
        if (inFlight && inFlight.expires > now) {
          waiting = true;
          continue;
        }
        // Only a lack of room ends the wait at once; a datanode still deleting an old copy is a target again soon.
        const holders = this.locations.get(block.blockId);
        const others = this.placementNodes(path).filter((n) => !holders?.has(n.address.workerId));
        const roomy = others.filter((n) => this.hasRoom(n.address.workerId, block.length));
        // Stale datanodes (silent, maybe stalled) cannot be waited for: the block stays under-replicated,
        // and is copied when they answer again or are lost.
        if (roomy.length > 0 && roomy.every((n) => this.isStale(n.address.workerId, now))) continue;
        waiting = true;
        if (roomy.length === 0) {
          throw new MinimrError(
            'EDISKFULL',
            `block ${block.blockId} of ${path} has ${this.liveReplicas(block.blockId)} of its ` +
              `${this.desiredReplication(block.blockId)} replicas and no other datanode has room for it; ` +
              'free space on the workers, or write with a lower replication',
            { path, blockId: block.blockId },
          );
        }
      }
      if (!waiting) {
        this.log.warn(
          { path, blocks: short.map((b) => b.blockId) },
          'file completed with blocks short of replicas only stale datanodes could take',
        );
        return;
      }
      if (now >= deadline) {
        const block = short[0]!;
        throw new MinimrError(
          'ENOREPLICA',
          `block ${block.blockId} of ${path} has ${this.liveReplicas(block.blockId)} of its ` +
            `${this.desiredReplication(block.blockId)} replicas after ${this.replicationWaitMs} ms`,
          { path, blockId: block.blockId },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  private liveReplicas(blockId: string): number {
    let live = 0;
    for (const w of this.locations.get(blockId) ?? []) if (this.datanodes.has(w)) live++;
    return live;
  }

  /**
   * The paths under `path` a caller may see in a listing: `path` itself, and the entries of every
   * directory below it the caller may read and enter (all of them for the superuser).
   */
  private listableSubtree(who: Caller, path: string): string[] {
    const result: string[] = [];
    const stack = [path];
    while (stack.length > 0) {
      const current = stack.pop()!;
      result.push(current);
      const inode = this.inodes.get(current);
      if (inode?.type !== 'dir' || !this.mayList(who, inode, current)) continue;
      for (const name of this.children.get(current) ?? []) stack.push(joinPath(current, name));
    }
    return result;
  }

  private mayList(who: Caller, inode: Ownership, path: string): boolean {
    if (who.superuser) return true;
    try {
      requireAccess(who, inode, path, 'read', 'execute');
      return true;
    } catch {
      return false;
    }
  }

  private statusOf(path: string, inode: Inode): FileStatus {
    const ownership = { owner: inode.owner, group: inode.group, mode: inode.mode };
    if (inode.type === 'dir')
      return { path, type: 'dir', length: 0, replication: 0, blockSize: 0, mtime: inode.mtime, ...ownership };
    const length = inode.blocks.reduce((sum, b) => sum + b.length, 0);
    return {
      path,
      type: 'file',
      length,
      replication: inode.replication,
      blockSize: inode.blockSize,
      mtime: inode.mtime,
      ...ownership,
    };
  }
}
