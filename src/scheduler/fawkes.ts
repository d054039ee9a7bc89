/**
 * FAWKES (Ghit, Yigitbasi, Iosup, Epema, SIGMETRICS 2014): balanced allocations across dynamic
 * MR-clusters on one pool of workers (spec: docs/specs/fawkes.md). The books keep the MR-clusters, admit them
 * by minimum share, place their blocks by node kind and carry out shrinks (src/books/mr-clusters.ts);
 * this policy decides how many nodes each cluster should hold, which nodes move, and which tasks run.
 *
 * Weights, every T. During an interval each active cluster samples a metric y (every `sampleMs`);
 * at the interval's end its weight is w_i = mean(y_i) / sum_k mean(y_k):
 * - demand: JD = waiting jobs (submitted, nothing run yet), DD = their input bytes, TD = waiting
 *   tasks (neither done nor running);
 * - usage: PU = busy slots / slots of its nodes, DU = stored output bytes / storage of its storing
 *   nodes, RU = psi PU + (1 - psi) DU;
 * - performance: JS = mean slowdown of its jobs (time since submission / reference runtime; 1
 *   for a job whose reference is unknown), JT = a^-q with q = jobs completed / jobs waiting, TT the
 *   same with tasks (a cluster with nothing waiting has weight 0);
 * - baselines: None (every cluster keeps its minimum share), EQ (equal weights).
 * When every y is 0 there is no signal, and nothing changes.
 *
 * Balance. Share c_i(t) = the fraction of the pool's live workers cluster i holds (a node draining
 * out still counts where it is). d_i(t) = c_i(t) - w_i; D_i = (1/T) x the integral of d_i over the
 * interval, with w_i the weights measured over that same interval. (Dividing by T makes D the mean
 * discrimination, so tau does not change with T.) Var(D) = E[D^2] over the active clusters; only
 * when it exceeds tau are the target allocations moved to the weights: every cluster gets its
 * minimum share, the rest of the pool goes by weight (water-filled, so no cluster is given less
 * than its minimum, largest remainders for the odd nodes).
 *
 * Moves, at every call, toward the targets: receivers (admitted clusters below their minimum first,
 * in request order, then by deficit) take free nodes first, then nodes of clusters above their
 * target: transient nodes (the least busy first), then transient-core nodes in non-decreasing
 * order of stored bytes; core nodes are never taken. A node arrives as a core node in a cluster
 * below its minimum share, else as a transient (`grow: 'TR'`) or transient-core (`grow: 'TC'`)
 * node; it leaves its old cluster by instant (`shrink: 'IP'`) or delayed (`shrink: 'DP'`)
 * preemption. A newly admitted cluster changes the targets at once (it gets its minimum share, the
 * others keep their weights), as does a released one. Nodes on their way count for their new cluster.
 *
 * Deactivation: an active cluster without jobs in which no task ran for a whole T is deactivated
 * (the books save its output, then release its nodes).
 *
 * Inside each cluster, FIFO with locality on its own nodes (fifo.ts), never on a node that moves.
 */
import {
  definePolicy,
  optionError,
  parseOptions,
  type OptionSpecs,
  type PolicyDefinition,
  type PolicyOptions,
} from './options.js';
import { fifoByCluster } from './fifo.js';
import { FREE_POOL } from './mr-cluster-checks.js';
import { byCodeUnit, visitingOrder } from './rooms.js';
import type {
  BalanceSample,
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  MrClusterView,
  NodeKind,
  Policy,
  PolicyState,
  WorkerView,
} from './types.js';

export const WEIGHTINGS = ['none', 'eq', 'jd', 'dd', 'td', 'pu', 'du', 'ru', 'js', 'jt', 'tt'] as const;
export type Weighting = (typeof WEIGHTINGS)[number];

export type FawkesOptions = {
  /** How weights are computed; default 'td' (the paper's best). */
  readonly weighting: Weighting;
  /** T: the interval weights and discrimination are computed over; default 60 s. */
  readonly intervalMs: number;
  /** How often each cluster samples its metric; default 5 s. */
  readonly sampleMs: number;
  /** Allocations change only when Var(D) exceeds this; default 0.001 (shares ~3% off their weights). */
  readonly tau: number;
  /** Grow with transient (TR) or transient-core (TC) nodes; default TC. */
  readonly grow: 'TR' | 'TC';
  /** Shrink by instant (IP) or delayed (DP) preemption; default DP. */
  readonly shrink: 'IP' | 'DP';
  /** RU = psi PU + (1 - psi) DU; default 0.5. */
  readonly psi: number;
  /** a of JT and TT (a^-q); default 2. */
  readonly throughputBase: number;
  /** Deactivate a cluster idle for T; default true. */
  readonly deactivateIdle: boolean;
};

export const DEFAULT_FAWKES_OPTIONS: FawkesOptions = {
  weighting: 'td',
  intervalMs: 60_000,
  sampleMs: 5_000,
  tau: 0.001,
  grow: 'TC',
  shrink: 'DP',
  psi: 0.5,
  throughputBase: 2,
  deactivateIdle: true,
};

const FAWKES_OPTION_SPECS: OptionSpecs<FawkesOptions> = {
  weighting: {
    type: 'choice',
    choices: WEIGHTINGS,
    about:
      'how weights are computed: none (minimum shares only), eq ' +
      '(equal), demand jd/dd/td (waiting jobs, their input bytes, ' +
      'waiting tasks), usage pu/du/ru (busy slots, stored output, psi ' +
      'PU + (1 - psi) DU), performance js/jt/tt (slowdown, job and ' +
      'task throughput)',
  },
  intervalMs: {
    type: 'number',
    range: { min: 0, minExclusive: true, unit: 'ms' },
    about: 'T: the interval weights and discrimination are computed over, and an idle cluster is deactivated after',
  },
  sampleMs: {
    type: 'number',
    range: { min: 0, minExclusive: true, unit: 'ms' },
    about: 'how often each cluster samples its metric (at most intervalMs)',
  },
  tau: { type: 'number', range: { min: 0 }, about: 'allocations follow the weights only when Var(D) exceeds this' },
  grow: {
    type: 'choice',
    choices: ['TR', 'TC'],
    about: 'nodes join a cluster as TR (transient) or TC (transient-core) nodes',
  },
  shrink: {
    type: 'choice',
    choices: ['IP', 'DP'],
    about: 'nodes leave a cluster by IP (instant) or DP (delayed) preemption',
  },
  psi: {
    type: 'number',
    range: { min: 0, minExclusive: true, max: 1, maxExclusive: true },
    about: "RU's mix: psi PU + (1 - psi) DU",
  },
  throughputBase: {
    type: 'number',
    range: { min: 1, minExclusive: true },
    about: 'a of the throughput weightings jt and tt, a^-(completed / waiting)',
  },
  deactivateIdle: { type: 'boolean', about: 'deactivate a cluster idle for a whole interval' },
};

/** `--policy-options` for fawkes: every field checked, unknown ones named (EBADCONF); names are case-insensitive. */
export function parseFawkesOptions(raw: PolicyOptions): FawkesOptions {
  const options = parseOptions('fawkes', raw, FAWKES_OPTION_SPECS, DEFAULT_FAWKES_OPTIONS);
  if (options.sampleMs > options.intervalMs) {
    throw optionError(
      'fawkes',
      'sampleMs',
      `(${options.sampleMs}) must not exceed intervalMs (${options.intervalMs}): an interval needs a sample`,
    );
  }
  return options;
}

export const FAWKES_DEFINITION: PolicyDefinition = definePolicy({
  name: 'fawkes',
  summary:
    'FAWKES: MR-clusters on one pool of workers; every interval ' +
    'each cluster gets a weight from its demand, usage or ' +
    'performance, and nodes move toward the weights above the ' +
    'minimum shares; FIFO with locality inside each cluster',
  options: FAWKES_OPTION_SPECS,
  defaults: DEFAULT_FAWKES_OPTIONS,
  create: (options) => new FawkesPolicy(parseFawkesOptions(options)),
});

// ---- the metrics a cluster samples -----------------------------------------------------------------

/** What one cluster's weights are computed from, at one moment. */
export interface ClusterFigures {
  readonly waitingJobs: number;
  readonly waitingInputBytes: number;
  readonly waitingTasks: number;
  readonly busySlots: number;
  readonly slots: number;
  readonly storedBytes: number;
  readonly storageBytes: number;
  /** Mean over its jobs of (now - submission) / reference runtime; 0 without jobs. */
  readonly meanSlowdown: number;
  readonly jobsCompleted: number;
  readonly tasksCompleted: number;
}

/** A job no task of which has run or is running: it waits in its cluster's queue. */
function isWaiting(job: JobView): boolean {
  return job.runningAttempts.length === 0 && job.mapsCompleted === 0 && job.reducesCompleted === 0;
}

/** The cluster's figures from the snapshot (its jobs and its nodes). */
export function clusterFigures(
  cluster: MrClusterView,
  jobs: readonly JobView[],
  workers: readonly WorkerView[],
  now: number,
): ClusterFigures {
  let waitingJobs = 0;
  let waitingInputBytes = 0;
  let waitingTasks = 0;
  let slowdownSum = 0;
  for (const job of jobs) {
    if (isWaiting(job)) {
      waitingJobs++;
      for (const t of job.pendingTasks) if (t.kind === 'map') waitingInputBytes += t.inputBytes;
    }
    waitingTasks +=
      job.mapsTotal - job.mapsCompleted + job.reducesTotal - job.reducesCompleted - job.runningAttempts.length;
    slowdownSum += job.referenceMs !== undefined && job.referenceMs > 0 ? (now - job.submitTime) / job.referenceMs : 1;
  }
  let busySlots = 0;
  let slots = 0;
  for (const w of workers) {
    slots += w.mapSlots + w.reduceSlots;
    busySlots += w.mapSlots - w.freeMapSlots + w.reduceSlots - w.freeReduceSlots;
  }
  return {
    waitingJobs,
    waitingInputBytes,
    waitingTasks,
    busySlots,
    slots,
    storedBytes: cluster.storedBytes,
    storageBytes: cluster.storageBytes,
    meanSlowdown: jobs.length > 0 ? slowdownSum / jobs.length : 0,
    jobsCompleted: cluster.jobsCompleted,
    tasksCompleted: cluster.tasksCompleted,
  };
}

const ratio = (a: number, b: number): number => (b > 0 ? a / b : 0);

/**
 * a^-(done / waiting): 1 when nothing is done yet, toward 0 as throughput outruns the queue; 0 with nothing waiting.
 */
function throughputWeight(a: number, done: number, waiting: number): number {
  return waiting > 0 ? a ** -(done / waiting) : 0;
}

/** The metric y a weighting samples (None and EQ sample nothing: 0). */
export function metricOf(
  weighting: Weighting,
  f: ClusterFigures,
  options: Pick<FawkesOptions, 'psi' | 'throughputBase'>,
): number {
  const pu = ratio(f.busySlots, f.slots);
  const du = ratio(f.storedBytes, f.storageBytes);
  switch (weighting) {
    case 'jd':
      return f.waitingJobs;
    case 'dd':
      return f.waitingInputBytes;
    case 'td':
      return f.waitingTasks;
    case 'pu':
      return pu;
    case 'du':
      return du;
    case 'ru':
      return options.psi * pu + (1 - options.psi) * du;
    case 'js':
      return f.meanSlowdown;
    case 'jt':
      return throughputWeight(options.throughputBase, f.jobsCompleted, f.waitingJobs);
    case 'tt':
      return throughputWeight(options.throughputBase, f.tasksCompleted, f.waitingTasks);
    case 'none':
    case 'eq':
      return 0;
  }
}

/** w_i = y_i / sum y: undefined when every y is 0 (no signal). */
export function normalizedWeights(y: ReadonlyMap<string, number>): Map<string, number> | undefined {
  let sum = 0;
  for (const v of y.values()) sum += v;
  if (!(sum > 0)) return undefined;
  return new Map([...y].map(([name, v]) => [name, v / sum]));
}

/** Var(D) = E[D^2] over the clusters' discriminations. */
export function globalDiscrimination(discriminations: readonly number[]): number {
  if (discriminations.length === 0) return 0;
  let sum = 0;
  for (const d of discriminations) sum += d * d;
  return sum / discriminations.length;
}

/**
 * Nodes per cluster: each its minimum share, the rest of `total` by weight, water-filled (a
 * cluster whose weighted share is below its minimum keeps its minimum and leaves the others the
 * rest), largest remainders for the odd nodes (ties by name).
 */
export function targetNodes(
  total: number,
  clusters: readonly { readonly name: string; readonly minNodes: number; readonly weight: number }[],
): Map<string, number> {
  const out = new Map<string, number>();
  let open = [...clusters];
  let left = total;
  for (;;) {
    const weightSum = open.reduce((s, c) => s + c.weight, 0);
    const pinned = open.filter((c) => weightSum <= 0 || (c.weight / weightSum) * left < c.minNodes);
    if (pinned.length === 0) break;
    for (const c of pinned) {
      out.set(c.name, c.minNodes);
      left -= c.minNodes;
    }
    open = open.filter((c) => !pinned.includes(c));
    if (open.length === 0) return out;
  }
  const weightSum = open.reduce((s, c) => s + c.weight, 0);
  const raw = open.map((c) => ({ c, x: (c.weight / weightSum) * Math.max(0, left) }));
  let given = 0;
  for (const { c, x } of raw) {
    out.set(c.name, Math.floor(x));
    given += Math.floor(x);
  }
  const byRemainder = [...raw].sort(
    (a, b) => b.x - Math.floor(b.x) - (a.x - Math.floor(a.x)) || byCodeUnit(a.c.name, b.c.name),
  );
  for (let i = 0; given < left && i < byRemainder.length; i++, given++)
    out.set(byRemainder[i]!.c.name, out.get(byRemainder[i]!.c.name)! + 1);
  return out;
}

// ---- the policy ------------------------------------------------------------------------------------

interface Interval {
  readonly start: number;
  /** Per cluster: sum and count of its samples. */
  readonly samples: Map<string, { sum: number; n: number }>;
  /** Per cluster: integral of its share over the interval so far (share x ms). */
  readonly shareIntegral: Map<string, number>;
}

const GROW_KIND: Readonly<Record<FawkesOptions['grow'], NodeKind>> = { TR: 'transient', TC: 'transient-core' };

export class FawkesPolicy implements Policy {
  readonly name: string;
  /** Samples, intervals and idle clusters' deactivation are timed. */
  readonly consultWhen: Consultation = 'every-event';
  readonly options: FawkesOptions;
  /** Every interval's weights, discrimination and whether allocations changed. */
  readonly balanceHistory: BalanceSample[] = [];
  private interval: Interval | null = null;
  private nextSampleAt = 0;
  /** Shares as of the previous call, and its time: they held until now. */
  private lastShares = new Map<string, number>();
  private lastTime = 0;
  private weights = new Map<string, number>();
  private targets = new Map<string, number>();
  /** The admitted clusters the targets were computed for. */
  private targetsFor = '';
  /** Per cluster: the last time it had a job or a running attempt. */
  private readonly lastBusy = new Map<string, number>();

  constructor(options: FawkesOptions = DEFAULT_FAWKES_OPTIONS) {
    this.options = options;
    this.name = `fawkes-${options.weighting}-${options.grow.toLowerCase()}-${options.shrink.toLowerCase()}`;
  }

  /** The MR-clusters with their nodes by kind, targets and weights, and the last interval's discrimination. */
  describeState(snapshot: ClusterSnapshot): PolicyState {
    const o = this.options;
    const last = this.balanceHistory.at(-1);
    const nodesOf = groupBy(snapshot.workers, (w) => w.cluster);
    const jobsOf = groupBy(snapshot.jobs, (j) => j.cluster);
    const kinds = (name: string, kind: NodeKind) => (nodesOf.get(name) ?? []).filter((w) => w.nodeKind === kind).length;
    return {
      notes: [
        `weighting ${o.weighting}, interval ${o.intervalMs} ms sampled ` +
          `every ${o.sampleMs} ms, tau ${o.tau}; nodes grow as ${o.grow} ` +
          `and shrink by ${o.shrink}`,
        last
          ? `last interval (ended at ${last.timeMs} ms): ` +
            `Var(D) ${last.globalDiscrimination.toFixed(4)}, ${last.reconfigured ? 'targets recomputed' : 'targets kept'}`
          : 'no interval has ended yet',
        `free nodes: ${nodesOf.get(FREE_POOL)?.length ?? 0}`,
      ],
      tables: [
        {
          title: 'MR-clusters',
          columns: [
            'cluster',
            'state',
            'min nodes',
            'core',
            'transient-core',
            'transient',
            'target',
            'weight',
            'jobs',
            'stored / storage (bytes)',
          ],
          rows: (snapshot.mrClusters ?? []).map((c) => [
            c.name,
            c.state,
            c.minNodes,
            kinds(c.name, 'core'),
            kinds(c.name, 'transient-core'),
            kinds(c.name, 'transient'),
            this.targets.get(c.name) ?? '-',
            this.weights.has(c.name) ? this.weights.get(c.name)!.toFixed(3) : '-',
            jobsOf.get(c.name)?.length ?? 0,
            `${c.storedBytes} / ${c.storageBytes}`,
          ]),
        },
      ],
    };
  }

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const decisions: Decision[] = [];
    const moved = new Set<string>();
    if (snapshot.mrClusters !== undefined && snapshot.mrClusters.length > 0) this.balance(snapshot, decisions, moved);
    const rooms = visitingOrder(snapshot, { freeOnly: true }).filter((r) => !moved.has(r.worker.id));
    fifoByCluster(snapshot, rooms, decisions);
    return decisions;
  }

  private balance(snapshot: ClusterSnapshot, decisions: Decision[], moved: Set<string>): void {
    const now = snapshot.now;
    const clusters = snapshot.mrClusters!;
    const active = clusters.filter((c) => c.state === 'active');
    const nodesOf = groupBy(snapshot.workers, (w) => w.cluster);
    const jobsOf = groupBy(snapshot.jobs, (j) => j.cluster);
    const total = snapshot.workers.length;

    this.interval ??= {
      start: Math.floor(now / this.options.intervalMs) * this.options.intervalMs,
      samples: new Map(),
      shareIntegral: new Map(),
    };
    for (;;) {
      const end = this.interval.start + this.options.intervalMs;
      this.integrateShares(Math.min(now, end));
      if (now < end) break;
      this.closeInterval(active);
    }
    this.lastTime = now;
    this.lastShares = new Map(
      clusters.map((c) => [c.name, total > 0 ? (nodesOf.get(c.name)?.length ?? 0) / total : 0]),
    );

    if (now >= this.nextSampleAt) {
      for (const c of active) {
        const y = metricOf(
          this.options.weighting,
          clusterFigures(c, jobsOf.get(c.name) ?? [], nodesOf.get(c.name) ?? [], now),
          this.options,
        );
        const s = this.interval.samples.get(c.name) ?? { sum: 0, n: 0 };
        s.sum += y;
        s.n += 1;
        this.interval.samples.set(c.name, s);
      }
      this.nextSampleAt = (Math.floor(now / this.options.sampleMs) + 1) * this.options.sampleMs;
    }

    const admitted = clusters.filter((c) => c.state === 'active' || c.state === 'activating');
    const key = admitted.map((c) => `${c.name}:${c.state}`).join(',');
    if (key !== this.targetsFor) {
      // A cluster was admitted or released: it gets its minimum share now, the others keep their weights.
      this.targetsFor = key;
      this.retarget(admitted, total, nodesOf);
    }

    if (this.options.deactivateIdle) this.deactivateIdle(active, jobsOf, nodesOf, now, decisions);
    this.move(snapshot, admitted, nodesOf, decisions, moved);
  }

  /** Adds the shares that held since the previous call, up to `until`, to the interval's integrals. */
  private integrateShares(until: number): void {
    const interval = this.interval!;
    const from = Math.max(this.lastTime, interval.start);
    if (until <= from) return;
    for (const [name, share] of this.lastShares)
      interval.shareIntegral.set(name, (interval.shareIntegral.get(name) ?? 0) + share * (until - from));
    this.lastTime = until;
  }

  /** The interval is over: weights from its samples, D and Var(D), and the targets when Var(D) > tau. */
  private closeInterval(active: readonly MrClusterView[]): void {
    const interval = this.interval!;
    const T = this.options.intervalMs;
    const w = this.options.weighting;
    let weights: Map<string, number> | undefined;
    if (w === 'none') weights = normalizedWeights(new Map(active.map((c) => [c.name, c.minNodes])));
    else if (w === 'eq') weights = new Map(active.map((c) => [c.name, 1 / active.length]));
    else weights = normalizedWeights(new Map(active.map((c) => [c.name, meanOf(interval.samples.get(c.name))])));
    this.interval = { start: interval.start + T, samples: new Map(), shareIntegral: new Map() };
    if (!weights || active.length === 0) return;
    const rows = active.map((c) => {
      const share = (interval.shareIntegral.get(c.name) ?? 0) / T;
      const weight = weights.get(c.name) ?? 0;
      return { name: c.name, weight, share, discrimination: share - weight };
    });
    const varD = globalDiscrimination(rows.map((r) => r.discrimination));
    const reconfigured = w !== 'none' && varD > this.options.tau;
    if (reconfigured) this.weights = weights;
    this.balanceHistory.push({ timeMs: interval.start + T, clusters: rows, globalDiscrimination: varD, reconfigured });
    if (reconfigured) this.targetsFor = '';
  }

  /** Targets: activating clusters their minimum share, active ones by the weights in force (None: their minimum). */
  private retarget(
    admitted: readonly MrClusterView[],
    total: number,
    nodesOf: ReadonlyMap<string, readonly WorkerView[]>,
  ): void {
    const activating = admitted.filter((c) => c.state === 'activating');
    const active = admitted.filter((c) => c.state === 'active');
    const targets = new Map(activating.map((c) => [c.name, c.minNodes]));
    const rest = total - activating.reduce((s, c) => s + c.minNodes, 0);
    if (this.options.weighting === 'none') {
      for (const c of active) targets.set(c.name, c.minNodes);
    } else {
      // Before the first weights, a cluster's nodes stand for its weight and it grows no further:
      // a newly admitted cluster is then given its minimum share by the others in proportion.
      const known = this.weights.size > 0;
      const current = (c: MrClusterView) => nodesOf.get(c.name)?.length ?? 0;
      const weightOf = (c: MrClusterView) => (known ? (this.weights.get(c.name) ?? 0) : current(c));
      const planned = targetNodes(
        rest,
        active.map((c) => ({ name: c.name, minNodes: c.minNodes, weight: weightOf(c) })),
      );
      for (const c of active)
        targets.set(
          c.name,
          known ? planned.get(c.name)! : Math.min(planned.get(c.name)!, Math.max(current(c), c.minNodes)),
        );
    }
    this.targets = targets;
  }

  private deactivateIdle(
    active: readonly MrClusterView[],
    jobsOf: ReadonlyMap<string, readonly JobView[]>,
    nodesOf: ReadonlyMap<string, readonly WorkerView[]>,
    now: number,
    decisions: Decision[],
  ): void {
    for (const c of active) {
      const busy =
        (jobsOf.get(c.name)?.length ?? 0) > 0 ||
        (nodesOf.get(c.name) ?? []).some((w) => w.freeMapSlots < w.mapSlots || w.freeReduceSlots < w.reduceSlots);
      // Seen idle for the first time: idle since it became active, as far as anyone knows.
      if (busy) this.lastBusy.set(c.name, now);
      else if (!this.lastBusy.has(c.name)) this.lastBusy.set(c.name, c.activeSince ?? now);
      if (!busy && now - this.lastBusy.get(c.name)! >= this.options.intervalMs) {
        decisions.push({ kind: 'deactivate-cluster', cluster: c.name });
        this.lastBusy.delete(c.name);
      }
    }
  }

  /** Moves nodes toward the targets: free nodes first, then the cheapest nodes of clusters above their target. */
  private move(
    snapshot: ClusterSnapshot,
    admitted: readonly MrClusterView[],
    nodesOf: ReadonlyMap<string, readonly WorkerView[]>,
    decisions: Decision[],
    moved: Set<string>,
  ): void {
    const deactivating = new Set(decisions.flatMap((d) => (d.kind === 'deactivate-cluster' ? [d.cluster] : [])));
    const arriving = new Map<string, number>();
    for (const w of snapshot.workers)
      if (w.leavingFor !== undefined) arriving.set(w.leavingFor, (arriving.get(w.leavingFor) ?? 0) + 1);
    const staying = (name: string) => (nodesOf.get(name) ?? []).filter((w) => w.leavingFor === undefined);
    const receivers = admitted
      .filter((c) => !deactivating.has(c.name))
      .map((c) => ({
        c,
        need: (this.targets.get(c.name) ?? c.minNodes) - staying(c.name).length - (arriving.get(c.name) ?? 0),
        cores: staying(c.name).filter((w) => w.nodeKind === 'core').length,
      }))
      .filter((r) => r.need > 0)
      .sort(
        (a, b) =>
          Number(b.c.state === 'activating') - Number(a.c.state === 'activating') ||
          b.need - a.need ||
          byCodeUnit(a.c.name, b.c.name),
      );
    if (receivers.length === 0) return;
    const supply: Array<{ w: WorkerView; from: string | null }> = staying(FREE_POOL).map((w) => ({ w, from: null }));
    for (const c of admitted) {
      if (c.state !== 'active' || deactivating.has(c.name)) continue;
      const excess = staying(c.name).length - (this.targets.get(c.name) ?? c.minNodes);
      for (const w of victims(staying(c.name)).slice(0, Math.max(0, excess))) supply.push({ w, from: c.name });
    }
    let next = 0;
    for (const r of receivers) {
      for (; r.need > 0 && next < supply.length; r.need--) {
        const { w, from } = supply[next++]!;
        const nodeKind: NodeKind =
          r.c.state === 'activating' || r.cores < r.c.minNodes ? 'core' : GROW_KIND[this.options.grow];
        if (nodeKind === 'core') r.cores++;
        decisions.push({
          kind: 'move-node',
          workerId: w.id,
          toCluster: r.c.name,
          nodeKind,
          ...(from !== null
            ? { preemption: this.options.shrink === 'IP' ? ('instant' as const) : ('delayed' as const) }
            : {}),
        });
        moved.add(w.id);
      }
    }
  }
}

/**
 * The nodes a cluster gives up first: transient ones, the least busy first, then transient-core ones, the fewest stored
 * bytes first; never core.
 */
function victims(nodes: readonly WorkerView[]): WorkerView[] {
  const busy = (w: WorkerView) => w.mapSlots - w.freeMapSlots + w.reduceSlots - w.freeReduceSlots;
  const transient = nodes
    .filter((w) => w.nodeKind === 'transient')
    .sort((a, b) => busy(a) - busy(b) || byCodeUnit(a.id, b.id));
  const transientCore = nodes
    .filter((w) => w.nodeKind === 'transient-core')
    .sort((a, b) => (a.storedBytes ?? 0) - (b.storedBytes ?? 0) || byCodeUnit(a.id, b.id));
  return [...transient, ...transientCore];
}

function meanOf(s: { sum: number; n: number } | undefined): number {
  return s && s.n > 0 ? s.sum / s.n : 0;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
