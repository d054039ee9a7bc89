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
 * (no profile) runs only regular. The state the policy decides with is its own: reservations (for
 * an AM or for a task), ApplicationMasters (app-masters.ts: a job's first container, held until it
 * ends, its memory counted as the job's), and under allocation at heartbeats the nodes' phases and,
 * with lazyHeartbeats, DSS's silent nodes (lazy-heartbeats.ts), and with usageAtReports the ended
 * containers their nodes have not reported (unreported-ends.ts). What else is kept (the fair queue,
 * the live workers, what runs on each node, the last timeline or PEEK look-ahead) is brought up to
 * date from each snapshot, so a call on 3000 nodes costs what changed: it decides as computing it
 * all anew would. YARN's shape around the loop (AMs, heartbeats, reservation guards, `compat: 'dss'`)
 * is in README's "YARN's shape".
 */
import {
  definePolicy,
  optionError,
  parseOptions,
  type OptionSpecs,
  type PolicyDefinition,
  type PolicyOptions,
} from './options.js';
import { AppMasters, amSlotKinds } from './app-masters.js';
import { UnreportedEnds } from './unreported-ends.js';
import { minimumGrantMb, memoryStepOf } from './memory.js';
import { LazyHeartbeats } from './lazy-heartbeats.js';
import { HeartbeatPhases, peekLimits } from './peek-admission.js';
import { BestPlacedPicker, pendingIndex } from './pending-index.js';
import { NodeHoldings, diskOf, holdingOf, predictedAttemptMs, type Holding } from './holdings.js';
import { bestElasticGrant, elasticDiskMBps, penalizedMs, type ElasticGrant } from './penalty.js';
import { localityOf, visitingOrder, type Room } from './rooms.js';
import { Timeline, type TimelineJob, type TimelineTasks } from './timeline.js';
import type {
  AttemptView,
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  Policy,
  PolicyState,
  StuckJob,
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
  /** Memory of each job's ApplicationMaster container, MB (app-masters.ts); 0: no AMs. */
  readonly amMb: number;
  /** Cores (slots) of each AM container. */
  readonly amCores: number;
  /**
   * 'on-change': wherever capacity frees, at once (fast: the paper-scale sweeps); 'heartbeat': only on
   * the node whose heartbeat it is, at most `maxAssign` containers (YARN's and DSS's way).
   */
  readonly allocation: 'on-change' | 'heartbeat';
  /** Heartbeat allocation: containers per node heartbeat (FairScheduler's assignmultiple); 0: as many as fit. */
  readonly maxAssign: number;
  /** Heartbeat allocation: AM heartbeat; containers launch through the AM's next one. 0: at once. */
  readonly amHeartbeatMs: number;
  /**
   * How many nodes a job may hold reserved: 'pending-tasks' (at most one per pending task) or 'none'
   * (no limit: FairScheduler before reservable-nodes, and DSS).
   */
  readonly reservationLimit: 'pending-tasks' | 'none';
  /** YARN's reservable-nodes: a job reserves at most ceil(this share of the live nodes); 1: no guard. */
  readonly reservableNodes: number;
  /** YARN's maxAMShare: AMs together hold at most this share of the cluster's memory; 1: no guard. */
  readonly maxAMShare: number;
  /**
   * Step 3's check of an elastic grant against its job's estimated completion: 'timeline' (timeline.ts)
   * or 'peek' (DSS's PEEK: a look-ahead of regular-only allocation at heartbeats, peek.ts).
   */
  readonly admission: 'timeline' | 'peek';
  /**
   * With allocation at heartbeats, DSS's lazy heartbeats: a node that allocated nothing stays silent
   * until a job arrives, an AM starts, or a container starts or ends on it (lazy-heartbeats.ts).
   */
  readonly lazyHeartbeats: boolean;
  /**
   * With allocation at heartbeats, a job's usage (its fair-share order) keeps an ended container's
   * memory until that container's node reports the end at its next heartbeat, as YARN's RM learns of
   * it and DSS models it (unreported-ends.ts); off: the usage drops when the container ends. Not yet
   * part of compat 'dss': with it, yarn runs T200_M10_D200 as DSS does task for task, but three other
   * bench:dss rows move past 5% from DSS (docs/results/issue-36-usage-at-reports.md).
   */
  readonly usageAtReports: boolean;
  /** 'dss': the options that make the policy allocate as DSS, the YARN-ME paper's simulator (DSS_COMPAT). */
  readonly compat: 'none' | 'dss';
};

export const DEFAULT_YARN_ME_OPTIONS: YarnMeOptions = Object.freeze({
  elastic: true,
  backfillReserved: true,
  diskShare: 0.5,
  timelineRefreshMs: 3000,
  amMb: 1000,
  amCores: 1,
  allocation: 'on-change',
  maxAssign: 0,
  amHeartbeatMs: 1000,
  reservationLimit: 'pending-tasks',
  reservableNodes: 0.05,
  maxAMShare: 0.5,
  admission: 'timeline',
  lazyHeartbeats: false,
  usageAtReports: false,
  compat: 'none',
});
export const DEFAULT_YARN_OPTIONS: YarnMeOptions = Object.freeze({
  ...DEFAULT_YARN_ME_OPTIONS,
  elastic: false,
  backfillReserved: false,
});

/**
 * `compat: 'dss'`: AMs of 1000 MB x 1 core, one container per node heartbeat, launches through AM
 * heartbeats, no backfilling, reservations without YARN's later guards, and PEEK's admission check,
 * refreshed every second: DSS as the YARN-ME paper ran it. Options given beside it win.
 */
export const DSS_COMPAT: Partial<YarnMeOptions> = Object.freeze({
  amMb: 1000,
  amCores: 1,
  allocation: 'heartbeat',
  maxAssign: 1,
  amHeartbeatMs: 1000,
  backfillReserved: false,
  reservationLimit: 'none',
  reservableNodes: 1,
  maxAMShare: 1,
  admission: 'peek',
  timelineRefreshMs: 1000,
  lazyHeartbeats: true,
});

/** Options only the engine's setting decides: on a real cluster the JobTracker runs no ApplicationMaster. */
export const YARN_CLUSTER_DEFAULTS = Object.freeze({ amMb: 0 });

/** What `--policy-options` may set: whether a run is elastic is the policy's name (yarn or yarn-me). */
type YarnShapeKeys =
  | 'backfillReserved'
  | 'amMb'
  | 'amCores'
  | 'allocation'
  | 'maxAssign'
  | 'amHeartbeatMs'
  | 'reservationLimit'
  | 'reservableNodes'
  | 'maxAMShare'
  | 'lazyHeartbeats'
  | 'usageAtReports'
  | 'compat';
type YarnMeTunables = Pick<YarnMeOptions, YarnShapeKeys | 'diskShare' | 'timelineRefreshMs' | 'admission'>;
type YarnTunables = Pick<YarnMeOptions, YarnShapeKeys>;

const YARN_SHAPE_SPECS: OptionSpecs<YarnTunables> = {
  backfillReserved: {
    type: 'boolean',
    about:
      "tasks of other jobs may use a reserved node when they end before the reserving job's task could start there",
  },
  amMb: {
    type: 'number',
    range: { min: 0, integer: true },
    about:
      "each job's ApplicationMaster container, MB, held until its last task ends; its tasks start once it runs; " +
      '0: no ApplicationMasters (the default on a real cluster, whose JobTracker has none)',
  },
  amCores: { type: 'number', range: { min: 0, integer: true }, about: "each ApplicationMaster's cores (slots)" },
  allocation: {
    type: 'choice',
    choices: ['on-change', 'heartbeat'],
    about:
      "'on-change' fills every node as soon as capacity frees; 'heartbeat' allocates only on the node " +
      'whose heartbeat it is, at most maxAssign containers, as YARN does',
  },
  maxAssign: {
    type: 'number',
    range: { min: 0, integer: true },
    about:
      "containers per node heartbeat with allocation 'heartbeat' (FairScheduler's assignmultiple); 0: all that fit",
  },
  amHeartbeatMs: {
    type: 'number',
    range: { min: 0, unit: 'ms' },
    about:
      "with allocation 'heartbeat', ApplicationMasters start at their next poll and launch containers " +
      'through their next heartbeat, every this many ms; 0: at once',
  },
  reservationLimit: {
    type: 'choice',
    choices: ['pending-tasks', 'none'],
    about: "nodes a job may hold reserved: one per pending task, or no limit (DSS, FairScheduler's own)",
  },
  reservableNodes: {
    type: 'number',
    range: { min: 0, max: 1 },
    about: "YARN's reservable-nodes: a job reserves at most ceil(this share of the nodes); 1: no guard",
  },
  maxAMShare: {
    type: 'number',
    range: { min: 0, max: 1 },
    about: "YARN's maxAMShare: ApplicationMasters together hold at most this share of the memory; 1: no guard",
  },
  lazyHeartbeats: {
    type: 'boolean',
    about:
      "with allocation 'heartbeat', DSS's lazy heartbeats: a node that allocated nothing stays silent until a " +
      'job arrives, an ApplicationMaster starts, or a container starts or ends on it',
  },
  usageAtReports: {
    type: 'boolean',
    about:
      "with allocation 'heartbeat', a job's usage (its place in the fair queue) drops when the node of an " +
      'ended container reports it at its next heartbeat, as in YARN and DSS, not when the container ends',
  },
  compat: {
    type: 'choice',
    choices: ['none', 'dss'],
    about:
      "'dss': allocate as DSS, the YARN-ME paper's simulator (AMs, one container per heartbeat, " +
      'launch through AM heartbeats, no backfill, unguarded reservations, PEEK admission); options given beside it win',
  },
};

const YARN_ME_OPTION_SPECS: OptionSpecs<YarnMeTunables> = {
  ...YARN_SHAPE_SPECS,
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
  admission: {
    type: 'choice',
    choices: ['timeline', 'peek'],
    about:
      "an elastic grant must end by its job's estimated completion: from the timeline generator, or from " +
      "a look-ahead of regular allocation at heartbeats as DSS's PEEK runs it",
  },
};

const tunables = <K extends keyof YarnMeOptions>(options: YarnMeOptions, keys: readonly K[]): Pick<YarnMeOptions, K> =>
  Object.fromEntries(keys.map((k) => [k, options[k]])) as Pick<YarnMeOptions, K>;

const YARN_SHAPE_KEYS: readonly YarnShapeKeys[] = [
  'backfillReserved',
  'amMb',
  'amCores',
  'allocation',
  'maxAssign',
  'amHeartbeatMs',
  'reservationLimit',
  'reservableNodes',
  'maxAMShare',
  'lazyHeartbeats',
  'usageAtReports',
  'compat',
];
const YARN_ME_DEFAULTS = tunables(DEFAULT_YARN_ME_OPTIONS, [
  ...YARN_SHAPE_KEYS,
  'diskShare',
  'timelineRefreshMs',
  'admission',
]);
const YARN_DEFAULTS = tunables(DEFAULT_YARN_OPTIONS, YARN_SHAPE_KEYS);

/** The compat preset's options that `raw` does not set itself. */
function withCompat(options: YarnMeOptions, raw: PolicyOptions, keys: readonly string[]): YarnMeOptions {
  if (options.compat !== 'dss') return options;
  const preset = Object.fromEntries(
    Object.entries(DSS_COMPAT).filter(([k]) => keys.includes(k) && raw[k] === undefined),
  );
  return { ...options, ...preset };
}

/** `--policy-options` of yarn-me; a bad field is EBADCONF naming it. */
export function parseYarnMeOptions(raw: PolicyOptions): YarnMeOptions {
  const parsed = {
    ...DEFAULT_YARN_ME_OPTIONS,
    ...parseOptions('yarn-me', raw, YARN_ME_OPTION_SPECS, YARN_ME_DEFAULTS),
  };
  return withCompat(parsed, raw, Object.keys(YARN_ME_OPTION_SPECS));
}

/** `--policy-options` of yarn; a bad field is EBADCONF naming it. */
export function parseYarnOptions(raw: PolicyOptions): YarnMeOptions {
  const parsed = { ...DEFAULT_YARN_OPTIONS, ...parseOptions('yarn', raw, YARN_SHAPE_SPECS, YARN_DEFAULTS) };
  return withCompat(parsed, raw, Object.keys(YARN_SHAPE_SPECS));
}

export const YARN_DEFINITION: PolicyDefinition = definePolicy({
  name: 'yarn',
  summary:
    "YARN's regular allocation: a task runs only with its ideal " +
    'memory; queue by fair share; a job whose next task does not fit ' +
    'on a node reserves it until it fits',
  options: YARN_SHAPE_SPECS,
  defaults: YARN_DEFAULTS,
  clusterDefaults: YARN_CLUSTER_DEFAULTS,
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
  clusterDefaults: YARN_CLUSTER_DEFAULTS,
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
  readonly ams: AppMasters;
  readonly phases: HeartbeatPhases;
  /** The last PEEK look-ahead's limits, and when and for which jobs it ran (admission 'peek'). */
  readonly peek: {
    limits: Map<string, number> | null;
    builtAt: number;
    jobIds: readonly string[];
    jobsSeen: readonly JobView[] | null;
  };
  readonly holdings: NodeHoldings;
  /** Ended containers their nodes have not reported yet (usageAtReports). */
  readonly unreported: UnreportedEnds | null;
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

/** The job and what of its task an elastic grant depends on (kind, ideal memory, duration), once per task view. */
const choiceKeys = new WeakMap<TaskView, string>();

function choiceKeyOf(job: JobView, task: TaskView): string {
  let key = choiceKeys.get(task);
  if (key === undefined)
    choiceKeys.set(task, (key = `${job.id}\0${task.kind}\0${task.memoryMb}\0${task.idealDurationMs}`));
  return key;
}

/** A task's regular grant (its ideal memory), made once per task view. */
const regularGrants = new WeakMap<TaskView, Grant>();

function regularGrantOf(task: TaskView): Grant {
  let grant = regularGrants.get(task);
  if (grant === undefined) regularGrants.set(task, (grant = { memoryMb: task.memoryMb, elastic: false }));
  return grant;
}

/** Step 3's best elastic grant for a task on a node, and whether its job's completion admits it (once asked). */
interface ElasticChoice {
  readonly diskMBps: number;
  readonly grant: ElasticGrant | null;
  /** The grant as a policy's grant. */
  readonly asElastic: Grant | null;
  admitted: boolean | undefined;
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

/** Each job view's pending tasks as alike groups, when none was launched in the call that read them. */
const groupsOfView = new WeakMap<JobView, readonly TimelineTasks[]>();

/**
 * A job's pending tasks as alike groups (alikeGroups): of its view, worked out once per view unless
 * this call launched some of its tasks (`launchedFrom`).
 */
function pendingGroups(job: JobView, launched: ReadonlySet<string>, launchedFrom: boolean): readonly TimelineTasks[] {
  if (launchedFrom) return alikeGroups(job, launched);
  let groups = groupsOfView.get(job);
  if (groups === undefined) groupsOfView.set(job, (groups = alikeGroups(job, launched)));
  return groups;
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
  /** The last snapshot's job list found to have those jobs. */
  jobsSeen: readonly JobView[] | null;
  /** The live workers' generation when the kept holdings were last read in end order. */
  workersGeneration: number;
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
   * Step 3's grant for a job's task and a node's free memory, as worked out earlier in this call
   * (alike tasks of a job meet many nodes with the same free memory), and whether its job's
   * estimated completion admits it (`admitted`, undefined until asked); undefined the first time.
   */
  elasticChoice(job: JobView, task: TaskView, freeMb: number, diskMBps: number): ElasticChoice | undefined {
    // Not keyed by one string made per ask: the asks run to millions on 3000 nodes.
    const onDisk = this.elasticChoices.get(choiceKeyOf(job, task))?.get(freeMb);
    if (onDisk !== undefined) for (const c of onDisk) if (c.diskMBps === diskMBps) return c;
    return undefined;
  }

  /** Keeps step 3's grant for the job's task and free memory (elasticChoice); the choice kept. */
  keepElasticChoice(
    job: JobView,
    task: TaskView,
    freeMb: number,
    diskMBps: number,
    grant: ElasticGrant | null,
  ): ElasticChoice {
    const key = choiceKeyOf(job, task);
    let byFree = this.elasticChoices.get(key);
    if (byFree === undefined) this.elasticChoices.set(key, (byFree = new Map()));
    let onDisk = byFree.get(freeMb);
    if (onDisk === undefined) byFree.set(freeMb, (onDisk = []));
    const choice = {
      diskMBps,
      grant,
      asElastic: grant && { memoryMb: grant.memoryMb, elastic: true },
      admitted: undefined,
    };
    onDisk.push(choice);
    return choice;
  }

  /** Job and task shape (choiceKeyOf), free memory, disk rate: the choice. */
  private readonly elasticChoices = new Map<string, Map<number, ElasticChoice[]>>();

  /** A running attempt as a holding: held from its launch decision, working from its start (Decision.startDelayMs). */
  holdingOf(a: AttemptView): Holding {
    return holdingOf(a, this.worker(a.workerId), this.now, this.kept.ams.launchDelayMs(a.jobId, a.startTime));
  }

  /** Brings the kept holdings up to this call's snapshot (once a call). */
  private keptHoldingsUpToDate(): void {
    if (this.holdingsBuilt) return;
    this.holdingsBuilt = true;
    this.kept.holdings.update(this.snapshot.jobs);
  }

  /** What runs on a node until when, with this call's launches there (kept between calls: holdings.ts). */
  holdings(nodeId: string): Holding[] {
    this.keptHoldingsUpToDate();
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
    if (cache.timeline && this.now - cache.builtAt < cache.refreshMs && this.sameJobsAs(cache)) return cache.timeline;
    this.keptHoldingsUpToDate();
    const generation = this.kept.workers.generation;
    const running = this.kept.holdings.inReleaseOrder(
      this.now,
      (id) => this.worker(id),
      generation !== cache.workersGeneration,
    );
    cache.workersGeneration = generation;
    const launched = new Set(this.launched);
    const jobs: TimelineJob[] = this.queue.map((job) => {
      const launchedFrom = this.pendingLaunched.has(job.id);
      return {
        id: job.id,
        get tasks() {
          return pendingGroups(job, launched, launchedFrom);
        },
      };
    });
    const ams = this.kept.ams;
    const workers = ams.count > 0 ? this.snapshot.workers.map((w) => ams.withoutAms(w)) : this.snapshot.workers;
    cache.timeline = new Timeline(this.now, workers, running, jobs, this.used);
    cache.builtAt = this.now;
    cache.jobIds = this.snapshot.jobs.map((j) => j.id);
    cache.jobsSeen = this.snapshot.jobs;
    return cache.timeline;
  }

  /**
   * Whether the snapshot has the jobs `cache` was built with (compared once per snapshot: a call
   * asks for every elastic grant it works out).
   */
  private sameJobsAs(cache: { jobIds: readonly string[]; jobsSeen: readonly JobView[] | null }): boolean {
    if (cache.jobsSeen === this.snapshot.jobs) return true;
    if (!sameIds(cache.jobIds, this.snapshot.jobs)) return false;
    cache.jobsSeen = this.snapshot.jobs;
    return true;
  }

  /**
   * The PEEK look-ahead's elastic time limits (peek-admission.ts): run again when jobs arrived or
   * left, and at most every `refreshMs` otherwise, as DSS re-runs PEEK on arrivals and every heartbeat.
   */
  peekLimits(policy: {
    reservations: ReadonlyArray<readonly [string, string]>;
    reservedForAm: ReadonlySet<string>;
    maxAssign: number;
  }): Map<string, number> {
    const cache = this.kept.peek;
    const refreshMs = this.kept.timelines.refreshMs;
    if (cache.limits && this.now - cache.builtAt < refreshMs && this.sameJobsAs(cache)) return cache.limits;
    cache.limits = peekLimits({
      snapshot: this.snapshot,
      ams: this.kept.ams,
      reservations: policy.reservations,
      reservedForAm: policy.reservedForAm,
      phases: this.kept.phases,
      usedMb: (jobId) => this.used.get(jobId) ?? 0,
      launched: this.launched,
      endOf: (a) => this.holdingOf(a).endMs,
      maxAssign: policy.maxAssign,
      ...(this.kept.unreported ? { unreported: this.kept.unreported.entries() } : {}),
    });
    cache.builtAt = this.now;
    cache.jobIds = this.snapshot.jobs.map((j) => j.id);
    cache.jobsSeen = this.snapshot.jobs;
    return cache.limits;
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

  launch(
    room: Room,
    job: JobView,
    task: TaskView,
    grant: Grant,
    durationMs: number | undefined,
    startDelayMs: number,
  ): void {
    this.decisions.push({
      kind: 'launch',
      taskId: task.id,
      jobId: job.id,
      workerId: room.worker.id,
      memoryMb: grant.memoryMb,
      ...(grant.elastic ? { elastic: true } : {}),
      locality: localityOf(task, room.worker),
      ...(startDelayMs > 0 ? { startDelayMs } : {}),
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
      endMs: this.now + startDelayMs + (durationMs ?? 0),
      diskMBps: disk,
    };
    const here = this.holdingsByNode.get(room.worker.id) ?? this.launchesByNode.get(room.worker.id);
    if (here) here.push(holding);
    else this.launchesByNode.set(room.worker.id, [holding]);
  }

  /** Places `job`'s ApplicationMaster on the room's node: its memory and cores there count as the job's. */
  placeAm(room: Room, job: JobView): void {
    const ams = this.kept.ams;
    ams.place(job, room.worker.id, this.now);
    room.memoryMb -= ams.memoryMb;
    const kinds = amSlotKinds(room.worker);
    if (kinds.maps) room.mapSlots -= ams.cores;
    if (kinds.reduces) room.reduceSlots -= ams.cores;
    this.used.add(job.id, ams.memoryMb);
    requeue(this.queue, job, this.used);
  }

  /** The node's holdings by end, sorted again only when this call launched there since (launches only add). */
  private holdingsByEnd(nodeId: string): readonly Holding[] {
    const list = this.holdings(nodeId);
    let sorted = this.sortedHoldings.get(nodeId);
    if (sorted === undefined || sorted.length !== list.length) {
      sorted = [...list].sort((a, b) => a.endMs - b.endMs);
      this.sortedHoldings.set(nodeId, sorted);
    }
    return sorted;
  }

  private readonly sortedHoldings = new Map<string, readonly Holding[]>();

  /** When `task` could start regularly on the room's node, from what runs there now: infinite if never. */
  regularStartMs(room: Room, task: TaskView): number {
    let free = room.memoryMb;
    let slots = task.kind === 'map' ? room.mapSlots : room.reduceSlots;
    if (free >= task.memoryMb && slots > 0) return this.now;
    const ends = this.holdingsByEnd(room.worker.id);
    for (const h of ends) {
      free += h.memoryMb;
      if (h.kind === task.kind) slots++;
      if (free >= task.memoryMb && slots > 0) return h.endMs;
    }
    return Number.POSITIVE_INFINITY;
  }
}

/** What one look for a container on a node came to. */
type Outcome = 'allocated' | 'reserved' | 'none';

export class YarnMePolicy implements Policy {
  /**
   * 'on-change': heartbeat-by-heartbeat allocation becomes allocation wherever capacity was freed;
   * 'heartbeat': every node heartbeat (see `Consultation`).
   */
  readonly consultWhen: Consultation;
  /** Attempts' ends are predicted from their tasks' estimates; progress only for those without one (holdings.ts). */
  readonly readsProgress = 'unestimated';
  private readonly reservations = new Reservations();
  /** Jobs whose ApplicationMaster was placed since the kept queue last saw them (their place and ask changed). */
  private readonly amPlacedSince = new Set<string>();
  /**
   * Nodes reserved for a job's AM: once the AM is placed elsewhere the reservation has served its
   * purpose and goes (YARN and DSS reserve for a container of one kind).
   */
  private readonly reservedForAm = new Set<string>();
  /** DSS's silent nodes, with lazyHeartbeats. */
  private readonly lazy: LazyHeartbeats | null;
  /** The live workers' memory, MB, for maxAMShare (worked out again when who is live changes). */
  private clusterMemory = { generation: -1, mb: 0 };
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
    const ams = new AppMasters(
      options.amMb,
      options.amCores,
      options.allocation === 'heartbeat' ? options.amHeartbeatMs : 0,
    );
    const unreported = options.allocation === 'heartbeat' && options.usageAtReports ? new UnreportedEnds() : null;
    this.kept = {
      // A job without its ApplicationMaster asks for that first, and holds it once placed.
      queue: new FairQueue(
        (job) =>
          ams.enabled && !ams.of(job.id) ? ams.memoryMb : smallestGrantMb(job.pendingTasks, options.elastic, this.step),
        unreported
          ? (jobId) => (ams.of(jobId)?.memoryMb ?? 0) + unreported.of(jobId)
          : (jobId) => ams.of(jobId)?.memoryMb ?? 0,
      ),
      workers: new LiveWorkers(),
      timelines: {
        refreshMs: options.timelineRefreshMs,
        timeline: null,
        builtAt: 0,
        jobIds: [],
        jobsSeen: null,
        workersGeneration: -1,
      },
      ams,
      phases: new HeartbeatPhases(options.amHeartbeatMs > 0 ? options.amHeartbeatMs : 1000),
      peek: { limits: null, builtAt: 0, jobIds: [], jobsSeen: null },
      holdings: new NodeHoldings((a) => ams.launchDelayMs(a.jobId, a.startTime)),
      unreported,
    };
    this.consultWhen = options.allocation === 'heartbeat' ? 'at-heartbeats' : 'after-change';
    this.lazy = options.allocation === 'heartbeat' && options.lazyHeartbeats ? new LazyHeartbeats() : null;
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
        o.amMb > 0
          ? `each job's ApplicationMaster holds ${o.amMb} MB x ${o.amCores} core(s) until its last task ends; ` +
            `${this.kept.ams.count} placed, ${this.kept.ams.totalMb} MB`
          : 'no ApplicationMasters',
        o.allocation === 'heartbeat'
          ? `allocation at node heartbeats, ${o.maxAssign > 0 ? `at most ${o.maxAssign}` : 'all that fit'} per heartbeat`
          : 'allocation wherever capacity frees',
      ],
      tables: [
        {
          title: 'Nodes',
          columns: ['worker', 'memory (MB)', 'free (MB)', 'AMs (MB)', 'running', 'elastic', 'reserved for'],
          rows: snapshot.workers.map((w) => {
            const here = running.filter((a) => a.workerId === w.id);
            return [
              w.id,
              w.memoryMb,
              w.freeMemoryMb,
              this.kept.ams.heldOn(w.id).memoryMb,
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
    if (snapshot.trigger.kind === 'heartbeat') this.kept.phases.saw(snapshot.trigger.workerId, snapshot.now);
    else this.lazy?.noteEnds((id) => workers.byId(id), snapshot.now);
    const unreported = this.kept.unreported;
    // Every call: the attempts that ended are noted before the queue sees them gone.
    unreported?.observe(snapshot.jobs);
    const free = this.nodesToVisit(snapshot);
    if (free.length === 0) return NOTHING;
    const step = memoryStepOf(snapshot);
    if (step !== this.step) {
      this.step = step;
      this.kept.queue.forgetAsks();
    }
    const queue = this.kept.queue;
    const ams = this.kept.ams;
    queue.update(snapshot.jobs);
    // An ended job's AM is released: its memory comes back with the job leaving the snapshot.
    for (const job of queue.takeLeft()) this.retireAm(job, snapshot.now);
    for (const { am, atMs } of ams.releaseDue(snapshot.now)) this.lazy?.containerEvent(am.nodeId, atMs);
    const arrived = queue.takeArrived();
    if (this.lazy) for (const job of arrived) this.lazy.jobArrived(job.submitTime);
    for (const jobId of this.amPlacedSince) queue.refresh(jobId);
    this.amPlacedSince.clear();
    // The node reports the containers that ended on it at its heartbeat, before it is offered (YARN,
    // DSS). Also when DSS's rules keep it silent: one woken by a container's end heartbeats at its next
    // phase point, when it is consulted here anyway (reporting only when lazyHeartbeats says it heartbeats
    // put T200_M10_D200 9% further from DSS).
    if (unreported && snapshot.trigger.kind === 'heartbeat')
      for (const jobId of unreported.report(snapshot.trigger.workerId)) queue.refresh(jobId);
    const lazy = this.lazy;
    if (lazy && !lazy.heartbeats(free[0]!.worker, snapshot.now)) return NOTHING;
    const visit = ams.count === 0 ? free : free.map((r) => this.roomOf(r.worker));
    const reservedBefore = lazy ? this.reservations.jobOn(free[0]!.worker.id) : undefined;
    const decisions = this.decide(snapshot, visit);
    if (lazy) {
      const reservedAfter = this.reservations.jobOn(free[0]!.worker.id);
      const allocated = decisions.length > 0 || this.amPlacedSince.size > 0;
      lazy.after(free[0]!.worker, snapshot.now, {
        allocated,
        reserved: reservedAfter !== undefined,
        reservedFailed: !allocated && reservedBefore !== undefined && reservedAfter === reservedBefore,
        headJobId: this.headAfter?.id,
      });
    }
    return decisions;
  }

  /**
   * An ended job's AM: released as DSS's SLS AM lets go at allocation by heartbeats (its last
   * container's node reports the end at its next heartbeat, the AM acts a heartbeat after hearing of
   * it), else at once.
   */
  private retireAm(job: JobView, now: number): void {
    const ams = this.kept.ams;
    const am = ams.of(job.id);
    if (!am) return;
    if (ams.heartbeatMs <= 0) {
      ams.forget(job.id);
      return;
    }
    let reported = job.runningAttempts.length === 0 ? now : Number.NEGATIVE_INFINITY;
    for (const a of job.runningAttempts) {
      const ms = predictedAttemptMs(a, this.kept.workers.byId(a.workerId));
      const end = ms === undefined ? now : a.startTime + ams.launchDelayMs(job.id, a.startTime) + ms;
      reported = Math.max(reported, this.kept.phases.nextAfter(a.workerId, Math.min(end, now)));
    }
    ams.retire(job.id, ams.releaseTimeOf(job.id, reported));
  }

  /** The first job of the queue after the last call's allocation (DSS's lazy heartbeats read it). */
  private headAfter: JobView | undefined;

  /** Steps 1-5 on the rooms to visit; the decisions. */
  private decide(snapshot: ClusterSnapshot, visit: Room[]): readonly Decision[] {
    const workers = this.kept.workers;
    // Nothing can be granted where the free memory is below every pending task's smallest grant:
    // most heartbeats of a busy cluster end here. Not on a node that no job has reserved yet,
    // though: there the queue's first job reserves it (step 4), as YARN reserves a node whenever
    // the task it offers the node to does not fit, whether or not any other would. Without that,
    // staggered heartbeats on a busy cluster never reserved anything.
    // (At heartbeats the one node is always looked at: a reservation that served its purpose is
    // released there, and the next job may reserve it, as in YARN and DSS.)
    if (
      this.options.allocation !== 'heartbeat' &&
      !this.anythingFits(visit) &&
      visit.every((r) => this.reservations.jobOn(r.worker.id) !== undefined)
    ) {
      this.headAfter = this.kept.queue.waiting[0];
      return NOTHING;
    }
    const round = new Round(snapshot, this.kept);
    // Only the jobs that changed since the last prune can have fewer tasks pending than reservations.
    const changedJobs = this.kept.queue.takeChanged();
    if (this.reservations.size > 0) {
      const liveChanged = this.prunedGeneration !== workers.generation;
      const perTask = this.options.reservationLimit === 'pending-tasks';
      this.reservations.prune(
        perTask
          ? (job) => round.pendingLeft(job)
          : (job) => (round.pendingLeft(job) > 0 ? Number.POSITIVE_INFINITY : 0),
        liveChanged ? (node) => workers.has(node) : undefined,
        changedJobs,
      );
      this.prunedGeneration = workers.generation;
    }
    for (const room of visit) this.heartbeat(round, room);
    this.headAfter = round.queue[0];
    return round.decisions;
  }

  /**
   * The jobs that can never run, when nothing runs and nothing is under way: each waits for memory or
   * cores that ApplicationMasters of waiting jobs, or nodes reserved for them, hold for good (the
   * FairScheduler deadlock of YARN-3655: every node holds an AM and the head job reserves them all).
   */
  stuckJobs(snapshot: ClusterSnapshot): readonly StuckJob[] {
    const ams = this.kept.ams;
    if (
      snapshot.jobs.some((j) => j.runningAttempts.length > 0) ||
      ams.anyStarting(snapshot.now) ||
      ams.anyRetiring ||
      this.lazy?.anyWaking()
    )
      return [];
    const rooms = snapshot.workers.map((w) => this.roomOf(w));
    const most = (cores: number) =>
      rooms.filter((r) => r.mapSlots + r.reduceSlots >= cores).reduce((m, r) => Math.max(m, r.memoryMb), 0);
    const reservedFor = (jobId: string) => rooms.filter((r) => this.reservations.jobOn(r.worker.id) === jobId).length;
    const amHeld = `ApplicationMasters hold ${ams.totalMb} MB on ${ams.holdings().length} node(s)`;
    const stuck: StuckJob[] = [];
    for (const job of snapshot.jobs) {
      const next = job.pendingTasks[0];
      if (!next) continue;
      const reserved = reservedFor(job.id);
      const holds = reserved > 0 ? `; it holds ${reserved} node(s) reserved` : '';
      if (ams.enabled && !ams.of(job.id)) {
        const free = most(ams.cores);
        stuck.push({
          jobId: job.id,
          reason:
            free >= ams.memoryMb
              ? `its ApplicationMaster (${ams.memoryMb} MB) waits for a node that is not reserved for another job${holds}`
              : `its ApplicationMaster (${ams.memoryMb} MB) fits no node: the most free is ${free} MB (${amHeld})${holds}`,
        });
        continue;
      }
      const free = most(1);
      stuck.push({
        jobId: job.id,
        reason:
          free >= next.memoryMb
            ? `its next task (${next.memoryMb} MB) fits only on nodes reserved for other jobs${holds}`
            : `its next task needs ${next.memoryMb} MB and the most free on any node is ${free} MB (${amHeld})${holds}`,
      });
    }
    return stuck;
  }

  /** What is free on a worker for this policy: its free slots and memory less what AMs hold there. */
  private roomOf(worker: WorkerView): Room {
    const held = this.kept.ams.heldOn(worker.id);
    const kinds = amSlotKinds(worker);
    return {
      worker,
      mapSlots: Math.max(0, worker.freeMapSlots - (kinds.maps ? held.cores : 0)),
      reduceSlots: Math.max(0, worker.freeReduceSlots - (kinds.reduces ? held.cores : 0)),
      memoryMb: Math.max(0, worker.freeMemoryMb - held.memoryMb),
    };
  }

  /** The AM fits in the room: its memory, and its cores in every kind of slot it takes (amSlotKinds). */
  private amFits(room: Room): boolean {
    const ams = this.kept.ams;
    const kinds = amSlotKinds(room.worker);
    return (
      room.memoryMb >= ams.memoryMb &&
      (!kinds.maps || room.mapSlots >= ams.cores) &&
      (!kinds.reduces || room.reduceSlots >= ams.cores)
    );
  }

  /** maxAMShare: one more AM keeps all AMs within that share of the live workers' memory. */
  private amWithinShare(round: Round): boolean {
    const share = this.options.maxAMShare;
    if (share >= 1) return true;
    const generation = this.kept.workers.generation;
    if (this.clusterMemory.generation !== generation) {
      let mb = 0;
      for (const w of round.snapshot.workers) mb += w.memoryMb;
      this.clusterMemory = { generation, mb };
    }
    const ams = this.kept.ams;
    return ams.totalMb + ams.memoryMb <= share * this.clusterMemory.mb;
  }

  /** Whether `job` may reserve one more node: reservationLimit and reservable-nodes. */
  private mayReserve(round: Round, job: JobView): boolean {
    const held = this.reservations.countOf(job.id);
    if (this.options.reservationLimit === 'pending-tasks' && held >= round.pendingLeft(job.id)) return false;
    const share = this.options.reservableNodes;
    return share >= 1 || held < Math.ceil(share * round.snapshot.workers.length);
  }

  /**
   * The heartbeating node. On any other trigger, the nodes with a free slot (id order) whose state
   * changed since this policy last saw them, as YARN looks at a node when it reports back; all of
   * them when jobs arrived or left, and at least every `timelineRefreshMs` (a heartbeat's worth),
   * so a node whose situation changes only with time is looked at again. The books hand out the
   * same WorkerView while a worker does not change, so a changed view is a changed node. With
   * allocation at heartbeats, the heartbeating node only. Rooms as the snapshot has them: `schedule`
   * takes the ApplicationMasters' holdings off.
   */
  private nodesToVisit(snapshot: ClusterSnapshot): Room[] {
    const t = snapshot.trigger;
    if (this.options.allocation === 'heartbeat' && t.kind !== 'heartbeat') return [];
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
    // At heartbeats a node without a free core is still offered: the head job reserves it (YARN, DSS).
    const full = worker !== undefined && worker.freeMapSlots <= 0 && worker.freeReduceSlots <= 0;
    if (!worker || (full && this.options.allocation !== 'heartbeat')) return [];
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

  /**
   * The decision loop on node N (the room), repeated while it allocates: as long as anything fits, or
   * (allocation at heartbeats) up to `maxAssign` containers.
   */
  private heartbeat(round: Round, room: Room): void {
    const o = this.options;
    const most = o.allocation === 'heartbeat' && o.maxAssign > 0 ? o.maxAssign : Number.POSITIVE_INFINITY;
    if (room.mapSlots <= 0 && room.reduceSlots <= 0) {
      if (o.allocation === 'heartbeat') this.reserveFullNode(round, room);
      return;
    }
    let assigned = 0;
    while ((room.mapSlots > 0 || room.reduceSlots > 0) && assigned < most) {
      const reservedBy = this.reservations.jobOn(room.worker.id);
      if (reservedBy !== undefined) {
        // 1. J = the job that reserved N.
        const job = round.queued(reservedBy);
        if (job && this.kept.ams.enabled && !this.kept.ams.of(job.id)) {
          // Reserved for J's ApplicationMaster.
          if (!this.amFits(room)) return;
          this.placeAm(round, room, job);
          this.reservations.release(room.worker.id);
          assigned++;
          continue;
        }
        // A reservation made for J's AM, which was placed since on another node, is released (DSS alike),
        // as is one of a job whose AM does not run yet.
        const forAm = this.reservedForAm.has(room.worker.id);
        const task = job && !forAm && this.kept.ams.runs(job.id, round.now) ? round.nextTask(job, room) : undefined;
        if (!job || !task) {
          this.reservations.release(room.worker.id);
          continue;
        }
        const grant = this.allocate(round, room, job, task);
        if (grant) {
          this.launch(round, room, job, task, grant);
          this.reservations.release(room.worker.id);
          assigned++;
          continue;
        }
        // 4. Others only where they do not delay J's task.
        if (!o.backfillReserved || !this.backfill(round, room, job, task)) return;
        assigned++;
        continue;
      }
      const outcome = this.allocateFromQueue(round, room);
      if (outcome === 'none') return;
      // A reservation is looked at again at once: backfilling may still use the node.
      if (outcome === 'allocated') assigned++;
    }
  }

  /**
   * A heartbeat of a node without a free core: nothing fits it, so the first job of the queue that
   * asks for a container (its AM, or a task once its AM runs) reserves it, as YARN and DSS reserve a
   * node for a container that does not fit whatever the reason; a reserved node stays reserved.
   */
  private reserveFullNode(round: Round, room: Room): void {
    if (this.reservations.jobOn(room.worker.id) !== undefined) return;
    const ams = this.kept.ams;
    for (const job of round.queue) {
      const wantsAm = ams.enabled && !ams.of(job.id);
      if (!wantsAm && !ams.runs(job.id, round.now)) continue;
      const next = job.pendingTasks.find((t) => !round.launched.has(t.id));
      const asks = wantsAm ? ams.memoryMb : next?.memoryMb;
      if (asks === undefined) continue;
      if (asks <= room.worker.memoryMb && this.mayReserve(round, job)) {
        this.reserve(room, job, wantsAm);
        return;
      }
    }
  }

  /** J reserves N, for its AM or for a task (a reservation serves the kind of container it was made for). */
  private reserve(room: Room, job: JobView, forAm: boolean): void {
    this.reservations.reserve(room.worker.id, job.id);
    if (forAm) this.reservedForAm.add(room.worker.id);
    else this.reservedForAm.delete(room.worker.id);
  }

  /** Launches `task` of `job` on the room's node: at once, or through its AM's heartbeat. */
  private launch(round: Round, room: Room, job: JobView, task: TaskView, grant: Grant): void {
    const delay = this.kept.ams.launchDelayMs(job.id, round.now);
    round.launch(room, job, task, grant, this.durationOf(room, job, task, grant), delay);
    this.lazy?.containerEvent(room.worker.id, round.now + delay);
  }

  /** Places `job`'s ApplicationMaster on the room's node. */
  private placeAm(round: Round, room: Room, job: JobView): void {
    round.placeAm(room, job);
    this.amPlacedSince.add(job.id);
    const runsFromMs = this.kept.ams.of(job.id)!.runsFromMs;
    this.lazy?.amStarts(runsFromMs);
    this.lazy?.containerEvent(room.worker.id, runsFromMs);
  }

  /** Steps 1-4 for an unreserved node: what came of it. */
  private allocateFromQueue(round: Round, room: Room): Outcome {
    const ams = this.kept.ams;
    for (const job of round.queue) {
      if (ams.enabled) {
        const am = ams.of(job.id);
        if (!am) {
          // J's first container is its ApplicationMaster (unless AMs would pass maxAMShare).
          if (!this.amWithinShare(round)) continue;
          if (this.amFits(room)) {
            this.placeAm(round, room, job);
            return 'allocated';
          }
          if (ams.memoryMb <= room.worker.memoryMb && this.mayReserve(round, job)) {
            this.reserve(room, job, true);
            return 'reserved';
          }
          continue;
        }
        // Its tasks are asked for once the AM runs.
        if (am.runsFromMs > round.now) continue;
      }
      const task = round.nextTask(job, room);
      if (!task) continue;
      const grant = this.allocate(round, room, job, task);
      if (grant) {
        this.launch(round, room, job, task, grant);
        return 'allocated';
      }
      // 4. T got nothing: J reserves N, if T could ever fit there and J may hold one more reservation.
      if (task.memoryMb <= room.worker.memoryMb && this.mayReserve(round, job)) {
        this.reserve(room, job, false);
        return 'reserved';
      }
    }
    return 'none';
  }

  /**
   * Steps 2, 3 and 5: a regular grant, else (YARN-ME) an elastic one, else nothing. Backfilling
   * passes the time by which the task must end (`latestEndMs`): an elastic grant ending later is no
   * use to it, and its admission is not asked.
   */
  private allocate(
    round: Round,
    room: Room,
    job: JobView,
    task: TaskView,
    latestEndMs = Number.POSITIVE_INFINITY,
  ): Grant | null {
    // 2. Regular when the ideal memory is free.
    if (task.memoryMb <= room.memoryMb) return regularGrantOf(task);
    if (!this.options.elastic || task.penalty === undefined || task.idealDurationMs === undefined) return null;
    const disk = diskOf(room.worker);
    // 3. Elastic: the grant of lowest predicted duration, smallest among ties ...
    let choice = round.elasticChoice(job, task, room.memoryMb, disk);
    if (choice === undefined) {
      const minimum = minimumGrantMb(task.memoryMb, task.penalty);
      const best = room.memoryMb < minimum ? null : bestElasticGrant(task, room.memoryMb, minimum, round.step, disk);
      // The picture admission is judged on is taken now, whether or not it will be asked (see admissionPicture).
      if (best) this.admissionPicture(round);
      choice = round.keepElasticChoice(job, task, room.memoryMb, disk, best);
    }
    const grant = choice.grant;
    if (!grant || round.now + grant.durationMs > latestEndMs) return null;
    // 5. Within the node's disk share for elastic tasks (asked before the costlier step 3 check).
    let spilling = elasticDiskMBps(task.memoryMb, task.penalty, task.idealDurationMs, grant.memoryMb, disk);
    if (spilling > 0) {
      for (const h of round.holdings(room.worker.id)) spilling += h.diskMBps;
      if (spilling > this.options.diskShare * disk) return null;
    }
    // ... only if it ends within J's estimated completion (never J's straggler).
    choice.admitted ??= this.withinJob(round, job, round.now + grant.durationMs);
    return choice.admitted ? choice.asElastic : null;
  }

  /**
   * Whether a task of `job` ending at `endMs` ends by the job's estimated completion: the timeline's,
   * or PEEK's limit (a job PEEK saw not complete by its cutoff has none: DSS grants it unchecked).
   */
  private withinJob(round: Round, job: JobView, endMs: number): boolean {
    const picture = this.admissionPicture(round);
    if (picture instanceof Timeline) return picture.withinJob(job.id, endMs);
    const limit = picture.get(job.id);
    return limit === undefined || endMs <= limit;
  }

  /**
   * The timeline (or PEEK's limits) admission is judged on: built, when out of date, at the first
   * elastic grant a call works out, from the call's launches so far. That is whether or not the
   * grant's admission is then asked (backfilling and the disk share may turn it down first), so
   * the picture, and every answer, is the same as when each grant was asked.
   */
  private admissionPicture(round: Round): Timeline | ReadonlyMap<string, number> {
    if (this.options.admission === 'timeline') return round.timeline();
    return round.peekLimits({
      reservations: this.reservations.entries(),
      reservedForAm: this.reservedForAm,
      maxAssign: this.options.maxAssign,
    });
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
      if (
        job === reserver ||
        !this.kept.ams.runs(job.id, round.now) ||
        smallestGrantMb(job.pendingTasks, this.options.elastic, round.step) > room.memoryMb
      )
        continue;
      const task = round.nextTask(job, room);
      // No grant makes a task shorter than its ideal duration.
      if (!task || (task.idealDurationMs !== undefined && round.now + task.idealDurationMs > startMs)) continue;
      const grant = this.allocate(round, room, job, task, startMs);
      if (!grant) continue;
      const ms = this.durationOf(room, job, task, grant);
      if (ms === undefined || round.now + ms > startMs) continue;
      round.launch(room, job, task, grant, ms, this.kept.ams.launchDelayMs(job.id, round.now));
      return true;
    }
    return false;
  }
}
