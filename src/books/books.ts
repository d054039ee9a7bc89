/**
 * The books: job, task, attempt and worker state, every transition between states, the snapshots a
 * policy sees and the check its decisions must pass. Both engines keep their books here and nowhere
 * else: the JobTracker drives them with what its workers report, the simulator with what its model
 * predicts, and each carries out the effects a transition returns (start an attempt, kill one, copy
 * a block, commit an output). Nothing here does I/O or reads a clock: every method that depends on
 * time takes `now`, so the rules can be tested by posting events, as Spark's DAGSchedulerSuite does.
 *
 * The rules, in one place:
 * - Only failures of a task's own code count toward `maxAttempts`; attempts killed by a policy, by
 *   their job's end or lost with their worker do not (as in Hadoop). The failure that exhausts them
 *   fails the job with the user's message, naming the task and the attempt.
 * - A reduce that cannot fetch a map's output (`EFETCH`, naming `mapIndex` and the map attempt)
 *   re-runs that map and is retried without counting, up to `MAX_FETCH_FAILURES_PER_REDUCE` times.
 * - A lost worker's running attempts are killed, and the map outputs it held are re-run while an
 *   unfinished reduce of an active job still needs them.
 * - A worker connected but silent past the heartbeat timeout is suspect: no new attempts. Past the
 *   task expiry its attempts are lost and run elsewhere, and its map outputs are re-run, as for a
 *   lost worker; heard from again, it takes work again (Hadoop's TaskTracker expiry).
 * - A task whose attempt failed with EDISKFULL on a worker is launched there again only when no
 *   other worker could run it: a launch a policy puts there goes to another with room, or waits.
 * - Reduces become runnable once `reduceSlowStart` of the maps are done (1 by default: all).
 * - When every task has succeeded the job commits; a kill or failure during the commit wins, and
 *   what the commit wrote is discarded.
 * - A private data set's owed replicas (`InputPlacement`) may be placed by a policy while the window
 *   is open; when it closes, the rest go on a rack-mate of a holder (`owedReplicaTarget`).
 *
 * Snapshots are incremental: every WorkerView, TaskView, AttemptView, stats object and JobView is
 * immutable once built and rebuilt only when what it shows changed, so consecutive snapshots share
 * everything that did not change (a policy may keep references; nothing it has seen is mutated).
 */
import { MinimrError, type SerializedError } from '../errors.js';
import {
  DEFAULT_MEMORY_STEP_MB,
  validateDecisions,
  type AttemptView,
  type ClusterSnapshot,
  type Decision,
  type JobStats,
  type JobView,
  type Locality,
  type PoolView,
  type SchedulingTrigger,
  type TaskKind,
  type TaskView,
  type WorkerView,
} from '../scheduler/index.js';
import { owedReplicaTarget } from '../storage/index.js';
import { ProgressPatches, attemptViewOf, withProgress } from './attempt-views.js';
import { MrClusters, type MrClusterOptions } from './mr-clusters.js';
import { JobSkew, SkewPlanner, type Stopwatch } from './skew.js';
import {
  DEFAULT_SPECULATION,
  percentile,
  speculationProblem,
  speculativeCap,
  timeLeftMs,
  type SpeculationOptions,
} from './speculation.js';
import { WorkerHealth, type WorkerHealthOptions } from './worker-health.js';
import type {
  AttemptMeasures,
  AttemptRecord,
  Effect,
  EngineData,
  JobPlan,
  JobRecord,
  JobState,
  ReplicaCause,
  TaskPlan,
  TaskRecord,
  WorkerRecord,
  WorkerRegistration,
} from './records.js';

/** A reduce that keeps failing to fetch is eventually counted as failing itself. */
export const MAX_FETCH_FAILURES_PER_REDUCE = 8;
const DEFAULT_MAX_ATTEMPTS = 4;

export interface BooksOptions {
  /** Freeze every view handed out, so a policy that writes to a snapshot throws (tests). */
  readonly freeze?: boolean;
  readonly pools?: readonly PoolView[];
  /** Default for jobs whose plan gives none. */
  readonly maxAttempts?: number;
  /** Default for jobs whose plan gives none; 1 = reduces wait for every map. */
  readonly reduceSlowStart?: number;
  /** Task ids; default Hadoop's `task_<job number>_m_000003`. */
  readonly taskId?: (jobId: string, kind: TaskKind, index: number) => string;
  /** Attempt ids; default Hadoop's `attempt_<job number>_m_000003_<n>`, n from 0. */
  readonly attemptId?: (taskId: string, attemptNumber: number) => string;
  /** Measures what planning a skew assignment costs (ms); without one the cost reads 0. */
  readonly stopwatch?: Stopwatch;
  /** Output replication, block size and storage per node of MR-clusters (FAWKES). */
  readonly mrClusters?: MrClusterOptions;
  /** Elastic grants are whole multiples of this, MB (default DEFAULT_MEMORY_STEP_MB, 100); snapshots carry it. */
  readonly memoryStepMb?: number;
  /** When failing or vanishing attempts blacklist a worker for a job, or graylist it (worker-health.ts). */
  readonly workerHealth?: WorkerHealthOptions;
  /** The most slots and memory a worker may claim; a registration above them is refused (EBADCONF). */
  readonly workerLimits?: WorkerLimits;
  /** Speculative execution (speculation.ts): on by default, as in Hadoop. */
  readonly speculation?: Partial<SpeculationOptions>;
}

export interface WorkerLimits {
  readonly maxMapSlots: number;
  readonly maxReduceSlots: number;
  readonly maxMemoryMb: number;
}

/** Generous enough for any machine; what they stop is a claim no machine makes (1e9 slots). */
export const DEFAULT_WORKER_LIMITS: WorkerLimits = {
  maxMapSlots: 1024,
  maxReduceSlots: 1024,
  maxMemoryMb: 16 * 1024 * 1024,
};

function pad6(n: number): string {
  return String(n).padStart(6, '0');
}

function hadoopTaskId(jobId: string, kind: TaskKind, index: number): string {
  return `task_${jobId.replace(/^job_/, '')}_${kind === 'map' ? 'm' : 'r'}_${pad6(index)}`;
}

export function hadoopAttemptId(taskId: string, n: number): string {
  return `${taskId.replace(/^task_/, 'attempt_')}_${n}`;
}

/** The job of an attempt id made by `hadoopAttemptId` (`attempt_X_m_000003_2`: `job_X`); undefined for any other id. */
export function jobIdOfAttempt(attemptId: string): string | undefined {
  const m = /^attempt_(.+)_[mr]_\d{6,}_\d+$/.exec(attemptId);
  return m ? `job_${m[1]}` : undefined;
}

function byId(a: WorkerRecord, b: WorkerRecord): number {
  return a.shape.id < b.shape.id ? -1 : a.shape.id > b.shape.id ? 1 : 0;
}

function taskOrder(a: TaskRecord, b: TaskRecord): number {
  return (a.kind === b.kind ? 0 : a.kind === 'map' ? -1 : 1) || a.index - b.index;
}

function insertByIndex<T extends { readonly index: number }>(list: T[], task: T): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.index < task.index) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, task);
}

/**
 * Inserts the attempt after those of tasks not after its own (taskOrder), so a task's attempts keep their launch order.
 */
function insertByTask<A extends { readonly task: TaskRecord }>(list: A[], a: A): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (taskOrder(list[mid]!.task, a.task) <= 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, a);
}

/** Node-local first, then rack-local, then anywhere. */
const LOCALITY_RANK: Readonly<Record<Locality, number>> = { node: 0, rack: 1, any: 2 };

/** Whether `w` has a free slot of `kind`. */
function hasFreeSlot(w: WorkerRecord, kind: TaskKind): boolean {
  return kind === 'map' ? w.usedMap < w.shape.mapSlots : w.usedReduce < w.shape.reduceSlots;
}

function removeItem<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

const ACTIVE = new Set(['pending', 'running']);
const ENDED = new Set(['succeeded', 'failed', 'killed']);

/** Succeeded, failed or killed: nothing about the job changes any more. */
export function hasEnded(job: { readonly state: JobState }): boolean {
  return ENDED.has(job.state);
}

export class Books<D extends EngineData = EngineData> {
  private readonly freeze: boolean;
  private readonly pools: readonly PoolView[];
  private readonly maxAttempts: number;
  private readonly reduceSlowStart: number;
  private readonly taskIdOf: (jobId: string, kind: TaskKind, index: number) => string;
  private readonly attemptIdOf: (taskId: string, n: number) => string;
  private readonly skewPlanner: SkewPlanner;
  /** MR-clusters (FAWKES): requests, admission, node kinds, output blocks and shrinks (mr-clusters.ts). */
  readonly mrClusters: MrClusters<D>;
  private readonly memoryStepMb: number;
  readonly speculation: SpeculationOptions;
  /** When `speculate` last looked for candidates. */
  private lastSpeculationMs = Number.NEGATIVE_INFINITY;
  /** Backup attempts running now (AttemptRecord.speculative). */
  private runningBackups = 0;
  /** Active jobs that speculate: with none, `speculate` returns at once. */
  private speculativeJobs = 0;
  /** A slot freed since `speculate` last looked: it looks again without waiting out the interval. */
  private freedSinceLook = false;

  private readonly workerMap = new Map<string, WorkerRecord<D>>();
  /** Every worker ever known, sorted by id (snapshots list live workers in id order). */
  private readonly workersById: WorkerRecord<D>[] = [];
  private readonly jobMap = new Map<string, JobRecord<D>>();
  private readonly taskMap = new Map<string, TaskRecord<D>>();
  private readonly attemptMap = new Map<string, AttemptRecord<D>>();
  /** Pending and running jobs, in submission order. */
  private readonly activeJobs: JobRecord<D>[] = [];
  /** Running attempts whose progress changed since their job's views were built (attempt-views.ts). */
  private readonly progressPatches = new ProgressPatches<JobRecord<D>, AttemptRecord<D>>();
  /** Copies of a map's input asked for and not yet landed, by task, then target worker (few tasks have any). */
  private readonly inFlight = new Map<TaskRecord<D>, Set<string>>();
  private liveCount = 0;

  /** Which workers failing or vanishing attempts made the books stop trusting. */
  readonly health: WorkerHealth;
  private readonly workerLimits: WorkerLimits;

  private liveDirty = true;
  private readonly dirtyWorkers: WorkerRecord<D>[] = [];
  private workerArray: readonly WorkerView[] = [];
  private jobsDirty = true;
  private jobArray: readonly JobView[] = [];
  /** Jobs joined or left the active ones since jobArray was built: it is built anew, not patched. */
  private jobListChanged = true;
  /** Active jobs whose view was dropped since jobArray was built, and each active job's place in it. */
  private readonly dirtyJobs: JobRecord<D>[] = [];
  private jobSlots = new Map<JobRecord<D>, number>();

  /** Something a policy could act on changed since `takeChanged()` was last called. */
  private changed = false;
  /** When the books last changed in a way that matters to stall detection. */
  lastChange = 0;

  constructor(options: BooksOptions = {}) {
    this.freeze = options.freeze ?? false;
    this.pools = this.fz([...(options.pools ?? [])].map((p) => this.fz({ ...p })));
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.reduceSlowStart = options.reduceSlowStart ?? 1;
    this.taskIdOf = options.taskId ?? hadoopTaskId;
    this.attemptIdOf = options.attemptId ?? hadoopAttemptId;
    this.skewPlanner = new SkewPlanner(
      () =>
        this.workersById
          .filter((w) => w.alive)
          .map((w) => ({ workerId: w.shape.id, reduceSlots: w.shape.reduceSlots })),
      options.stopwatch ?? (() => 0),
    );
    this.memoryStepMb = options.memoryStepMb ?? DEFAULT_MEMORY_STEP_MB;
    this.health = new WorkerHealth(options.workerHealth);
    this.workerLimits = options.workerLimits ?? DEFAULT_WORKER_LIMITS;
    this.speculation = { ...DEFAULT_SPECULATION, ...options.speculation };
    const speculationWrong = speculationProblem(this.speculation);
    if (speculationWrong) throw new MinimrError('EBADCONF', `speculation: ${speculationWrong}`);
    if (!Number.isInteger(this.memoryStepMb) || this.memoryStepMb < 1) {
      throw new MinimrError('EBADCONF', `memoryStepMb must be a whole number of MB >= 1, got ${this.memoryStepMb}`);
    }
    if (!(this.reduceSlowStart >= 0 && this.reduceSlowStart <= 1)) {
      throw new MinimrError(
        'EBADCONF',
        `reduceSlowStart must be a fraction of the maps in [0, 1], got ${this.reduceSlowStart}`,
      );
    }
    this.mrClusters = new MrClusters<D>(
      {
        liveWorkers: () => this.liveWorkers(),
        worker: (id) => this.workerMap.get(id),
        evict: (w, why, now, effects) => {
          for (const a of [...w.running])
            this.attemptKilledInto(effects, a, { code: 'EKILLED', message: why, details: { by: 'shrink' } }, now, true);
          this.rerunOutputsOf(w, why, effects);
        },
        relabel: (w, cluster) => {
          w.cluster = cluster;
          this.markWorker(w);
          this.capacityFreed(w);
          this.changed = true;
        },
        touched: (w) => this.markWorker(w),
      },
      options.mrClusters,
    );
  }

  private fz<T>(value: T): T {
    return this.freeze ? Object.freeze(value) : value;
  }

  // ---- lookups ---------------------------------------------------------------------------------

  job(id: string): JobRecord<D> | undefined {
    return this.jobMap.get(id);
  }

  task(id: string): TaskRecord<D> | undefined {
    return this.taskMap.get(id);
  }

  /** A running attempt. */
  attempt(id: string): AttemptRecord<D> | undefined {
    return this.attemptMap.get(id);
  }

  worker(id: string): WorkerRecord<D> | undefined {
    return this.workerMap.get(id);
  }

  /** Every job the books hold, in submission order. */
  jobs(): IterableIterator<JobRecord<D>> {
    return this.jobMap.values();
  }

  /** Pending and running jobs, in submission order (do not modify). */
  get active(): readonly JobRecord<D>[] {
    return this.activeJobs;
  }

  /** Live workers, in id order. */
  liveWorkers(): WorkerRecord<D>[] {
    return this.workersById.filter((w) => w.alive);
  }

  /** Every worker ever known, live or not, in id order (do not modify). */
  get allWorkers(): readonly WorkerRecord<D>[] {
    return this.workersById;
  }

  get liveWorkerCount(): number {
    return this.liveCount;
  }

  get runningAttemptCount(): number {
    return this.attemptMap.size;
  }

  isActive(job: JobRecord<D>): boolean {
    return ACTIVE.has(job.state);
  }

  /** Whether something a policy could act on changed since `takeChanged` was last called. */
  get hasChanged(): boolean {
    return this.changed;
  }

  /** Returns whether something a policy could act on changed since the last call, and clears it. */
  takeChanged(): boolean {
    const c = this.changed;
    this.changed = false;
    return c;
  }

  // ---- workers ---------------------------------------------------------------------------------

  /**
   * A worker joins, or a lost one comes back (with the shape it registers with now). A live worker
   * registering again is first taken as lost: its attempts cannot be trusted to be the same.
   */
  workerJoined(shape: WorkerRegistration, data: D['worker'], now: number): Effect<D>[] {
    this.checkWorkerClaim(shape);
    const effects: Effect<D>[] = [];
    let w = this.workerMap.get(shape.id);
    if (w?.alive) effects.push(...this.workerLost(shape.id, now, 'it registered again'));
    if (w) {
      w.shape = shape;
      w.cluster = shape.cluster ?? 'default';
      w.data = data;
    } else {
      w = {
        shape,
        cluster: shape.cluster ?? 'default',
        alive: false,
        usedMap: 0,
        usedReduce: 0,
        usedMem: 0,
        running: new Set(),
        data,
        view: null,
        slot: -1,
        attemptsSucceeded: 0,
      };
      this.workerMap.set(shape.id, w);
      let at = this.workersById.findIndex((other) => byId(w!, other) < 0);
      if (at < 0) at = this.workersById.length;
      this.workersById.splice(at, 0, w);
    }
    w.alive = true;
    w.suspectSince = undefined;
    w.tasksExpired = undefined;
    w.view = null;
    this.liveCount++;
    this.liveDirty = true;
    this.changed = true;
    this.capacityFreed(w);
    effects.push(...this.mrClusters.workerJoined(w, now));
    this.lastChange = now;
    return effects;
  }

  /**
   * Refuses (EBADCONF) a worker whose slots or memory are not whole numbers within the configured
   * maxima: a worker claiming a billion slots would be handed a job's every task and run none.
   */
  checkWorkerClaim(shape: Pick<WorkerRegistration, 'id' | 'mapSlots' | 'reduceSlots' | 'memoryMb'>): void {
    const limits = {
      mapSlots: this.workerLimits.maxMapSlots,
      reduceSlots: this.workerLimits.maxReduceSlots,
      memoryMb: this.workerLimits.maxMemoryMb,
    };
    for (const field of ['mapSlots', 'reduceSlots', 'memoryMb'] as const) {
      if (!Number.isInteger(shape[field]) || shape[field] < 0) {
        throw new MinimrError('EBADCONF', `worker "${shape.id}": ${field} must be a non-negative integer`, {
          workerId: shape.id,
        });
      }
      if (shape[field] > limits[field]) {
        throw new MinimrError(
          'EBADCONF',
          `worker "${shape.id}" claims ${field} ${shape[field]}, above this cluster's maximum of ${limits[field]}`,
          {
            workerId: shape.id,
            field,
          },
        );
      }
    }
  }

  /**
   * The worker is connected but has been silent past the heartbeat timeout (a stopped process, a
   * long GC, a stalled VM): it is suspect, and gets no new attempts (its view shows no free slot)
   * until it is heard from again. Nothing it runs or holds is given up yet: see `workerTasksExpired`
   * for its attempts; its blocks are the block store's business (the engine's datanode expiry).
   */
  workerSuspect(workerId: string, now: number): void {
    const w = this.workerMap.get(workerId);
    if (!w?.alive || w.suspectSince !== undefined) return;
    w.suspectSince = now;
    this.markWorker(w);
    this.changed = true;
    this.lastChange = now;
  }

  /** Whether the worker is live but suspect (silent past the heartbeat timeout). */
  isSuspect(workerId: string): boolean {
    const w = this.workerMap.get(workerId);
    return w?.alive === true && w.suspectSince !== undefined;
  }

  /**
   * A suspect worker was heard from again: it takes new attempts from now. Attempts that expired
   * while it was silent stay ended here (the engine kills what is left of them on the worker).
   */
  workerHeard(workerId: string, now: number): boolean {
    const w = this.workerMap.get(workerId);
    if (!w?.alive || w.suspectSince === undefined) return false;
    w.suspectSince = undefined;
    w.tasksExpired = undefined;
    this.markWorker(w);
    this.capacityFreed(w);
    this.changed = true;
    this.lastChange = now;
    return true;
  }

  /**
   * A suspect worker stayed silent past the task expiry (Hadoop's TaskTracker expiry): its running
   * attempts are lost and their tasks run again elsewhere (not counted against them), and the map
   * outputs it holds are re-run where a reduce still needs them, as for a lost worker. The worker
   * stays suspect and keeps its place: it may come back. Returns the attempts given up, whose
   * remains the engine kills on the worker if it comes back.
   */
  workerTasksExpired(
    workerId: string,
    now: number,
    why: string,
  ): { effects: Effect<D>[]; expired: AttemptRecord<D>[] } {
    const w = this.workerMap.get(workerId);
    if (!w?.alive || w.suspectSince === undefined || w.tasksExpired) return { effects: [], expired: [] };
    w.tasksExpired = true;
    const effects: Effect<D>[] = [];
    const expired = [...w.running];
    for (const a of expired) {
      this.attemptKilledInto(
        effects,
        a,
        {
          code: 'EWORKERLOST',
          message: `worker ${workerId} was silent too long (${why}); the attempt runs again elsewhere`,
        },
        now,
        false,
      );
    }
    for (const task of [...this.inFlight.keys()]) this.copyDone(task, workerId);
    this.rerunOutputsOf(w, `its output is on worker ${workerId}, silent too long`, effects);
    this.lastChange = now;
    return { effects, expired };
  }

  /**
   * A worker is gone: its running attempts are killed (not counted against their tasks), copies on
   * their way to it are forgotten, and the map outputs it held are re-run where a reduce still
   * needs them.
   */
  workerLost(workerId: string, now: number, why: string): Effect<D>[] {
    const w = this.workerMap.get(workerId);
    if (!w?.alive) return [];
    const effects: Effect<D>[] = [];
    for (const a of [...w.running]) {
      this.attemptKilledInto(
        effects,
        a,
        { code: 'EWORKERLOST', message: `worker ${workerId} was lost (${why})` },
        now,
        false,
      );
    }
    w.alive = false;
    w.suspectSince = undefined;
    w.tasksExpired = undefined;
    this.liveCount--;
    this.liveDirty = true;
    for (const task of [...this.inFlight.keys()]) this.copyDone(task, workerId);
    this.rerunOutputsOf(w, `its output was lost with worker ${workerId}`, effects);
    this.mrClusters.workerLost(w, now, effects);
    this.lastChange = now;
    return effects;
  }

  /** The map outputs `w` held are gone: each is re-run while an unfinished reduce of an active job still needs it. */
  private rerunOutputsOf(w: WorkerRecord<D>, why: string, effects: Effect<D>[]): void {
    for (const job of this.activeJobs) {
      if (job.reduces.length === 0 || job.reducesDone === job.reduces.length) continue;
      for (const task of job.maps) {
        if (task.state === 'succeeded' && task.successfulAttempt?.worker === w) this.rerunMap(task, why, effects);
      }
    }
  }

  // ---- jobs ------------------------------------------------------------------------------------

  /** Admits a job: its tasks are pending from now. A job with no tasks goes straight to its commit. */
  submit(plan: JobPlan<D>, now: number): { job: JobRecord<D>; effects: Effect<D>[] } {
    if (this.jobMap.has(plan.id))
      throw new MinimrError('EINTERNAL', `job ${plan.id} is already in the books`, { jobId: plan.id });
    const slowStart = plan.reduceSlowStart ?? this.reduceSlowStart;
    if (!(slowStart >= 0 && slowStart <= 1)) {
      throw new MinimrError(
        'EBADCONF',
        `job ${plan.id}: reduceSlowStart must be a fraction of the maps in [0, 1], got ${slowStart}`,
        { jobId: plan.id },
      );
    }
    const job: JobRecord<D> = {
      id: plan.id,
      name: plan.name,
      pool: plan.pool ?? 'default',
      weight: plan.weight ?? 1,
      cluster: plan.cluster ?? 'default',
      submitTime: now,
      ...(plan.referenceMs !== undefined ? { referenceMs: plan.referenceMs } : {}),
      maxAttempts: plan.maxAttempts ?? this.maxAttempts,
      reduceSlowStart: slowStart,
      speculative: plan.speculative ?? this.speculation.enabled,
      doneRuns: { map: { count: 0, totalMs: 0 }, reduce: { count: 0, totalMs: 0 } },
      ...(plan.inputPlacement ? { inputPlacement: plan.inputPlacement } : {}),
      placementOpen: plan.inputPlacement !== undefined,
      state: 'pending',
      partition: 0,
      migrations: [],
      skew: plan.skew && plan.reduces.length > 0 ? new JobSkew(plan.skew, plan.reduces.length) : null,
      maps: [],
      reduces: [],
      pendingMaps: [],
      pendingReduces: [],
      mapsDone: 0,
      reducesDone: 0,
      running: [],
      runningByTask: [],
      failedAttempts: 0,
      killedAttempts: 0,
      stats: { completedMapMs: 0, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 },
      data: plan.data,
      view: null,
      pendingView: null,
      runningView: null,
      statsView: null,
    };
    this.mrClusters.jobSubmitted(job);
    this.jobMap.set(job.id, job);
    plan.maps.forEach((p, i) => job.maps.push(this.newTask(job, 'map', i, p)));
    plan.reduces.forEach((p, i) => job.reduces.push(this.newTask(job, 'reduce', i, p)));
    job.pendingMaps.push(...job.maps);
    job.pendingReduces.push(...job.reduces);
    for (const t of job.maps) this.pendingAdded(t);
    if (job.maps.length === 0) for (const t of job.reduces) this.pendingAdded(t);
    const effects: Effect<D>[] = [];
    if (job.maps.length === 0 && job.reduces.length === 0) {
      this.startCommit(job, effects);
      return { job, effects };
    }
    if (job.skew) this.skewPlanner.planAtSubmission(job.skew);
    this.activeJobs.push(job);
    if (job.speculative) this.speculativeJobs++;
    this.jobsDirty = true;
    this.jobListChanged = true;
    this.changed = true;
    this.lastChange = now;
    return { job, effects };
  }

  private newTask(job: JobRecord<D>, kind: TaskKind, index: number, plan: TaskPlan<D>): TaskRecord<D> {
    const id = this.taskIdOf(job.id, kind, index);
    // Never mutated, only replaced: the plan's array serves unless it must be frozen.
    const preferred = this.freeze ? Object.freeze([...plan.preferredWorkers]) : plan.preferredWorkers;
    let racks = plan.preferredRacks;
    if (racks === undefined) {
      const derived: string[] = [];
      for (const wid of preferred) {
        const rack = this.workerMap.get(wid)?.shape.rack;
        if (rack !== undefined && !derived.includes(rack)) derived.push(rack);
      }
      racks = derived;
    }
    const placement = job.inputPlacement;
    const task: TaskRecord<D> = {
      id,
      job,
      kind,
      index,
      memoryMb: plan.memoryMb,
      inputBytes: plan.inputBytes,
      ...(plan.idealDurationMs !== undefined ? { idealDurationMs: plan.idealDurationMs } : {}),
      ...(plan.penalty !== undefined ? { penalty: this.fz(plan.penalty) } : {}),
      preferredWorkers: preferred,
      preferredRacks: this.freeze ? Object.freeze([...racks]) : racks,
      failedOnWorkers: this.fz([]),
      diskFullOnWorkers: this.fz([]),
      unplacedReplicas:
        placement && kind === 'map' && preferred.length > 0 ? Math.max(0, placement.replication - preferred.length) : 0,
      state: 'pending',
      attemptsMade: 0,
      failures: 0,
      fetchFailures: 0,
      successfulAttempt: null,
      attempts: [],
      data: plan.data,
      view: null,
    };
    this.taskMap.set(id, task);
    return task;
  }

  /** Kills the job on request: its running attempts are killed and it ends as `killed`. */
  killJob(job: JobRecord<D>, now: number, error: SerializedError): Effect<D>[] {
    const effects: Effect<D>[] = [];
    this.endJob(job, 'killed', now, effects, error);
    return effects;
  }

  /** The engine could not carry out part of the job (commit a task's output, write the marker). */
  failJob(job: JobRecord<D>, now: number, error: SerializedError): Effect<D>[] {
    const effects: Effect<D>[] = [];
    this.endJob(job, 'failed', now, effects, error);
    return effects;
  }

  /** The job's success marker is written. A job that ended meanwhile has what the commit wrote discarded. */
  jobCommitted(job: JobRecord<D>, now: number): Effect<D>[] {
    if (job.state !== 'committing')
      return job.state === 'failed' || job.state === 'killed' ? [{ kind: 'discard-output', job }] : [];
    const effects: Effect<D>[] = [];
    this.endJob(job, 'succeeded', now, effects);
    return effects;
  }

  private startCommit(job: JobRecord<D>, effects: Effect<D>[]): void {
    job.state = 'committing';
    this.leaveActive(job);
    effects.push({ kind: 'commit-job', job });
  }

  private leaveActive(job: JobRecord<D>): void {
    // Its views are built in full should it come back.
    if (this.progressPatches.take(job) !== undefined) job.runningView = null;
    const i = this.activeJobs.indexOf(job);
    if (i >= 0) {
      if (job.speculative) this.speculativeJobs--;
      this.activeJobs.splice(i, 1);
      this.jobsDirty = true;
      this.jobListChanged = true;
    }
  }

  private endJob(
    job: JobRecord<D>,
    state: 'succeeded' | 'failed' | 'killed',
    now: number,
    effects: Effect<D>[],
    error?: SerializedError,
  ): void {
    if (hasEnded(job)) return;
    job.state = state;
    job.finishTime = now;
    if (error) job.error = error;
    this.leaveActive(job);
    this.mrClusters.jobEnded(job);
    this.health.jobEnded(job.id);
    for (const a of [...job.running]) {
      this.endAttempt(
        a,
        'killed',
        { code: 'EKILLED', message: `job ${state}`, details: { jobEnded: state } },
        now,
        true,
        effects,
      );
    }
    if (state !== 'succeeded') {
      for (const task of [...job.maps, ...job.reduces])
        if (task.state === 'pending' || task.state === 'running') task.state = state;
    }
    for (const task of job.maps) this.inFlight.delete(task);
    effects.push({ kind: 'job-ended', job });
  }

  // ---- attempts --------------------------------------------------------------------------------

  /** Progress as the worker (or the model) reports it; 0..1. */
  reportProgress(attempt: AttemptRecord<D>, progress: number): void {
    const p = Math.min(1, Math.max(0, progress));
    if (p === attempt.progress || attempt.state !== 'running') return;
    attempt.progress = p;
    // Only the progress changed: the new view is the last one with the new progress, and the
    // job's list of views the last one with the new view in its place (attempt-views.ts).
    const job = attempt.task.job;
    if (attempt.view !== null && job.runningView !== null) {
      attempt.view = this.fz(withProgress(attempt.view, p));
      this.progressPatches.add(job, attempt);
      this.markJob(job, {});
    } else {
      attempt.view = null;
      this.markJob(job, { running: true });
    }
  }

  attemptSucceeded(attempt: AttemptRecord<D>, now: number, measures: AttemptMeasures): Effect<D>[] {
    if (attempt.state !== 'running') return [];
    const effects: Effect<D>[] = [];
    attempt.progress = 1;
    this.endAttempt(attempt, 'succeeded', undefined, now, false, effects);
    this.health.success(attempt.worker.shape.id);
    attempt.worker.attemptsSucceeded++;
    const task = attempt.task;
    const job = task.job;
    if (!this.isActive(job) || task.state !== 'running') return effects;
    task.state = 'succeeded';
    task.successfulAttempt = attempt;
    const done = job.doneRuns[task.kind];
    done.count++;
    done.totalMs += Math.max(0, now - attempt.startTime);
    // The first copy to finish is the task's; the others are killed (speculative execution).
    for (const other of task.attempts)
      if (other.state === 'running')
        this.attemptKilledInto(
          effects,
          other,
          {
            code: 'EKILLED',
            message: `${attempt.id} of the same task finished first`,
            details: { by: 'speculation', winner: attempt.id },
          },
          now,
          true,
        );
    this.mrClusters.taskSucceeded(
      attempt,
      task.kind === 'reduce' || job.reduces.length === 0 ? measures.outputBytes : 0,
    );
    const ms = Math.max(0, now - attempt.startTime);
    this.skewPlanner.attemptSucceeded(attempt.worker.shape.id, task.kind, measures.inputBytes, measures.taskMs ?? ms);
    const s = job.stats;
    if (task.kind === 'map') {
      if (measures.partitionBytes) attempt.partitionBytes = measures.partitionBytes;
      job.mapsDone++;
      job.stats = {
        ...s,
        completedMapMs: s.completedMapMs + ms,
        mapInputBytes: s.mapInputBytes + measures.inputBytes,
        mapOutputBytes: s.mapOutputBytes + measures.outputBytes,
      };
      if (job.reduces.length > 0 && this.reducesOpen(job)) {
        for (const t of job.pendingReduces) this.pendingAdded(t);
        this.markJob(job, { pending: true });
      }
      if (job.mapsDone === job.maps.length) effects.push({ kind: 'maps-done', job });
    } else {
      job.reducesDone++;
      job.stats = { ...s, completedReduceMs: s.completedReduceMs + ms };
      if (job.reducesDone === job.reduces.length) job.skew?.reducesDone(now);
    }
    this.markJob(job, { stats: true });
    if (task.kind === 'reduce' || job.reduces.length === 0) effects.push({ kind: 'commit-task', attempt });
    if (job.mapsDone === job.maps.length && job.reducesDone === job.reduces.length) this.startCommit(job, effects);
    return effects;
  }

  /**
   * The attempt's own code failed (or, with `EFETCH`, a reduce could not read a map's output):
   * retry it, re-run the map, or fail the job with the user's message.
   */
  attemptFailed(attempt: AttemptRecord<D>, error: SerializedError, now: number): Effect<D>[] {
    if (attempt.state !== 'running') return [];
    const effects: Effect<D>[] = [];
    this.endAttempt(attempt, 'failed', error, now, false, effects);
    const task = attempt.task;
    const job = task.job;
    job.failedAttempts++;
    if (!this.isActive(job) || task.state !== 'running') return effects;
    if (error.code === 'EFETCH' && task.kind === 'reduce' && task.fetchFailures < MAX_FETCH_FAILURES_PER_REDUCE) {
      task.fetchFailures++;
      const map = job.maps[Number(error.details?.mapIndex)];
      const mapAttempt = error.details?.attemptId;
      if (map && map.state === 'succeeded' && (mapAttempt === undefined || map.successfulAttempt?.id === mapAttempt)) {
        // The output that cannot be fetched counts against the worker that was to serve it.
        this.workerFailed(job, map.successfulAttempt!.worker, now);
        this.rerunMap(map, `${task.id} cannot fetch its output`, effects);
      }
      this.taskPendingUnlessRunning(task);
      return effects;
    }
    task.failures++;
    const workerId = attempt.worker.shape.id;
    this.avoidWorker(task, workerId);
    if (error.code === 'EDISKFULL' && !task.diskFullOnWorkers.includes(workerId))
      task.diskFullOnWorkers = this.fz([...task.diskFullOnWorkers, workerId]);
    this.workerFailed(job, attempt.worker, now);
    if (task.failures >= job.maxAttempts) {
      task.state = 'failed';
      const message =
        `task ${task.id} failed ${task.failures} times; last ` +
        `attempt ${attempt.id} ` +
        `on ${workerId}: ${error.message || 'unknown error'}`;
      this.endJob(job, 'failed', now, effects, {
        code: 'EJOBFAILED',
        message,
        details: {
          jobId: job.id,
          taskId: task.id,
          attemptId: attempt.id,
          cause: error.code,
          // Where the user's code threw (ETASK), so the job's status shows it.
          ...(error.details?.at !== undefined ? { at: error.details.at } : {}),
          ...(error.details?.stack !== undefined ? { stack: error.details.stack } : {}),
        },
      });
      return effects;
    }
    this.taskPendingUnlessRunning(task);
    return effects;
  }

  /**
   * The attempt ended by its worker's fault: it was launched and never reported (vanished), or its
   * report cannot be true (a map success without its output). Killed like a lost attempt (the
   * task's own failures do not grow), it counts against the worker (worker-health.ts).
   */
  attemptWorkerFault(attempt: AttemptRecord<D>, error: SerializedError, now: number): Effect<D>[] {
    if (attempt.state !== 'running') return [];
    const effects = this.attemptKilled(attempt, error, now, false);
    this.avoidWorker(attempt.task, attempt.worker.shape.id);
    this.workerFailed(attempt.task.job, attempt.worker, now);
    return effects;
  }

  /** The task's next attempts go elsewhere when a policy can place them elsewhere. */
  private avoidWorker(task: TaskRecord<D>, workerId: string): void {
    if (task.failedOnWorkers.includes(workerId)) return;
    task.failedOnWorkers = this.fz([...task.failedOnWorkers, workerId]);
    task.view = null;
    if (task.state === 'pending') this.markJob(task.job, { pending: true });
  }

  /**
   * Counts a failed or vanished attempt against `w`: blacklisted for the job, every task avoids it; graylisted, it gets
   * nothing.
   */
  private workerFailed(job: JobRecord<D>, w: WorkerRecord<D>, now: number): void {
    const change = this.health.failure(job.id, w.shape.id, now, this.liveCount);
    if (change.blacklisted) for (const task of [...job.maps, ...job.reduces]) this.avoidWorker(task, w.shape.id);
    if (change.graylisted) {
      this.markWorker(w);
      this.changed = true;
    }
  }

  /** Killed by a policy or lost: the task runs again, and nothing counts against it. */
  attemptKilled(attempt: AttemptRecord<D>, error: SerializedError, now: number, tellWorker: boolean): Effect<D>[] {
    const effects: Effect<D>[] = [];
    this.attemptKilledInto(effects, attempt, error, now, tellWorker);
    return effects;
  }

  private attemptKilledInto(
    effects: Effect<D>[],
    attempt: AttemptRecord<D>,
    error: SerializedError,
    now: number,
    tellWorker: boolean,
  ): void {
    if (attempt.state !== 'running') return;
    this.endAttempt(attempt, 'killed', error, now, tellWorker, effects);
    const task = attempt.task;
    task.job.killedAttempts++;
    if (this.isActive(task.job) && task.state === 'running') this.taskPendingUnlessRunning(task);
  }

  private endAttempt(
    a: AttemptRecord<D>,
    state: 'succeeded' | 'failed' | 'killed',
    error: SerializedError | undefined,
    now: number,
    tellWorker: boolean,
    effects: Effect<D>[],
  ): void {
    const task = a.task;
    const job = task.job;
    const w = a.worker;
    a.state = state;
    a.finishTime = now;
    if (error) a.error = error;
    this.attemptMap.delete(a.id);
    w.running.delete(a);
    if (task.kind === 'map') w.usedMap--;
    else w.usedReduce--;
    w.usedMem -= a.memoryMb;
    if (a.speculative) this.runningBackups--;
    this.capacityFreed(w);
    this.markWorker(w);
    removeItem(job.running, a);
    removeItem(job.runningByTask, a);
    this.markJob(job, { running: true });
    this.changed = true;
    this.lastChange = now;
    effects.push({ kind: 'attempt-ended', attempt: a, tellWorker });
  }

  /** A running task whose attempt ended without success: pending again, unless another of its attempts still runs. */
  private taskPendingUnlessRunning(task: TaskRecord<D>): void {
    if (task.attempts.some((a) => a.state === 'running')) return;
    this.taskPending(task);
  }

  private taskPending(task: TaskRecord<D>): void {
    const job = task.job;
    task.state = 'pending';
    insertByIndex(task.kind === 'map' ? job.pendingMaps : job.pendingReduces, task);
    this.pendingAdded(task);
    this.markJob(job, { pending: true });
  }

  private rerunMap(task: TaskRecord<D>, why: string, effects: Effect<D>[]): void {
    const job = task.job;
    const lostAttempt = task.successfulAttempt!;
    task.state = 'pending';
    task.successfulAttempt = null;
    job.mapsDone--;
    insertByIndex(job.pendingMaps, task);
    this.pendingAdded(task);
    this.markJob(job, { pending: true });
    this.changed = true;
    effects.push({ kind: 'map-rerun', task, lostAttempt, why });
  }

  /**
   * Whether the job's reduces may launch: enough of its maps are done (all, by default; all, too,
   * for a skew assignment still to be made from every map's partition sizes).
   */
  reducesOpen(job: JobRecord<D>): boolean {
    const needed =
      job.skew?.needsEveryMap && !job.skew.isPlanned
        ? job.maps.length
        : Math.ceil(job.reduceSlowStart * job.maps.length - 1e-9);
    return job.mapsDone >= needed;
  }

  /** The tasks a policy may launch now: pending maps, and pending reduces once they are open. */
  runnable(job: JobRecord<D>): readonly TaskRecord<D>[] {
    if (!this.reducesOpen(job)) return job.pendingMaps;
    if (job.pendingMaps.length === 0) return job.pendingReduces;
    return job.pendingReduces.length === 0 ? job.pendingMaps : [...job.pendingMaps, ...job.pendingReduces];
  }

  // ---- input replicas --------------------------------------------------------------------------

  /** A copy asked for by `replicate` has landed: the task is local there from now on. */
  replicaLanded(task: TaskRecord<D>, workerId: string): void {
    this.copyDone(task, workerId);
    if (task.preferredWorkers.includes(workerId)) return;
    const rack = this.workerMap.get(workerId)?.shape.rack;
    task.preferredWorkers = this.fz([...task.preferredWorkers, workerId]);
    if (rack !== undefined && !task.preferredRacks.includes(rack))
      task.preferredRacks = this.fz([...task.preferredRacks, rack]);
    task.view = null;
    this.markJob(task.job, { pending: true, running: task.state === 'running' });
    for (const a of task.job.running) if (a.task === task) a.view = null;
  }

  /** A copy could not be made (no live source): an owed replica stays owed while the window is open. */
  replicaFailed(task: TaskRecord<D>, workerId: string, cause: ReplicaCause): void {
    this.copyDone(task, workerId);
    if (cause === 'placed' && task.job.placementOpen) {
      task.unplacedReplicas++;
      task.view = null;
      this.markJob(task.job, { pending: true });
    }
  }

  /**
   * The placement window has closed (or the job ended): the owed replicas no policy placed are
   * written on a rack-mate of a holder, as a store's default placement keeps a second replica
   * near the first. Owed replicas belong to the data set, so they are written after the job ends too.
   */
  closePlacementWindow(job: JobRecord<D>): Effect<D>[] {
    if (!job.placementOpen) return [];
    job.placementOpen = false;
    const live = this.workersById.filter((w) => w.alive).map((w) => ({ id: w.shape.id, rack: w.shape.rack }));
    const effects: Effect<D>[] = [];
    for (const task of job.maps) {
      const holders = this.holdersOf(task);
      for (; task.unplacedReplicas > 0; task.unplacedReplicas--) {
        const target = owedReplicaTarget(holders, live, task.index);
        if (target === undefined) break;
        effects.push(this.requestCopy(task, target, 'completed', holders));
        holders.push(target);
      }
      if (task.unplacedReplicas !== 0 || task.view?.unplacedReplicas !== undefined) {
        task.unplacedReplicas = 0;
        task.view = null;
        this.markJob(job, { pending: true });
      }
    }
    return effects;
  }

  /** Workers holding the task's input or with a copy on its way (a landed copy leaves the in-flight set). */
  private holdersOf(task: TaskRecord<D>): string[] {
    return [...task.preferredWorkers, ...(this.inFlight.get(task) ?? [])];
  }

  private copyDone(task: TaskRecord<D>, workerId: string): void {
    const copies = this.inFlight.get(task);
    if (!copies) return;
    copies.delete(workerId);
    if (copies.size === 0) this.inFlight.delete(task);
  }

  /**
   * Forgets an ended job: its record leaves the books, and with it every task and attempt, so a
   * long run holds only what is still going on. The engine keeps whatever it wants to report.
   */
  retire(job: JobRecord<D>): void {
    if (!hasEnded(job)) {
      throw new MinimrError('EINTERNAL', `job ${job.id} is ${job.state}: only an ended job can be retired`, {
        jobId: job.id,
      });
    }
    this.jobMap.delete(job.id);
    for (const task of [...job.maps, ...job.reduces]) {
      this.taskMap.delete(task.id);
      this.inFlight.delete(task);
    }
  }

  private requestCopy(
    task: TaskRecord<D>,
    workerId: string,
    cause: ReplicaCause,
    holders: readonly string[],
  ): Effect<D> {
    const copies = this.inFlight.get(task);
    if (copies) copies.add(workerId);
    else this.inFlight.set(task, new Set([workerId]));
    const rack = this.workerMap.get(workerId)?.shape.rack;
    const crossRack = !holders.some((id) => this.workerMap.get(id)?.shape.rack === rack);
    return { kind: 'replicate', task, workerId, cause, crossRack };
  }

  // ---- decisions -------------------------------------------------------------------------------

  /**
   * Problems with `decisions` as an answer to `snapshot` (none when valid): `validateDecisions`,
   * run on the part of the snapshot the decisions name, so its cost follows the decisions rather
   * than every pending task of the cluster. The snapshot must be the latest: nothing may have
   * changed since it was built.
   */
  check(snapshot: ClusterSnapshot, decisions: readonly Decision[]): string[] {
    return validateDecisions(this.partOfSnapshot(snapshot, decisions), decisions);
  }

  /**
   * Carries out a checked decision list (see `check`) and returns what the engine must do. Kills
   * end their attempts in the books at once (the worker is told through the effect).
   */
  apply(decisions: readonly Decision[], now: number): Effect<D>[] {
    const effects: Effect<D>[] = [];
    /** Launches onto a worker where the task's disk filled up: placed after the rest, where there is room. */
    const deferred: { task: TaskRecord<D>; memoryMb: number; elastic: boolean; from: WorkerRecord<D> }[] = [];
    for (const d of decisions) {
      switch (d.kind) {
        case 'launch': {
          const task = this.taskMap.get(d.taskId)!;
          const memoryMb = d.memoryMb ?? task.memoryMb;
          const chosen = this.workerMap.get(d.workerId)!;
          if (task.diskFullOnWorkers.includes(d.workerId) && this.diskFullAlternatives(task, chosen).length > 0) {
            deferred.push({ task, memoryMb, elastic: d.elastic ?? memoryMb < task.memoryMb, from: chosen });
            break;
          }
          effects.push({
            kind: 'launch',
            attempt: this.launch(task, chosen, memoryMb, d.elastic ?? memoryMb < task.memoryMb, d.locality, now),
          });
          break;
        }
        case 'kill': {
          const a = this.attemptMap.get(d.attemptId);
          if (a)
            this.attemptKilledInto(
              effects,
              a,
              { code: 'EKILLED', message: d.reason, details: { by: 'policy' } },
              now,
              true,
            );
          break;
        }
        case 'migrate': {
          const job = this.jobMap.get(d.jobId)!;
          // Work-conserving by construction: nothing is killed or reset, only the label the policy reads.
          const migration = {
            timeMs: now,
            from: job.partition,
            to: d.toPartition,
            ...(d.partialSizeMs !== undefined ? { partialSizeMs: d.partialSizeMs } : {}),
            ...(d.timerMs !== undefined ? { timerMs: d.timerMs } : {}),
          };
          job.migrations.push(migration);
          job.partition = d.toPartition;
          this.markJob(job, {});
          effects.push({ kind: 'migrated', job, migration });
          break;
        }
        case 'replicate': {
          const task = this.taskMap.get(d.taskId)!;
          if (task.preferredWorkers.includes(d.workerId) || this.inFlight.get(task)?.has(d.workerId)) break;
          // An owed replica counts as placed when asked for, so the next snapshot no longer offers it.
          const cause: ReplicaCause = task.unplacedReplicas > 0 ? 'placed' : 'extra';
          if (cause === 'placed') {
            task.unplacedReplicas--;
            task.view = null;
            this.markJob(task.job, { pending: true });
          }
          effects.push(this.requestCopy(task, d.workerId, cause, this.holdersOf(task)));
          break;
        }
        case 'move-node': {
          const w = this.workerMap.get(d.workerId)!;
          if (this.mrClusters.inUse) {
            this.mrClusters.moveNode(d.workerId, d.toCluster, d.nodeKind, d.preemption ?? 'instant', now, effects);
            break;
          }
          const from = w.cluster;
          w.cluster = d.toCluster;
          this.markWorker(w);
          effects.push({ kind: 'worker-moved', worker: w, from });
          break;
        }
        case 'deactivate-cluster':
          this.mrClusters.deactivate(d.cluster, now, effects);
          break;
      }
    }
    for (const { task, memoryMb, elastic, from } of deferred) {
      const target = this.roomAvoidingFullDisks(task, from, memoryMb);
      if (target)
        effects.push({
          kind: 'launch',
          attempt: this.launch(task, target, memoryMb, elastic, this.localityOn(task, target), now),
        });
    }
    return effects;
  }

  // ---- speculative execution (speculation.ts) ---------------------------------------------------

  /** Whether `speculate(now)` would look (an engine refreshes attempts' progress first only then). */
  speculationDue(now: number): boolean {
    if (this.speculativeJobs === 0) return false;
    return this.freedSinceLook || now - this.lastSpeculationMs >= this.speculation.intervalMs;
  }

  /**
   * Launches backups of slow attempts onto fast workers' free slots, by LATE's rule (speculation.ts).
   * Engines call it after each scheduling round (the simulator also every `speculation.intervalMs`);
   * it looks when a slot was freed since its last look (LATE decides when a node asks for work), else
   * at most every `speculation.intervalMs` (Hadoop 2's speculator looks every second).
   * Not on a pool split into MR-clusters (FAWKES moves nodes between them; a backup would pin one).
   */
  speculate(now: number): Effect<D>[] {
    const o = this.speculation;
    if (!this.speculationDue(now)) return [];
    this.lastSpeculationMs = now;
    this.freedSinceLook = false;
    if (this.mrClusters.inUse) return [];
    const targets = this.workersById.filter((w) => this.takesWork(w));
    const slots = targets.reduce((n, w) => n + w.shape.mapSlots + w.shape.reduceSlots, 0);
    let room = speculativeCap(slots, o.capFraction) - this.runningBackups;
    if (room <= 0 || !targets.some((w) => hasFreeSlot(w, 'map') || hasFreeSlot(w, 'reduce'))) return [];

    const candidates: { attempt: AttemptRecord<D>; leftMs: number }[] = [];
    for (const job of this.activeJobs) {
      if (!job.speculative || job.state !== 'running') continue;
      for (const kind of ['map', 'reduce'] as const) {
        if ((kind === 'map' ? job.pendingMaps : job.pendingReduces).length > 0) continue;
        const running = job.running.filter((a) => a.task.kind === kind);
        // A fresh copy takes about the mean run of the job's done tasks of this kind; before any is
        // done, the shortest projected run of its running ones.
        const done = job.doneRuns[kind];
        let copyMs = done.count > 0 ? done.totalMs / done.count : Number.POSITIVE_INFINITY;
        if (done.count === 0)
          for (const a of running)
            if (a.progress > 0) copyMs = Math.min(copyMs, Math.max(0, now - a.startTime) / a.progress);
        for (const a of running) {
          const ranMs = now - a.startTime;
          if (
            a.elastic ||
            ranMs < o.minRuntimeMs ||
            !(a.progress > 0) ||
            a.task.attempts.some((b) => b !== a && b.state === 'running')
          )
            continue;
          const leftMs = timeLeftMs(a.progress, ranMs);
          if (leftMs > copyMs) candidates.push({ attempt: a, leftMs });
        }
      }
    }
    if (candidates.length === 0) return [];
    candidates.sort((x, y) => y.leftMs - x.leftMs || (x.attempt.id < y.attempt.id ? -1 : 1));

    // LATE's SlowNodeThreshold: no backup onto a worker whose total progress is in the slowest quarter.
    const progressOf = new Map<WorkerRecord<D>, number>();
    for (const w of targets) {
      let total = w.attemptsSucceeded;
      for (const a of w.running) total += a.progress;
      progressOf.set(w, total);
    }
    const slowBelow = percentile([...progressOf.values()], o.slowNodePercentile);
    const effects: Effect<D>[] = [];
    for (const { attempt } of candidates) {
      if (room <= 0) break;
      const task = attempt.task;
      let best: WorkerRecord<D> | undefined;
      for (const w of targets) {
        if (
          w === attempt.worker ||
          progressOf.get(w)! < slowBelow ||
          !hasFreeSlot(w, task.kind) ||
          w.shape.memoryMb - w.usedMem < task.memoryMb ||
          task.failedOnWorkers.includes(w.shape.id) ||
          task.diskFullOnWorkers.includes(w.shape.id)
        )
          continue;
        if (!best) {
          best = w;
          continue;
        }
        const nearer = LOCALITY_RANK[this.localityOn(task, w)] - LOCALITY_RANK[this.localityOn(task, best)];
        if (nearer < 0 || (nearer === 0 && progressOf.get(w)! > progressOf.get(best)!)) best = w;
      }
      if (!best) continue;
      const backup = this.launch(task, best, task.memoryMb, false, this.localityOn(task, best), now, true);
      effects.push({ kind: 'launch', attempt: backup });
      this.changed = true;
      room--;
    }
    return effects;
  }

  /**
   * The workers other than those where the task's disk filled up that could ever run it: live, not
   * suspect nor graylisted, in the chosen worker's MR-cluster, with a slot of its kind and the
   * memory. Empty: the task may run again where it failed, rather than never.
   */
  private diskFullAlternatives(task: TaskRecord<D>, chosen: WorkerRecord<D>): WorkerRecord<D>[] {
    return this.workersById.filter(
      (w) =>
        this.takesWork(w) &&
        w.cluster === chosen.cluster &&
        !task.diskFullOnWorkers.includes(w.shape.id) &&
        (task.kind === 'map' ? w.shape.mapSlots : w.shape.reduceSlots) > 0 &&
        w.shape.memoryMb >= task.memoryMb,
    );
  }

  /**
   * Where a launch the policy put on a worker with a full disk goes instead (Hadoop's per-task node
   * blacklist): the best-placed alternative with a free slot and the memory now, after the rest of
   * the decisions took theirs; undefined leaves the task pending until one has room.
   */
  private roomAvoidingFullDisks(
    task: TaskRecord<D>,
    chosen: WorkerRecord<D>,
    memoryMb: number,
  ): WorkerRecord<D> | undefined {
    let best: WorkerRecord<D> | undefined;
    for (const w of this.diskFullAlternatives(task, chosen)) {
      if (!hasFreeSlot(w, task.kind) || w.shape.memoryMb - w.usedMem < memoryMb) continue;
      if (!best || LOCALITY_RANK[this.localityOn(task, w)] < LOCALITY_RANK[this.localityOn(task, best)]) best = w;
    }
    return best;
  }

  private localityOn(task: TaskRecord<D>, w: WorkerRecord<D>): Locality {
    if (task.preferredWorkers.includes(w.shape.id)) return 'node';
    return task.preferredRacks.includes(w.shape.rack) ? 'rack' : 'any';
  }

  private launch(
    task: TaskRecord<D>,
    w: WorkerRecord<D>,
    memoryMb: number,
    elastic: boolean,
    locality: Locality,
    now: number,
    speculative = false,
  ): AttemptRecord<D> {
    const job = task.job;
    const reducePartitions =
      task.kind === 'reduce' && job.skew ? this.reducePartitions(job, job.skew, task, w, now) : undefined;
    const a: AttemptRecord<D> = {
      id: this.attemptIdOf(task.id, task.attemptsMade),
      task,
      worker: w,
      startTime: now,
      memoryMb,
      elastic,
      locality,
      partition: job.partition,
      ...(reducePartitions ? { reducePartitions } : {}),
      ...(speculative ? { speculative } : {}),
      state: 'running',
      progress: 0,
      data: undefined as D['attempt'],
      view: null,
    };
    task.attemptsMade++;
    task.attempts.push(a);
    if (speculative) this.runningBackups++;
    this.attemptMap.set(a.id, a);
    task.state = 'running';
    if (task.memoryMb <= this.minPending[task.kind]) this.minPendingStale = true;
    removeItem(task.kind === 'map' ? job.pendingMaps : job.pendingReduces, task);
    job.running.push(a);
    insertByTask(job.runningByTask, a);
    if (job.state === 'pending') {
      job.state = 'running';
      job.startTime = now;
    }
    this.markJob(job, { pending: true, running: true });
    w.running.add(a);
    if (task.kind === 'map') w.usedMap++;
    else w.usedReduce++;
    w.usedMem += memoryMb;
    this.markWorker(w);
    this.lastChange = now;
    return a;
  }

  /** The partitions a reduce launched on `w` reads; a job not yet assigned is assigned first. */
  private reducePartitions(
    job: JobRecord<D>,
    skew: JobSkew,
    task: TaskRecord<D>,
    w: WorkerRecord<D>,
    now: number,
  ): readonly number[] {
    const mapOutputBytes = (): number[] => {
      const sizes = new Array<number>(skew.partitions).fill(0);
      for (const m of job.maps)
        m.successfulAttempt?.partitionBytes?.forEach((b, p) => (sizes[p] = (sizes[p] ?? 0) + b));
      return sizes;
    };
    return this.skewPlanner.partitionsFor(skew, mapOutputBytes, task.index, w.shape.id, now);
  }

  /**
   * The part of `snapshot` the decisions name: their workers, and the jobs holding their tasks,
   * attempts and job ids, each job listing only the named pending tasks and running attempts
   * (the very view objects of the snapshot). validateDecisions only ever looks things up by those
   * ids, so it finds exactly the same problems here as on the whole snapshot.
   */
  private partOfSnapshot(snapshot: ClusterSnapshot, decisions: readonly Decision[]): ClusterSnapshot {
    const workerIds = new Set<string>();
    const jobIds = new Set<string>();
    const pending = new Map<string, TaskView[]>();
    const running = new Map<string, AttemptView[]>();
    const addTask = (taskId: string): void => {
      const task = this.taskMap.get(taskId);
      if (!task) return;
      const job = task.job;
      jobIds.add(job.id);
      const visible = task.state === 'pending' && this.isActive(job) && (task.kind === 'map' || this.reducesOpen(job));
      const list = pending.get(job.id) ?? [];
      if (visible && task.view && !list.includes(task.view)) list.push(task.view);
      pending.set(job.id, list);
    };
    for (const d of decisions) {
      switch (d.kind) {
        case 'launch':
        case 'replicate':
          workerIds.add(d.workerId);
          jobIds.add(d.jobId);
          addTask(d.taskId);
          break;
        case 'kill': {
          const a = this.attemptMap.get(d.attemptId);
          if (a?.view) {
            jobIds.add(a.task.job.id);
            const list = running.get(a.task.job.id) ?? [];
            if (!list.includes(a.view)) list.push(a.view);
            running.set(a.task.job.id, list);
          }
          break;
        }
        case 'migrate':
          jobIds.add(d.jobId);
          break;
        case 'move-node': {
          // The MR-cluster rules look at the nodes that stay in the moved worker's cluster.
          const cluster = this.workerMap.get(d.workerId)?.cluster;
          workerIds.add(d.workerId);
          if (this.mrClusters.inUse && cluster !== undefined)
            for (const w of this.workersById) if (w.alive && w.cluster === cluster) workerIds.add(w.shape.id);
          break;
        }
        case 'deactivate-cluster':
          for (const job of this.activeJobs) if (job.cluster === d.cluster) jobIds.add(job.id);
          break;
      }
    }
    const jobs: JobView[] = [];
    for (const id of jobIds) {
      const job = this.jobMap.get(id);
      if (!job || !this.isActive(job) || !job.view) continue;
      jobs.push({ ...job.view, pendingTasks: pending.get(id) ?? [], runningAttempts: running.get(id) ?? [] });
    }
    return {
      ...snapshot,
      jobs,
      workers: [...workerIds].flatMap((id) => {
        const slot = this.workerMap.get(id)?.slot ?? -1;
        const view = slot >= 0 ? snapshot.workers[slot] : undefined;
        return view && view.id === id ? [view] : [];
      }),
    };
  }

  // ---- 'when-useful' bookkeeping -----------------------------------------------------------------
  // The largest free memory on a live worker with a free slot of each kind, and the smallest ideal
  // memory of a runnable task of each kind. Both are exact right after `recomputeFit` and between
  // calls only move the way events move them (capacity freed, tasks made runnable); a task hidden
  // again (reduces behind a re-run map) may leave the minimum too low, which only costs a policy
  // call that launches nothing.
  private readonly maxFree = { map: -1, reduce: -1 };
  private readonly minPending = { map: Number.POSITIVE_INFINITY, reduce: Number.POSITIVE_INFINITY };
  /** Set when a launch took a task as small as the smallest runnable one: the minimum may rise. */
  private minPendingStale = true;

  private pendingAdded(task: TaskRecord<D>): void {
    if (task.memoryMb < this.minPending[task.kind]) this.minPending[task.kind] = task.memoryMb;
  }

  /** Live, heard from and not graylisted: a worker new attempts may go to. */
  private takesWork(w: WorkerRecord<D>): boolean {
    return w.alive && w.suspectSince === undefined && !this.health.isGraylisted(w.shape.id);
  }

  private capacityFreed(w: WorkerRecord<D>): void {
    if (!this.takesWork(w)) return;
    this.freedSinceLook = true;
    const free = w.shape.memoryMb - w.usedMem;
    if (hasFreeSlot(w, 'map') && free > this.maxFree.map) this.maxFree.map = free;
    if (hasFreeSlot(w, 'reduce') && free > this.maxFree.reduce) this.maxFree.reduce = free;
  }

  recomputeFit(): void {
    this.maxFree.map = -1;
    this.maxFree.reduce = -1;
    for (const w of this.workersById) this.capacityFreed(w);
    if (!this.minPendingStale) return;
    this.minPendingStale = false;
    this.minPending.map = Number.POSITIVE_INFINITY;
    this.minPending.reduce = Number.POSITIVE_INFINITY;
    for (const job of this.activeJobs) {
      for (const t of this.runnable(job)) this.pendingAdded(t);
    }
  }

  /** Whether some runnable task may fit some live worker at its ideal memory (what FIFO launches). */
  somethingFits(): boolean {
    return this.minPending.map <= this.maxFree.map || this.minPending.reduce <= this.maxFree.reduce;
  }

  // ---- snapshots -------------------------------------------------------------------------------

  private markWorker(w: WorkerRecord<D>): void {
    if (w.view !== null) {
      w.view = null;
      this.dirtyWorkers.push(w);
    }
  }

  private markJob(job: JobRecord<D>, what: { pending?: boolean; running?: boolean; stats?: boolean }): void {
    if (what.pending) job.pendingView = null;
    if (what.running) job.runningView = null;
    if (what.stats) job.statsView = null;
    if (job.view !== null) {
      job.view = null;
      this.jobsDirty = true;
      this.dirtyJobs.push(job);
    }
  }

  private workerView(w: WorkerRecord<D>): WorkerView {
    const s = w.shape;
    // A graylisted or suspect worker shows no free slot: no policy can give it an attempt.
    const open = !this.health.isGraylisted(s.id) && w.suspectSince === undefined;
    return this.fz({
      id: s.id,
      host: s.host,
      rack: s.rack,
      mapSlots: s.mapSlots,
      reduceSlots: s.reduceSlots,
      memoryMb: s.memoryMb,
      freeMapSlots: open ? Math.max(0, s.mapSlots - w.usedMap) : 0,
      freeReduceSlots: open ? Math.max(0, s.reduceSlots - w.usedReduce) : 0,
      freeMemoryMb: Math.max(0, s.memoryMb - w.usedMem),
      diskMBps: s.diskMBps > 0 ? s.diskMBps : 0,
      cluster: w.cluster,
      ...this.mrClusters.workerFields(s.id),
    });
  }

  private buildWorkers(): readonly WorkerView[] {
    if (this.liveDirty) {
      const list: WorkerView[] = [];
      for (const w of this.workersById) {
        if (!w.alive) {
          w.slot = -1;
          continue;
        }
        w.slot = list.length;
        w.view ??= this.workerView(w);
        list.push(w.view);
      }
      this.liveDirty = false;
      this.dirtyWorkers.length = 0;
      this.workerArray = this.fz(list);
    } else if (this.dirtyWorkers.length > 0) {
      const list = this.workerArray.slice();
      for (const w of this.dirtyWorkers) {
        if (w.slot < 0 || w.view !== null) continue;
        w.view = this.workerView(w);
        list[w.slot] = w.view;
      }
      this.dirtyWorkers.length = 0;
      this.workerArray = this.fz(list);
    }
    return this.workerArray;
  }

  private taskView(t: TaskRecord<D>): TaskView {
    return (t.view ??= this.fz({
      id: t.id,
      jobId: t.job.id,
      kind: t.kind,
      index: t.index,
      preferredWorkers: t.preferredWorkers,
      preferredRacks: t.preferredRacks,
      memoryMb: t.memoryMb,
      inputBytes: t.inputBytes,
      ...(t.idealDurationMs !== undefined ? { idealDurationMs: t.idealDurationMs } : {}),
      ...(t.penalty !== undefined ? { penalty: t.penalty } : {}),
      failedOnWorkers: t.failedOnWorkers,
      ...(t.unplacedReplicas > 0 ? { unplacedReplicas: t.unplacedReplicas } : {}),
    }));
  }

  private attemptView(a: AttemptRecord<D>): AttemptView {
    return (a.view ??= this.fz(attemptViewOf(a)));
  }

  private jobView(job: JobRecord<D>): JobView {
    if (job.view) return job.view;
    if (job.pendingView === null) {
      job.pendingView = this.fz(this.runnable(job).map((t) => this.taskView(t)));
    }
    const patched = this.progressPatches.take(job);
    if (job.runningView === null) {
      job.runningView = this.fz(job.runningByTask.map((a) => this.attemptView(a)));
    } else if (patched !== undefined) {
      job.runningView = this.fz(
        ProgressPatches.applied(job.runningView, job.runningByTask, patched, (a) => this.attemptView(a)),
      );
    }
    job.statsView ??= this.fz({ ...job.stats }) as JobStats;
    return (job.view = this.fz({
      id: job.id,
      name: job.name,
      pool: job.pool,
      weight: job.weight,
      partition: job.partition,
      cluster: job.cluster,
      submitTime: job.submitTime,
      ...(job.referenceMs !== undefined ? { referenceMs: job.referenceMs } : {}),
      mapsTotal: job.maps.length,
      mapsCompleted: job.mapsDone,
      reducesTotal: job.reduces.length,
      reducesCompleted: job.reducesDone,
      pendingTasks: job.pendingView,
      runningAttempts: job.runningView,
      stats: job.statsView,
    }));
  }

  /** The active jobs' views: on a thousand-job cluster most calls patch the few that changed. */
  private buildJobs(): JobView[] {
    let list: JobView[];
    if (this.jobListChanged) {
      list = this.activeJobs.map((j) => this.jobView(j));
      this.jobSlots = new Map(this.activeJobs.map((j, i) => [j, i]));
    } else {
      list = this.jobArray.slice();
      for (const job of this.dirtyJobs) {
        const i = this.jobSlots.get(job);
        if (i !== undefined) list[i] = this.jobView(job);
      }
    }
    this.dirtyJobs.length = 0;
    this.jobsDirty = false;
    this.jobListChanged = false;
    return list;
  }

  /** The policy's read-only view of the books. */
  snapshot(trigger: SchedulingTrigger, now: number): ClusterSnapshot {
    for (const workerId of this.health.expire(now)) {
      const w = this.workerMap.get(workerId);
      if (!w) continue;
      this.markWorker(w);
      this.capacityFreed(w);
    }
    const workers = this.buildWorkers();
    if (this.jobsDirty) this.jobArray = this.fz(this.buildJobs());
    const mrClusters = this.mrClusters.inUse ? { mrClusters: this.mrClusters.views((v) => this.fz(v)) } : {};
    return this.fz({
      now,
      trigger: this.fz(trigger),
      workers,
      jobs: this.jobArray,
      pools: this.pools,
      memoryStepMb: this.memoryStepMb,
      ...mrClusters,
    });
  }
}
