import type { Level } from 'level';
import { MinimrError } from '../errors.js';
import type { Logger } from '../log.js';
import { baseName, isSameOrBelow, joinPath, parentOf, validatePath } from './paths.js';
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
} from './types.js';

export const DEFAULT_BLOCK_SIZE = 64 * 1024 * 1024;
export const DEFAULT_REPLICATION = 3;

export interface NamenodeOptions {
  readonly dbPath: string;
  readonly defaultBlockSize?: number;
  readonly defaultReplication?: number;
  /** A replication copy not confirmed within this time is handed out again (default 60 s). */
  readonly replicationTimeoutMs?: number;
  readonly logger?: Logger;
}

export interface ReplicationWork {
  readonly blockId: string;
  readonly targets: DatanodeAddress[];
}

interface StoredBlock {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
}

interface DirInode {
  readonly type: 'dir';
  readonly mtime: number;
}

interface FileInode {
  readonly type: 'file';
  readonly mtime: number;
  readonly replication: number;
  readonly blockSize: number;
  readonly blocks: readonly StoredBlock[];
  readonly underConstruction: boolean;
}

type Inode = DirInode | FileInode;

type BatchOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };

interface DatanodeState {
  readonly address: DatanodeAddress;
  readonly blocks: Set<string>;
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
  private readonly defaultBlockSize: number;
  private readonly defaultReplication: number;
  private readonly replicationTimeoutMs: number;
  private readonly log: Logger;

  private readonly inodes = new Map<string, Inode>();
  private readonly children = new Map<string, Set<string>>();
  /** Committed block -> path of the file it belongs to. */
  private readonly blockOwner = new Map<string, string>();
  /** Allocated, not yet committed: a writer is sending it to these targets. */
  private readonly pendingBlocks = new Map<string, PendingBlock>();
  private readonly locations = new Map<string, Set<string>>();
  private readonly datanodes = new Map<string, DatanodeState>();
  private readonly deletions = new Map<string, Set<string>>();
  private readonly underReplicated = new Set<string>();
  private readonly replicationInFlight = new Map<string, { readonly source: string; readonly targets: readonly string[]; readonly expires: number }>();
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
    if (!isPositiveInteger(blockSize)) throw new MinimrError('EBADJOB', `defaultBlockSize must be a positive integer, got ${blockSize}`);
    if (!isPositiveInteger(replication)) throw new MinimrError('EBADJOB', `defaultReplication must be a positive integer, got ${replication}`);
    this.defaultBlockSize = blockSize;
    this.defaultReplication = replication;
    this.replicationTimeoutMs = options.replicationTimeoutMs ?? 60_000;
    // The JobTracker passes its logger; without one the NameNode is silent.
    this.log = options.logger ?? ({ info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger);
    this.dbPath = options.dbPath;
  }

  async open(): Promise<void> {
    if (this.opened) return;
    // Loaded here, not at import: task processes import this folder but never open a NameNode.
    const { Level } = await import('level');
    this.db = new Level<string, unknown>(this.dbPath, { valueEncoding: 'json' });
    await this.db.open();
    const abandoned: string[] = [];
    for await (const [key, value] of this.db.iterator({ gte: INODE_PREFIX, lt: `${INODE_PREFIX}\uffff` })) {
      const path = key.slice(INODE_PREFIX.length);
      const inode = value as Inode;
      // A file still under construction lost its writer with the previous process: nobody can finish it.
      if (inode.type === 'file' && inode.underConstruction) abandoned.push(path);
      else this.setInode(path, inode);
    }
    if (!this.inodes.has('/')) {
      const root: DirInode = { type: 'dir', mtime: Date.now() };
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

  mkdir(path: string, options?: { parents?: boolean }): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const changes = new Map<string, Inode | null>();
      const existing = this.inodes.get(path);
      if (options?.parents) {
        if (existing?.type === 'file') throw new MinimrError('EEXIST', `a file exists at ${path}`, { path });
        this.planMkdirs(path, changes);
      } else {
        if (existing) throw new MinimrError('EEXIST', `${path} already exists`, { path });
        this.requireParentDir(path);
        changes.set(path, { type: 'dir', mtime: Date.now() });
      }
      await this.applyChanges(changes);
    });
  }

  async stat(path: string): Promise<FileStatus> {
    validatePath(path);
    return this.statusOf(path, this.visibleInode(path));
  }

  async list(path: string): Promise<FileStatus[]> {
    validatePath(path);
    const inode = this.visibleInode(path);
    if (inode.type === 'file') return [this.statusOf(path, inode)];
    const result: FileStatus[] = [];
    for (const name of [...(this.children.get(path) ?? [])].sort()) {
      const childPath = joinPath(path, name);
      const child = this.inodes.get(childPath);
      if (child && !(child.type === 'file' && child.underConstruction)) result.push(this.statusOf(childPath, child));
    }
    return result;
  }

  remove(path: string, options?: { recursive?: boolean }): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      if (path === '/') throw new MinimrError('EBADPATH', 'the root directory cannot be removed', { path });
      const inode = this.inodes.get(path);
      if (!inode) throw new MinimrError('ENOENT', `no such file or directory: ${path}`, { path });
      if (inode.type === 'dir' && !options?.recursive && (this.children.get(path)?.size ?? 0) > 0) {
        throw new MinimrError('ENOTEMPTY', `directory not empty: ${path}`, { path });
      }
      const doomed = this.subtree(path);
      const changes = new Map<string, Inode | null>(doomed.map((p) => [p, null]));
      const files = doomed.map((p) => this.inodes.get(p)).filter((i): i is FileInode => i?.type === 'file');
      await this.applyChanges(changes);
      this.dropBlocksOf(new Set(doomed), files);
    });
  }

  rename(from: string, to: string): Promise<void> {
    return this.exclusive(async () => {
      validatePath(from);
      validatePath(to);
      if (from === '/' || to === '/') throw new MinimrError('EBADPATH', 'the root directory cannot be renamed', { path: from, to });
      const inode = this.inodes.get(from);
      if (!inode) throw new MinimrError('ENOENT', `no such file or directory: ${from}`, { path: from });
      if (from === to) return;
      if (isSameOrBelow(to, from)) throw new MinimrError('EBADPATH', `cannot move ${from} into itself (${to})`, { path: from, to });
      if (this.inodes.has(to)) throw new MinimrError('EEXIST', `destination exists: ${to}`, { path: to });
      this.requireParentDir(to);
      const changes = new Map<string, Inode | null>();
      const moved = this.subtree(from);
      for (const oldPath of moved) changes.set(oldPath, null);
      for (const oldPath of moved) changes.set(to + oldPath.slice(from.length), this.inodes.get(oldPath)!);
      await this.applyChanges(changes);
      for (const oldPath of moved) {
        const newPath = to + oldPath.slice(from.length);
        const moving = this.inodes.get(newPath);
        if (moving?.type === 'file') for (const block of moving.blocks) this.blockOwner.set(block.blockId, newPath);
        for (const pending of this.pendingBlocks.values()) if (pending.path === oldPath) pending.path = newPath;
      }
    });
  }

  // ---------------------------------------------------------------- writing

  create(path: string, options?: CreateOptions): Promise<{ blockSize: number; replication: number }> {
    return this.exclusive(async () => {
      validatePath(path);
      if (path === '/') throw new MinimrError('EISDIR', 'cannot create a file at /', { path });
      const replication = options?.replication ?? this.defaultReplication;
      const blockSize = options?.blockSize ?? this.defaultBlockSize;
      if (!isPositiveInteger(replication)) throw new MinimrError('EBADJOB', `replication must be a positive integer, got ${replication}`, { path });
      if (!isPositiveInteger(blockSize)) throw new MinimrError('EBADJOB', `blockSize must be a positive integer, got ${blockSize}`, { path });
      const favored = options?.favoredWorkers;
      if (favored !== undefined && (!Array.isArray(favored) || favored.some((w) => typeof w !== 'string' || w === ''))) {
        throw new MinimrError('EBADJOB', 'favoredWorkers must be a list of worker ids', { path });
      }
      this.scope?.checkWritable(path);
      const existing = this.inodes.get(path);
      if (existing?.type === 'dir') throw new MinimrError('EISDIR', `a directory exists at ${path}`, { path });
      if (existing && !options?.overwrite) throw new MinimrError('EEXIST', `file exists: ${path}`, { path });
      const changes = new Map<string, Inode | null>();
      if (options?.parents === false) this.requireParentDir(path);
      else this.planMkdirs(parentOf(path), changes);
      const file: FileInode = { type: 'file', mtime: Date.now(), replication, blockSize, blocks: [], underConstruction: true };
      changes.set(path, file);
      await this.applyChanges(changes);
      if (existing?.type === 'file') this.dropBlocksOf(new Set([path]), [existing]);
      this.warnedReplicationCap.delete(path);
      if (favored && favored.length > 0) this.favoredWorkers.set(path, [...favored]);
      else this.favoredWorkers.delete(path);
      return { blockSize, replication };
    });
  }

  allocateBlock(path: string, client?: ClientLocation): Promise<BlockAllocation> {
    return this.exclusive(async () => {
      validatePath(path);
      const file = this.fileUnderConstruction(path);
      const nodes = this.placementNodes(path, client?.workerId);
      const live = nodes.length;
      if (live === 0) throw new MinimrError('ENOWORKERS', `no live datanode ${this.datanodes.size > 0 ? 'may store' : 'to store'} a block of ${path}`, { path });
      if (file.replication > live && !this.warnedReplicationCap.has(path)) {
        this.warnedReplicationCap.add(path);
        this.log.warn({ path, replication: file.replication, liveDatanodes: live }, 'fewer live datanodes than the replication asked; writing fewer replicas');
      }
      const blockId = `blk_${this.nextBlockId}`;
      await this.db.put(NEXT_BLOCK_ID_KEY, this.nextBlockId + 1);
      this.nextBlockId += 1;
      const count = Math.min(file.replication, live);
      const favored = this.favoredWorkers.get(path);
      let targets: DatanodeAddress[];
      if (favored) {
        // The least-loaded live favored workers first; the default policy places the rest around them.
        const mine = nodes.filter((n) => favored.includes(n.address.workerId)).sort((a, b) => a.blockCount - b.blockCount || (a.address.workerId < b.address.workerId ? -1 : 1));
        const first = mine.slice(0, count).map((n) => n.address);
        targets = [...first, ...chooseTargets({ nodes, count: count - first.length, existing: first })];
      } else {
        targets = chooseTargets({ nodes, count, writer: client });
      }
      this.pendingBlocks.set(blockId, { path, targets: targets.map((t) => t.workerId) });
      return { blockId, targets };
    });
  }

  commitBlock(path: string, block: { blockId: string; length: number; crc32: number; workerIds: readonly string[] }): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const file = this.fileUnderConstruction(path);
      const pending = this.pendingBlocks.get(block.blockId);
      if (!pending || pending.path !== path) {
        throw new MinimrError('EINTERNAL', `block ${block.blockId} was not allocated to ${path}`, { path, blockId: block.blockId });
      }
      if (!Number.isInteger(block.length) || block.length < 0 || !Number.isInteger(block.crc32) || block.crc32 < 0 || block.crc32 > 0xffffffff) {
        throw new MinimrError('EPROTOCOL', `bad length or crc32 for block ${block.blockId}`, { path, blockId: block.blockId });
      }
      if (block.workerIds.length === 0) {
        throw new MinimrError('ENOREPLICA', `block ${block.blockId} was committed with no replica`, { path, blockId: block.blockId });
      }
      const stored: StoredBlock = { blockId: block.blockId, length: block.length, crc32: block.crc32 };
      await this.applyChanges(new Map([[path, { ...file, blocks: [...file.blocks, stored] }]]));
      this.pendingBlocks.delete(block.blockId);
      this.blockOwner.set(block.blockId, path);
      for (const workerId of block.workerIds) this.addLocation(block.blockId, workerId);
      if (this.scope) this.scope.blockCommitted(path, block.blockId, block.length, block.workerIds.filter((w) => this.datanodes.has(w)));
      // A target the writer gave up on may still hold a copy; deleting a missing block is harmless.
      for (const workerId of pending.targets) if (!block.workerIds.includes(workerId)) this.scheduleDeletion(workerId, block.blockId);
      this.checkReplication(block.blockId);
    });
  }

  complete(path: string): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const inode = this.inodes.get(path);
      if (inode?.type !== 'file') throw new MinimrError('ENOENT', `no file being written at ${path}`, { path });
      if (!inode.underConstruction) return;
      await this.applyChanges(new Map([[path, { ...inode, underConstruction: false, mtime: Date.now() }]]));
      this.warnedReplicationCap.delete(path);
      this.favoredWorkers.delete(path);
    });
  }

  abandon(path: string): Promise<void> {
    return this.exclusive(async () => {
      validatePath(path);
      const inode = this.inodes.get(path);
      if (inode?.type !== 'file' || !inode.underConstruction) {
        // Abandon runs on a writer's error path; a second call or a finished file must not make it fail again.
        this.log.debug({ path }, 'abandon: no file under construction');
        return;
      }
      await this.applyChanges(new Map([[path, null]]));
      this.dropBlocksOf(new Set([path]), [inode]);
      this.warnedReplicationCap.delete(path);
    });
  }

  // ---------------------------------------------------------------- reading

  async getBlocks(path: string, client?: ClientLocation): Promise<BlockInfo[]> {
    validatePath(path);
    const inode = this.visibleInode(path);
    if (inode.type === 'dir') throw new MinimrError('EISDIR', `${path} is a directory`, { path });
    let offset = 0;
    return inode.blocks.map((block) => {
      const live = [...(this.locations.get(block.blockId) ?? [])]
        .map((workerId) => this.datanodes.get(workerId)?.address)
        .filter((a): a is DatanodeAddress => a !== undefined)
        .sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
      const info: BlockInfo = { blockId: block.blockId, offset, length: block.length, crc32: block.crc32, locations: sortByDistance(live, client) };
      offset += block.length;
      return info;
    });
  }

  async reportBadReplica(blockId: string, workerId: string): Promise<void> {
    this.log.warn({ blockId, workerId }, 'bad replica reported; scheduling its deletion');
    this.removeLocation(blockId, workerId);
    const path = this.blockOwner.get(blockId);
    if (path !== undefined) this.scope?.replicaRemoved(path, blockId, workerId);
    this.scheduleDeletion(workerId, blockId);
    this.checkReplication(blockId);
  }

  // ---------------------------------------------------------------- datanodes (in-process, for the runtime)

  /**
   * A datanode joined or sent a full block report. Returns the reported blocks the namespace does not
   * know (left by removed files, failed writes or an older run): the worker should delete them.
   */
  registerDatanode(address: DatanodeAddress, blockIds: readonly string[]): string[] {
    const previous = this.datanodes.get(address.workerId);
    if (previous) for (const blockId of previous.blocks) this.locations.get(blockId)?.delete(address.workerId);
    this.datanodes.set(address.workerId, { address, blocks: new Set() });
    const orphans: string[] = [];
    for (const blockId of blockIds) {
      if (this.pendingBlocks.has(blockId)) this.addLocation(blockId, address.workerId);
      else if (!this.blockOwner.has(blockId)) orphans.push(blockId);
      else if ((this.locations.get(blockId)?.size ?? 0) >= this.replicationOf(blockId)) {
        // The block was re-replicated while this node was away: its copy is one too many.
        this.scheduleDeletion(address.workerId, blockId);
      } else if (this.outOfScope(blockId, address.workerId)) {
        // A scoped block on a node that may no longer hold it (it left its MR-cluster meanwhile): a copy elsewhere stays.
        this.scheduleDeletion(address.workerId, blockId);
      } else this.addLocation(blockId, address.workerId);
    }
    this.recheckAllReplication();
    this.log.info({ workerId: address.workerId, rack: address.rack, blocks: blockIds.length, orphans: orphans.length }, 'datanode registered');
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
   * Drops the worker's replicas of the blocks of files `inScope` accepts, each only while another
   * live replica remains (a node leaving an MR-cluster). Returns the blocks it had to keep.
   */
  dropReplicas(workerId: string, inScope: (path: string) => boolean): string[] {
    const kept: string[] = [];
    for (const blockId of [...(this.datanodes.get(workerId)?.blocks ?? [])]) {
      const path = this.blockOwner.get(blockId);
      if (path === undefined || !inScope(path)) continue;
      const others = [...(this.locations.get(blockId) ?? [])].filter((w) => w !== workerId && this.datanodes.has(w)).length;
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

  /** The files under `path` with their blocks and live replicas (`minimr fs fsck`, see fsck.ts). */
  async fsck(path = '/'): Promise<FsckReport> {
    validatePath(path);
    this.visibleInode(path);
    const files: FsckFile[] = [];
    let directories = 0;
    for (const p of this.subtree(path).sort()) {
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
      files.push({ path: p, length: blocks.reduce((sum, b) => sum + b.length, 0), replication: inode.replication, blocks });
    }
    return fsckReport(path, files, directories, this.datanodes.size);
  }

  datanodeLost(workerId: string): void {
    const state = this.datanodes.get(workerId);
    if (!state) return;
    this.datanodes.delete(workerId);
    this.deletions.delete(workerId);
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

  /** Blocks this worker should delete; each is handed out once (piggybacked on a heartbeat reply). */
  takeBlockDeletions(workerId: string): string[] {
    const pending = this.deletions.get(workerId);
    if (!pending) return [];
    this.deletions.delete(workerId);
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
        nodes: this.placementNodes(this.blockOwner.get(blockId)),
        count: missing,
        existing: holders.map((w) => this.datanodes.get(w)!.address),
      });
      if (targets.length === 0) continue;
      this.replicationInFlight.set(blockId, { source: workerId, targets: targets.map((t) => t.workerId), expires: now + this.replicationTimeoutMs });
      work.push({ blockId, targets });
    }
    return work;
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

  private fileUnderConstruction(path: string): FileInode {
    const inode = this.inodes.get(path);
    if (inode?.type !== 'file' || !inode.underConstruction) {
      throw new MinimrError('ENOENT', `no file being written at ${path}`, { path });
    }
    return inode;
  }

  private requireParentDir(path: string): void {
    const parent = parentOf(path);
    const inode = this.inodes.get(parent);
    if (!inode) throw new MinimrError('ENOENT', `parent directory does not exist: ${parent}`, { path: parent });
    if (inode.type !== 'dir') throw new MinimrError('ENOTDIR', `not a directory: ${parent}`, { path: parent });
  }

  private planMkdirs(path: string, changes: Map<string, Inode | null>): void {
    const now = Date.now();
    let prefix = '';
    for (const segment of path === '/' ? [] : path.slice(1).split('/')) {
      prefix = `${prefix}/${segment}`;
      const inode = changes.get(prefix) ?? this.inodes.get(prefix);
      if (!inode) changes.set(prefix, { type: 'dir', mtime: now });
      else if (inode.type !== 'dir') throw new MinimrError('ENOTDIR', `not a directory: ${prefix}`, { path: prefix });
    }
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
      ops.push(inode ? { type: 'put', key: INODE_PREFIX + path, value: inode } : { type: 'del', key: INODE_PREFIX + path });
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

  /** Forgets the blocks of files that left the namespace (`paths` for blocks still being written) and deletes their replicas. */
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

  /** Whether a copy of the block on `workerId` is one its scope does not let it keep while a live replica is elsewhere. */
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
    return [...this.datanodes.values()].filter((d) => !storers || storers.has(d.address.workerId)).map((d) => ({
      address: d.address,
      blockCount: d.blocks.size + (pendingLoad.get(d.address.workerId) ?? 0),
    }));
  }

  private statusOf(path: string, inode: Inode): FileStatus {
    if (inode.type === 'dir') return { path, type: 'dir', length: 0, replication: 0, blockSize: 0, mtime: inode.mtime };
    const length = inode.blocks.reduce((sum, b) => sum + b.length, 0);
    return { path, type: 'file', length, replication: inode.replication, blockSize: inode.blockSize, mtime: inode.mtime };
  }
}
