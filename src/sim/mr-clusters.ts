/**
 * The simulator's side of MR-clusters (FAWKES). The books decide (admission, node kinds, block
 * placement, what a shrink must copy); this models how long it takes and records it:
 *
 * - A job of a workload's MR-cluster is held until its cluster is active; its arrival requests
 *   the cluster when it is not (again, after a deactivation). Its maps' input lives on the
 *   cluster's core nodes.
 * - Activation loads the input data set: `replication` copies of its bytes written by the core
 *   nodes at their disk rates, in parallel.
 * - A block copied off a leaving node (delayed preemption, or the last replica under instant
 *   preemption) takes bytes / the slowest of the source's disk, the target's disk and the network
 *   (the rack rate within a rack, the off-rack rate across racks); a node's copies go one after
 *   another (one disk), so a drain lasts as long as its node's stored bytes take to read.
 * - Deactivation saves the cluster's output to persistent storage outside its nodes: every
 *   storing node uploads at the off-rack rate, in parallel.
 * - The core nodes' disks serve every remote read and write of their cluster: a map reading input
 *   off its node, and the replicas an attempt's output sends to core nodes (all of them from a
 *   transient node; all but its own from a core or transient-core node). An attempt's remote I/O
 *   gets min(network rate, the cluster's core disk rate / the remote streams running, its own
 *   included), fixed at its launch and held for its whole run: a first-order model of the core
 *   disk contention that makes transient nodes costly for I/O-heavy jobs (the paper's Sort).
 */
import type { Books, EngineData, Effect, AttemptRecord } from '../books/index.js';
import type { MrClusterCount, MrClusterDrain, MrClusterRunRecord, MrClusterSample } from '../metrics/index.js';
import type { BalanceSample } from '../scheduler/index.js';
import { RackIndex, transferMs } from './model.js';
import type { SimSettings } from './types.js';
import type { MrClusterSpec, WorkerShape } from '../workloads/index.js';

export type MrClusterSimEvent =
  | { readonly kind: 'input-loaded'; readonly cluster: string }
  | { readonly kind: 'block-copied'; readonly blockId: string; readonly toWorkerId: string }
  | { readonly kind: 'output-saved'; readonly cluster: string };

/** What the simulator lends: its books, its clock and event queue, and its way of admitting a held job. */
export interface MrClusterSimHost<D extends EngineData, J> {
  readonly books: Books<D>;
  now(): number;
  push(time: number, event: MrClusterSimEvent): void;
  carryOut(effects: readonly Effect<D>[]): void;
  /** Submits a job that was held to the books. */
  admit(job: J): void;
  /** Whether a job has started (launched a task) yet. */
  started(job: J): boolean;
}

/** What an attempt's remote I/O costs on an MR-cluster, and the streams it holds on the core disks. */
export interface MrClusterIo {
  readonly cluster: string;
  readonly streams: number;
  readonly readMs: number;
  readonly writeMs: number;
}

export class MrClusterSim<D extends EngineData, J> {
  private readonly specs: ReadonlyMap<string, MrClusterSpec>;
  private readonly held = new Map<string, J[]>();
  private heldCount = 0;
  /** Remote streams running on each cluster's core disks. */
  private readonly streams = new Map<string, number>();
  /** When each node's disk is done with the copies already asked of it. */
  private readonly copyFreeAt = new Map<string, number>();
  private readonly draining = new Map<
    string,
    { cluster: string; startMs: number; bytes: number; cause: MrClusterDrain['cause'] }
  >();

  private readonly samples: MrClusterSample[] = [];
  private readonly states: Array<MrClusterRunRecord['states'][number]> = [];
  private readonly moves: Array<MrClusterRunRecord['moves'][number]> = [];
  private readonly drains: MrClusterDrain[] = [];
  private copiedBytes = 0;
  private loadedBytes = 0;
  private savedBytes = 0;

  constructor(
    private readonly host: MrClusterSimHost<D, J>,
    specs: readonly MrClusterSpec[],
    private readonly settings: SimSettings,
  ) {
    this.specs = new Map(specs.map((s) => [s.name, s]));
  }

  /** Jobs waiting for their cluster to be active. */
  get waiting(): number {
    return this.heldCount;
  }

  /** Holds a job whose MR-cluster is not active (requesting it when nobody has); false when it may be submitted now. */
  hold(job: J, cluster: string | undefined): boolean {
    if (cluster === undefined || !this.specs.has(cluster)) return false;
    const c = this.host.books.mrClusters.cluster(cluster);
    if (c?.state === 'active') return false;
    const list = this.held.get(cluster) ?? [];
    list.push(job);
    this.held.set(cluster, list);
    this.heldCount++;
    if (!c) this.request(cluster);
    return true;
  }

  private request(name: string): void {
    const spec = this.specs.get(name)!;
    this.host.carryOut(
      this.host.books.mrClusters.request(
        { name, minNodes: spec.minNodes, inputBytes: spec.inputBytes ?? 0 },
        this.host.now(),
      ),
    );
  }

  /** Workers the input of a job of `cluster` is placed on: its core nodes (null: not an MR-cluster job). */
  inputHolders(cluster: string | undefined, shapes: ReadonlyMap<string, WorkerShape>): RackIndex | null {
    if (cluster === undefined || !this.host.books.mrClusters.cluster(cluster)) return null;
    return new RackIndex(this.host.books.mrClusters.coreNodes(cluster).map((id) => shapes.get(id)!));
  }

  // ---- effects and events ------------------------------------------------------------------------

  effect(e: Effect<D>): void {
    const now = this.host.now();
    switch (e.kind) {
      case 'mr-cluster':
        this.states.push({ timeMs: now, cluster: e.cluster.name, from: e.from, to: e.to });
        if (e.to === 'active') this.release(e.cluster.name);
        else if (e.to === 'released' && (this.held.get(e.cluster.name)?.length ?? 0) > 0) this.request(e.cluster.name);
        break;
      case 'load-input': {
        let rate = 0;
        for (const id of e.workerIds) rate += this.diskOf(id);
        this.loadedBytes += e.bytes * this.settings.replication;
        this.host.push(now + (rate > 0 ? transferMs(e.bytes * this.settings.replication, rate) : 0), {
          kind: 'input-loaded',
          cluster: e.cluster.name,
        });
        break;
      }
      case 'replicate-block': {
        const from = this.host.books.worker(e.fromWorkerId)!.shape;
        const to = this.host.books.worker(e.toWorkerId)!.shape;
        const net = from.rack === to.rack ? this.settings.rackMBps : this.settings.offRackMBps;
        const rate = Math.min(this.diskOf(from.id), this.diskOf(to.id), net);
        const start = Math.max(now, this.copyFreeAt.get(from.id) ?? now);
        const end = start + transferMs(e.block.bytes, rate);
        this.copyFreeAt.set(from.id, end);
        this.copiedBytes += e.block.bytes;
        const drain = this.draining.get(from.id) ?? {
          cluster: e.block.cluster,
          startMs: now,
          bytes: 0,
          cause: e.cause,
        };
        drain.bytes += e.block.bytes;
        this.draining.set(from.id, drain);
        this.host.push(end, { kind: 'block-copied', blockId: e.block.id, toWorkerId: to.id });
        break;
      }
      case 'save-output': {
        const storing = this.host.books
          .liveWorkers()
          .filter(
            (w) => w.cluster === e.cluster.name && this.host.books.mrClusters.nodeKind(w.shape.id) !== 'transient',
          );
        const rate = Math.max(1, storing.length) * this.settings.offRackMBps;
        this.savedBytes += e.bytes;
        this.host.push(now + transferMs(e.bytes, rate), { kind: 'output-saved', cluster: e.cluster.name });
        break;
      }
      case 'worker-moved': {
        const id = e.worker.shape.id;
        this.moves.push({ timeMs: now, workerId: id, from: e.from, to: e.worker.cluster, ...this.kindOf(id) });
        const drain = this.draining.get(id);
        if (drain) {
          this.drains.push({
            workerId: id,
            cluster: drain.cluster,
            startMs: drain.startMs,
            endMs: now,
            bytes: drain.bytes,
            cause: drain.cause,
          });
          this.draining.delete(id);
        }
        break;
      }
      default:
        break;
    }
  }

  process(ev: MrClusterSimEvent): void {
    const books = this.host.books;
    const now = this.host.now();
    switch (ev.kind) {
      case 'input-loaded':
        this.host.carryOut(books.mrClusters.inputLoaded(ev.cluster, now));
        break;
      case 'block-copied':
        this.host.carryOut(books.mrClusters.blockCopied(ev.blockId, ev.toWorkerId, now));
        break;
      case 'output-saved':
        this.host.carryOut(books.mrClusters.outputSaved(ev.cluster, now));
        break;
    }
  }

  /** The cluster is active: its held jobs go to the books, in arrival order. */
  private release(cluster: string): void {
    const jobs = this.held.get(cluster) ?? [];
    this.held.delete(cluster);
    this.heldCount -= jobs.length;
    for (const job of jobs) this.host.admit(job);
  }

  private kindOf(workerId: string): { nodeKind?: string } {
    const kind = this.host.books.mrClusters.nodeKind(workerId);
    return kind ? { nodeKind: kind } : {};
  }

  private diskOf(workerId: string): number {
    const disk = this.host.books.worker(workerId)?.shape.diskMBps ?? 0;
    return disk > 0 ? disk : 100;
  }

  // ---- the I/O model -----------------------------------------------------------------------------

  /**
   * The remote I/O of an attempt about to run on an MR-cluster: reading `readBytes` off its node at
   * `netMBps` (0 when its input is local), writing `outputBytes` of job output; null off MR-clusters.
   */
  ioOf(a: AttemptRecord<D>, readBytes: number, netMBps: number, outputBytes: number): MrClusterIo | null {
    const mrc = this.host.books.mrClusters;
    const cluster = a.task.job.cluster;
    if (!mrc.cluster(cluster)) return null;
    const cores = mrc.coreNodes(cluster);
    const writerStores = mrc.nodeKind(a.worker.shape.id) !== 'transient';
    const replication = this.settings.outputReplication ?? this.settings.replication;
    const otherCores = cores.filter((id) => id !== a.worker.shape.id).length;
    const remoteReplicas = outputBytes > 0 ? Math.min(otherCores, replication - (writerStores ? 1 : 0)) : 0;
    const streams = (readBytes > 0 ? 1 : 0) + remoteReplicas;
    if (streams === 0) return { cluster, streams: 0, readMs: 0, writeMs: 0 };
    let disk = 0;
    for (const id of cores) disk += this.diskOf(id);
    const running = (this.streams.get(cluster) ?? 0) + streams;
    const rate = (mbps: number) => Math.min(mbps, disk / running);
    this.streams.set(cluster, running);
    return {
      cluster,
      streams,
      readMs: readBytes > 0 ? transferMs(readBytes, rate(netMBps)) : 0,
      writeMs: remoteReplicas > 0 ? transferMs(outputBytes, rate(this.settings.rackMBps)) : 0,
    };
  }

  /** The attempt ended: its streams leave the core disks. */
  ioDone(io: MrClusterIo | null): void {
    if (io === null || io.streams === 0) return;
    this.streams.set(io.cluster, (this.streams.get(io.cluster) ?? 0) - io.streams);
  }

  // ---- samples and the record --------------------------------------------------------------------

  sample(timeMs: number, jobs: ReadonlyArray<{ readonly cluster: string; readonly job: J }>): void {
    const books = this.host.books;
    const counts = new Map<
      string,
      {
        core: number;
        transient: number;
        transientCore: number;
        leaving: number;
        waitingJobs: number;
        activeJobs: number;
        state: string;
      }
    >();
    const entry = (name: string) => {
      let c = counts.get(name);
      if (!c) {
        c = {
          core: 0,
          transient: 0,
          transientCore: 0,
          leaving: 0,
          waitingJobs: 0,
          activeJobs: 0,
          state: books.mrClusters.cluster(name)?.state ?? 'requested',
        };
        counts.set(name, c);
      }
      return c;
    };
    for (const c of books.mrClusters.clusters()) entry(c.name);
    let freeNodes = 0;
    for (const w of books.liveWorkers()) {
      const kind = books.mrClusters.nodeKind(w.shape.id);
      if (kind === undefined) {
        freeNodes++;
        continue;
      }
      const c = entry(w.cluster);
      if (kind === 'core') c.core++;
      else if (kind === 'transient') c.transient++;
      else c.transientCore++;
      if (books.mrClusters.workerFields(w.shape.id).leavingFor !== undefined) c.leaving++;
    }
    for (const [name, list] of this.held) {
      const c = entry(name);
      c.waitingJobs += list.length;
      c.activeJobs += list.length;
    }
    for (const { cluster, job } of jobs) {
      if (!this.specs.has(cluster)) continue;
      const c = entry(cluster);
      c.activeJobs++;
      if (!this.host.started(job)) c.waitingJobs++;
    }
    const clusters: MrClusterCount[] = [...counts].map(([name, c]) => ({
      name,
      state: c.state,
      nodes: c.core + c.transient + c.transientCore,
      core: c.core,
      transient: c.transient,
      transientCore: c.transientCore,
      leaving: c.leaving,
      waitingJobs: c.waitingJobs,
      activeJobs: c.activeJobs,
    }));
    this.samples.push({ timeMs, clusters, freeNodes });
  }

  record(balance: readonly BalanceSample[] | undefined): MrClusterRunRecord {
    const report = this.host.books.mrClusters.blockReport();
    return {
      samples: this.samples,
      states: this.states,
      moves: this.moves,
      drains: this.drains,
      copiedBytes: this.copiedBytes,
      loadedBytes: this.loadedBytes,
      savedBytes: this.savedBytes,
      balance: balance ?? [],
      blocks: { blocks: report.blocks, underReplicated: report.underReplicated, missing: report.missing.length },
    };
  }
}
