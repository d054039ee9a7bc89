/**
 * Tyrex (Ghit & Epema, CCGrid 2016): TAGS for MapReduce. The cluster's map slots and reduce slots
 * are split into K partitions with fixed capacity fractions; each partition runs its own FIFO
 * queue on its own slots; every job starts in P_1 and moves on to P_{k+1} once its partial size
 * in P_k (task time completed while it was there) passes the partition's timer. Short jobs thus
 * finish in P_1 without queueing behind long ones, and long jobs are not killed, only moved: a
 * migration keeps all finished work and lets running tasks finish where they are.
 *
 * Partitions are capacities, not fixed sets of workers: partition k may hold at most cap_k map
 * attempts and cap_k' reduce attempts at once, anywhere in the cluster, because storage is not
 * partitioned and locality is better served by letting any partition use any worker. An attempt
 * counts against the partition its job was in when it was launched, so the running tasks a
 * migration leaves behind keep using their old partition's slots until they end.
 *
 * Timers: STATICTAGS uses configured timers T_1..T_{K-1}; DYNAMICTAGS recomputes, at every
 * scheduling call, the cutoff p at which the squared coefficients of variation of the partial
 * sizes below and above p are equal, and only when those sizes vary enough (CV^2 > 2). The
 * distribution is, as docs/specs/tyrex.md says, the current partial sizes of all the jobs in the partition,
 * zeros included. (Leaving out the jobs with nothing completed yet, and adding the sizes of recent
 * departures instead, was tried: in the simulator on HVW it migrated too little and P_1 clogged.)
 *
 * Migration order: a migrated job joins the tail of the next partition's queue, as in the paper
 * (TAGS serves each host in FIFO order of arrival at that host); `migratedOrder: 'arrival'` keeps
 * its original submission order instead, for comparison.
 */
import {
  definePolicy,
  optionError,
  parseOptions,
  shown,
  type OptionSpecs,
  type PolicyDefinition,
  type PolicyOptions,
} from './options.js';
import { BestPlacedPicker, minPendingMemoryMb } from './pending-index.js';
import { byCodeUnit, localityOf, visitingOrder, type Room } from './rooms.js';
import type {
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  Policy,
  PolicyState,
  TaskKind,
  TaskView,
} from './types.js';

export type TyrexOptions = {
  /** Capacity fraction of each partition, summing to 1; default [0.3, 0.7]. */
  readonly capacities?: readonly number[];
  /** 'dynamic' (DYNAMICTAGS, default) or 'static' (STATICTAGS). */
  readonly mode?: 'static' | 'dynamic';
  /** STATICTAGS timers T_1..T_{K-1} in ms of partial size; required in static mode. */
  readonly timersMs?: readonly number[];
  /** DYNAMICTAGS migrates from a partition only when CV^2 of its partial sizes exceeds this; default 2. */
  readonly cv2Threshold?: number;
  /** Where a migrated job joins the next queue: 'tail' (default, the paper) or 'arrival'. */
  readonly migratedOrder?: 'tail' | 'arrival';
  /**
   * Beyond the paper, off by default: a partition whose queue has no task for a free slot lends it
   * to the other partitions' queues. The borrowed slot is given back at the next task boundary: a
   * borrowed attempt counts against the lender's capacity, so once it ends the lender's own queue
   * gets the slot first.
   */
  readonly borrowIdle?: boolean;
};

/** Tyrex's options with the defaults filled in; `timersMs` has none (static mode needs it, dynamic mode refuses it). */
export type TyrexSettings = Required<Omit<TyrexOptions, 'timersMs'>> & Pick<TyrexOptions, 'timersMs'>;

export const DEFAULT_TYREX_OPTIONS: TyrexSettings = Object.freeze({
  capacities: Object.freeze([0.3, 0.7]),
  mode: 'dynamic',
  cv2Threshold: 2,
  migratedOrder: 'tail',
  borrowIdle: false,
});

const MODE_ABOUT = 'dynamic (DYNAMICTAGS: timers from the partial sizes) or static (STATICTAGS: the timersMs given)';

const TYREX_OPTION_SPECS: OptionSpecs<TyrexSettings> = {
  capacities: {
    type: 'numbers',
    minItems: 2,
    range: { min: 0, minExclusive: true, max: 1 },
    about: "each partition's fraction of the map and of the reduce slots, summing to 1",
  },
  mode: { type: 'choice', choices: ['dynamic', 'static'], about: MODE_ABOUT },
  timersMs: {
    type: 'numbers',
    range: { min: 0, minExclusive: true, unit: 'ms' },
    about: 'static mode only, and needed there: the partial size at which a job leaves each partition but the last',
  },
  cv2Threshold: {
    type: 'number',
    range: { min: 0 },
    about: 'dynamic mode migrates from a partition only when CV^2 of its partial sizes exceeds this',
  },
  migratedOrder: {
    type: 'choice',
    choices: ['tail', 'arrival'],
    about: "where a migrated job joins the next partition's queue: its tail (the paper) or by submission",
  },
  borrowIdle: {
    type: 'boolean',
    about: "beyond the paper: lend a partition's idle slots to the others until the next task boundary",
  },
};

/** Checks Tyrex's options, with what no single option can be checked for alone. */
export function parseTyrexOptions(
  raw: PolicyOptions,
  policy = 'tyrex',
  defaults: TyrexSettings = DEFAULT_TYREX_OPTIONS,
  specs: OptionSpecs<TyrexSettings> = TYREX_OPTION_SPECS,
): TyrexSettings {
  const options = parseOptions(policy, raw, specs, defaults);
  const { capacities, timersMs } = options;
  if (Math.abs(capacities.reduce((a, b) => a + b, 0) - 1) > 1e-9)
    throw optionError(policy, 'capacities', `must sum to 1, got ${capacities.join(' + ')}`);
  if (options.mode === 'static') {
    if (timersMs === undefined || timersMs.length !== capacities.length - 1) {
      throw optionError(
        policy,
        'timersMs',
        `must hold ${capacities.length - 1} timer(s) in static mode ` +
          `(one per partition but the last), ` +
          `got ${timersMs === undefined ? 'none' : shown(timersMs)}`,
      );
    }
  } else if (timersMs !== undefined) throw optionError(policy, 'timersMs', 'applies to static mode only');
  return options;
}

/** tyrex-static and tyrex-dynamic: Tyrex with its mode fixed by the name. */
function tyrexWithMode(mode: 'static' | 'dynamic'): PolicyDefinition {
  const name = `tyrex-${mode}`;
  const specs: OptionSpecs<TyrexSettings> = {
    ...TYREX_OPTION_SPECS,
    mode: { type: 'choice', choices: [mode], about: `${mode}, fixed by the name (policy tyrex chooses by option)` },
  };
  const defaults: TyrexSettings = { ...DEFAULT_TYREX_OPTIONS, mode };
  return definePolicy({
    name,
    summary: `Tyrex with ${mode === 'static' ? 'STATICTAGS: fixed timers (timersMs)' : 'DYNAMICTAGS: timers from the partial sizes'}`,
    options: specs,
    defaults,
    create(options) {
      const given = options.mode;
      if (given !== undefined && !(typeof given === 'string' && given.toLowerCase() === mode)) {
        throw optionError(
          name,
          'mode',
          `is fixed: ${name} cannot take mode ${shown(given)}; use policy "tyrex" to choose the mode by option`,
        );
      }
      return new TyrexPolicy(parseTyrexOptions(options, name, defaults, specs));
    },
  });
}

/** tyrex (the mode by option, DYNAMICTAGS unless it says static), tyrex-dynamic and tyrex-static. */
export const TYREX_DEFINITIONS: readonly PolicyDefinition[] = [
  definePolicy({
    name: 'tyrex',
    summary:
      'Tyrex (TAGS for MapReduce): the slots split into partitions by ' +
      'capacity, FIFO in each; a job moves to the next partition when ' +
      'its partial size (task time completed there) passes the ' +
      "partition's timer",
    options: TYREX_OPTION_SPECS,
    defaults: DEFAULT_TYREX_OPTIONS,
    create: (options) => new TyrexPolicy(parseTyrexOptions(options)),
  }),
  tyrexWithMode('dynamic'),
  tyrexWithMode('static'),
];

/** The dynamic timer of one partition at one moment, for the "dynamic timer over time" plot. */
export interface TimerSample {
  readonly time: number;
  readonly partition: number;
  /** Infinity when nothing migrates (CV^2 at or below the threshold). */
  readonly timerMs: number;
  readonly cv2: number;
}

const squaredCv = (xs: readonly number[]): number => {
  if (xs.length < 2) return 0;
  let sum = 0;
  for (const x of xs) sum += x;
  const mean = sum / xs.length;
  if (mean <= 0) return 0;
  let sq = 0;
  for (const x of xs) sq += (x - mean) * (x - mean);
  return sq / xs.length / (mean * mean);
};

/** CV^2 of min(X, p). */
function cv2Below(sorted: readonly number[], p: number): number {
  return squaredCv(sorted.map((x) => Math.min(x, p)));
}

/** CV^2 of X - p over the values above p. */
function cv2Above(sorted: readonly number[], p: number): number {
  return squaredCv(sorted.filter((x) => x > p).map((x) => x - p));
}

/** CV^2 of a sample (population variance over squared mean); 0 for fewer than two values or mean 0. */
export function squaredCoefficientOfVariation(xs: readonly number[]): number {
  return squaredCv(xs);
}

/**
 * The DYNAMICTAGS cutoff: the p where CV^2(min(X, p)) = CV^2(X - p | X > p) on the empirical
 * distribution of `sizes`. The difference d(p) = CV^2(L_p) - CV^2(R_p) is continuous between
 * consecutive sample values and jumps at them; the first interval whose ends bracket a sign change
 * is bisected, and a crossing that happens at a jump is the sample value itself. Returns undefined
 * when there is no crossing (fewer than two distinct values).
 */
export function optimalCutoff(sizes: readonly number[]): number | undefined {
  const sorted = [...sizes].sort((a, b) => a - b);
  const distinct = [...new Set(sorted)];
  if (distinct.length < 2) return undefined;
  const d = (p: number): number => cv2Below(sorted, p) - cv2Above(sorted, p);
  for (let i = 0; i + 1 < distinct.length; i++) {
    const lo = distinct[i]!;
    const hi = distinct[i + 1]!;
    const dLo = d(lo);
    if (dLo === 0) return lo;
    // Approaching hi from below: the values equal to hi are still above p.
    const hiBelow = hi - (hi - lo) * 1e-9;
    const dHi = d(hiBelow);
    if (dLo < 0 && dHi >= 0) {
      let a = lo;
      let b = hiBelow;
      for (let k = 0; k < 100 && b - a > 1e-9 * Math.max(1, Math.abs(b)); k++) {
        const mid = (a + b) / 2;
        if (d(mid) < 0) a = mid;
        else b = mid;
      }
      return (a + b) / 2;
    }
    // The sign changes at the jump when hi drops out of the upper part.
    if (dHi < 0 && d(hi) >= 0) return hi;
  }
  return undefined;
}

/** Splits `total` slots by `fractions`, largest remainders first; every partition gets at least one slot. */
export function partitionCapacities(total: number, fractions: readonly number[]): number[] {
  const raw = fractions.map((f) => f * total);
  const caps = raw.map((r) => Math.floor(r));
  let left = total - caps.reduce((a, b) => a + b, 0);
  const order = raw.map((r, i) => ({ i, rem: r - Math.floor(r) })).sort((a, b) => b.rem - a.rem || a.i - b.i);
  for (const { i } of order) {
    if (left <= 0) break;
    caps[i]! += 1;
    left -= 1;
  }
  // A partition with no slot could never finish a job: take one from the largest when there are
  // enough slots, and on a cluster with fewer slots than partitions let each partition use one
  // (they then compete for it; the workers' free slots still bound what runs).
  for (let i = 0; i < caps.length; i++) {
    if (caps[i] !== 0 || total === 0) continue;
    const largest = caps.indexOf(Math.max(...caps));
    if (total >= caps.length && caps[largest]! > 1) caps[largest]! -= 1;
    caps[i] = 1;
  }
  return caps;
}

interface JobEntry {
  /** Partial-size baseline: the job's completed task time when it entered its current partition. */
  baselineMs: number;
  /** Position in its partition's queue: submission time, or the migration time for 'tail'. */
  queueKey: number;
  partition: number;
}

export class TyrexPolicy implements Policy {
  readonly name: string;
  /** Partial sizes grow, and dynamic timers move, without a change of capacity or of runnable tasks. */
  readonly consultWhen: Consultation = 'every-event';
  private readonly capacities: readonly number[];
  private readonly mode: 'static' | 'dynamic';
  private readonly timersMs: readonly number[];
  private readonly cv2Threshold: number;
  private readonly migratedOrder: 'tail' | 'arrival';
  private readonly entries = new Map<string, JobEntry>();
  /** Per job: the partition each of its tasks was last launched in, until the job leaves. */
  private readonly launchedIn = new Map<string, Map<string, number>>();
  /** Dynamic timers as computed, per partition (DYNAMICTAGS only). */
  readonly timerHistory: TimerSample[] = [];
  private readonly lastTimer = new Map<number, number>();
  private readonly borrowIdle: boolean;

  readonly options: TyrexSettings;

  constructor(options: TyrexOptions = {}) {
    this.options = parseTyrexOptions(options);
    const { capacities, mode, timersMs, cv2Threshold, migratedOrder, borrowIdle } = this.options;
    this.capacities = capacities;
    this.mode = mode;
    this.timersMs = timersMs ?? [];
    this.cv2Threshold = cv2Threshold;
    this.migratedOrder = migratedOrder;
    this.borrowIdle = borrowIdle;
    this.name = `${mode === 'static' ? 'tyrex-static' : 'tyrex-dynamic'}${this.borrowIdle ? '+borrow' : ''}`;
  }

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const decisions: Decision[] = [];
    this.forgetFinishedJobs(snapshot);
    for (const job of snapshot.jobs) {
      if (!this.entries.has(job.id))
        this.entries.set(job.id, {
          baselineMs: 0,
          queueKey: job.submitTime,
          partition: Math.min(job.partition, this.capacities.length - 1),
        });
    }
    this.migrate(snapshot, decisions);
    this.launch(snapshot, decisions);
    return decisions;
  }

  /** The partitions with their capacities and timers, and each job's partition and partial size there. */
  describeState(snapshot: ClusterSnapshot): PolicyState {
    const { cap, used } = this.slotUse(snapshot);
    const partitionOf = (j: JobView) =>
      this.entries.get(j.id)?.partition ?? Math.min(j.partition, this.capacities.length - 1);
    const timerOf = (k: number): string => {
      if (k === this.capacities.length - 1) return 'last partition: no timer';
      const t = this.mode === 'static' ? this.timersMs[k] : this.lastTimer.get(k);
      return t === undefined
        ? 'not computed yet'
        : Number.isFinite(t)
          ? `${Math.round(t)} ms`
          : 'infinite (CV² at or below the threshold)';
    };
    return {
      notes: [
        `${this.mode === 'static' ? 'STATICTAGS: fixed timers' : `DYNAMICTAGS: timers from the partial sizes when CV² > ${this.cv2Threshold}`}; ` +
          `migrated jobs join the ${this.migratedOrder} of the next ` +
          `queue${this.borrowIdle ? '; idle slots are lent' : ''}`,
      ],
      tables: [
        {
          title: 'Partitions',
          columns: [
            'partition',
            'capacity',
            'map slots',
            'reduce slots',
            'running map',
            'running reduce',
            'jobs',
            'timer',
          ],
          rows: this.capacities.map((c, k) => {
            const members = snapshot.jobs.filter((j) => partitionOf(j) === k);
            return [
              k,
              c,
              cap.map[k] ?? 0,
              cap.reduce[k] ?? 0,
              used.map[k] ?? 0,
              used.reduce[k] ?? 0,
              members.length,
              timerOf(k),
            ];
          }),
        },
        {
          title: 'Jobs',
          columns: ['job', 'partition', 'partial size (ms)', 'maps done', 'reduces done'],
          rows: snapshot.jobs.map((j) => [
            j.id,
            partitionOf(j),
            Math.round(this.partialSizeMs(j)),
            `${j.mapsCompleted}/${j.mapsTotal}`,
            `${j.reducesCompleted}/${j.reducesTotal}`,
          ]),
        },
      ],
    };
  }

  /** Partial size of a job in its current partition, ms. */
  partialSizeMs(job: JobView): number {
    const entry = this.entries.get(job.id);
    return job.stats.completedMapMs + job.stats.completedReduceMs - (entry?.baselineMs ?? 0);
  }

  private forgetFinishedJobs(snapshot: ClusterSnapshot): void {
    const live = new Set(snapshot.jobs.map((j) => j.id));
    for (const id of this.entries.keys()) {
      if (live.has(id)) continue;
      this.entries.delete(id);
      this.launchedIn.delete(id);
    }
  }

  private migrate(snapshot: ClusterSnapshot, decisions: Decision[]): void {
    const last = this.capacities.length - 1;
    // From the last-but-one partition down, so a job moves at most one partition per call.
    for (let k = last - 1; k >= 0; k--) {
      const members = snapshot.jobs.filter((j) => this.entries.get(j.id)!.partition === k);
      if (members.length === 0) continue;
      const sizes = members.map((j) => this.partialSizeMs(j));
      let timer: number;
      if (this.mode === 'static') {
        timer = this.timersMs[k]!;
      } else {
        const cv2 = squaredCv(sizes);
        const cutoff = cv2 > this.cv2Threshold ? optimalCutoff(sizes) : undefined;
        timer = cutoff ?? Number.POSITIVE_INFINITY;
        if (this.lastTimer.get(k) !== timer) {
          this.lastTimer.set(k, timer);
          this.timerHistory.push({ time: snapshot.now, partition: k, timerMs: timer, cv2 });
        }
      }
      for (const [i, job] of members.entries()) {
        const size = sizes[i]!;
        if (!(size > timer)) continue;
        const entry = this.entries.get(job.id)!;
        decisions.push({ kind: 'migrate', jobId: job.id, toPartition: k + 1, partialSizeMs: size, timerMs: timer });
        entry.partition = k + 1;
        entry.baselineMs = job.stats.completedMapMs + job.stats.completedReduceMs;
        if (this.migratedOrder === 'tail') entry.queueKey = snapshot.now;
      }
    }
  }

  /**
   * Each partition's slot capacity, and the slots its attempts hold
   * (an attempt counts in the partition it was launched in).
   */
  private slotUse(snapshot: ClusterSnapshot): { cap: Record<TaskKind, number[]>; used: Record<TaskKind, number[]> } {
    const K = this.capacities.length;
    const totalMap = snapshot.workers.reduce((s, w) => s + w.mapSlots, 0);
    const totalReduce = snapshot.workers.reduce((s, w) => s + w.reduceSlots, 0);
    const cap = {
      map: partitionCapacities(totalMap, this.capacities),
      reduce: partitionCapacities(totalReduce, this.capacities),
    };
    const used = { map: new Array<number>(K).fill(0), reduce: new Array<number>(K).fill(0) };
    for (const job of snapshot.jobs) {
      const launchedIn = this.launchedIn.get(job.id);
      for (const a of job.runningAttempts) {
        const k = launchedIn?.get(a.taskId) ?? this.entries.get(job.id)?.partition ?? Math.min(job.partition, K - 1);
        used[a.kind][k]! += 1;
      }
    }
    return { cap, used };
  }

  private launch(snapshot: ClusterSnapshot, decisions: Decision[]): void {
    const K = this.capacities.length;
    const { cap, used } = this.slotUse(snapshot);
    const queues: JobView[][] = Array.from({ length: K }, () => []);
    for (const job of snapshot.jobs) queues[this.entries.get(job.id)!.partition]!.push(job);
    for (const q of queues) {
      q.sort(
        (a, b) =>
          this.entries.get(a.id)!.queueKey - this.entries.get(b.id)!.queueKey ||
          a.submitTime - b.submitTime ||
          byCodeUnit(a.id, b.id),
      );
    }

    const rooms = visitingOrder(snapshot, { freeOnly: true });
    const launched = new Set<string>();

    // Placement rank as FIFO's, except that a worker the task already failed on comes last (it
    // still runs there if nothing else can, so a one-worker cluster is not stuck).
    const picker = new BestPlacedPicker(launched, (task, worker) => task.failedOnWorkers.includes(worker.id));
    /** The first job of partition k's queue with a task that fits `room`, and its best-placed task there. */
    const pick = (k: number, kind: TaskKind, room: Room): { job: JobView; task: TaskView } | undefined => {
      for (const job of queues[k]!) {
        if (minPendingMemoryMb(job.pendingTasks, kind) > room.memoryMb) continue;
        const task = picker.pick(job.pendingTasks, kind, room.worker, (t) => room.memoryMb >= t.memoryMb);
        if (task) return { job, task };
      }
      return undefined;
    };

    for (const room of rooms) {
      for (const kind of ['map', 'reduce'] as const satisfies readonly TaskKind[]) {
        // Each free slot goes to the first partition (P_1 first) that is under its cap and has a
        // task for it; a partition never uses more than its own share of the cluster's slots.
        const free = () => (kind === 'map' ? room.mapSlots : room.reduceSlots) > 0;
        const launch = (job: JobView, task: TaskView, chargedTo: number): void => {
          launched.add(task.id);
          if (kind === 'map') room.mapSlots -= 1;
          else room.reduceSlots -= 1;
          room.memoryMb -= task.memoryMb;
          used[kind][chargedTo]! += 1;
          let perJob = this.launchedIn.get(job.id);
          if (!perJob) this.launchedIn.set(job.id, (perJob = new Map()));
          perJob.set(task.id, chargedTo);
          decisions.push({
            kind: 'launch',
            taskId: task.id,
            jobId: job.id,
            workerId: room.worker.id,
            memoryMb: task.memoryMb,
            locality: localityOf(task, room.worker),
          });
        };
        for (let k = 0; k < K && free(); ) {
          const chosen = used[kind][k]! < cap[kind][k]! ? pick(k, kind, room) : undefined;
          if (!chosen) {
            k++;
            continue;
          }
          launch(chosen.job, chosen.task, k);
        }
        if (!this.borrowIdle) continue;
        // Lenders: partitions under their cap with nothing of this kind to run here.
        for (let lender = 0; lender < K && free(); lender++) {
          if (used[kind][lender]! >= cap[kind][lender]! || pick(lender, kind, room)) continue;
          for (let k = 0; k < K && free() && used[kind][lender]! < cap[kind][lender]!; ) {
            const chosen = k === lender ? undefined : pick(k, kind, room);
            if (!chosen) {
              k++;
              continue;
            }
            launch(chosen.job, chosen.task, lender);
          }
        }
      }
    }
  }
}
