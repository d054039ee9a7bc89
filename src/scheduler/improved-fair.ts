/**
 * Improved FAIR (Tao, Zhang, Shi, Chen, "Job Scheduling Optimization for Multi-User MapReduce
 * Clusters"): FAIR whose preemption chooses victims by job character and places the starved job's
 * data on the node a kill frees. Shares, delay scheduling, the timeouts and which jobs lose slots
 * are FAIR's; what changes is which attempts of a victim job die, and a `replicate` after each map
 * kill so the starved job's next map on that node reads its input locally.
 */
import {
  type FairOptions,
  DEFAULT_FAIR_OPTIONS,
  FAIR_OPTION_SPECS,
  FairPolicy,
  type SlotHold,
  type VictimContext,
  checkTimeouts,
  mostRecentFirst,
} from './fair.js';
import { definePolicy, parseOptions, type OptionSpecs, type PolicyDefinition, type PolicyOptions } from './options.js';
import type { AttemptView, ClusterSnapshot, Decision, JobStats, JobView, Locality, WorkerView } from './types.js';

export type ImprovedFairOptions = FairOptions & {
  /** A job counts as CPU-bound until this many of its maps have finished (too little to measure). */
  readonly minMapsForCharacter: number;
  /** Emit a `replicate` after each map kill so the freed node holds an owed replica of the starved job's input. */
  readonly placePrivateData: boolean;
  /**
   * How long the freed slot waits for that copy, kept for the map it was made for; then the slot
   * goes to whoever the shares say. A copy lands in a heartbeat or two, but a launch before it
   * lands reads the input over the network and wastes the copy.
   */
  readonly placementWaitMs: number;
};

/**
 * Three maps: one finished map is as likely as not a first-wave outlier (cold caches, a slow
 * start), and three still come in well within the first wave of a job on a cluster of 8-slot nodes.
 */
export const DEFAULT_IMPROVED_FAIR_OPTIONS: ImprovedFairOptions = Object.freeze({
  ...DEFAULT_FAIR_OPTIONS,
  minMapsForCharacter: 3,
  placePrivateData: true,
  placementWaitMs: 3000,
});

const OPTION_SPECS: OptionSpecs<ImprovedFairOptions> = {
  ...FAIR_OPTION_SPECS,
  minMapsForCharacter: {
    type: 'number',
    range: { min: 1, integer: true },
    about: 'a job counts as CPU-bound until this many of its maps have finished',
  },
  placePrivateData: {
    type: 'boolean',
    about: "after each map kill, place a replica the starved job's input still owes on the freed node",
  },
  placementWaitMs: {
    type: 'number',
    range: { min: 0, unit: 'ms' },
    about: 'how long the freed slot waits for that copy, kept for the map it was made for',
  },
};

export function parseImprovedFairOptions(raw: PolicyOptions): ImprovedFairOptions {
  const options = parseOptions('improved-fair', raw, OPTION_SPECS, DEFAULT_IMPROVED_FAIR_OPTIONS);
  checkTimeouts('improved-fair', options);
  return options;
}

export const IMPROVED_FAIR_DEFINITION: PolicyDefinition = definePolicy({
  name: 'improved-fair',
  summary:
    'FAIR whose preemption picks victims by job character (I/O- or ' +
    "CPU-bound, Tao et al.) and places the starved job's private " +
    'input on the node a kill frees',
  options: OPTION_SPECS,
  defaults: DEFAULT_IMPROVED_FAIR_OPTIONS,
  create: (options) => new ImprovedFairPolicy(parseImprovedFairOptions(options)),
});

export type JobCharacter = 'io-bound' | 'cpu-bound';

/** Bytes per millisecond of a disk rate in MB/s (1 MB = 10^6 bytes, as workers measure it). */
const BYTES_PER_MS_PER_MBPS = 1e6 / 1000;

/**
 * The job-character test of docs/specs/fair-and-improved-fair.md, on one node: I/O-bound iff
 * n * (1 + lambda) * MID / DIOR > MTCT, with
 * lambda = map output / map input bytes, MID = mean input bytes per finished map, MTCT = mean
 * finished map time, n = the node's map slots (the maps that share its disk when it is full, which
 * is when preemption happens), DIOR = its disk rate. CPU-bound when fewer than `minMaps` maps have
 * finished, when nothing was read, or when the disk rate is unknown (`diskMBps` <= 0).
 */
export function ioBoundOn(
  stats: JobStats,
  mapsCompleted: number,
  mapSlots: number,
  diskMBps: number,
  minMaps: number,
): boolean {
  if (mapsCompleted < minMaps || mapsCompleted <= 0 || stats.mapInputBytes <= 0 || !(diskMBps > 0)) return false;
  const lambda = stats.mapOutputBytes / stats.mapInputBytes;
  const mid = stats.mapInputBytes / mapsCompleted;
  const mtct = stats.completedMapMs / mapsCompleted;
  const ioMs = (mapSlots * (1 + lambda) * mid) / (diskMBps * BYTES_PER_MS_PER_MBPS);
  return ioMs > mtct;
}

/**
 * A worker's disk rate, or the mean of the rates the cluster's workers report when it reports none (0 when none does).
 */
export function diskRateOf(worker: WorkerView, workers: Iterable<WorkerView>): number {
  if (worker.diskMBps > 0) return worker.diskMBps;
  let sum = 0;
  let count = 0;
  for (const w of workers) {
    if (w.diskMBps > 0) {
      sum += w.diskMBps;
      count += 1;
    }
  }
  return count > 0 ? sum / count : 0;
}

/**
 * A job's character on the nodes running its maps (all nodes when it runs none). An I/O-bound
 * verdict is the reliable one (a loaded node can make an I/O-bound job look CPU-bound, never the
 * reverse), so the job is I/O-bound when it is on any of those nodes.
 */
export function jobCharacter(
  job: JobView,
  workers: readonly WorkerView[],
  minMapsForCharacter = DEFAULT_IMPROVED_FAIR_OPTIONS.minMapsForCharacter,
): JobCharacter {
  const running = new Set(job.runningAttempts.filter((a) => a.kind === 'map').map((a) => a.workerId));
  const nodes = running.size > 0 ? workers.filter((w) => running.has(w.id)) : workers;
  for (const w of nodes) {
    if (ioBoundOn(job.stats, job.mapsCompleted, w.mapSlots, diskRateOf(w, workers), minMapsForCharacter))
      return 'io-bound';
  }
  return 'cpu-bound';
}

const FAR_FIRST: Readonly<Record<Locality, number>> = { any: 0, rack: 1, node: 2 };

/**
 * Victim order for an I/O-bound job (1 = first): (1)-(3) attempts on a node holding the starved
 * job's input, whose own input is on another rack, the same rack, the same node; (4)-(6) the same
 * three on other nodes. Killing a task that reads remotely wastes the least local I/O, and a node
 * that holds the starved job's data lets its task run data-local.
 */
export function ioBoundCategory(attempt: AttemptView, starvedInputWorkers: ReadonlySet<string>): number {
  return (starvedInputWorkers.has(attempt.workerId) ? 1 : 4) + FAR_FIRST[attempt.locality];
}

export function orderIoBoundVictims(
  attempts: readonly AttemptView[],
  starvedInputWorkers: ReadonlySet<string>,
): AttemptView[] {
  return [...attempts].sort(
    (a, b) =>
      ioBoundCategory(a, starvedInputWorkers) - ioBoundCategory(b, starvedInputWorkers) || mostRecentFirst(a, b),
  );
}

/** A CPU-bound job loses its most recently launched attempts first, remote input before local among equals. */
export function orderCpuBoundVictims(attempts: readonly AttemptView[]): AttemptView[] {
  return [...attempts].sort(mostRecentFirst);
}

export class ImprovedFairPolicy extends FairPolicy {
  override readonly name: string = 'improved-fair';
  /** All its options, FAIR's with its own. */
  declare readonly options: ImprovedFairOptions;
  readonly improvedOptions: ImprovedFairOptions;
  /** Freed slots waiting for the copy made for one map, by task id; `sinceMs` = when the copy was asked for. */
  private readonly holds = new Map<string, SlotHold & { readonly sinceMs: number }>();

  constructor(options: Partial<ImprovedFairOptions> = {}) {
    const parsed = parseImprovedFairOptions(options);
    const { minMapsForCharacter: _m, placePrivateData: _p, placementWaitMs: _w, ...fair } = parsed;
    super(fair);
    this.options = parsed;
    this.improvedOptions = parsed;
  }

  protected override policyName(): string {
    return 'improved-fair';
  }

  protected override orderVictimAttempts(
    victim: JobView,
    attempts: readonly AttemptView[],
    ctx: VictimContext,
  ): AttemptView[] {
    const character = jobCharacter(victim, ctx.snapshot.workers, this.improvedOptions.minMapsForCharacter);
    return character === 'io-bound'
      ? orderIoBoundVictims(attempts, ctx.beneficiaryInputWorkers)
      : orderCpuBoundVictims(attempts);
  }

  /**
   * Private data placement: the freed node should hold input of a map the starved job has not
   * placed yet. When it already holds one that no other freed slot counts on, nothing moves;
   * otherwise the first such pending map whose input still owes a replica (a private data set
   * being uploaded, `unplacedReplicas`) gets it there. Inputs already fully replicated get no
   * copy: an extra copy moves as many bytes as the remote read it would save.
   */
  protected override afterKill(attempt: AttemptView, ctx: VictimContext): Decision[] {
    if (!this.improvedOptions.placePrivateData || attempt.kind !== 'map') return [];
    const node = attempt.workerId;
    const free = ctx.beneficiaryPendingMaps.filter((t) => !ctx.claimed.has(t.id));
    const local = free.find((t) => t.preferredWorkers.includes(node));
    if (local) {
      ctx.claimed.add(local.id);
      return [];
    }
    const movable = free.find((t) => (t.unplacedReplicas ?? 0) > 0);
    if (!movable) return [];
    ctx.claimed.add(movable.id);
    if (this.improvedOptions.placementWaitMs > 0) {
      this.holds.set(movable.id, {
        workerId: node,
        jobId: ctx.beneficiary.id,
        taskId: movable.id,
        sinceMs: ctx.snapshot.now,
      });
    }
    return [{ kind: 'replicate', taskId: movable.id, jobId: ctx.beneficiary.id, workerId: node }];
  }

  /** Holds end when their map is no longer pending (launched, or its job gone) or after `placementWaitMs`. */
  protected override mapSlotHolds(snapshot: ClusterSnapshot): readonly SlotHold[] {
    if (this.holds.size === 0) return [];
    const pending = new Set<string>();
    for (const job of snapshot.jobs) for (const t of job.pendingTasks) if (this.holds.has(t.id)) pending.add(t.id);
    for (const [taskId, hold] of this.holds) {
      if (!pending.has(taskId) || snapshot.now - hold.sinceMs >= this.improvedOptions.placementWaitMs)
        this.holds.delete(taskId);
    }
    return [...this.holds.values()];
  }
}
