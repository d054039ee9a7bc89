/**
 * MR-clusters (FAWKES) in the books: logical MapReduce frameworks sharing one pool of workers, each
 * with its own FIFO job queue (its jobs, in submission order), its own output blocks and its own
 * nodes. The rules, in one place for the JobTracker and the simulator:
 *
 * - Admission: a request waits in one global FIFO queue until its minimum share plus the admitted
 *   clusters' minimum shares fit the live pool; only the head is ever admitted, so a big request
 *   is not overtaken. An admitted cluster gets free nodes (the pool's workers in no MR-cluster) as
 *   core nodes, spread over racks, up to its minimum share; what free nodes cannot give, a policy
 *   moves from clusters above their minimum. With its minimum share it loads its input (an effect
 *   the engine carries out, then `inputLoaded`) and is active.
 * - Node kinds: core nodes store the cluster's input and output, transient-core nodes only the
 *   output they produce, transient nodes nothing. An output block's first replica is its writer
 *   when the writer stores, the others go to core nodes (HDFS's rack-aware choice among them), so a
 *   cluster's blocks live only on its core and transient-core nodes.
 * - Shrink: a node leaving a cluster has its running attempts killed (re-run elsewhere in the
 *   cluster, not counted as failures) and the map outputs it held re-run where a reduce still needs
 *   them, as if it were lost to that cluster. Instant preemption moves it at once unless it holds
 *   the last replica of a block; delayed preemption first copies every block it holds onto the
 *   cluster's remaining storing nodes (core first, the least loaded). Either way a node never
 *   leaves holding the last replica of a block: those are copied first, and the node drains (it
 *   takes no launches) until the engine reports every copy landed (`blockCopied`). Core nodes never
 *   go below the minimum share and transient-core nodes leave in non-decreasing order of stored
 *   bytes: both are checked on the decision list (src/scheduler/mr-cluster-checks.ts).
 * - Deactivation: an active cluster without jobs is deactivated on a policy's decision; its output
 *   is saved to persistent storage (an effect, then `outputSaved`), then its nodes return to the
 *   pool, and the head of the queue is admitted if it now fits.
 *
 * The book is in use from the first request on; before that, a worker's or a job's cluster is a
 * label only, as it was before MR-clusters existed.
 */
import { MinimrError } from '../errors.js';
import { FREE_POOL, type MrClusterState, type MrClusterView, type NodeKind } from '../scheduler/index.js';
import { chooseTargets, type DatanodeAddress } from '../storage/index.js';
import type { AttemptRecord, Effect, EngineData, JobRecord, WorkerRecord } from './records.js';

export interface MrClusterRequest {
  readonly name: string;
  /** Minimum share: core nodes the cluster keeps while it has jobs. */
  readonly minNodes: number;
  /** Bytes of the input data set loaded onto its core nodes at activation; default 0. */
  readonly inputBytes?: number;
}

export interface MrClusterOptions {
  /** Replicas of each output block, the writer's first when it stores; default 3. */
  readonly outputReplication?: number;
  /** Output is stored in blocks of at most this size; default 64 MiB. */
  readonly blockBytes?: number;
  /** What one storing node can hold, for DU (output bytes / storage capacity); default 1 TiB. */
  readonly storagePerNodeBytes?: number;
  /**
   * The engine has a real block store and reports its blocks (`blockStored`, `replicaAdded`,
   * `replicaRemoved`, `blockRemoved`) instead of the books placing output blocks of a task's
   * output bytes themselves; default false (the simulator). The JobTracker's NameNode places a
   * cluster's blocks by the same node kinds (src/runtime/mr-cluster-runtime.ts).
   */
  readonly engineBlocks?: boolean;
}

export interface StoredBlock {
  readonly id: string;
  readonly cluster: string;
  readonly jobId: string;
  readonly bytes: number;
  /** Members of the cluster holding a replica, in the order they got it. */
  readonly replicas: string[];
  /** Input of the cluster (loaded at activation, or written without a job): on core nodes, not output (DU). */
  readonly input?: boolean;
}

export interface MrClusterRecord {
  readonly name: string;
  readonly minNodes: number;
  readonly inputBytes: number;
  state: MrClusterState;
  readonly requestedAt: number;
  admittedAt?: number;
  activeSince?: number;
  jobsCompleted: number;
  tasksCompleted: number;
  /** Jobs submitted and not ended. */
  activeJobs: number;
  /** Bytes of its output blocks, each counted once. */
  storedBytes: number;
  readonly blocks: Map<string, StoredBlock>;
  /** @internal its input is being loaded */
  loading: boolean;
  /** @internal snapshot cache */
  view: MrClusterView | null;
}

/** Blocks of a cluster (or of all) and how well they are replicated, as `fs fsck` reports them. */
export interface BlockReport {
  readonly blocks: number;
  readonly bytes: number;
  readonly replicas: number;
  /** Blocks with fewer replicas than the output replication. */
  readonly underReplicated: number;
  /** Blocks that have no replica left (only a lost worker can do that). */
  readonly missing: readonly StoredBlock[];
}

/** What the MR-cluster book needs from the rest of the books. */
export interface MrClusterHost<D extends EngineData> {
  /** Live workers in id order. */
  liveWorkers(): readonly WorkerRecord<D>[];
  worker(id: string): WorkerRecord<D> | undefined;
  /**
   * Kills the worker's running attempts (not counted) and re-runs the map outputs it held that a reduce still needs.
   */
  evict(w: WorkerRecord<D>, why: string, now: number, effects: Effect<D>[]): void;
  /** Puts the worker in another cluster; its view and the capacity bookkeeping follow. */
  relabel(w: WorkerRecord<D>, cluster: string): void;
  /** Something the worker's view shows changed. */
  touched(w: WorkerRecord<D>): void;
}

interface Member {
  readonly cluster: string;
  readonly kind: NodeKind;
  storedBytes: number;
  readonly blocks: Set<StoredBlock>;
  leaving: Leaving | null;
}

interface Leaving {
  readonly to: string;
  readonly kind: NodeKind | undefined;
  /** Block id -> the worker its copy is on its way to. */
  readonly copies: Map<string, string>;
}

const MiB = 1024 * 1024;

export class MrClusters<D extends EngineData = EngineData> {
  private readonly outputReplication: number;
  private readonly blockBytes: number;
  private readonly storagePerNodeBytes: number;
  private readonly engineBlocks: boolean;
  /** In request order. */
  private readonly records = new Map<string, MrClusterRecord>();
  private readonly queue: MrClusterRecord[] = [];
  private readonly members = new Map<string, Member>();
  private readonly blockMap = new Map<string, StoredBlock>();
  /** Bytes of drain copies on their way to each worker. */
  private readonly incoming = new Map<string, number>();
  private readonly missing: StoredBlock[] = [];
  private blockSeq = 0;
  private used = false;
  private viewList: readonly MrClusterView[] = [];
  private viewsDirty = true;

  constructor(
    private readonly host: MrClusterHost<D>,
    options: MrClusterOptions = {},
  ) {
    this.outputReplication = options.outputReplication ?? 3;
    this.blockBytes = options.blockBytes ?? 64 * MiB;
    this.storagePerNodeBytes = options.storagePerNodeBytes ?? 1024 * 1024 * MiB;
    this.engineBlocks = options.engineBlocks ?? false;
    if (!Number.isInteger(this.outputReplication) || this.outputReplication < 1) {
      throw new MinimrError(
        'EBADCONF',
        `MR-clusters: output replication must be a whole number >= 1, got ${this.outputReplication}`,
      );
    }
    if (!(this.blockBytes > 0))
      throw new MinimrError('EBADCONF', `MR-clusters: block size must be positive, got ${this.blockBytes}`);
  }

  /** Whether an MR-cluster was ever requested: from then on a job's cluster must exist. */
  get inUse(): boolean {
    return this.used;
  }

  cluster(name: string): MrClusterRecord | undefined {
    return this.records.get(name);
  }

  /** Requested clusters not yet released, in request order. */
  clusters(): IterableIterator<MrClusterRecord> {
    return this.records.values();
  }

  nodeKind(workerId: string): NodeKind | undefined {
    return this.members.get(workerId)?.kind;
  }

  /** Live core nodes of the cluster (where its input lives), in id order. */
  coreNodes(name: string): string[] {
    return this.memberWorkers(name)
      .filter(({ m }) => m.kind === 'core')
      .map(({ w }) => w.shape.id);
  }

  // ---- requests and admission --------------------------------------------------------------------

  /**
   * Asks for an MR-cluster: it joins the global FIFO queue and is admitted at once when its
   * minimum share fits (`queueReason` says why it waits otherwise).
   */
  request(req: MrClusterRequest, now: number): Effect<D>[] {
    const name = req.name;
    if (typeof name !== 'string' || name === '' || name === FREE_POOL) {
      throw new MinimrError(
        'EBADCONF',
        `an MR-cluster needs a name other than "" and "${FREE_POOL}" ` +
          `(the pool of free workers), got ${JSON.stringify(name)}`,
      );
    }
    const known = this.records.get(name);
    if (known) throw new MinimrError('EBADCONF', `MR-cluster "${name}" is already ${known.state}`, { cluster: name });
    if (!Number.isInteger(req.minNodes) || req.minNodes < 1) {
      throw new MinimrError(
        'EBADCONF',
        `MR-cluster "${name}": its minimum share must be a whole number of nodes >= 1, got ${req.minNodes}`,
        { cluster: name },
      );
    }
    const inputBytes = req.inputBytes ?? 0;
    if (!(inputBytes >= 0))
      throw new MinimrError('EBADCONF', `MR-cluster "${name}": input bytes must be >= 0, got ${inputBytes}`, {
        cluster: name,
      });
    this.used = true;
    const c: MrClusterRecord = {
      name,
      minNodes: req.minNodes,
      inputBytes,
      state: 'queued',
      requestedAt: now,
      jobsCompleted: 0,
      tasksCompleted: 0,
      activeJobs: 0,
      storedBytes: 0,
      blocks: new Map(),
      loading: false,
      view: null,
    };
    this.records.set(name, c);
    this.queue.push(c);
    this.viewsDirty = true;
    const effects: Effect<D>[] = [{ kind: 'mr-cluster', cluster: c, from: 'new', to: 'queued' }];
    this.admit(now, effects);
    return effects;
  }

  /** Why a queued cluster waits, in words a user can act on; undefined when it is not queued. */
  queueReason(name: string): string | undefined {
    const c = this.records.get(name);
    if (c?.state !== 'queued') return undefined;
    const ahead = this.queue.indexOf(c);
    if (ahead > 0)
      return (
        `MR-cluster ${name} waits behind ${ahead} earlier request(s) in ` +
        `the FIFO queue (head: ${this.queue[0]!.name})`
      );
    const admitted = this.admittedMinimum();
    const pool = this.host.liveWorkers().length;
    return (
      `MR-cluster ${name} waits in the queue: its minimum share ` +
      `of ${c.minNodes} nodes plus the ${admitted} the admitted ` +
      `clusters keep exceeds the pool of ${pool} live workers`
    );
  }

  private admittedMinimum(): number {
    let sum = 0;
    for (const c of this.records.values()) if (c.state !== 'queued') sum += c.minNodes;
    return sum;
  }

  private admit(now: number, effects: Effect<D>[]): void {
    const pool = this.host.liveWorkers().length;
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (this.admittedMinimum() + head.minNodes > pool) break;
      this.queue.shift();
      head.admittedAt = now;
      this.setState(head, 'activating', effects);
    }
    this.fillMinimums(now, effects);
  }

  /** Free nodes go, as core nodes, to admitted clusters below their minimum share, in request order. */
  private fillMinimums(now: number, effects: Effect<D>[]): void {
    let free: WorkerRecord<D>[] | null = null;
    for (const c of this.records.values()) {
      if (c.state !== 'activating' && c.state !== 'active') continue;
      let cores = this.coreCount(c.name);
      if (cores < c.minNodes) {
        free ??= this.host.liveWorkers().filter((w) => w.cluster === FREE_POOL && !this.members.has(w.shape.id));
        for (; cores < c.minNodes && free.length > 0; cores++) {
          const w = this.spreadPick(c.name, free);
          free.splice(free.indexOf(w), 1);
          this.arrive(w, c.name, 'core', now, effects);
        }
      }
      this.maybeLoad(c, now, effects);
    }
  }

  /**
   * The free worker on the rack where the cluster has the fewest nodes, lowest id first: its input spreads over racks.
   */
  private spreadPick(cluster: string, free: readonly WorkerRecord<D>[]): WorkerRecord<D> {
    const perRack = new Map<string, number>();
    for (const { w } of this.memberWorkers(cluster)) perRack.set(w.shape.rack, (perRack.get(w.shape.rack) ?? 0) + 1);
    let best = free[0]!;
    for (const w of free) if ((perRack.get(w.shape.rack) ?? 0) < (perRack.get(best.shape.rack) ?? 0)) best = w;
    return best;
  }

  private maybeLoad(c: MrClusterRecord, now: number, effects: Effect<D>[]): void {
    if (c.state !== 'activating' || c.loading || this.coreCount(c.name) < c.minNodes) return;
    c.loading = true;
    if (c.inputBytes > 0)
      effects.push({ kind: 'load-input', cluster: c, bytes: c.inputBytes, workerIds: this.coreNodes(c.name) });
    else this.activate(c, now, effects);
  }

  /** The cluster's input is on its core nodes: it is active. */
  inputLoaded(name: string, now: number): Effect<D>[] {
    const c = this.records.get(name);
    const effects: Effect<D>[] = [];
    if (c?.state === 'activating' && c.loading) this.activate(c, now, effects);
    return effects;
  }

  private activate(c: MrClusterRecord, now: number, effects: Effect<D>[]): void {
    c.activeSince = now;
    this.setState(c, 'active', effects);
  }

  private setState(c: MrClusterRecord, to: MrClusterState, effects: Effect<D>[]): void {
    const from = c.state;
    c.state = to;
    this.dirty(c);
    effects.push({ kind: 'mr-cluster', cluster: c, from, to });
  }

  private dirty(c: MrClusterRecord): void {
    c.view = null;
    this.viewsDirty = true;
  }

  // ---- jobs --------------------------------------------------------------------------------------

  /** A job joins its cluster's queue; `ENOMRCLUSTER` when MR-clusters are in use and it names none that takes jobs. */
  jobSubmitted(job: JobRecord<D>): void {
    if (!this.used || job.cluster === FREE_POOL) return;
    const c = this.records.get(job.cluster);
    if (!c || c.state === 'deactivating') {
      const known = [...this.records.values()].filter((r) => r.state !== 'deactivating').map((r) => r.name);
      throw new MinimrError(
        'ENOMRCLUSTER',
        `job ${job.id}: MR-cluster "${job.cluster}" ` +
          `is ${c ? 'being deactivated' : 'unknown'}; MR-clusters taking ` +
          `jobs: ${known.join(', ') || 'none'}`,
        { jobId: job.id, cluster: job.cluster },
      );
    }
    c.activeJobs++;
    this.dirty(c);
  }

  jobEnded(job: JobRecord<D>): void {
    const c = this.records.get(job.cluster);
    if (!c) return;
    c.activeJobs--;
    if (job.state === 'succeeded') c.jobsCompleted++;
    this.dirty(c);
  }

  /**
   * A task of the cluster succeeded; with `outputBytes` of job output (a reduce's, a map-only
   * map's), that output is now blocks of the cluster, placed by the node kinds.
   */
  taskSucceeded(attempt: AttemptRecord<D>, outputBytes: number): void {
    const job = attempt.task.job;
    const c = this.records.get(job.cluster);
    if (!c) return;
    c.tasksCompleted++;
    this.dirty(c);
    if (this.engineBlocks) return;
    for (let left = outputBytes; left > 0; left -= this.blockBytes) {
      this.storeBlock(c, job.id, Math.min(left, this.blockBytes), attempt.worker);
    }
  }

  private storeBlock(c: MrClusterRecord, jobId: string, bytes: number, writer: WorkerRecord<D>): void {
    const block: StoredBlock = { id: `blk_mrc_${++this.blockSeq}`, cluster: c.name, jobId, bytes, replicas: [] };
    const wm = this.members.get(writer.shape.id);
    const writerStores =
      wm !== undefined && wm.cluster === c.name && wm.kind !== 'transient' && wm.leaving === null && writer.alive;
    const first = writerStores ? [address(writer)] : [];
    const cores = this.memberWorkers(c.name).filter(({ w, m }) => m.kind === 'core' && w !== writer);
    const others = chooseTargets({
      nodes: cores.map(({ w, m }) => ({ address: address(w), blockCount: m.blocks.size })),
      count: this.outputReplication - first.length,
      writer: { workerId: writer.shape.id, rack: writer.shape.rack },
      existing: first,
    });
    c.blocks.set(block.id, block);
    this.blockMap.set(block.id, block);
    c.storedBytes += bytes;
    this.dirty(c);
    for (const a of [...first, ...others]) this.addReplica(block, this.host.worker(a.workerId)!);
  }

  private addReplica(block: StoredBlock, w: WorkerRecord<D>): void {
    const m = this.members.get(w.shape.id)!;
    block.replicas.push(w.shape.id);
    m.blocks.add(block);
    m.storedBytes += block.bytes;
    this.host.touched(w);
  }

  private dropReplica(block: StoredBlock, w: WorkerRecord<D>): void {
    const m = this.members.get(w.shape.id);
    const i = block.replicas.indexOf(w.shape.id);
    if (i >= 0) block.replicas.splice(i, 1);
    if (m?.blocks.delete(block)) {
      m.storedBytes -= block.bytes;
      this.host.touched(w);
    }
    if (block.replicas.length === 0 && this.blockMap.delete(block.id)) {
      const c = this.records.get(block.cluster);
      c?.blocks.delete(block.id);
      if (c && !block.input) c.storedBytes -= block.bytes;
      this.missing.push(block);
    }
  }

  // ---- an engine's real blocks (engineBlocks) ----------------------------------------------------

  /**
   * A block the engine wrote into the cluster's namespace, with its replicas
   * (only the cluster's storing members count).
   */
  blockStored(
    cluster: string,
    block: { readonly id: string; readonly bytes: number; readonly jobId: string; readonly input: boolean },
    workerIds: readonly string[],
  ): void {
    const c = this.records.get(cluster);
    if (!c || this.blockMap.has(block.id)) return;
    const stored: StoredBlock = {
      id: block.id,
      cluster,
      jobId: block.jobId,
      bytes: block.bytes,
      replicas: [],
      ...(block.input ? { input: true } : {}),
    };
    c.blocks.set(stored.id, stored);
    this.blockMap.set(stored.id, stored);
    if (!block.input) c.storedBytes += block.bytes;
    this.dirty(c);
    for (const id of workerIds) this.replicaAdded(block.id, id);
  }

  /** A replica of a known block landed outside a drain (the engine's re-replication). */
  replicaAdded(blockId: string, workerId: string): void {
    const block = this.blockMap.get(blockId);
    const m = this.members.get(workerId);
    const w = this.host.worker(workerId);
    if (
      !block ||
      !m ||
      !w?.alive ||
      m.cluster !== block.cluster ||
      m.kind === 'transient' ||
      block.replicas.includes(workerId)
    )
      return;
    this.addReplica(block, w);
  }

  /** A replica is gone (a bad copy dropped); a block left with none is missing. */
  replicaRemoved(blockId: string, workerId: string): void {
    const block = this.blockMap.get(blockId);
    const w = this.host.worker(workerId);
    if (block && w && block.replicas.includes(workerId)) this.dropReplica(block, w);
  }

  /** The block's file was removed: it is no longer the cluster's, and a drain waiting for its copy need not. */
  blockRemoved(blockId: string, now: number): Effect<D>[] {
    const effects: Effect<D>[] = [];
    const block = this.blockMap.get(blockId);
    if (!block) return effects;
    for (const id of block.replicas) {
      const m = this.members.get(id);
      if (m?.blocks.delete(block)) {
        m.storedBytes -= block.bytes;
        const w = this.host.worker(id);
        if (w) this.host.touched(w);
      }
    }
    block.replicas.length = 0;
    this.blockMap.delete(blockId);
    const c = this.records.get(block.cluster);
    if (c) {
      c.blocks.delete(blockId);
      if (!block.input) c.storedBytes -= block.bytes;
      this.dirty(c);
    }
    for (const [id, m] of [...this.members]) {
      if (!m.leaving?.copies.has(blockId)) continue;
      this.copySettled(m.leaving, block, blockId);
      if (m.leaving.copies.size === 0) this.leave(this.host.worker(id)!, now, effects);
    }
    return effects;
  }

  // ---- moves -------------------------------------------------------------------------------------

  /** Carries out a checked `move-node` (see the file's rules). */
  moveNode(
    workerId: string,
    toCluster: string,
    nodeKind: NodeKind | undefined,
    preemption: 'instant' | 'delayed',
    now: number,
    effects: Effect<D>[],
  ): void {
    const w = this.host.worker(workerId)!;
    const m = this.members.get(workerId);
    if (!m) {
      this.arrive(w, toCluster, nodeKind, now, effects);
      return;
    }
    const source = this.records.get(m.cluster)!;
    this.host.evict(w, `worker ${workerId} left MR-cluster ${m.cluster} (${preemption} preemption)`, now, effects);
    const leaving: Leaving = { to: toCluster, kind: nodeKind, copies: new Map() };
    m.leaving = leaving;
    for (const block of m.blocks) {
      const elsewhere = block.replicas.some((id) => id !== workerId && !this.members.get(id)?.leaving);
      if (preemption === 'instant' && elsewhere) continue;
      // A block every remaining storing node already holds needs no copy; one with no replica
      // elsewhere always finds a target, since a cluster's core nodes never all leave.
      this.planCopy(w, leaving, block, undefined, preemption === 'instant' ? 'last-replica' : 'drain', effects);
    }
    this.host.touched(w);
    this.dirty(source);
    if (leaving.copies.size === 0) this.leave(w, now, effects);
  }

  /**
   * Asks for a copy of `block` off the leaving `w`, onto the best target other than `exclude`; false when there is
   * none.
   */
  private planCopy(
    w: WorkerRecord<D>,
    leaving: Leaving,
    block: StoredBlock,
    exclude: string | undefined,
    cause: 'drain' | 'last-replica',
    effects: Effect<D>[],
  ): boolean {
    const target = this.copyTarget(block, exclude);
    if (target === undefined) return false;
    const id = target.shape.id;
    leaving.copies.set(block.id, id);
    this.incoming.set(id, (this.incoming.get(id) ?? 0) + block.bytes);
    effects.push({ kind: 'replicate-block', block, fromWorkerId: w.shape.id, toWorkerId: id, cause });
    return true;
  }

  private copySettled(leaving: Leaving, block: StoredBlock | undefined, blockId: string): void {
    const target = leaving.copies.get(blockId);
    leaving.copies.delete(blockId);
    if (target === undefined || block === undefined) return;
    const left = (this.incoming.get(target) ?? 0) - block.bytes;
    if (left > 0) this.incoming.set(target, left);
    else this.incoming.delete(target);
  }

  /**
   * Where a copy of `block` goes: a storing node of its cluster that stays and lacks it, core first, then the least
   * loaded.
   */
  private copyTarget(block: StoredBlock, exclude?: string): WorkerRecord<D> | undefined {
    let best: { w: WorkerRecord<D>; core: boolean; load: number } | undefined;
    for (const { w, m } of this.memberWorkers(block.cluster)) {
      const id = w.shape.id;
      if (m.kind === 'transient' || id === exclude || block.replicas.includes(id)) continue;
      const core = m.kind === 'core';
      const load = m.storedBytes + (this.incoming.get(id) ?? 0);
      if (!best || (core && !best.core) || (core === best.core && load < best.load)) best = { w, core, load };
    }
    return best?.w;
  }

  /**
   * A drain copy landed on `workerId`: it is a replica from now on, and the drained node leaves after its last copy.
   */
  blockCopied(blockId: string, workerId: string, now: number): Effect<D>[] {
    const effects: Effect<D>[] = [];
    const found = this.drainOf(blockId, workerId);
    if (!found) return effects;
    const { w, leaving } = found;
    const block = this.blockMap.get(blockId);
    const target = this.members.get(workerId);
    const holder = this.host.worker(workerId);
    if (
      block &&
      target &&
      holder?.alive &&
      target.cluster === block.cluster &&
      target.kind !== 'transient' &&
      target.leaving === null
    ) {
      this.copySettled(leaving, block, blockId);
      if (!block.replicas.includes(workerId)) this.addReplica(block, holder);
    } else {
      // The target left, or died, while the copy was on its way: copy again elsewhere.
      this.recopy(w, leaving, blockId, workerId, effects);
    }
    if (leaving.copies.size === 0) this.leave(w, now, effects);
    return effects;
  }

  /** A drain copy could not be made: it is made again, onto another node when there is one. */
  blockCopyFailed(blockId: string, workerId: string, now: number): Effect<D>[] {
    const effects: Effect<D>[] = [];
    const found = this.drainOf(blockId, workerId);
    if (!found) return effects;
    this.recopy(found.w, found.leaving, blockId, workerId, effects);
    if (found.leaving.copies.size === 0) this.leave(found.w, now, effects);
    return effects;
  }

  private drainOf(blockId: string, target: string): { w: WorkerRecord<D>; leaving: Leaving } | undefined {
    for (const [id, m] of this.members) {
      if (m.leaving?.copies.get(blockId) === target) return { w: this.host.worker(id)!, leaving: m.leaving };
    }
    return undefined;
  }

  private recopy(w: WorkerRecord<D>, leaving: Leaving, blockId: string, failedOn: string, effects: Effect<D>[]): void {
    const block = this.blockMap.get(blockId);
    this.copySettled(leaving, block, blockId);
    if (block && !this.planCopy(w, leaving, block, failedOn, 'drain', effects))
      this.planCopy(w, leaving, block, undefined, 'drain', effects);
  }

  /** The drained node leaves its cluster: its replicas are dropped there and it arrives where it was moved. */
  private leave(w: WorkerRecord<D>, now: number, effects: Effect<D>[]): void {
    const m = this.members.get(w.shape.id)!;
    const source = this.records.get(m.cluster);
    for (const block of [...m.blocks]) this.dropReplica(block, w);
    this.members.delete(w.shape.id);
    if (source) this.dirty(source);
    this.arrive(w, m.leaving?.to ?? FREE_POOL, m.leaving?.kind, now, effects);
  }

  /** `w`, in no MR-cluster now, joins `to` (the free pool when `to` no longer takes nodes). */
  private arrive(w: WorkerRecord<D>, to: string, kind: NodeKind | undefined, now: number, effects: Effect<D>[]): void {
    const from = w.cluster;
    const c = this.records.get(to);
    if (!c || c.state === 'queued' || c.state === 'deactivating') {
      this.host.relabel(w, FREE_POOL);
      if (from !== FREE_POOL) effects.push({ kind: 'worker-moved', worker: w, from });
      this.fillMinimums(now, effects);
      return;
    }
    const nodeKind = kind ?? (this.coreCount(c.name) < c.minNodes ? 'core' : 'transient');
    this.members.set(w.shape.id, { cluster: c.name, kind: nodeKind, storedBytes: 0, blocks: new Set(), leaving: null });
    this.host.relabel(w, c.name);
    this.dirty(c);
    effects.push({ kind: 'worker-moved', worker: w, from });
    this.maybeLoad(c, now, effects);
  }

  // ---- deactivation ------------------------------------------------------------------------------

  /** Carries out a checked `deactivate-cluster`: the output is saved first (an effect, then `outputSaved`). */
  deactivate(name: string, now: number, effects: Effect<D>[]): void {
    const c = this.records.get(name)!;
    this.setState(c, 'deactivating', effects);
    if (c.storedBytes > 0) effects.push({ kind: 'save-output', cluster: c, bytes: c.storedBytes });
    else this.release(c, now, effects);
  }

  /** The cluster's output is in persistent storage: its nodes return to the pool and the queue moves. */
  outputSaved(name: string, now: number): Effect<D>[] {
    const c = this.records.get(name);
    const effects: Effect<D>[] = [];
    if (c?.state === 'deactivating') this.release(c, now, effects);
    return effects;
  }

  private release(c: MrClusterRecord, now: number, effects: Effect<D>[]): void {
    for (const { w } of this.memberWorkers(c.name, true)) {
      this.members.delete(w.shape.id);
      this.host.relabel(w, FREE_POOL);
      effects.push({ kind: 'worker-moved', worker: w, from: c.name });
    }
    for (const id of c.blocks.keys()) this.blockMap.delete(id);
    this.records.delete(c.name);
    this.viewsDirty = true;
    effects.push({ kind: 'mr-cluster', cluster: c, from: 'deactivating', to: 'released' });
    this.admit(now, effects);
  }

  // ---- workers -----------------------------------------------------------------------------------

  /** A worker joined (the books set its cluster from its shape): a member of an admitted cluster is a core node. */
  workerJoined(w: WorkerRecord<D>, now: number): Effect<D>[] {
    const effects: Effect<D>[] = [];
    if (!this.used) return effects;
    const c = this.records.get(w.cluster);
    if (c && c.state !== 'queued' && c.state !== 'deactivating') {
      this.members.set(w.shape.id, { cluster: c.name, kind: 'core', storedBytes: 0, blocks: new Set(), leaving: null });
      this.dirty(c);
    } else if (w.cluster !== FREE_POOL) {
      this.host.relabel(w, FREE_POOL);
    }
    this.admit(now, effects);
    return effects;
  }

  /**
   * A worker is gone: its replicas with it (a block left with none is missing), and its place in
   * its cluster, which a free node takes when the cluster is now below its minimum share.
   */
  workerLost(w: WorkerRecord<D>, now: number, effects: Effect<D>[]): void {
    const m = this.members.get(w.shape.id);
    if (!m) return;
    for (const blockId of [...(m.leaving?.copies.keys() ?? [])])
      this.copySettled(m.leaving!, this.blockMap.get(blockId), blockId);
    for (const block of [...m.blocks]) this.dropReplica(block, w);
    this.members.delete(w.shape.id);
    const c = this.records.get(m.cluster);
    if (c) this.dirty(c);
    this.host.relabel(w, FREE_POOL);
    this.fillMinimums(now, effects);
  }

  // ---- views -------------------------------------------------------------------------------------

  /** The MR-cluster fields of a worker's view. */
  workerFields(workerId: string): { nodeKind?: NodeKind; storedBytes?: number; leavingFor?: string } {
    const m = this.members.get(workerId);
    if (!m) return {};
    return { nodeKind: m.kind, storedBytes: m.storedBytes, ...(m.leaving ? { leavingFor: m.leaving.to } : {}) };
  }

  views(freeze: <T>(value: T) => T): readonly MrClusterView[] {
    if (!this.viewsDirty) return this.viewList;
    const list: MrClusterView[] = [];
    for (const c of this.records.values()) {
      c.view ??= freeze({
        name: c.name,
        state: c.state,
        minNodes: c.minNodes,
        requestedAt: c.requestedAt,
        ...(c.activeSince !== undefined ? { activeSince: c.activeSince } : {}),
        jobsCompleted: c.jobsCompleted,
        tasksCompleted: c.tasksCompleted,
        storedBytes: c.storedBytes,
        storageBytes:
          this.memberWorkers(c.name).filter(({ m }) => m.kind !== 'transient').length * this.storagePerNodeBytes,
      });
      list.push(c.view);
    }
    this.viewList = freeze(list);
    this.viewsDirty = false;
    return this.viewList;
  }

  /** The cluster's blocks (every cluster's without a name) and their replication, as `fs fsck` reports them. */
  blockReport(name?: string): BlockReport {
    let blocks = 0;
    let bytes = 0;
    let replicas = 0;
    let underReplicated = 0;
    for (const b of this.blockMap.values()) {
      if (name !== undefined && b.cluster !== name) continue;
      blocks++;
      bytes += b.bytes;
      replicas += b.replicas.length;
      if (b.replicas.length < this.outputReplication) underReplicated++;
    }
    const missing = this.missing.filter((b) => name === undefined || b.cluster === name);
    return { blocks, bytes, replicas, underReplicated, missing };
  }

  // ---- helpers -----------------------------------------------------------------------------------

  /** Live members of the cluster (with `withLeaving`, those draining out too), in id order. */
  private memberWorkers(cluster: string, withLeaving = false): Array<{ w: WorkerRecord<D>; m: Member }> {
    const out: Array<{ w: WorkerRecord<D>; m: Member }> = [];
    for (const w of this.host.liveWorkers()) {
      const m = this.members.get(w.shape.id);
      if (m && m.cluster === cluster && (withLeaving || m.leaving === null)) out.push({ w, m });
    }
    return out;
  }

  private coreCount(cluster: string): number {
    let n = 0;
    for (const { m } of this.memberWorkers(cluster)) if (m.kind === 'core') n++;
    return n;
  }
}

function address(w: WorkerRecord): DatanodeAddress {
  return { workerId: w.shape.id, host: w.shape.host, dataPort: 0, rack: w.shape.rack };
}
