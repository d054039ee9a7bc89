/**
 * YARN's ApplicationMasters as the yarn and yarn-me policies model them (docs/specs/yarn-me.md, "YARN's
 * shape around the loop"). In YARN every application first gets a container for its AM, which holds its
 * memory and cores until the application ends, and the application's tasks are asked for only once the
 * AM runs; DSS, the YARN-ME paper's simulator, gives each job a 1000 MB x 1 core AM. An AM is not a task
 * of minimr's books: the policy places it, keeps its memory and cores aside on its node, and forgets it
 * when its job leaves the snapshot (its last task ended). The JobTracker has no AM process, so on a real
 * cluster the policies run with AMs off (`amMb` 0, createPolicy's 'cluster' engine).
 *
 * Timing, as DSS and YARN's SLS model it (DSS events/yarn/yarn.py), when allocation happens at node
 * heartbeats: an AM polls the RM `amHeartbeatMs` after its job arrived and every `amHeartbeatMs` after;
 * allocated at a node heartbeat, it starts at its next poll. A task container allocated at a node
 * heartbeat is picked up at the AM's next heartbeat and launched at the one after (AM heartbeats keep
 * the phase of its first poll). When a policy allocates wherever capacity frees instead, an AM runs
 * the moment it is placed and tasks launch at once.
 */
import type { JobView, WorkerView } from './types.js';

/** An ApplicationMaster's container: where, how big, and from when its job's tasks may be allocated. */
export interface AppMaster {
  readonly jobId: string;
  readonly nodeId: string;
  readonly memoryMb: number;
  readonly cores: number;
  /** When it runs: its job's tasks are allocated from then, and its heartbeats fall at this phase. */
  readonly runsFromMs: number;
}

/** What the AMs hold on one node. */
export interface AmHolding {
  memoryMb: number;
  cores: number;
}

const NOTHING_HELD: Readonly<AmHolding> = Object.freeze({ memoryMb: 0, cores: 0 });

/** The AMs placed so far, by job and by node. */
export class AppMasters {
  private readonly byJob = new Map<string, AppMaster>();
  private readonly byNode = new Map<string, AmHolding>();
  private heldMb = 0;

  constructor(
    /** Memory and cores of each AM; 0 MB: no AMs are modelled. */
    readonly memoryMb: number,
    readonly cores: number,
    /** AM heartbeat (and first poll) interval; 0: an AM runs when placed and tasks launch at once. */
    readonly heartbeatMs: number,
  ) {}

  get enabled(): boolean {
    return this.memoryMb > 0;
  }

  /** Memory all AMs hold, MB. */
  get totalMb(): number {
    return this.heldMb;
  }

  get count(): number {
    return this.byJob.size;
  }

  of(jobId: string): AppMaster | undefined {
    return this.byJob.get(jobId);
  }

  heldOn(nodeId: string): Readonly<AmHolding> {
    return this.byNode.get(nodeId) ?? NOTHING_HELD;
  }

  /** Whether the job may have tasks allocated now: AMs are off, or its AM runs. */
  runs(jobId: string, now: number): boolean {
    if (!this.enabled) return true;
    const am = this.byJob.get(jobId);
    return am !== undefined && am.runsFromMs <= now;
  }

  /** Whether an ended job's AM is still to be released. */
  get anyRetiring(): boolean {
    return this.retiring.length > 0;
  }

  /** Whether some AM is placed but not running yet (its job is about to ask for tasks). */
  anyStarting(now: number): boolean {
    for (const am of this.byJob.values()) if (am.runsFromMs > now) return true;
    return false;
  }

  /** Places the job's AM on `nodeId` at `now`; `submitMs` sets the phase of its polls. */
  place(job: JobView, nodeId: string, now: number): AppMaster {
    const am: AppMaster = {
      jobId: job.id,
      nodeId,
      memoryMb: this.memoryMb,
      cores: this.cores,
      runsFromMs: this.heartbeatMs > 0 ? nextBeat(job.submitTime + this.heartbeatMs, this.heartbeatMs, now) : now,
    };
    this.byJob.set(job.id, am);
    const held = this.byNode.get(nodeId);
    if (held) {
      held.memoryMb += am.memoryMb;
      held.cores += am.cores;
    } else this.byNode.set(nodeId, { memoryMb: am.memoryMb, cores: am.cores });
    this.heldMb += am.memoryMb;
    return am;
  }

  /** AMs of ended jobs still held, with when each is released (ascending). */
  private readonly retiring: { readonly jobId: string; readonly atMs: number }[] = [];

  /** The AM of an ended job is released at `atMs` (its last heartbeats), or at once when that is past. */
  retire(jobId: string, atMs: number): void {
    let i = this.retiring.length;
    while (i > 0 && this.retiring[i - 1]!.atMs > atMs) i--;
    this.retiring.splice(i, 0, { jobId, atMs });
  }

  /** Releases the retiring AMs due by `now`; they and when each was due. */
  releaseDue(now: number): { readonly am: AppMaster; readonly atMs: number }[] {
    const out: { am: AppMaster; atMs: number }[] = [];
    while (this.retiring.length > 0 && this.retiring[0]!.atMs <= now) {
      const { jobId, atMs } = this.retiring.shift()!;
      const am = this.forget(jobId);
      if (am) out.push({ am, atMs });
    }
    return out;
  }

  /**
   * When an ended job's AM is released (DSS's SLS AM): the node of its last container reports the end
   * at its next heartbeat (`reportedMs`), the AM hears of it at its next heartbeat and lets go one
   * heartbeat later. At once when AM heartbeats are off.
   */
  releaseTimeOf(jobId: string, reportedMs: number): number {
    const am = this.byJob.get(jobId);
    if (!am || this.heartbeatMs <= 0) return reportedMs;
    return nextBeat(am.runsFromMs, this.heartbeatMs, reportedMs) + this.heartbeatMs;
  }

  /** Releases the AM of a job that ended; the AM released, if it had one. */
  forget(jobId: string): AppMaster | undefined {
    const am = this.byJob.get(jobId);
    if (!am) return undefined;
    this.byJob.delete(jobId);
    const held = this.byNode.get(am.nodeId)!;
    held.memoryMb -= am.memoryMb;
    held.cores -= am.cores;
    if (held.memoryMb <= 0 && held.cores <= 0) this.byNode.delete(am.nodeId);
    this.heldMb -= am.memoryMb;
    return am;
  }

  /**
   * How long after `now` a task container allocated now starts working: the AM picks it up at its
   * next heartbeat and launches it at the one after (0 when AMs or their heartbeats are off).
   */
  launchDelayMs(jobId: string, now: number): number {
    const am = this.byJob.get(jobId);
    if (!am || this.heartbeatMs <= 0) return 0;
    return nextBeat(am.runsFromMs, this.heartbeatMs, now) + this.heartbeatMs - now;
  }

  /** A worker as seen with its AMs' memory and cores taken away (the timeline's capacity). */
  withoutAms(w: WorkerView): WorkerView {
    const held = this.byNode.get(w.id);
    if (!held) return w;
    const { maps, reduces } = amSlotKinds(w);
    const less = (n: number, takes: boolean) => (takes ? Math.max(0, n - held.cores) : n);
    return {
      ...w,
      memoryMb: Math.max(0, w.memoryMb - held.memoryMb),
      freeMemoryMb: Math.max(0, w.freeMemoryMb - held.memoryMb),
      mapSlots: less(w.mapSlots, maps),
      freeMapSlots: less(w.freeMapSlots, maps),
      reduceSlots: less(w.reduceSlots, reduces),
      freeReduceSlots: less(w.freeReduceSlots, reduces),
    };
  }

  /** Node -> AMs' memory held there, for reports. */
  holdings(): ReadonlyArray<readonly [string, number]> {
    return [...this.byNode].map(([node, held]) => [node, held.memoryMb] as const);
  }
}

/** The first of the times `first + k * period` (k >= 0) after `now`. */
export function nextBeat(first: number, period: number, now: number): number {
  if (first > now) return first;
  return first + (Math.floor((now - first) / period) + 1) * period;
}

/**
 * The slots an AM's cores take on a worker. A worker with map and reduce slots offers each core as
 * one of each (the YARN-shaped clusters: memory, not the kind, limits tasks), so a core an AM holds
 * is neither; a worker with one kind gives the AM slots of that kind.
 */
export function amSlotKinds(w: Pick<WorkerView, 'mapSlots' | 'reduceSlots'>): { maps: boolean; reduces: boolean } {
  return { maps: w.mapSlots > 0, reduces: w.reduceSlots > 0 };
}
