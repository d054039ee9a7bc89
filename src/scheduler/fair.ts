/**
 * FAIR: the Hadoop Fair Scheduler with delay scheduling (Zaharia et al., EuroSys 2010), as a pure
 * policy. Map slots and reduce slots are each shared in two levels: among pools by max-min
 * fairness with minimum shares and weights, then among a pool's jobs (fair by job weight, or in
 * submission order when the pool's mode is 'fifo'). A free slot goes to the job furthest below its
 * share; a job without a node-local map for the free worker waits a bounded time for one (then
 * for a rack-local one) before it runs off-rack; and a pool or job that stays starved past its
 * timeout gets slots by killing the most recently launched attempts of over-scheduled jobs.
 *
 * Everything remembered between calls (locality waits, starvation clocks, kills not yet
 * confirmed) is derived from the snapshots and from this policy's own earlier decisions.
 */
import { LocalityWaits } from './locality-waits.js';
import {
  definePolicy,
  optionError,
  parseOptions,
  type NumberRange,
  type OptionSpecs,
  type PolicyDefinition,
  type PolicyOptions,
} from './options.js';
import { byCodeUnit, localityOf, visitingOrder, type Room } from './rooms.js';
import type {
  AttemptView,
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  Locality,
  Policy,
  PolicyState,
  PoolView,
  TaskKind,
  TaskView,
  WorkerView,
} from './types.js';

// ---------------------------------------------------------------------------------------------
// Options

export type FairOptions = {
  /** How long a job may skip free slots waiting for a node-local map before it accepts a rack-local one. */
  readonly nodeLocalDelayMs: number;
  /** How much longer (after the node-local wait) before it accepts an off-rack one. */
  readonly rackLocalDelayMs: number;
  /** Kill attempts of over-scheduled jobs for starved pools and jobs; off = never kill. */
  readonly preemption: boolean;
  /** T_min: how long a pool may stay below its minimum share before it preempts. */
  readonly minShareTimeoutMs: number;
  /** T_fair: how long a job may stay below half its fair share before it preempts. */
  readonly fairShareTimeoutMs: number;
};

/**
 * Waits of 3 s are three heartbeats of the JobTracker's default 1 s interval: Zaharia et al. show
 * that a job waiting a few heartbeats almost always finds a node-local slot, because slots free up
 * every (task length / slots) seconds, while 3 s stays short next to map tasks of tens of seconds.
 * The timeouts keep T_min < T_fair as the spec asks; 15 s is Hadoop's default preemption check
 * interval, and 30 s lets a newly arrived job get its share from tasks ending on their own before
 * any work is thrown away (Hadoop's 600 s default is sized for hour-long production jobs).
 */
export const DEFAULT_FAIR_OPTIONS: FairOptions = Object.freeze({
  nodeLocalDelayMs: 3000,
  rackLocalDelayMs: 3000,
  preemption: true,
  minShareTimeoutMs: 15_000,
  fairShareTimeoutMs: 30_000,
});

const MS: NumberRange = { min: 0, unit: 'ms' };

/** FAIR's options as `--policy-options` takes them (improved FAIR takes them too). */
export const FAIR_OPTION_SPECS: OptionSpecs<FairOptions> = {
  nodeLocalDelayMs: {
    type: 'number',
    range: MS,
    about: 'how long a job may skip free slots waiting for a node-local map (delay scheduling)',
  },
  rackLocalDelayMs: { type: 'number', range: MS, about: 'how much longer before it accepts an off-rack one' },
  preemption: { type: 'boolean', about: 'kill the newest attempts of over-scheduled jobs for starved pools and jobs' },
  minShareTimeoutMs: {
    type: 'number',
    range: MS,
    about: 'how long a pool may stay below its minimum share before it preempts (below fairShareTimeoutMs)',
  },
  fairShareTimeoutMs: {
    type: 'number',
    range: MS,
    about: 'how long a job may stay below half its fair share before it preempts',
  },
};

/** Checks the timeouts' order, which no single option can be checked for alone. */
export function checkTimeouts(policy: string, options: FairOptions): void {
  if (options.preemption && !(options.minShareTimeoutMs < options.fairShareTimeoutMs)) {
    throw optionError(
      policy,
      'minShareTimeoutMs',
      `(${options.minShareTimeoutMs}) must be below ` +
        `'fairShareTimeoutMs' (${options.fairShareTimeoutMs}) while ` +
        `preemption is on (T_min < T_fair)`,
    );
  }
}

export function parseFairOptions(raw: PolicyOptions, policy = 'fair'): FairOptions {
  const options = parseOptions(policy, raw, FAIR_OPTION_SPECS, DEFAULT_FAIR_OPTIONS);
  checkTimeouts(policy, options);
  return options;
}

export const FAIR_DEFINITION: PolicyDefinition = definePolicy({
  name: 'fair',
  summary:
    "Hadoop's Fair Scheduler: pools (--pools) with minimum shares " +
    'and weights, water-filled shares, delay scheduling, and ' +
    'preemption of the newest attempts of the jobs most over their ' +
    'share',
  options: FAIR_OPTION_SPECS,
  defaults: DEFAULT_FAIR_OPTIONS,
  create: (options) => new FairPolicy(parseFairOptions(options)),
});

// ---------------------------------------------------------------------------------------------
// Shares

export interface ShareClaim {
  /** Slots it could use now (running + pending). */
  readonly demand: number;
  /** Slots it is guaranteed as long as it demands them. */
  readonly minShare: number;
  readonly weight: number;
}

/**
 * Max-min fair shares with floors, as Hadoop's Fair Scheduler computes them: each claim gets
 * min(demand, max(minShare, R * weight)) for the one water level R at which the shares add up to
 * the capacity (or to the total demand, when that is smaller). Minimum shares are thus met first,
 * the rest goes by weight, and what a claim does not demand flows to the others. When minimum
 * shares alone exceed what there is to give, they are scaled down in proportion.
 */
export function waterFill(claims: readonly ShareClaim[], capacity: number): number[] {
  const demands = claims.map((c) => Math.max(0, c.demand));
  const total = Math.min(
    Math.max(0, capacity),
    demands.reduce((s, d) => s + d, 0),
  );
  if (total <= 0) return claims.map(() => 0);
  const mins = claims.map((c, i) => Math.min(Math.max(0, c.minShare), demands[i]!));
  const sumMin = mins.reduce((s, m) => s + m, 0);
  if (sumMin >= total) return mins.map((m) => (m * total) / sumMin);
  const weights = claims.map((c) => (Number.isFinite(c.weight) && c.weight > 0 ? c.weight : 1));
  const filled = (level: number): number =>
    demands.reduce((s, d, i) => s + Math.min(d, Math.max(mins[i]!, level * weights[i]!)), 0);
  // filled() is piecewise linear in the level, with kinks where a claim leaves its floor or
  // reaches its demand: find the segment that reaches `total` and solve it exactly.
  const kinks = [...new Set(demands.flatMap((d, i) => [mins[i]! / weights[i]!, d / weights[i]!]))].sort(
    (a, b) => a - b,
  );
  let level = kinks[kinks.length - 1] ?? 0;
  let prev = 0;
  let prevFilled = sumMin;
  for (const k of kinks) {
    const atK = filled(k);
    if (atK >= total) {
      level = atK === prevFilled ? k : prev + ((total - prevFilled) * (k - prev)) / (atK - prevFilled);
      break;
    }
    prev = k;
    prevFilled = atK;
  }
  return demands.map((d, i) => Math.min(d, Math.max(mins[i]!, level * weights[i]!)));
}

// ---------------------------------------------------------------------------------------------
// The model of one call

const KINDS: readonly TaskKind[] = ['map', 'reduce'];
export type PerKind<T> = Record<TaskKind, T>;
const perKind = <T>(make: () => T): PerKind<T> => ({ map: make(), reduce: make() });

interface PoolModel {
  readonly name: string;
  readonly weight: number;
  readonly mode: 'fair' | 'fifo';
  readonly configuredMin: PerKind<number>;
  readonly jobs: JobModel[];
  startTime: number;
  readonly run: PerKind<number>;
  readonly demand: PerKind<number>;
  /** min(minimum share, demand), scaled down when the pools' minimums exceed the capacity. */
  readonly minTarget: PerKind<number>;
  readonly share: PerKind<number>;
  /** Its jobs with tasks left to launch in this call, best first. */
  readonly queue: PerKind<JobModel[]>;
}

interface JobModel {
  readonly view: JobView;
  readonly pool: PoolModel;
  readonly weight: number;
  readonly pending: PerKind<TaskView[]>;
  /** Running attempts this policy has not asked to kill. */
  readonly attempts: PerKind<AttemptView[]>;
  /** Attempts not asked to kill, plus launches of this call. */
  readonly run: PerKind<number>;
  readonly demand: PerKind<number>;
  readonly share: PerKind<number>;
  readonly unlaunched: PerKind<number>;
  mapIndex?: MapIndex;
}

/** A job's pending maps by where their input sits, built once per call when first needed. */
interface MapIndex {
  readonly byWorker: Map<string, TaskView[]>;
  readonly byRack: Map<string, TaskView[]>;
  /** Maps whose input sits on no live worker: there is no better place to wait for. */
  readonly homeless: TaskView[];
  /** Maps with input on some live worker. */
  readonly located: TaskView[];
}

/**
 * A map slot kept for one pending task until that task can run there node-local (a copy of its input is on the way).
 */
export interface SlotHold {
  readonly workerId: string;
  readonly jobId: string;
  readonly taskId: string;
}

/** What a kill is for: the job that the freed slot is meant for. */
export interface VictimContext {
  readonly snapshot: ClusterSnapshot;
  readonly workers: ReadonlyMap<string, WorkerView>;
  readonly beneficiary: JobView;
  /** The beneficiary's pending maps not launched in this call, in task order. */
  readonly beneficiaryPendingMaps: readonly TaskView[];
  /** Workers holding the input of one of those maps. */
  readonly beneficiaryInputWorkers: ReadonlySet<string>;
  /**
   * Pending maps already counted on to run data-local in a freed slot during this call (shared by
   * all kills of the call), so two freed slots do not count on the same map.
   */
  readonly claimed: Set<string>;
}

interface Need {
  readonly kind: TaskKind;
  readonly beneficiary: JobModel;
  /** Pool preemption takes from other pools only; job preemption from any other job. */
  readonly scope: 'pool' | 'job';
  count: number;
  readonly reason: string;
}

function sign(x: number): number {
  return x < 0 ? -1 : x > 0 ? 1 : 0;
}

function slotsOf(room: Room, kind: TaskKind): number {
  return kind === 'map' ? room.mapSlots : room.reduceSlots;
}

function fits(room: Room, task: TaskView): boolean {
  return slotsOf(room, task.kind) > 0 && room.memoryMb >= task.memoryMb;
}

/** Hadoop's FairShareComparator for pools: needy pools (below minimum share) first, by how needy. */
function comparePools(kind: TaskKind): (a: PoolModel, b: PoolModel) => number {
  return (a, b) => {
    const aNeedy = a.run[kind] < a.minTarget[kind];
    const bNeedy = b.run[kind] < b.minTarget[kind];
    let r: number;
    if (aNeedy !== bNeedy) r = aNeedy ? -1 : 1;
    else if (aNeedy)
      r = sign(a.run[kind] / Math.max(a.minTarget[kind], 1) - b.run[kind] / Math.max(b.minTarget[kind], 1));
    else r = sign(a.run[kind] / a.weight - b.run[kind] / b.weight);
    return r || sign(a.startTime - b.startTime) || byCodeUnit(a.name, b.name);
  };
}

/** Within a pool: fewest running per weight first (fair), or submission order (fifo). */
function compareJobs(kind: TaskKind, mode: 'fair' | 'fifo'): (a: JobModel, b: JobModel) => number {
  return (a, b) =>
    (mode === 'fair' ? sign(a.run[kind] / a.weight - b.run[kind] / b.weight) : 0) ||
    sign(a.view.submitTime - b.view.submitTime) ||
    byCodeUnit(a.view.id, b.view.id);
}

/** Moves `item` to where `cmp` puts it in the otherwise sorted `list`. */
function reposition<T>(list: T[], item: T, cmp: (a: T, b: T) => number): void {
  const at = list.indexOf(item);
  if (at >= 0) list.splice(at, 1);
  let i = 0;
  while (i < list.length && cmp(list[i]!, item) <= 0) i++;
  list.splice(i, 0, item);
}

function remove<T>(list: T[], item: T): void {
  const at = list.indexOf(item);
  if (at >= 0) list.splice(at, 1);
}

const LOCALITY_RANK: Readonly<Record<Locality, number>> = { any: 0, rack: 1, node: 2 };

/** Most recently launched first; among equals, input on another rack, then same rack, then same node. */
export function mostRecentFirst(a: AttemptView, b: AttemptView): number {
  return b.startTime - a.startTime || LOCALITY_RANK[a.locality] - LOCALITY_RANK[b.locality] || byCodeUnit(b.id, a.id);
}

/**
 * Pools and jobs of a snapshot with their running counts, demands and shares per task kind.
 * Attempts in `killing` are on their way out: they count toward demand (their tasks come back)
 * but not as running.
 */
function buildModel(
  snapshot: ClusterSnapshot,
  killing: ReadonlySet<string>,
): { jobs: JobModel[]; pools: PoolModel[]; workers: Map<string, WorkerView> } {
  const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
  const capacity: PerKind<number> = { map: 0, reduce: 0 };
  for (const w of snapshot.workers) {
    capacity.map += Math.max(0, w.mapSlots);
    capacity.reduce += Math.max(0, w.reduceSlots);
  }
  const byName = new Map<string, PoolModel>();
  const newPool = (name: string, config?: PoolView): PoolModel => ({
    name,
    weight: config && Number.isFinite(config.weight) && config.weight > 0 ? config.weight : 1,
    mode: config?.mode === 'fifo' ? 'fifo' : 'fair',
    configuredMin: { map: Math.max(0, config?.minMapSlots ?? 0), reduce: Math.max(0, config?.minReduceSlots ?? 0) },
    jobs: [],
    startTime: Infinity,
    run: perKind(() => 0),
    demand: perKind(() => 0),
    minTarget: perKind(() => 0),
    share: perKind(() => 0),
    queue: perKind(() => []),
  });
  for (const p of snapshot.pools) if (!byName.has(p.name)) byName.set(p.name, newPool(p.name, p));

  const jobs: JobModel[] = [];
  for (const view of snapshot.jobs) {
    let pool = byName.get(view.pool);
    if (!pool) {
      pool = newPool(view.pool);
      byName.set(view.pool, pool);
    }
    const job: JobModel = {
      view,
      pool,
      weight: Number.isFinite(view.weight) && view.weight > 0 ? view.weight : 1,
      pending: perKind(() => []),
      attempts: perKind(() => []),
      run: perKind(() => 0),
      demand: perKind(() => 0),
      share: perKind(() => 0),
      unlaunched: perKind(() => 0),
    };
    for (const a of view.runningAttempts) {
      job.demand[a.kind] += 1;
      if (killing.has(a.id)) continue;
      job.attempts[a.kind].push(a);
      job.run[a.kind] += 1;
    }
    for (const t of view.pendingTasks) {
      job.pending[t.kind].push(t);
      job.demand[t.kind] += 1;
      job.unlaunched[t.kind] += 1;
    }
    for (const kind of KINDS) {
      pool.run[kind] += job.run[kind];
      pool.demand[kind] += job.demand[kind];
    }
    pool.startTime = Math.min(pool.startTime, view.submitTime);
    pool.jobs.push(job);
    jobs.push(job);
  }
  const pools = [...byName.values()].filter((p) => p.jobs.length > 0);

  for (const kind of KINDS) {
    const total = Math.min(
      capacity[kind],
      pools.reduce((s, p) => s + p.demand[kind], 0),
    );
    const wanted = pools.map((p) => Math.min(p.configuredMin[kind], p.demand[kind]));
    const sumWanted = wanted.reduce((s, m) => s + m, 0);
    const scale = sumWanted > total ? total / sumWanted : 1;
    pools.forEach((p, i) => (p.minTarget[kind] = wanted[i]! * scale));
    const shares = waterFill(
      pools.map((p) => ({ demand: p.demand[kind], minShare: p.minTarget[kind], weight: p.weight })),
      capacity[kind],
    );
    pools.forEach((p, i) => (p.share[kind] = shares[i]!));
    for (const pool of pools) {
      if (pool.mode === 'fair') {
        const jobShares = waterFill(
          pool.jobs.map((j) => ({ demand: j.demand[kind], minShare: 0, weight: j.weight })),
          pool.share[kind],
        );
        pool.jobs.forEach((j, i) => (j.share[kind] = jobShares[i]!));
      } else {
        let left = pool.share[kind];
        for (const j of [...pool.jobs].sort(compareJobs(kind, 'fifo'))) {
          j.share[kind] = Math.min(j.demand[kind], left);
          left -= j.share[kind];
        }
      }
    }
  }
  return { jobs, pools, workers };
}

export interface ShareFigures {
  readonly running: number;
  /** Running attempts plus pending tasks. */
  readonly demand: number;
  /** Pools: min(minimum share, demand), scaled down when the minimums exceed the capacity; jobs: 0. */
  readonly minShare: number;
  readonly share: number;
}

export interface FairShares {
  readonly pools: ReadonlyMap<string, PerKind<ShareFigures>>;
  readonly jobs: ReadonlyMap<string, PerKind<ShareFigures>>;
}

/** The shares FAIR works with for a snapshot, for reports and tests. */
export function fairShares(snapshot: ClusterSnapshot): FairShares {
  const { jobs, pools } = buildModel(snapshot, new Set());
  const figures = (
    run: PerKind<number>,
    demand: PerKind<number>,
    min: PerKind<number> | undefined,
    share: PerKind<number>,
  ): PerKind<ShareFigures> => ({
    map: { running: run.map, demand: demand.map, minShare: min?.map ?? 0, share: share.map },
    reduce: { running: run.reduce, demand: demand.reduce, minShare: min?.reduce ?? 0, share: share.reduce },
  });
  return {
    pools: new Map(pools.map((p) => [p.name, figures(p.run, p.demand, p.minTarget, p.share)])),
    jobs: new Map(jobs.map((j) => [j.view.id, figures(j.run, j.demand, undefined, j.share)])),
  };
}

// ---------------------------------------------------------------------------------------------
// The policy

type Home = 'node' | 'rack' | 'off' | 'none';

interface FillContext {
  readonly snapshot: ClusterSnapshot;
  readonly workers: ReadonlyMap<string, WorkerView>;
  readonly decisions: Decision[];
  readonly launched: Set<string>;
  readonly queues: PerKind<PoolModel[]>;
  /** Tasks that only their held slot may run. */
  readonly held: ReadonlySet<string>;
}

export class FairPolicy implements Policy {
  readonly name: string = 'fair';
  /** Locality waits and starvation timeouts run out with time alone. */
  readonly consultWhen: Consultation = 'every-event';
  readonly options: FairOptions;

  private readonly waits = new LocalityWaits();
  /** When a pool (key kind + pool) was first seen below its minimum share, while it still is. */
  private readonly poolStarvedSince = new Map<string, number>();
  /** When a job (key kind + job) was first seen below half its fair share, while it still is. */
  private readonly jobStarvedSince = new Map<string, number>();
  /** Attempts this policy asked to kill that the snapshots still list. */
  private readonly killing = new Set<string>();

  constructor(options: Partial<FairOptions> = {}) {
    this.options = parseFairOptions(options, this.policyName());
  }

  /** For option messages, before the subclass's `name` field is initialised. */
  protected policyName(): string {
    return 'fair';
  }

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const now = snapshot.now;
    this.advanceWaits(snapshot);
    const { jobs, pools, workers } = buildModel(snapshot, this.killing);
    this.updateStarvation(jobs, pools, now);

    const decisions: Decision[] = [];
    const launched = new Set<string>();
    const queues: PerKind<PoolModel[]> = perKind(() => []);
    for (const kind of KINDS) {
      for (const pool of pools)
        pool.queue[kind].push(...pool.jobs.filter((j) => j.unlaunched[kind] > 0).sort(compareJobs(kind, pool.mode)));
      queues[kind].push(...pools.filter((p) => p.queue[kind].length > 0).sort(comparePools(kind)));
    }

    const holds = this.liveHolds(snapshot, jobs);
    const held = new Set([...holds.values()].flatMap((list) => list.map((h) => h.task.id)));
    const ctx = { snapshot, workers, decisions, launched, queues, held };
    let heldIdle = 0;
    for (const room of visitingOrder(snapshot)) {
      heldIdle += this.serveHolds(room, holds.get(room.worker.id), ctx);
      this.fill('map', room, ctx);
      this.fill('reduce', room, ctx);
    }
    if (this.options.preemption) {
      for (const kind of KINDS) this.preempt(kind, jobs, pools, ctx, kind === 'map' ? heldIdle : 0);
    }
    return decisions;
  }

  /** Pools and jobs with their running tasks, demand, minimum and fair shares, and how long each has been starved. */
  describeState(snapshot: ClusterSnapshot): PolicyState {
    const shares = fairShares(snapshot);
    const round = (x: number) => Math.round(x * 100) / 100;
    const starved = (map: ReadonlyMap<string, number>, id: string) =>
      KINDS.flatMap((kind) => {
        const since = map.get(`${kind}\0${id}`);
        return since === undefined ? [] : [`${kind} ${Math.round((snapshot.now - since) / 1000)} s`];
      }).join(', ') || '-';
    const configured = new Map(snapshot.pools.map((p) => [p.name, p]));
    const o = this.options;
    return {
      notes: [
        `delay scheduling: ${o.nodeLocalDelayMs} ms for a node-local ` +
          `map, then ${o.rackLocalDelayMs} ms more for a rack-local one`,
        o.preemption
          ? `preemption: after ${o.minShareTimeoutMs} ms below a pool's ` +
            `minimum share, or ${o.fairShareTimeoutMs} ms below half a job's ` +
            `fair share`
          : 'preemption: off',
      ],
      tables: [
        {
          title: 'Pools',
          columns: [
            'pool',
            'mode',
            'weight',
            'map running',
            'map demand',
            'map min share',
            'map fair share',
            'reduce running',
            'reduce demand',
            'reduce min share',
            'reduce fair share',
            'below min share for',
          ],
          // Configured pools first, idle ones too (with zeros), then pools named only by jobs.
          rows: [...new Set([...configured.keys(), ...shares.pools.keys()])].map((name) => {
            const p = configured.get(name);
            const f = shares.pools.get(name);
            return [
              name,
              p?.mode ?? 'fair',
              p?.weight ?? 1,
              f?.map.running ?? 0,
              f?.map.demand ?? 0,
              round(f?.map.minShare ?? 0),
              round(f?.map.share ?? 0),
              f?.reduce.running ?? 0,
              f?.reduce.demand ?? 0,
              round(f?.reduce.minShare ?? 0),
              round(f?.reduce.share ?? 0),
              starved(this.poolStarvedSince, name),
            ];
          }),
        },
        {
          title: 'Jobs',
          columns: [
            'job',
            'pool',
            'weight',
            'map running',
            'map demand',
            'map fair share',
            'reduce running',
            'reduce demand',
            'reduce fair share',
            'below half its share for',
          ],
          rows: snapshot.jobs.map((j) => {
            const f = shares.jobs.get(j.id);
            return [
              j.id,
              j.pool,
              j.weight,
              f?.map.running ?? 0,
              f?.map.demand ?? 0,
              round(f?.map.share ?? 0),
              f?.reduce.running ?? 0,
              f?.reduce.demand ?? 0,
              round(f?.reduce.share ?? 0),
              starved(this.jobStarvedSince, j.id),
            ];
          }),
        },
      ],
    };
  }

  /** Slots a subclass keeps for particular tasks; FAIR keeps none. */
  protected mapSlotHolds(_snapshot: ClusterSnapshot): readonly SlotHold[] {
    return [];
  }

  /** The holds whose task is still pending, by worker. */
  private liveHolds(
    snapshot: ClusterSnapshot,
    jobs: readonly JobModel[],
  ): Map<string, Array<{ job: JobModel; task: TaskView }>> {
    const byWorker = new Map<string, Array<{ job: JobModel; task: TaskView }>>();
    const holds = this.mapSlotHolds(snapshot);
    if (holds.length === 0) return byWorker;
    const jobsById = new Map(jobs.map((j) => [j.view.id, j]));
    for (const hold of holds) {
      const job = jobsById.get(hold.jobId);
      const task = job?.pending.map.find((t) => t.id === hold.taskId);
      if (!job || !task) continue;
      const list = byWorker.get(hold.workerId);
      if (list) list.push({ job, task });
      else byWorker.set(hold.workerId, [{ job, task }]);
    }
    return byWorker;
  }

  /**
   * A held slot runs its task as soon as the task's input is on the node; until then it stays
   * idle, so the copy is not wasted on a task that reads its input over the network anyway.
   */
  private serveHolds(
    room: Room,
    holds: ReadonlyArray<{ job: JobModel; task: TaskView }> | undefined,
    ctx: FillContext,
  ): number {
    let idle = 0;
    for (const { job, task } of holds ?? []) {
      if (room.mapSlots <= 0) break;
      if (ctx.launched.has(task.id)) continue;
      if (task.preferredWorkers.includes(room.worker.id) && fits(room, task)) {
        this.launch(job, task, 'node', room, ctx);
      } else {
        room.mapSlots -= 1;
        room.memoryMb -= Math.min(room.memoryMb, task.memoryMb);
        idle += 1;
      }
    }
    return idle;
  }

  // --- state carried between calls -----------------------------------------------------------

  /** Jobs' locality waits advance; kills the snapshots no longer list are done. */
  private advanceWaits(snapshot: ClusterSnapshot): void {
    this.waits.advance(snapshot);
    const listed = new Set(snapshot.jobs.flatMap((j) => j.runningAttempts.map((a) => a.id)));
    for (const id of this.killing) if (!listed.has(id)) this.killing.delete(id);
  }

  private updateStarvation(jobs: readonly JobModel[], pools: readonly PoolModel[], now: number): void {
    const seenPools = new Set<string>();
    const seenJobs = new Set<string>();
    const track = (map: Map<string, number>, seen: Set<string>, key: string, starved: boolean): void => {
      seen.add(key);
      if (!starved) map.delete(key);
      else if (!map.has(key)) map.set(key, now);
    };
    for (const kind of KINDS) {
      for (const p of pools)
        track(this.poolStarvedSince, seenPools, `${kind}\0${p.name}`, p.run[kind] < p.minTarget[kind]);
      for (const j of jobs)
        track(this.jobStarvedSince, seenJobs, `${kind}\0${j.view.id}`, j.run[kind] < j.share[kind] / 2);
    }
    for (const key of this.poolStarvedSince.keys()) if (!seenPools.has(key)) this.poolStarvedSince.delete(key);
    for (const key of this.jobStarvedSince.keys()) if (!seenJobs.has(key)) this.jobStarvedSince.delete(key);
  }

  /** Milliseconds the pool has been below its minimum share, or undefined when it is not. */
  private poolStarvedFor(pool: PoolModel, kind: TaskKind, now: number): number | undefined {
    const since = this.poolStarvedSince.get(`${kind}\0${pool.name}`);
    return since === undefined ? undefined : now - since;
  }

  private jobStarvedFor(job: JobModel, kind: TaskKind, now: number): number | undefined {
    const since = this.jobStarvedSince.get(`${kind}\0${job.view.id}`);
    return since === undefined ? undefined : now - since;
  }

  /** Starved past a preemption timeout: such a job takes any slot rather than wait for locality (as Hadoop does). */
  private starvedPastTimeout(job: JobModel, kind: TaskKind, now: number): boolean {
    const pool = this.poolStarvedFor(job.pool, kind, now);
    const own = this.jobStarvedFor(job, kind, now);
    return (
      (pool !== undefined && pool >= this.options.minShareTimeoutMs) ||
      (own !== undefined && own >= this.options.fairShareTimeoutMs)
    );
  }

  private mapIndexOf(job: JobModel, workers: ReadonlyMap<string, WorkerView>): MapIndex {
    if (job.mapIndex) return job.mapIndex;
    const index: MapIndex = { byWorker: new Map(), byRack: new Map(), homeless: [], located: [] };
    const add = (map: Map<string, TaskView[]>, key: string, t: TaskView): void => {
      const list = map.get(key);
      if (list) list.push(t);
      else map.set(key, [t]);
    };
    for (const t of job.pending.map) {
      const live = t.preferredWorkers.filter((id) => workers.has(id));
      if (live.length === 0) {
        index.homeless.push(t);
        continue;
      }
      index.located.push(t);
      for (const id of new Set(live)) add(index.byWorker, id, t);
      for (const rack of new Set(t.preferredRacks)) add(index.byRack, rack, t);
    }
    job.mapIndex = index;
    return index;
  }

  // --- assignment ---------------------------------------------------------------------------

  private fill(kind: TaskKind, room: Room, ctx: FillContext): void {
    const queue = ctx.queues[kind];
    while (slotsOf(room, kind) > 0) {
      let chosen: { job: JobModel; task: TaskView; home: Home } | undefined;
      search: for (const pool of queue) {
        for (const job of pool.queue[kind]) {
          chosen = this.choose(job, kind, room, ctx);
          if (chosen) break search;
        }
      }
      if (!chosen) return;
      this.launch(chosen.job, chosen.task, chosen.home, room, ctx);
    }
  }

  private launch(job: JobModel, task: TaskView, home: Home, room: Room, ctx: FillContext): void {
    const kind = task.kind;
    const queue = ctx.queues[kind];
    ctx.launched.add(task.id);
    if (kind === 'map') room.mapSlots -= 1;
    else room.reduceSlots -= 1;
    room.memoryMb -= task.memoryMb;
    ctx.decisions.push({
      kind: 'launch',
      taskId: task.id,
      jobId: job.view.id,
      workerId: room.worker.id,
      memoryMb: task.memoryMb,
      locality: localityOf(task, room.worker),
    });
    if (kind === 'map' && home !== 'none')
      this.waits.launched(job.view.id, home === 'node' ? 0 : home === 'rack' ? 1 : 2);
    job.run[kind] += 1;
    job.pool.run[kind] += 1;
    job.unlaunched[kind] -= 1;
    const pool = job.pool;
    if (job.unlaunched[kind] === 0) remove(pool.queue[kind], job);
    else reposition(pool.queue[kind], job, compareJobs(kind, pool.mode));
    if (pool.queue[kind].length === 0) remove(queue, pool);
    else reposition(queue, pool, comparePools(kind));
  }

  /**
   * The task `job` runs on `room` if offered the slot now, or undefined when it has none that fits
   * or prefers to wait for a better-placed slot (which then counts as a skip).
   */
  private choose(
    job: JobModel,
    kind: TaskKind,
    room: Room,
    ctx: FillContext,
  ): { job: JobModel; task: TaskView; home: Home } | undefined {
    const worker = room.worker;
    const usable = (t: TaskView): boolean =>
      !ctx.launched.has(t.id) && !ctx.held.has(t.id) && fits(room, t) && !this.avoid(t, worker, ctx.workers);
    const first = (list: readonly TaskView[] | undefined): TaskView | undefined => list?.find(usable);
    if (kind === 'reduce') {
      const task = first(job.pending.reduce);
      return task && { job, task, home: 'none' };
    }
    const index = this.mapIndexOf(job, ctx.workers);
    const node = first(index.byWorker.get(worker.id));
    if (node) return { job, task: node, home: 'node' };
    const allowed = this.allowedLevel(job, ctx.snapshot.now);
    const rack = first(index.byRack.get(worker.rack));
    if (rack && allowed >= 1) return { job, task: rack, home: 'rack' };
    const homeless = first(index.homeless);
    if (homeless) return { job, task: homeless, home: 'none' };
    const off = rack ?? first(index.located);
    if (off && allowed >= 2) return { job, task: off, home: 'off' };
    if (off) this.waits.of(job.view.id).skipped = true;
    return undefined;
  }

  /** Locality level a job may launch at now: 0 node-local only, 1 rack-local too, 2 anywhere. */
  private allowedLevel(job: JobModel, now: number): 0 | 1 | 2 {
    if (this.starvedPastTimeout(job, 'map', now)) return 2;
    const state = this.waits.peek(job.view.id) ?? { level: 0, waitMs: 0 };
    const { nodeLocalDelayMs: w1, rackLocalDelayMs: w2 } = this.options;
    if (state.level === 2) return 2;
    if (state.level === 1) return state.waitMs >= w2 ? 2 : 1;
    return state.waitMs >= w1 + w2 ? 2 : state.waitMs >= w1 ? 1 : 0;
  }

  /**
   * A task that already failed on this worker waits for another, as long as some other live
   * worker could ever run it; otherwise it runs here again rather than never.
   */
  private avoid(task: TaskView, worker: WorkerView, workers: ReadonlyMap<string, WorkerView>): boolean {
    if (!task.failedOnWorkers.includes(worker.id)) return false;
    for (const other of workers.values()) {
      if (other.id === worker.id || task.failedOnWorkers.includes(other.id)) continue;
      const slots = task.kind === 'map' ? other.mapSlots : other.reduceSlots;
      if (slots > 0 && other.memoryMb >= task.memoryMb) return true;
    }
    return false;
  }

  // --- preemption ---------------------------------------------------------------------------

  private preempt(
    kind: TaskKind,
    jobs: readonly JobModel[],
    pools: readonly PoolModel[],
    ctx: FillContext,
    heldIdle: number,
  ): void {
    const now = ctx.snapshot.now;
    const { minShareTimeoutMs, fairShareTimeoutMs } = this.options;
    // Kills asked for earlier that the runtime has not confirmed yet will free slots already, and
    // slots held for a task whose input is being copied there are freed already.
    let credit = heldIdle;
    for (const j of ctx.snapshot.jobs)
      for (const a of j.runningAttempts) if (a.kind === kind && this.killing.has(a.id)) credit += 1;
    const needs: Need[] = [];
    const firstWaiting = (pool: PoolModel): JobModel | undefined =>
      [...pool.jobs].filter((j) => j.unlaunched[kind] > 0).sort(compareJobs(kind, pool.mode))[0];

    for (const pool of [...pools].sort(comparePools(kind))) {
      const starvedFor = this.poolStarvedFor(pool, kind, now);
      if (starvedFor === undefined || starvedFor < minShareTimeoutMs) continue;
      const count = Math.floor(pool.minTarget[kind] + 1e-9) - pool.run[kind];
      const beneficiary = firstWaiting(pool);
      if (count <= 0 || !beneficiary) continue;
      needs.push({
        kind,
        beneficiary,
        scope: 'pool',
        count,
        reason:
          `preempted for pool "${pool.name}": ${pool.run[kind]} ${kind}s ` +
          `running, below its minimum share ` +
          `of ${round(pool.minTarget[kind])} for ${starvedFor} ms ` +
          `(minShareTimeoutMs ${minShareTimeoutMs})`,
      });
    }
    const starvedJobs = jobs
      .filter((j) => (this.jobStarvedFor(j, kind, now) ?? -1) >= fairShareTimeoutMs && j.unlaunched[kind] > 0)
      .sort(
        (a, b) =>
          sign(a.run[kind] / a.share[kind] - b.run[kind] / b.share[kind]) ||
          sign(a.view.submitTime - b.view.submitTime) ||
          byCodeUnit(a.view.id, b.view.id),
      );
    const jobNeeds: Need[] = [];
    for (const job of starvedJobs) {
      const count = Math.floor(job.share[kind] + 1e-9) - job.run[kind];
      if (count <= 0) continue;
      jobNeeds.push({
        kind,
        beneficiary: job,
        scope: 'job',
        count,
        reason:
          `preempted for job ${job.view.id}: ${job.run[kind]} ${kind}s ` +
          `running, below half its fair share of ${round(job.share[kind])} ` +
          `for ${this.jobStarvedFor(job, kind, now)} ms ` +
          `(fairShareTimeoutMs ${fairShareTimeoutMs})`,
      });
    }

    const killed = new Set<string>();
    const orders = new Map<string, AttemptView[]>();
    const contexts = new Map<string, VictimContext>();
    const claimed = new Set<string>();
    const contextFor = (beneficiary: JobModel): VictimContext => {
      let c = contexts.get(beneficiary.view.id);
      if (!c) {
        const maps = beneficiary.pending.map.filter((t) => !ctx.launched.has(t.id) && !ctx.held.has(t.id));
        c = {
          snapshot: ctx.snapshot,
          workers: ctx.workers,
          beneficiary: beneficiary.view,
          beneficiaryPendingMaps: maps,
          beneficiaryInputWorkers: new Set(maps.flatMap((t) => t.preferredWorkers)),
          claimed,
        };
        contexts.set(beneficiary.view.id, c);
      }
      return c;
    };
    // Slots freed for a pool's minimum share go to its jobs first, so they count toward the
    // fair-share needs of those jobs too.
    const givenToPool = new Map<PoolModel, number>();
    const serve = (need: Need): number => {
      const fromCredit = Math.min(credit, need.count);
      credit -= fromCredit;
      need.count -= fromCredit;
      const victimCtx = contextFor(need.beneficiary);
      let done = 0;
      for (; done < need.count; done++) {
        const victim = this.pickVictimJob(need, jobs, killed);
        if (!victim) break;
        const key = `${victim.view.id}\0${need.beneficiary.view.id}`;
        let order = orders.get(key);
        if (!order) {
          order = this.orderVictimAttempts(victim.view, victim.attempts[kind], victimCtx);
          orders.set(key, order);
        }
        const attempt = order.find((a) => !killed.has(a.id))!;
        killed.add(attempt.id);
        this.killing.add(attempt.id);
        victim.run[kind] -= 1;
        victim.pool.run[kind] -= 1;
        need.beneficiary.run[kind] += 1;
        need.beneficiary.pool.run[kind] += 1;
        ctx.decisions.push({ kind: 'kill', attemptId: attempt.id, reason: need.reason });
        if (kind === 'map') ctx.decisions.push(...this.afterKill(attempt, victimCtx));
      }
      return done + fromCredit;
    };
    for (const need of needs) {
      const pool = need.beneficiary.pool;
      givenToPool.set(pool, (givenToPool.get(pool) ?? 0) + serve(need));
    }
    for (const need of jobNeeds) {
      const pool = need.beneficiary.pool;
      const given = Math.min(givenToPool.get(pool) ?? 0, need.count);
      givenToPool.set(pool, (givenToPool.get(pool) ?? 0) - given);
      need.count -= given;
      if (need.count > 0) serve(need);
    }
  }

  /**
   * The job to take the next slot from: the one most over its share among those that stay at or
   * above their share (rounded down to whole slots) after losing the slot, whose pool does too
   * unless the slot stays in that pool; a pool's preemption takes from other pools only.
   */
  private pickVictimJob(need: Need, jobs: readonly JobModel[], killed: ReadonlySet<string>): JobModel | undefined {
    const { kind, beneficiary } = need;
    let best: JobModel | undefined;
    let bestExcess = 0;
    let bestLatest = 0;
    for (const v of jobs) {
      if (v === beneficiary || (need.scope === 'pool' && v.pool === beneficiary.pool)) continue;
      if (v.run[kind] - 1 < Math.floor(v.share[kind] + 1e-9)) continue;
      if (v.pool !== beneficiary.pool && v.pool.run[kind] - 1 < Math.floor(v.pool.share[kind] + 1e-9)) continue;
      const alive = v.attempts[kind].filter((a) => !killed.has(a.id));
      if (alive.length === 0) continue;
      const excess = v.run[kind] - v.share[kind];
      const latest = Math.max(...alive.map((a) => a.startTime));
      if (
        !best ||
        excess > bestExcess + 1e-9 ||
        (Math.abs(excess - bestExcess) <= 1e-9 &&
          (latest > bestLatest || (latest === bestLatest && byCodeUnit(v.view.id, best.view.id) < 0)))
      ) {
        best = v;
        bestExcess = excess;
        bestLatest = latest;
      }
    }
    return best;
  }

  /** The order in which a victim job's attempts are killed: FAIR kills the most recently launched first. */
  protected orderVictimAttempts(
    _victim: JobView,
    attempts: readonly AttemptView[],
    _ctx: VictimContext,
  ): AttemptView[] {
    return [...attempts].sort(mostRecentFirst);
  }

  /** Extra decisions after killing `attempt` for `ctx.beneficiary`; FAIR has none. */
  protected afterKill(_attempt: AttemptView, _ctx: VictimContext): Decision[] {
    return [];
  }
}

function round(x: number): string {
  return String(Math.round(x * 100) / 100);
}
