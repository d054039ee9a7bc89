/**
 * YARN-ME: memory-elastic scheduling (Iorgulescu et al., ATC 2017; docs/specs/yarn-me.md), as a pure policy.
 * A task granted less than its ideal memory still runs, only slower (it spills); YARN-ME grants
 * such *elastic* allocations where YARN would leave memory idle, whenever that does not make the
 * task its job's straggler. With elasticity off the same loop is plain YARN (the `yarn` policy:
 * regular allocation, reservations, fair queue order; yarn.ts).
 *
 * The decision loop, on each node N's heartbeat (any other trigger visits every node with a free
 * slot, in id order):
 *   1. J = the job that reserved N, else the next job of the queue (fair share order).
 *   2. T = J's next task (node-local first). If T fits regularly (its ideal memory is free on N):
 *      allocate regular.
 *   3. Else if T fits elastically: the grant in [minimum, free] (whole memory steps) of lowest
 *      predicted duration, the smallest among equal ones (the reduce sawtooth); allocate elastic
 *      only if now + that duration does not pass J's estimated completion from the timeline
 *      generator (timeline.ts): an elastic task must never become J's straggler.
 *   4. If T got nothing: reserve N for J. Tasks of other jobs may still use a reserved N only if
 *      they end before J's task could start there (backfilling).
 *   5. Disk contention: elastic tasks on a node together use at most `diskShare` of its disk
 *      bandwidth (their spill rates, penalty.ts); no new elastic task starts beyond it.
 * Repeat on N while something was allocated.
 *
 * Durations are the tasks' estimates (TaskView.idealDurationMs and penalty): a task without them
 * (no profile) runs only regular. Reservations are the only state of the policy kept between
 * calls; they are dropped when their job or node is gone or has nothing pending. What else is kept
 * (the fair queue, the live workers, the last timeline) is brought up to date from each snapshot,
 * so a call on 3000 nodes costs what changed: it decides as computing it all anew would.
 */
import {
  definePolicy,
  optionError,
  parseOptions,
  type OptionSpecs,
  type PolicyDefinition,
  type PolicyOptions,
} from './options.js';
import { minimumGrantMb, memoryStepOf } from './memory.js';
import { BestPlacedPicker, pendingIndex } from './pending-index.js';
import { NodeHoldings, diskOf, holdingOf, type Holding } from './holdings.js';
import { bestElasticGrant, elasticDiskMBps, penalizedMs, type ElasticGrant } from './penalty.js';
import { localityOf, visitingOrder, type Room } from './rooms.js';
import { Timeline, type TimelineJob, type TimelineRelease, type TimelineTasks } from './timeline.js';
import type {
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  Policy,
  PolicyState,
  TaskKind,
  TaskView,
  WorkerView,
} from './types.js';
import { FairQueue, Reservations, fairShareOrder, memoryInUse, requeue, type MemoryByJob } from './yarn.js';

export type YarnMeOptions = {
  /** Elastic allocations (step 3); false: YARN's regular allocation only. */
  readonly elastic: boolean;
  /** Step 4's backfilling of reserved nodes; plain YARN does not. */
  readonly backfillReserved: boolean;
  /** Step 5: the share of a node's disk bandwidth its elastic tasks may use together. */
  readonly diskShare: number;
  /**
   * The timeline is rebuilt on job arrival or departure and at least this often
   * (a heartbeat of the simulator's 100-node clusters).
   */
  readonly timelineRefreshMs: number;
};

export const DEFAULT_YARN_ME_OPTIONS: YarnMeOptions = Object.freeze({
  elastic: true,
  backfillReserved: true,
  diskShare: 0.5,
  timelineRefreshMs: 3000,
});
export const DEFAULT_YARN_OPTIONS: YarnMeOptions = Object.freeze({
  ...DEFAULT_YARN_ME_OPTIONS,
  elastic: false,
  backfillReserved: false,
});

/** What `--policy-options` may set: whether a run is elastic is the policy's name (yarn or yarn-me). */
type YarnMeTunables = Pick<YarnMeOptions, 'backfillReserved' | 'diskShare' | 'timelineRefreshMs'>;
type YarnTunables = Pick<YarnMeOptions, 'backfillReserved'>;

const BACKFILL_SPEC = {
  type: 'boolean',
  about: "tasks of other jobs may use a reserved node when they end before the reserving job's task could start there",
} as const;

const YARN_ME_OPTION_SPECS: OptionSpecs<YarnMeTunables> = {
  backfillReserved: BACKFILL_SPEC,
  diskShare: {
    type: 'number',
    range: { min: 0, max: 1 },
    about: "the share of a node's disk bandwidth its elastic tasks may spill at together",
  },
  timelineRefreshMs: {
    type: 'number',
    range: { min: 0, unit: 'ms' },
    about: 'the timeline of job completions is rebuilt on job arrival or departure and at least this often',
  },
};

const YARN_OPTION_SPECS: OptionSpecs<YarnTunables> = { backfillReserved: BACKFILL_SPEC };

const tunables = <K extends keyof YarnMeOptions>(options: YarnMeOptions, keys: readonly K[]): Pick<YarnMeOptions, K> =>
  Object.fromEntries(keys.map((k) => [k, options[k]])) as Pick<YarnMeOptions, K>;

const YARN_ME_DEFAULTS = tunables(DEFAULT_YARN_ME_OPTIONS, ['backfillReserved', 'diskShare', 'timelineRefreshMs']);
const YARN_DEFAULTS = tunables(DEFAULT_YARN_OPTIONS, ['backfillReserved']);

/** `--policy-options` of yarn-me; a bad field is EBADCONF naming it. */
export function parseYarnMeOptions(raw: PolicyOptions): YarnMeOptions {
  return { ...DEFAULT_YARN_ME_OPTIONS, ...parseOptions('yarn-me', raw, YARN_ME_OPTION_SPECS, YARN_ME_DEFAULTS) };
}

/** `--policy-options` of yarn; a bad field is EBADCONF naming it. */
export function parseYarnOptions(raw: PolicyOptions): YarnMeOptions {
  return { ...DEFAULT_YARN_OPTIONS, ...parseOptions('yarn', raw, YARN_OPTION_SPECS, YARN_DEFAULTS) };
}

export const YARN_DEFINITION: PolicyDefinition = definePolicy({
  name: 'yarn',
  summary:
    "YARN's regular allocation: a task runs only with its ideal " +
    'memory; queue by fair share; a job whose next task does not fit ' +
    'on a node reserves it until it fits',
  options: YARN_OPTION_SPECS,
  defaults: YARN_DEFAULTS,
  create: (options) => new YarnMePolicy(parseYarnOptions(options)),
});

export const YARN_ME_DEFINITION: PolicyDefinition = definePolicy({
  name: 'yarn-me',
  summary:
    'YARN-ME: as yarn, but a task that does not fit gets an elastic ' +
    'grant (less memory, it spills) when it then still ends before ' +
    "its job's estimated completion",
  options: YARN_ME_OPTION_SPECS,
  defaults: YARN_ME_DEFAULTS,
  create: (options) => new YarnMePolicy(parseYarnMeOptions(options)),
});

const NOTHING: readonly Decision[] = Object.freeze([]);

/** Jobs of the queue looked at to backfill a reserved node. */
const BACKFILL_DEPTH = 128;

/**
 * The live workers as of the last snapshot: each one's place in the list, kept while the same
 * workers are live (the books keep their order), so finding a worker by id costs no map of 3000
 * workers per call.
 */
class LiveWorkers {
  private list: readonly WorkerView[] = [];
  private placeById = new Map<string, number>();
  /** Counts the changes of who is live (or of their order). */
  generation = 0;

  /** Takes the snapshot's workers. */
  update(workers: readonly WorkerView[]): void {
    if (workers === this.list) return;
    let same = workers.length === this.list.length;
    for (let i = 0; same && i < workers.length; i++) same = workers[i]!.id === this.list[i]!.id;
    this.list = workers;
    if (same) return;
    this.placeById = new Map(workers.map((w, i) => [w.id, i]));
    this.generation++;
  }

  byId(id: string): WorkerView | undefined {
    const i = this.placeById.get(id);
    return i === undefined ? undefined : this.list[i];
  }

  has(id: string): boolean {
    return this.placeById.has(id);
  }
}

/** What the policy keeps between calls to bring up to date from each snapshot. */
interface Kept {
  readonly queue: FairQueue;
  readonly workers: LiveWorkers;
  readonly timelines: TimelineCache;
  readonly holdings: NodeHoldings;
}

/** A round's memory in use per job: the queue's, plus this call's launches. */
class RoundMemory implements MemoryByJob {
  private readonly added = new Map<string, number>();

  constructor(private readonly base: ReadonlyMap<string, number>) {}

  get(jobId: string): number | undefined {
    return this.added.get(jobId) ?? this.base.get(jobId);
  }

  add(jobId: string, mb: number): void {
    this.added.set(jobId, (this.get(jobId) ?? 0) + mb);
  }
}

/** The smallest grant any of these tasks could get (elastic: its minimum in whole steps), once per list. */
const smallestGrants = new WeakMap<readonly TaskView[], { step: number; regular: number; elastic: number }>();

function smallestGrantMb(tasks: readonly TaskView[], elastic: boolean, step: number): number {
  let known = smallestGrants.get(tasks);
  if (!known || known.step !== step) {
    known = { step, regular: Number.POSITIVE_INFINITY, elastic: Number.POSITIVE_INFINITY };
    for (const t of tasks) {
      known.regular = Math.min(known.regular, t.memoryMb);
      const least =
        t.penalty !== undefined && t.idealDurationMs !== undefined
          ? Math.ceil(minimumGrantMb(t.memoryMb, t.penalty) / step) * step
          : t.memoryMb;
      known.elastic = Math.min(known.elastic, least, t.memoryMb);
    }
    smallestGrants.set(tasks, known);
  }
  return elastic ? known.elastic : known.regular;
}

/** What a policy grants a task on a node. */
interface Grant {
  readonly memoryMb: number;
  readonly elastic: boolean;
}

/** A job's mean successful task time of `kind` so far (ms), for tasks without an estimate; undefined before any. */
function meanTaskMs(job: JobView, kind: TaskKind): number | undefined {
  const done = kind === 'map' ? job.mapsCompleted : job.reducesCompleted;
  const ms = kind === 'map' ? job.stats.completedMapMs : job.stats.completedReduceMs;
  return done > 0 ? ms / done : undefined;
}

/** A job's pending tasks not yet launched, as runs of alike tasks (kind, memory, estimated duration). */
function alikeGroups(job: JobView, launched: ReadonlySet<string>): TimelineTasks[] {
  const groups: TimelineTasks[] = [];
  let last: { kind: TaskKind; memoryMb: number; durationMs: number; count: number } | undefined;
  for (const t of job.pendingTasks) {
    if (launched.has(t.id)) continue;
    const durationMs = t.idealDurationMs ?? meanTaskMs(job, t.kind) ?? 0;
    if (last && last.kind === t.kind && last.memoryMb === t.memoryMb && last.durationMs === durationMs) last.count++;
    else groups.push((last = { kind: t.kind, memoryMb: t.memoryMb, durationMs, count: 1 }));
  }
  return groups;
}

/** The last timeline built and from what; kept between calls (see Round.timeline). */
interface TimelineCache {
  readonly refreshMs: number;
  timeline: Timeline | null;
  builtAt: number;
  jobIds: readonly string[];
}

function sameIds(ids: readonly string[], jobs: readonly JobView[]): boolean {
  if (ids.length !== jobs.length) return false;
  for (let i = 0; i < ids.length; i++) if (ids[i] !== jobs[i]!.id) return false;
  return true;
}

/** One call of the policy: the snapshot, what is free where, the queue, and the decisions so far. */
class Round {
  readonly decisions: Decision[] = [];
  readonly launched = new Set<string>();
  readonly picker = new BestPlacedPicker(this.launched);
  readonly used: RoundMemory;
  /** Jobs with pending tasks not yet launched in this call, in fair share order. */
  readonly queue: JobView[];
  /** Pending tasks not yet launched, of the jobs launched from in this call. */
  private readonly pendingLaunched = new Map<string, number>();
  readonly step: number;
  /** What runs on the nodes looked at so far (with this call's launches there). */
  private readonly holdingsByNode = new Map<string, Holding[]>();
  private holdingsBuilt = false;
  /** This call's launches on nodes whose holdings were not asked for yet. */
  private readonly launchesByNode = new Map<string, Holding[]>();

  constructor(
    readonly snapshot: ClusterSnapshot,
    private readonly kept: Kept,
  ) {
    this.used = new RoundMemory(kept.queue.usedMb);
    this.queue = kept.queue.waiting.slice();
    this.step = memoryStepOf(snapshot);
  }

  /** Pending tasks of the job not launched yet (0 for a job not in the snapshot's queue). */
  pendingLeft(jobId: string): number {
    return this.pendingLaunched.get(jobId) ?? this.kept.queue.viewOf(jobId)?.pendingTasks.length ?? 0;
  }

  /** The job of this id while it is in the queue (it has tasks not launched yet). */
  queued(jobId: string): JobView | undefined {
    const job = this.kept.queue.viewOf(jobId);
    return job && this.pendingLeft(jobId) > 0 ? job : undefined;
  }

  worker(id: string): WorkerView | undefined {
    return this.kept.workers.byId(id);
  }

  get now(): number {
    return this.snapshot.now;
  }

  /**
   * Step 3's choice for a job's task and a node's free memory, made once per call: alike tasks
   * of a job meet many nodes with the same free memory.
   */
  elasticChoice(
    job: JobView,
    task: TaskView,
    freeMb: number,
    diskMBps: number,
    choose: () => ElasticGrant | null,
  ): ElasticGrant | null {
    const key = `${job.id}\0${task.kind}\0${task.memoryMb}\0${task.idealDurationMs}\0${freeMb}\0${diskMBps}`;
    let choice = this.elasticChoices.get(key);
    if (choice === undefined) this.elasticChoices.set(key, (choice = choose()));
    return choice;
  }

  private readonly elasticChoices = new Map<string, ElasticGrant | null>();

  /** What runs on a node until when, with this call's launches there (kept between calls: holdings.ts). */
  holdings(nodeId: string): Holding[] {
    if (!this.holdingsBuilt) {
      this.holdingsBuilt = true;
      this.kept.holdings.update(this.snapshot.jobs);
    }
    let list = this.holdingsByNode.get(nodeId);
    if (!list) {
      list = this.kept.holdings.on(nodeId, this.worker(nodeId), this.now);
      list.push(...(this.launchesByNode.get(nodeId) ?? []));
      this.holdingsByNode.set(nodeId, list);
    }
    return list;
  }

  /**
   * The timeline (timeline.ts): rebuilt when jobs arrived or left, and at most every
   * `refreshMs` otherwise; between rebuilds, the picture it was built from.
   */
  timeline(): Timeline {
    const cache = this.kept.timelines;
    if (cache.timeline && this.now - cache.builtAt < cache.refreshMs && sameIds(cache.jobIds, this.snapshot.jobs))
      return cache.timeline;
    const running: TimelineRelease[] = [];
    for (const job of this.snapshot.jobs) {
      for (const a of job.runningAttempts) {
        const h = holdingOf(a, this.worker(a.workerId), this.now);
        running.push({ nodeId: a.workerId, jobId: h.jobId, kind: h.kind, memoryMb: h.memoryMb, endMs: h.endMs });
      }
    }
    const launched = new Set(this.launched);
    const jobs: TimelineJob[] = this.queue.map((job) => ({
      id: job.id,
      get tasks() {
        return alikeGroups(job, launched);
      },
    }));
    cache.timeline = new Timeline(this.now, this.snapshot.workers, running, jobs, this.used);
    cache.builtAt = this.now;
    cache.jobIds = this.snapshot.jobs.map((j) => j.id);
    return cache.timeline;
  }

  /** J's next task for this node: of a kind with a free slot, the best placed (node-local first). */
  nextTask(job: JobView, room: Room): TaskView | undefined {
    for (const kind of ['map', 'reduce'] as const) {
      if ((kind === 'map' ? room.mapSlots : room.reduceSlots) <= 0) continue;
      const index = pendingIndex(job.pendingTasks);
      const all = index.all(kind);
      // No task of the kind has a home (generated input, reduces, the paper's traces): any node
      // gets the first one, without looking for a local one task by task.
      const t =
        index.homeless(kind).length === all.length
          ? this.firstNotLaunched(all)
          : this.picker.pick(job.pendingTasks, kind, room.worker, () => true);
      if (t) return t;
    }
    return undefined;
  }

  /** Per list, tasks at its front launched in this call (launches only grow in a call). */
  private readonly launchedAhead = new Map<readonly TaskView[], number>();

  private firstNotLaunched(tasks: readonly TaskView[]): TaskView | undefined {
    let i = this.launchedAhead.get(tasks) ?? 0;
    while (i < tasks.length && this.launched.has(tasks[i]!.id)) i++;
    this.launchedAhead.set(tasks, i);
    return tasks[i];
  }

  launch(room: Room, job: JobView, task: TaskView, grant: Grant, durationMs: number | undefined): void {
    this.decisions.push({
      kind: 'launch',
      taskId: task.id,
      jobId: job.id,
      workerId: room.worker.id,
      memoryMb: grant.memoryMb,
      ...(grant.elastic ? { elastic: true } : {}),
      locality: localityOf(task, room.worker),
    });
    this.launched.add(task.id);
    if (task.kind === 'map') room.mapSlots--;
    else room.reduceSlots--;
    room.memoryMb -= grant.memoryMb;
    this.used.add(job.id, grant.memoryMb);
    const left = this.pendingLeft(job.id) - 1;
    this.pendingLaunched.set(job.id, left);
    if (left <= 0) this.queue.splice(this.queue.indexOf(job), 1);
    else requeue(this.queue, job, this.used);
    // Every launch counts, also one made before the round first asked what runs where (once
    // forgotten: a node's list was built at the first ask, and launches were added only after).
    const disk =
      grant.elastic && task.idealDurationMs !== undefined
        ? elasticDiskMBps(task.memoryMb, task.penalty, task.idealDurationMs, grant.memoryMb, diskOf(room.worker))
        : 0;
    const holding = {
      jobId: job.id,
      kind: task.kind,
      memoryMb: grant.memoryMb,
      endMs: this.now + (durationMs ?? 0),
      diskMBps: disk,
    };
    const here = this.holdingsByNode.get(room.worker.id) ?? this.launchesByNode.get(room.worker.id);
    if (here) here.push(holding);
    else this.launchesByNode.set(room.worker.id, [holding]);
  }

  /** When `task` could start regularly on the room's node, from what runs there now: infinite if never. */
  regularStartMs(room: Room, task: TaskView): number {
    let free = room.memoryMb;
    let slots = task.kind === 'map' ? room.mapSlots : room.reduceSlots;
    if (free >= task.memoryMb && slots > 0) return this.now;
    const ends = [...this.holdings(room.worker.id)].sort((a, b) => a.endMs - b.endMs);
    for (const h of ends) {
      free += h.memoryMb;
      if (h.kind === task.kind) slots++;
      if (free >= task.memoryMb && slots > 0) return h.endMs;
    }
    return Number.POSITIVE_INFINITY;
  }
}

export class YarnMePolicy implements Policy {
  /** Heartbeat-by-heartbeat allocation becomes allocation wherever capacity was freed (see `Consultation`). */
  readonly consultWhen: Consultation = 'after-change';
  private readonly reservations = new Reservations();
  private readonly kept: Kept;
  /** Each node's view when last looked at, and when every node was last visited (nodesToVisit). */
  private readonly seenViews = new Map<string, WorkerView>();
  /**
   * The worker list seenViews was last brought up to (nodesToVisit compares with it place by place), and its
   * generation.
   */
  private seenWorkers: readonly WorkerView[] = [];
  private seenGeneration = -1;
  /** The generation of live workers the reservations were last pruned against. */
  private prunedGeneration = 0;
  private lastFullVisitMs = Number.NEGATIVE_INFINITY;
  private lastJobIds: readonly string[] = [];
  /** The snapshots' memory step (the queue's asks are in whole steps). */
  private step = Number.NaN;

  constructor(
    readonly options: YarnMeOptions = DEFAULT_YARN_ME_OPTIONS,
    readonly name: string = options.elastic ? 'yarn-me' : 'yarn',
  ) {
    this.kept = {
      queue: new FairQueue((job) => smallestGrantMb(job.pendingTasks, options.elastic, this.step)),
      workers: new LiveWorkers(),
      timelines: { refreshMs: options.timelineRefreshMs, timeline: null, builtAt: 0, jobIds: [] },
      holdings: new NodeHoldings(),
    };
    if (!(options.diskShare >= 0 && options.diskShare <= 1)) {
      throw optionError(name, 'diskShare', `must be a number in [0, 1], got ${options.diskShare}`);
    }
  }

  /** Node -> job holding it (for tests and reports). */
  reserved(): ReadonlyArray<readonly [string, string]> {
    return this.reservations.entries();
  }

  /** Each node's memory, its elastic attempts and reservation; the queue in fair-share order; every elastic attempt. */
  describeState(snapshot: ClusterSnapshot): PolicyState {
    const used = memoryInUse(snapshot.jobs);
    const running = snapshot.jobs.flatMap((j) => j.runningAttempts);
    const o = this.options;
    return {
      notes: [
        o.elastic
          ? `elastic grants in steps of ${memoryStepOf(snapshot)} MB; ` +
            `elastic attempts of a node spill at most ${o.diskShare} of its ` +
            `disk rate together; reserved ` +
            `nodes ${o.backfillReserved ? 'are backfilled' : 'are not backfilled'}`
          : 'regular grants only (ideal memory): a task that does not fit reserves the node',
        `timeline rebuilt on job arrival or departure and every ${o.timelineRefreshMs} ms`,
      ],
      tables: [
        {
          title: 'Nodes',
          columns: ['worker', 'memory (MB)', 'free (MB)', 'running', 'elastic', 'reserved for'],
          rows: snapshot.workers.map((w) => {
            const here = running.filter((a) => a.workerId === w.id);
            return [
              w.id,
              w.memoryMb,
              w.freeMemoryMb,
              here.length,
              here.filter((a) => a.elastic).length,
              this.reservations.jobOn(w.id) ?? '-',
            ];
          }),
        },
        {
          title: 'Queue (fair-share order: least memory in use per unit of weight first)',
          columns: ['job', 'weight', 'memory in use (MB)', 'pending tasks', 'running', 'reserved nodes'],
          rows: fairShareOrder(snapshot.jobs, used).map((j) => [
            j.id,
            j.weight,
            used.get(j.id) ?? 0,
            j.pendingTasks.length,
            j.runningAttempts.length,
            this.reservations.countOf(j.id),
          ]),
        },
        {
          title: 'Elastic attempts',
          columns: ['attempt', 'kind', 'worker', 'granted (MB)', 'ideal (MB)', 'running for (s)'],
          rows: running
            .filter((a) => a.elastic)
            .map((a) => [
              a.id,
              a.kind,
              a.workerId,
              a.memoryMb,
              a.idealMemoryMb,
              Math.round((snapshot.now - a.startTime) / 1000),
            ]),
        },
      ],
    };
  }

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const workers = this.kept.workers;
    workers.update(snapshot.workers);
    const visit = this.nodesToVisit(snapshot);
    if (visit.length === 0) return NOTHING;
    const step = memoryStepOf(snapshot);
    if (step !== this.step) {
      this.step = step;
      this.kept.queue.forgetAsks();
    }
    this.kept.queue.update(snapshot.jobs);
    // Nothing can be granted where the free memory is below every pending task's smallest grant:
    // most heartbeats of a busy cluster end here. Not on a node that no job has reserved yet,
    // though: there the queue's first job reserves it (step 4), as YARN reserves a node whenever
    // the task it offers the node to does not fit, whether or not any other would. Without that,
    // staggered heartbeats on a busy cluster never reserved anything.
    if (!this.anythingFits(visit) && visit.every((r) => this.reservations.jobOn(r.worker.id) !== undefined))
      return NOTHING;
    const round = new Round(snapshot, this.kept);
    // Only the jobs that changed since the last prune can have fewer tasks pending than reservations.
    const changedJobs = this.kept.queue.takeChanged();
    if (this.reservations.size > 0) {
      const liveChanged = this.prunedGeneration !== workers.generation;
      this.reservations.prune(
        (job) => round.pendingLeft(job),
        liveChanged ? (node) => workers.has(node) : undefined,
        changedJobs,
      );
      this.prunedGeneration = workers.generation;
    }
    for (const room of visit) this.heartbeat(round, room);
    return round.decisions;
  }

  /**
   * The heartbeating node. On any other trigger, the nodes with a free slot (id order) whose state
   * changed since this policy last saw them, as YARN looks at a node when it reports back; all of
   * them when jobs arrived or left, and at least every `timelineRefreshMs` (a heartbeat's worth),
   * so a node whose situation changes only with time is looked at again. The books hand out the
   * same WorkerView while a worker does not change, so a changed view is a changed node.
   */
  private nodesToVisit(snapshot: ClusterSnapshot): Room[] {
    const t = snapshot.trigger;
    if (t.kind !== 'heartbeat') {
      const seen = this.seenViews;
      const all =
        snapshot.now - this.lastFullVisitMs >= this.options.timelineRefreshMs ||
        !sameIds(this.lastJobIds, snapshot.jobs) ||
        seen.size === 0;
      let visit: Room[];
      const generation = this.kept.workers.generation;
      if (all || generation !== this.seenGeneration) {
        const rooms = visitingOrder(snapshot, { freeOnly: true });
        visit = all ? rooms : rooms.filter((r) => seen.get(r.worker.id) !== r.worker);
        if (all) {
          this.lastFullVisitMs = snapshot.now;
          this.lastJobIds = snapshot.jobs.map((j) => j.id);
          seen.clear();
        }
        for (const w of snapshot.workers) seen.set(w.id, w);
      } else {
        // The same workers in the same places: the changed ones are those whose view is new.
        const changed: WorkerView[] = [];
        const before = this.seenWorkers;
        snapshot.workers.forEach((w, i) => {
          if (w !== before[i]) changed.push(w);
        });
        for (const w of changed) seen.set(w.id, w);
        visit = changed.length === 0 ? [] : visitingOrder({ ...snapshot, workers: changed }, { freeOnly: true });
      }
      this.seenWorkers = snapshot.workers;
      this.seenGeneration = generation;
      return visit;
    }
    const worker = this.kept.workers.byId(t.workerId);
    if (!worker || (worker.freeMapSlots <= 0 && worker.freeReduceSlots <= 0)) return [];
    return [
      {
        worker,
        mapSlots: Math.max(0, worker.freeMapSlots),
        reduceSlots: Math.max(0, worker.freeReduceSlots),
        memoryMb: Math.max(0, worker.freeMemoryMb),
      },
    ];
  }

  private anythingFits(rooms: readonly Room[]): boolean {
    let most = 0;
    for (const r of rooms) most = Math.max(most, r.memoryMb);
    return this.kept.queue.leastAsk <= most;
  }

  /** The decision loop on node N (the room), repeated while it allocates. */
  private heartbeat(round: Round, room: Room): void {
    while (room.mapSlots > 0 || room.reduceSlots > 0) {
      const reservedBy = this.reservations.jobOn(room.worker.id);
      if (reservedBy !== undefined) {
        // 1. J = the job that reserved N.
        const job = round.queued(reservedBy);
        const task = job && round.nextTask(job, room);
        if (!job || !task) {
          this.reservations.release(room.worker.id);
          continue;
        }
        const grant = this.allocate(round, room, job, task);
        if (grant) {
          round.launch(room, job, task, grant, this.durationOf(room, job, task, grant));
          this.reservations.release(room.worker.id);
          continue;
        }
        // 4. Others only where they do not delay J's task.
        if (!this.options.backfillReserved || !this.backfill(round, room, job, task)) return;
        continue;
      }
      if (!this.allocateFromQueue(round, room)) return;
    }
  }

  /** Steps 1-4 for an unreserved node: true when something was launched. */
  private allocateFromQueue(round: Round, room: Room): boolean {
    for (const job of round.queue) {
      const task = round.nextTask(job, room);
      if (!task) continue;
      const grant = this.allocate(round, room, job, task);
      if (grant) {
        round.launch(room, job, task, grant, this.durationOf(room, job, task, grant));
        return true;
      }
      // 4. T got nothing: J reserves N, if T could ever fit there and J is owed a reservation.
      if (task.memoryMb <= room.worker.memoryMb && this.reservations.countOf(job.id) < round.pendingLeft(job.id)) {
        this.reservations.reserve(room.worker.id, job.id);
        return true;
      }
    }
    return false;
  }

  /** Steps 2, 3 and 5: a regular grant, else (YARN-ME) an elastic one, else nothing. */
  private allocate(round: Round, room: Room, job: JobView, task: TaskView): Grant | null {
    // 2. Regular when the ideal memory is free.
    if (task.memoryMb <= room.memoryMb) return { memoryMb: task.memoryMb, elastic: false };
    if (!this.options.elastic || task.penalty === undefined || task.idealDurationMs === undefined) return null;
    const disk = diskOf(room.worker);
    const choice = round.elasticChoice(job, task, room.memoryMb, disk, () => {
      // 3. Elastic: the grant of lowest predicted duration, smallest among ties ...
      const minimum = minimumGrantMb(task.memoryMb, task.penalty);
      const best = room.memoryMb < minimum ? null : bestElasticGrant(task, room.memoryMb, minimum, round.step, disk);
      if (!best) return null;
      // ... only if it ends within J's estimated completion (never J's straggler).
      return round.timeline().withinJob(job.id, round.now + best.durationMs) ? best : null;
    });
    if (!choice || task.idealDurationMs === undefined) return null;
    // 5. Within the node's disk share for elastic tasks.
    let spilling = elasticDiskMBps(task.memoryMb, task.penalty, task.idealDurationMs, choice.memoryMb, disk);
    if (spilling > 0) {
      for (const h of round.holdings(room.worker.id)) spilling += h.diskMBps;
      if (spilling > this.options.diskShare * disk) return null;
    }
    return { memoryMb: choice.memoryMb, elastic: true };
  }

  /** The task's predicted duration with `grant` (undefined when it has no estimate). */
  private durationOf(room: Room, job: JobView, task: TaskView, grant: Grant): number | undefined {
    const ideal = task.idealDurationMs ?? meanTaskMs(job, task.kind);
    return ideal === undefined
      ? undefined
      : penalizedMs(task.memoryMb, task.penalty, ideal, grant.memoryMb, diskOf(room.worker));
  }

  /** 4. On N reserved by J: the first job of the queue whose task fits now and ends before J's task could start. */
  private backfill(round: Round, room: Room, reserver: JobView, reserved: TaskView): boolean {
    const startMs = round.regularStartMs(room, reserved);
    let looked = 0;
    for (const job of round.queue) {
      // The queue's head is where backfilling pays; a 3000-node cluster's thousand-job queue is not scanned per node.
      if (++looked > BACKFILL_DEPTH) break;
      if (job === reserver || smallestGrantMb(job.pendingTasks, this.options.elastic, round.step) > room.memoryMb)
        continue;
      const task = round.nextTask(job, room);
      // No grant makes a task shorter than its ideal duration.
      if (!task || (task.idealDurationMs !== undefined && round.now + task.idealDurationMs > startMs)) continue;
      const grant = this.allocate(round, room, job, task);
      if (!grant) continue;
      const ms = this.durationOf(room, job, task, grant);
      if (ms === undefined || round.now + ms > startMs) continue;
      round.launch(room, job, task, grant, ms);
      return true;
    }
    return false;
  }
}
