/**
 * The discrete-event simulator. It keeps the JobTracker's books (jobs, tasks, attempts, workers),
 * turns them into ClusterSnapshots with the JobTracker's semantics, and drives an unchanged Policy.
 *
 * Snapshots are incremental: every WorkerView, TaskView, AttemptView, stats object and JobView is
 * immutable once built and rebuilt only when what it shows changed, so consecutive snapshots share
 * everything that did not change (a policy may keep references; nothing it has seen is mutated).
 * Attempt progress is what the worker reported at its last heartbeat, computed from the heartbeat
 * phase when a snapshot is built, so heartbeats need no per-worker work unless the policy is
 * consulted on them.
 */
import { MinimrError } from '../errors.js';
import type { AttemptRunRecord, JobRunRecord, MigrationRunRecord, ReplicaCause, ReplicationRunRecord, RunRecord, UtilizationSample } from '../metrics/index.js';
import { owedReplicaTarget } from '../storage/index.js';
import {
  FifoPolicy,
  validateDecisions,
  type AttemptView,
  type ClusterSnapshot,
  type Decision,
  type JobStats,
  type JobView,
  type Locality,
  type Policy,
  type PoolView,
  type SchedulingTrigger,
  type TaskKind,
  type TaskView,
  type WorkerView,
} from '../scheduler/index.js';
import { EventHeap } from './heap.js';
import { RackIndex, minimumMemoryMb, penalizedMs, placeReplicas, streamFor, transferMs } from './model.js';
import { DEFAULT_SIM_SETTINGS, type ClusterShape, type FailureSettings, type JobSpec, type SimSettings, type TaskSpec, type Workload, type WorkerShape } from './types.js';

export interface DecisionRecord {
  readonly timeMs: number;
  readonly trigger: SchedulingTrigger['kind'];
  readonly decision: Decision;
}

export interface SimulationProgress {
  readonly simMs: number;
  readonly events: number;
  readonly jobsDone: number;
  readonly jobsTotal: number;
}

export interface SimulationOptions extends Partial<SimSettings> {
  readonly workload: Workload;
  readonly cluster: ClusterShape;
  readonly policy: Policy;
  readonly failures?: FailureSettings;
  /** Freeze every view handed to the policy, so a policy that writes to a snapshot throws (tests). */
  readonly freeze?: boolean;
  /** Keep the decision log (default true). */
  readonly recordDecisions?: boolean;
  /** Stop at this simulated time even if work is left (jobs then count as unfinished). */
  readonly maxSimMs?: number;
  /** Stop when nothing runs and nothing but heartbeats is due for this long (default 1 day). */
  readonly stallMs?: number;
  readonly onProgress?: (p: SimulationProgress) => void;
}

export interface SimulationStats {
  readonly events: number;
  readonly policyCalls: number;
  readonly decisions: number;
  readonly launches: number;
  readonly simulatedMs: number;
  readonly policyCallMode: 'every-event' | 'when-useful';
  readonly heartbeatMs: number;
}

export interface SimulationResult {
  readonly run: RunRecord;
  readonly decisions: readonly DecisionRecord[];
  readonly stats: SimulationStats;
}

type TaskState = 'pending' | 'running' | 'succeeded' | 'failed';

interface WorkerModel {
  readonly shape: WorkerShape;
  /** Position in the cluster shape: sets the heartbeat phase. */
  readonly order: number;
  alive: boolean;
  joinMs: number;
  epoch: number;
  cluster: string;
  usedMap: number;
  usedReduce: number;
  usedMem: number;
  readonly running: Set<AttemptModel>;
  view: WorkerView | null;
  /** Heartbeat time the progress of this worker's attempt views was computed at. */
  progressStamp: number;
  /** Index in the current workers array, -1 when not live. */
  slot: number;
  heartbeatQueued: boolean;
}

interface TaskModel {
  readonly id: string;
  readonly job: JobModel;
  readonly kind: TaskKind;
  readonly index: number;
  readonly spec: TaskSpec;
  preferred: readonly string[];
  racks: readonly string[];
  failedOn: readonly string[];
  /** Maps: replicas its input's upload still owes (`InputPlacement`), while the window is open. */
  unplaced: number;
  state: TaskState;
  attemptsMade: number;
  failures: number;
  successWorker: string | null;
  view: TaskView | null;
}

interface AttemptModel {
  readonly id: string;
  readonly task: TaskModel;
  readonly worker: WorkerModel;
  readonly startMs: number;
  /** When it ends (earlier than start + fullMs when it fails part-way); infinite while it waits for maps. */
  endMs: number;
  /** Its whole run; progress is measured against it. */
  readonly fullMs: number;
  /** When its work began: the launch, or for a reduce launched early, its job's last map. */
  workStartMs: number;
  /** A reduce launched before its job's last map: the run it starts once the maps are done; otherwise null. */
  waitingRunMs: number | null;
  readonly failure: 'none' | 'task-error' | 'out-of-memory';
  readonly memoryMb: number;
  readonly locality: Locality;
  readonly partition: number;
  readonly remote: 'none' | 'rack' | 'off-rack';
  ended: boolean;
  view: AttemptView | null;
}

interface JobModel {
  readonly spec: JobSpec;
  readonly id: string;
  readonly maps: TaskModel[];
  readonly reduces: TaskModel[];
  readonly pendingMaps: TaskModel[];
  readonly pendingReduces: TaskModel[];
  mapsDone: number;
  reducesDone: number;
  readonly running: AttemptModel[];
  partition: number;
  readonly migrations: MigrationRunRecord[];
  stats: { completedMapMs: number; completedReduceMs: number; mapInputBytes: number; mapOutputBytes: number };
  state: 'waiting' | 'active' | 'succeeded' | 'failed';
  submitMs: number;
  finishMs: number | null;
  mapRequestMs: number | null;
  mapFirstStart: number | null;
  mapEnd: number | null;
  reduceRequestMs: number | null;
  reduceFirstStart: number | null;
  reduceEnd: number | null;
  view: JobView | null;
  pendingView: readonly TaskView[] | null;
  runningView: readonly AttemptView[] | null;
  statsView: JobStats | null;
}

type SimEvent =
  | { readonly kind: 'submit'; readonly job: JobModel }
  | { readonly kind: 'placement-closed'; readonly job: JobModel }
  | { readonly kind: 'end'; readonly attempt: AttemptModel }
  | { readonly kind: 'lost'; readonly worker: WorkerModel; readonly backAtMs?: number }
  | { readonly kind: 'join'; readonly worker: WorkerModel }
  | { readonly kind: 'heartbeat'; readonly worker: WorkerModel; readonly epoch: number };

/** Hadoop 1's heartbeat interval: 3 s, longer on big clusters so the master sees ~100 per second. */
export function defaultHeartbeatMs(workers: number): number {
  return Math.max(3000, Math.ceil(workers / 100) * 1000);
}

function byId<T extends { readonly id: string }>(a: T, b: T): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function taskOrder(a: TaskModel, b: TaskModel): number {
  return (a.kind === b.kind ? 0 : a.kind === 'map' ? -1 : 1) || a.index - b.index;
}

function insertByIndex(list: TaskModel[], task: TaskModel): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.index < task.index) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, task);
}

function removeItem<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

function bad(message: string, details: Record<string, string | number> = {}): never {
  throw new MinimrError('EBADCONF', message, details);
}

/** The task-id part after "job_", as the JobTracker derives it. */
function jobNumber(jobId: string): string {
  return jobId.replace(/^job_/, '');
}

function pad6(n: number): string {
  return String(n).padStart(6, '0');
}

export class Simulator {
  private readonly settings: SimSettings;
  private readonly heartbeatMs: number;
  private readonly policy: Policy;
  private readonly mode: 'every-event' | 'when-useful';
  private readonly freeze: boolean;
  private readonly recordDecisions: boolean;
  private readonly maxSimMs: number;
  private readonly stallMs: number;
  private readonly failureProbability: number;
  private readonly onProgress?: (p: SimulationProgress) => void;
  private readonly workloadName: string;
  private readonly clusterName: string;
  private readonly pools: readonly PoolView[];
  private readonly rackIndex: RackIndex;
  private readonly rackOf = new Map<string, string>();

  private readonly heap = new EventHeap<SimEvent>();
  private readonly workers = new Map<string, WorkerModel>();
  /** All workers sorted by id (the JobTracker lists live workers in id order). */
  private readonly workersById: WorkerModel[];
  private readonly jobs: JobModel[] = [];
  private readonly jobsById = new Map<string, JobModel>();
  private readonly tasks = new Map<string, TaskModel>();
  private readonly attempts = new Map<string, AttemptModel>();
  private readonly dependents = new Map<string, JobModel[]>();
  /** Submitted and unfinished, in submission order. */
  private readonly active: JobModel[] = [];
  private readonly busyWorkers = new Set<WorkerModel>();

  private now = 0;
  private liveDirty = true;
  private readonly dirtyWorkers: WorkerModel[] = [];
  private workerArray: readonly WorkerView[] = [];
  private jobsDirty = true;
  private jobArray: readonly JobView[] = [];
  /** Something a policy could act on changed since its last call (used in 'when-useful' mode). */
  private dirty = false;
  private liveCount = 0;
  private readonly usage = { map: 0, reduce: 0, mem: 0, mapTotal: 0, reduceTotal: 0, memTotal: 0, elastic: 0 };
  private readonly partitionSlots: number[] = [];
  private nextSampleMs = 0;
  private pendingRealEvents = 0;
  private lastChangeMs = 0;
  private jobsDone = 0;

  private readonly attemptRecords: AttemptRunRecord[] = [];
  private readonly replicationRecords: ReplicationRunRecord[] = [];
  private readonly samples: UtilizationSample[] = [];
  private readonly decisionLog: DecisionRecord[] = [];
  private events = 0;
  private calls = 0;
  private decisionCount = 0;
  private launches = 0;

  constructor(options: SimulationOptions) {
    const defined = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<SimSettings>;
    this.settings = { ...DEFAULT_SIM_SETTINGS, ...pickSettings(defined) };
    const { workload, cluster, policy } = options;
    if (cluster.workers.length === 0) bad(`cluster "${cluster.name}" has no workers`);
    this.heartbeatMs = this.settings.heartbeatMs ?? defaultHeartbeatMs(cluster.workers.length);
    if (!(this.heartbeatMs > 0)) bad(`heartbeatMs must be positive, got ${this.heartbeatMs}`);
    if (!(this.settings.sampleEveryMs > 0)) bad(`sampleEveryMs must be positive, got ${this.settings.sampleEveryMs}`);
    const slowStart = this.settings.reduceSlowStart;
    if (!(slowStart >= 0 && slowStart <= 1)) bad(`reduceSlowStart must be a fraction of the maps in [0, 1], got ${slowStart}`);
    this.policy = policy;
    const mode = this.settings.policyCalls;
    this.mode = mode === 'auto' ? (policy instanceof FifoPolicy ? 'when-useful' : 'every-event') : mode;
    this.freeze = options.freeze ?? false;
    this.recordDecisions = options.recordDecisions ?? true;
    this.maxSimMs = options.maxSimMs ?? Number.POSITIVE_INFINITY;
    this.stallMs = options.stallMs ?? 24 * 3600 * 1000;
    this.failureProbability = options.failures?.attemptFailureProbability ?? 0;
    this.onProgress = options.onProgress;
    this.workloadName = workload.name;
    this.clusterName = cluster.name;
    this.pools = this.fz([...(workload.pools ?? [])].map((p) => this.fz({ ...p })));
    this.rackIndex = new RackIndex(cluster.workers);

    cluster.workers.forEach((shape, order) => {
      if (this.workers.has(shape.id)) bad(`cluster "${cluster.name}": worker "${shape.id}" is listed twice`);
      for (const field of ['mapSlots', 'reduceSlots', 'memoryMb'] as const) {
        if (!Number.isInteger(shape[field]) || shape[field] < 0) bad(`cluster "${cluster.name}": worker "${shape.id}": ${field} must be a non-negative integer`);
      }
      this.rackOf.set(shape.id, shape.rack);
      this.workers.set(shape.id, {
        shape,
        order,
        alive: true,
        joinMs: 0,
        epoch: 0,
        cluster: shape.cluster ?? 'default',
        usedMap: 0,
        usedReduce: 0,
        usedMem: 0,
        running: new Set(),
        view: null,
        progressStamp: -1,
        slot: -1,
        heartbeatQueued: false,
      });
    });
    this.workersById = [...this.workers.values()].sort((a, b) => byId(a.shape, b.shape));
    for (const w of this.workersById) this.addCapacity(w, 1);
    this.liveCount = this.workersById.length;

    for (const spec of workload.jobs) this.addJob(spec);
    for (const job of this.jobs) {
      if (job.spec.after === undefined) this.push(job.spec.submitMs, { kind: 'submit', job });
    }
    this.recomputeFit();
    for (const outage of options.failures?.workers ?? []) {
      const worker = this.workers.get(outage.workerId) ?? bad(`failures: unknown worker "${outage.workerId}"`);
      if (!(outage.atMs >= 0)) bad(`failures: worker "${outage.workerId}": atMs must be >= 0`);
      if (outage.backAtMs !== undefined && !(outage.backAtMs > outage.atMs)) bad(`failures: worker "${outage.workerId}": backAtMs must be after atMs`);
      this.push(outage.atMs, { kind: 'lost', worker, backAtMs: outage.backAtMs });
    }
  }

  private fz<T>(value: T): T {
    return this.freeze ? Object.freeze(value) : value;
  }

  private push(time: number, event: SimEvent): void {
    if (event.kind !== 'heartbeat') this.pendingRealEvents++;
    this.heap.push(time, event);
  }

  private addJob(spec: JobSpec): void {
    if (typeof spec.id !== 'string' || spec.id === '') bad('workload: a job has no id');
    if (this.jobsById.has(spec.id)) bad(`workload: job "${spec.id}" is listed twice`, { jobId: spec.id });
    if (!(spec.submitMs >= 0)) bad(`workload: job "${spec.id}": submitMs must be >= 0`, { jobId: spec.id });
    const job: JobModel = {
      spec,
      id: spec.id,
      maps: [],
      reduces: [],
      pendingMaps: [],
      pendingReduces: [],
      mapsDone: 0,
      reducesDone: 0,
      running: [],
      partition: 0,
      migrations: [],
      stats: { completedMapMs: 0, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 },
      state: 'waiting',
      submitMs: spec.submitMs,
      finishMs: null,
      mapRequestMs: null,
      mapFirstStart: null,
      mapEnd: null,
      reduceRequestMs: null,
      reduceFirstStart: null,
      reduceEnd: null,
      view: null,
      pendingView: null,
      runningView: null,
      statsView: null,
    };
    const check = (kind: TaskKind, index: number, taskSpec: TaskSpec): void => {
      if (!(taskSpec.workMs >= 0) || !(taskSpec.memoryMb > 0)) {
        bad(`workload: job "${spec.id}": ${kind} ${index}: workMs must be >= 0 and memoryMb > 0`, { jobId: spec.id });
      }
    };
    spec.maps.forEach((t, i) => check('map', i, t));
    spec.reduces.forEach((t, i) => check('reduce', i, t));
    if (spec.after !== undefined) {
      if (!this.jobsById.has(spec.after)) bad(`workload: job "${spec.id}" runs after "${spec.after}", which is not listed before it`, { jobId: spec.id });
      const list = this.dependents.get(spec.after) ?? [];
      list.push(job);
      this.dependents.set(spec.after, list);
    }
    this.jobs.push(job);
    this.jobsById.set(job.id, job);
  }

  /** Tasks are made when the job is admitted: a 3000-job trace need not hold them all at once. */
  private makeTasks(job: JobModel): void {
    const spec = job.spec;
    const num = jobNumber(spec.id);
    const make = (kind: TaskKind, index: number, taskSpec: TaskSpec): TaskModel => {
      const task: TaskModel = {
        id: `task_${num}_${kind === 'map' ? 'm' : 'r'}_${pad6(index)}`,
        job,
        kind,
        index,
        spec: taskSpec,
        preferred: [],
        racks: [],
        failedOn: this.fz([]),
        unplaced: 0,
        state: 'pending',
        attemptsMade: 0,
        failures: 0,
        successWorker: null,
        view: null,
      };
      this.tasks.set(task.id, task);
      return task;
    };
    spec.maps.forEach((t, i) => job.maps.push(make('map', i, t)));
    spec.reduces.forEach((t, i) => job.reduces.push(make('reduce', i, t)));
  }

  // ---- capacity and usage ----------------------------------------------------------------------

  private addCapacity(w: WorkerModel, sign: 1 | -1): void {
    this.usage.mapTotal += sign * w.shape.mapSlots;
    this.usage.reduceTotal += sign * w.shape.reduceSlots;
    this.usage.memTotal += sign * w.shape.memoryMb;
  }

  private markWorker(w: WorkerModel): void {
    if (w.view !== null) {
      w.view = null;
      this.dirtyWorkers.push(w);
    }
  }

  private markJob(job: JobModel, what: { pending?: boolean; running?: boolean; stats?: boolean }): void {
    if (what.pending) job.pendingView = null;
    if (what.running) job.runningView = null;
    if (what.stats) job.statsView = null;
    if (job.view !== null) {
      job.view = null;
      this.jobsDirty = true;
    }
  }

  private sampleUntil(t: number): void {
    while (this.nextSampleMs <= t) {
      this.pushSample(this.nextSampleMs);
      this.nextSampleMs += this.settings.sampleEveryMs;
    }
  }

  private pushSample(timeMs: number): void {
    const u = this.usage;
    this.samples.push({
      timeMs,
      mapSlotsUsed: u.map,
      reduceSlotsUsed: u.reduce,
      memoryUsedMb: u.mem,
      mapSlots: u.mapTotal,
      reduceSlots: u.reduceTotal,
      memoryMb: u.memTotal,
      elasticAttempts: u.elastic,
      partitionSlotsUsed: [...this.partitionSlots].map((v) => v ?? 0),
      workers: this.liveCount,
    });
  }

  // ---- events ----------------------------------------------------------------------------------

  private lastHeartbeat(w: WorkerModel, t: number): number {
    const base = w.joinMs + Math.floor((w.order * this.heartbeatMs) / this.workersById.length);
    if (t < base) return -1;
    return base + Math.floor((t - base) / this.heartbeatMs) * this.heartbeatMs;
  }

  private queueHeartbeats(): void {
    if (this.mode !== 'every-event') return;
    for (const w of this.workersById) {
      if (!w.alive || w.heartbeatQueued) continue;
      const last = this.lastHeartbeat(w, this.now);
      const base = w.joinMs + Math.floor((w.order * this.heartbeatMs) / this.workersById.length);
      const next = last < 0 ? base : last + this.heartbeatMs;
      w.heartbeatQueued = true;
      this.push(next, { kind: 'heartbeat', worker: w, epoch: w.epoch });
    }
  }

  private process(ev: SimEvent): SchedulingTrigger | null {
    if (ev.kind !== 'heartbeat') this.pendingRealEvents--;
    switch (ev.kind) {
      case 'submit':
        return this.admit(ev.job);
      case 'placement-closed':
        this.completeOwedReplicas(ev.job);
        return null;
      case 'end': {
        const a = ev.attempt;
        if (a.ended) return null;
        if (a.failure === 'none') this.endAttempt(a, 'succeeded');
        else this.endAttempt(a, 'failed', a.failure);
        return { kind: 'attempt-finished', attemptId: a.id, jobId: a.task.job.id };
      }
      case 'lost':
        return this.loseWorker(ev.worker, ev.backAtMs);
      case 'join':
        return this.joinWorker(ev.worker);
      case 'heartbeat': {
        const w = ev.worker;
        if (!w.alive || w.epoch !== ev.epoch) return null;
        if (this.active.length === 0) {
          w.heartbeatQueued = false;
          return null;
        }
        this.heap.push(this.now + this.heartbeatMs, { kind: 'heartbeat', worker: w, epoch: w.epoch });
        return { kind: 'heartbeat', workerId: w.shape.id };
      }
    }
  }

  private admit(job: JobModel): SchedulingTrigger | null {
    job.state = 'active';
    job.submitMs = this.now;
    this.makeTasks(job);
    const rand = streamFor(this.settings.seed, `place:${job.id}`);
    for (const task of job.maps) {
      task.preferred = this.fz([...(task.spec.replicas ?? placeReplicas(this.rackIndex, this.settings.replication, rand))]);
      const racks: string[] = [];
      for (const id of task.preferred) {
        const rack = this.rackOf.get(id);
        if (rack !== undefined && !racks.includes(rack)) racks.push(rack);
      }
      task.racks = this.fz(racks);
    }
    const placement = job.spec.inputPlacement;
    if (placement) {
      for (const task of job.maps) if (task.preferred.length > 0) task.unplaced = Math.max(0, placement.replication - task.preferred.length);
      this.push(this.now + placement.windowMs, { kind: 'placement-closed', job });
    }
    job.pendingMaps.push(...job.maps);
    job.pendingReduces.push(...job.reduces);
    for (const t of job.maps) this.pendingAdded(t);
    if (job.maps.length === 0) for (const t of job.reduces) this.pendingAdded(t);
    if (job.maps.length > 0) job.mapRequestMs = this.now;
    else if (job.reduces.length > 0) job.reduceRequestMs = this.now;
    if (job.maps.length === 0 && job.reduces.length === 0) {
      this.finishJob(job, 'succeeded');
      return null;
    }
    this.active.push(job);
    this.jobsDirty = true;
    this.dirty = true;
    this.lastChangeMs = this.now;
    this.queueHeartbeats();
    return { kind: 'job-submitted', jobId: job.id };
  }

  private loseWorker(w: WorkerModel, backAtMs: number | undefined): SchedulingTrigger | null {
    if (!w.alive) return null;
    for (const a of [...w.running]) this.endAttempt(a, 'failed', 'worker-lost');
    w.alive = false;
    w.epoch++;
    w.heartbeatQueued = false;
    this.liveCount--;
    this.addCapacity(w, -1);
    this.liveDirty = true;
    // Map outputs live on the map's worker: those still needed by unfinished reduces are redone.
    for (const job of this.active) {
      if (job.reduces.length === 0 || job.reducesDone === job.reduces.length) continue;
      for (const task of job.maps) {
        if (task.state === 'succeeded' && task.successWorker === w.shape.id) {
          task.state = 'pending';
          task.successWorker = null;
          job.mapsDone--;
          insertByIndex(job.pendingMaps, task);
          this.pendingAdded(task);
          this.markJob(job, { pending: true });
          this.dirty = true;
        }
      }
    }
    if (backAtMs !== undefined) this.push(backAtMs, { kind: 'join', worker: w });
    this.lastChangeMs = this.now;
    return { kind: 'worker-lost', workerId: w.shape.id };
  }

  private joinWorker(w: WorkerModel): SchedulingTrigger | null {
    if (w.alive) return null;
    w.alive = true;
    w.joinMs = this.now;
    w.view = null;
    w.progressStamp = -1;
    this.liveCount++;
    this.addCapacity(w, 1);
    this.liveDirty = true;
    this.dirty = true;
    this.capacityFreed(w);
    this.lastChangeMs = this.now;
    if (this.active.length > 0) this.queueHeartbeats();
    return { kind: 'worker-joined', workerId: w.shape.id };
  }

  private endAttempt(a: AttemptModel, outcome: 'succeeded' | 'failed' | 'killed', cause?: string): void {
    const now = this.now;
    const task = a.task;
    const job = task.job;
    const w = a.worker;
    a.ended = true;
    this.attempts.delete(a.id);
    w.running.delete(a);
    if (w.running.size === 0) this.busyWorkers.delete(w);
    if (task.kind === 'map') {
      w.usedMap--;
      this.usage.map--;
    } else {
      w.usedReduce--;
      this.usage.reduce--;
    }
    w.usedMem -= a.memoryMb;
    this.usage.mem -= a.memoryMb;
    if (a.memoryMb < task.spec.memoryMb) this.usage.elastic--;
    this.partitionSlots[a.partition]!--;
    this.capacityFreed(w);
    this.markWorker(w);
    removeItem(job.running, a);
    this.markJob(job, { running: true });
    this.dirty = true;
    this.lastChangeMs = now;

    const input = task.spec.inputBytes ?? 0;
    const bytesRead = outcome === 'succeeded' ? input : a.fullMs > 0 ? input * Math.max(0, Math.min(1, (now - a.workStartMs) / a.fullMs)) : 0;
    this.attemptRecords.push({
      id: a.id,
      jobId: job.id,
      taskId: task.id,
      kind: task.kind,
      workerId: w.shape.id,
      startMs: a.startMs,
      endMs: now,
      outcome,
      ...(cause !== undefined ? { cause } : {}),
      locality: a.locality,
      partition: a.partition,
      inputBytes: input,
      bytesRead,
      remoteNodeBytes: a.remote === 'none' ? 0 : bytesRead,
      remoteRackBytes: a.remote === 'off-rack' ? bytesRead : 0,
      memoryMb: a.memoryMb,
      idealMemoryMb: task.spec.memoryMb,
    });

    if (job.state !== 'active') return;
    if (outcome === 'succeeded') {
      task.state = 'succeeded';
      task.successWorker = w.shape.id;
      const ms = now - a.startMs;
      const s = job.stats;
      if (task.kind === 'map') {
        job.mapsDone++;
        job.stats = { ...s, completedMapMs: s.completedMapMs + ms, mapInputBytes: s.mapInputBytes + input, mapOutputBytes: s.mapOutputBytes + (task.spec.outputBytes ?? 0) };
        job.mapEnd = Math.max(job.mapEnd ?? now, now);
        if (job.reduces.length > 0 && this.reducesOpen(job)) {
          if (job.reduceRequestMs === null) job.reduceRequestMs = now;
          for (const t of job.pendingReduces) this.pendingAdded(t);
          this.markJob(job, { pending: true });
        }
        if (job.mapsDone === job.maps.length) this.releaseWaitingReduces(job);
      } else {
        job.reducesDone++;
        job.stats = { ...s, completedReduceMs: s.completedReduceMs + ms };
        job.reduceEnd = now;
      }
      this.markJob(job, { stats: true });
      if (job.mapsDone === job.maps.length && job.reducesDone === job.reduces.length) this.finishJob(job, 'succeeded');
      return;
    }
    // Only the task's own failures count toward maxAttempts; lost workers and kills do not.
    if (outcome === 'failed' && cause !== 'worker-lost') {
      task.failures++;
      if (!task.failedOn.includes(w.shape.id)) {
        task.failedOn = this.fz([...task.failedOn, w.shape.id]);
        task.view = null;
      }
      if (task.failures >= this.settings.maxAttempts) {
        task.state = 'failed';
        this.finishJob(job, 'failed');
        return;
      }
    }
    task.state = 'pending';
    insertByIndex(task.kind === 'map' ? job.pendingMaps : job.pendingReduces, task);
    this.pendingAdded(task);
    this.markJob(job, { pending: true });
  }

  private finishJob(job: JobModel, state: 'succeeded' | 'failed'): void {
    job.state = state;
    job.finishMs = state === 'succeeded' ? this.now : null;
    const i = this.active.indexOf(job);
    if (i >= 0) this.active.splice(i, 1);
    this.jobsDirty = true;
    this.jobsDone++;
    for (const a of [...job.running]) this.endAttempt(a, 'killed', 'job-failed');
    for (const next of this.dependents.get(job.id) ?? []) this.push(Math.max(next.spec.submitMs, this.now), { kind: 'submit', job: next });
  }

  // ---- snapshots -------------------------------------------------------------------------------

  private workerView(w: WorkerModel): WorkerView {
    const s = w.shape;
    return this.fz({
      id: s.id,
      host: s.host ?? s.id,
      rack: s.rack,
      mapSlots: s.mapSlots,
      reduceSlots: s.reduceSlots,
      memoryMb: s.memoryMb,
      freeMapSlots: Math.max(0, s.mapSlots - w.usedMap),
      freeReduceSlots: Math.max(0, s.reduceSlots - w.usedReduce),
      freeMemoryMb: Math.max(0, s.memoryMb - w.usedMem),
      diskMBps: s.diskMBps > 0 ? s.diskMBps : 0,
      cluster: w.cluster,
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

  private refreshProgress(): void {
    for (const w of this.busyWorkers) {
      const stamp = this.lastHeartbeat(w, this.now);
      if (stamp === w.progressStamp) continue;
      w.progressStamp = stamp;
      for (const a of w.running) {
        if (stamp <= a.startMs && a.view !== null) continue; // still reported as 0
        a.view = null;
        this.markJob(a.task.job, { running: true });
      }
    }
  }

  private taskView(t: TaskModel): TaskView {
    return (t.view ??= this.fz({
      id: t.id,
      jobId: t.job.id,
      kind: t.kind,
      index: t.index,
      preferredWorkers: t.preferred,
      preferredRacks: t.racks,
      memoryMb: t.spec.memoryMb,
      inputBytes: t.spec.inputBytes ?? 0,
      failedOnWorkers: t.failedOn,
      ...(t.unplaced > 0 ? { unplacedReplicas: t.unplaced } : {}),
    }));
  }

  private attemptView(a: AttemptModel): AttemptView {
    if (a.view) return a.view;
    const stamp = a.worker.progressStamp;
    const progress = a.waitingRunMs !== null || stamp <= a.workStartMs || a.fullMs <= 0 ? 0 : Math.min(1, (stamp - a.workStartMs) / a.fullMs);
    return (a.view = this.fz({
      id: a.id,
      taskId: a.task.id,
      jobId: a.task.job.id,
      kind: a.task.kind,
      workerId: a.worker.shape.id,
      startTime: a.startMs,
      progress,
      memoryMb: a.memoryMb,
      locality: a.locality,
      inputWorkers: a.task.preferred,
      inputBytes: a.task.spec.inputBytes ?? 0,
    }));
  }

  /** The job's last map is done: its early reduces start their work now. */
  private releaseWaitingReduces(job: JobModel): void {
    for (const a of job.running) {
      if (a.waitingRunMs === null) continue;
      a.workStartMs = this.now;
      a.endMs = this.now + a.waitingRunMs;
      a.waitingRunMs = null;
      a.view = null;
      this.push(a.endMs, { kind: 'end', attempt: a });
    }
    this.markJob(job, { running: true });
  }

  /** Whether the job's reduces may launch: enough of its maps are done (all, by default). */
  private reducesOpen(job: JobModel): boolean {
    return job.mapsDone >= Math.ceil(this.settings.reduceSlowStart * job.maps.length - 1e-9);
  }

  /** The tasks a policy may launch now: pending maps, and pending reduces once they are open. */
  private runnable(job: JobModel): TaskModel[] {
    if (!this.reducesOpen(job)) return job.pendingMaps;
    if (job.pendingMaps.length === 0) return job.pendingReduces;
    return job.pendingReduces.length === 0 ? job.pendingMaps : [...job.pendingMaps, ...job.pendingReduces];
  }

  private jobView(job: JobModel): JobView {
    if (job.view) return job.view;
    if (job.pendingView === null) {
      job.pendingView = this.fz(this.runnable(job).map((t) => this.taskView(t)));
    }
    if (job.runningView === null) {
      const list = job.running.length > 1 ? [...job.running].sort((a, b) => taskOrder(a.task, b.task)) : job.running;
      job.runningView = this.fz(list.map((a) => this.attemptView(a)));
    }
    job.statsView ??= this.fz({ ...job.stats });
    const s = job.spec;
    return (job.view = this.fz({
      id: job.id,
      name: s.name,
      pool: s.pool ?? 'default',
      weight: s.weight ?? 1,
      partition: job.partition,
      cluster: s.cluster ?? 'default',
      submitTime: job.submitMs,
      mapsTotal: job.maps.length,
      mapsCompleted: job.mapsDone,
      reducesTotal: job.reduces.length,
      reducesCompleted: job.reducesDone,
      pendingTasks: job.pendingView,
      runningAttempts: job.runningView,
      stats: job.statsView,
    }));
  }

  private snapshot(trigger: SchedulingTrigger): ClusterSnapshot {
    this.refreshProgress();
    const workers = this.buildWorkers();
    if (this.jobsDirty) {
      this.jobArray = this.fz(this.active.map((j) => this.jobView(j)));
      this.jobsDirty = false;
    }
    return this.fz({ now: this.now, trigger: this.fz(trigger), workers, jobs: this.jobArray, pools: this.pools });
  }

  // 'when-useful' bookkeeping: the largest free memory on a live worker with a free slot of each
  // kind, and the smallest ideal memory of a runnable task of each kind. Both are exact right after
  // a call (recomputed) and between calls only move the way events move them (capacity freed,
  // tasks made runnable); a task hidden again (reduces behind a re-run map) may leave the minimum
  // too low, which only costs a call that launches nothing.
  private readonly maxFree = { map: -1, reduce: -1 };
  private readonly minPending = { map: Number.POSITIVE_INFINITY, reduce: Number.POSITIVE_INFINITY };

  private pendingAdded(task: TaskModel): void {
    if (task.spec.memoryMb < this.minPending[task.kind]) this.minPending[task.kind] = task.spec.memoryMb;
  }

  private capacityFreed(w: WorkerModel): void {
    if (!w.alive) return;
    const free = w.shape.memoryMb - w.usedMem;
    if (w.usedMap < w.shape.mapSlots && free > this.maxFree.map) this.maxFree.map = free;
    if (w.usedReduce < w.shape.reduceSlots && free > this.maxFree.reduce) this.maxFree.reduce = free;
  }

  /** Set when a launch took a task as small as the smallest runnable one: the minimum may rise. */
  private minPendingStale = true;

  private recomputeFit(): void {
    this.maxFree.map = -1;
    this.maxFree.reduce = -1;
    for (const w of this.workersById) this.capacityFreed(w);
    if (!this.minPendingStale) return;
    this.minPendingStale = false;
    this.minPending.map = Number.POSITIVE_INFINITY;
    this.minPending.reduce = Number.POSITIVE_INFINITY;
    for (const job of this.active) {
      for (const t of this.runnable(job)) this.pendingAdded(t);
    }
  }

  /** Whether some runnable task fits some live worker at its ideal memory (what FIFO launches). */
  private somethingFits(): boolean {
    return this.minPending.map <= this.maxFree.map || this.minPending.reduce <= this.maxFree.reduce;
  }

  // ---- the policy ------------------------------------------------------------------------------

  private consult(trigger: SchedulingTrigger): void {
    if (this.active.length === 0 || this.liveCount === 0) return;
    if (this.mode === 'when-useful' && (!this.dirty || !this.somethingFits())) return;
    this.dirty = false;
    const snapshot = this.snapshot(trigger);
    this.calls++;
    const decisions = this.policy.schedule(snapshot);
    if (decisions.length > 0) this.applyAll(snapshot, trigger, decisions);
    if (this.mode === 'when-useful') this.recomputeFit();
  }

  private applyAll(snapshot: ClusterSnapshot, trigger: SchedulingTrigger, decisions: readonly Decision[]): void {
    const problems = validateDecisions(this.partOfSnapshot(snapshot, decisions), decisions);
    if (problems.length > 0) {
      throw new MinimrError(
        'EINTERNAL',
        `policy '${this.policy.name}' made invalid decisions at t=${this.now} ms (trigger ${trigger.kind}): ${problems.join('; ')}`,
        { policy: this.policy.name, timeMs: this.now },
      );
    }
    for (const d of decisions) {
      this.decisionCount++;
      if (this.recordDecisions) this.decisionLog.push({ timeMs: this.now, trigger: trigger.kind, decision: d });
      this.apply(d);
    }
  }

  /**
   * The part of `snapshot` the decisions name: their workers, and the jobs holding their tasks,
   * attempts and job ids, each job listing only the named pending tasks and running attempts
   * (the very view objects of the snapshot). validateDecisions only ever looks things up by those
   * ids, so it finds exactly the same problems here as on the whole snapshot, in time proportional
   * to the decisions rather than to every pending task of the cluster. Nothing has changed since
   * the snapshot was built: decisions are applied only after they are checked.
   */
  private partOfSnapshot(snapshot: ClusterSnapshot, decisions: readonly Decision[]): ClusterSnapshot {
    const workerIds = new Set<string>();
    const jobIds = new Set<string>();
    const pending = new Map<string, TaskView[]>();
    const running = new Map<string, AttemptView[]>();
    const addTask = (taskId: string): void => {
      const task = this.tasks.get(taskId);
      if (!task) return;
      const job = task.job;
      jobIds.add(job.id);
      const visible = task.state === 'pending' && job.state === 'active' && (task.kind === 'map' || this.reducesOpen(job));
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
          const a = this.attempts.get(d.attemptId);
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
        case 'move-node':
          workerIds.add(d.workerId);
          break;
      }
    }
    const jobs: JobView[] = [];
    for (const id of jobIds) {
      const job = this.jobsById.get(id);
      if (!job || job.state !== 'active' || !job.view) continue;
      jobs.push({ ...job.view, pendingTasks: pending.get(id) ?? [], runningAttempts: running.get(id) ?? [] });
    }
    return {
      ...snapshot,
      jobs,
      workers: [...workerIds].flatMap((id) => {
        const slot = this.workers.get(id)?.slot ?? -1;
        const view = slot >= 0 ? snapshot.workers[slot] : undefined;
        return view && view.id === id ? [view] : [];
      }),
    };
  }

  private apply(d: Decision): void {
    switch (d.kind) {
      case 'launch':
        this.launch(this.tasks.get(d.taskId)!, this.workers.get(d.workerId)!, d.memoryMb ?? this.tasks.get(d.taskId)!.spec.memoryMb, d.locality);
        return;
      case 'kill': {
        const a = this.attempts.get(d.attemptId)!;
        this.endAttempt(a, 'killed', `policy-kill: ${d.reason}`);
        return;
      }
      case 'migrate': {
        const job = this.jobsById.get(d.jobId)!;
        job.migrations.push({
          timeMs: this.now,
          from: job.partition,
          to: d.toPartition,
          ...(d.partialSizeMs !== undefined ? { partialSizeMs: d.partialSizeMs } : {}),
          ...(d.timerMs !== undefined ? { timerMs: d.timerMs } : {}),
        });
        job.partition = d.toPartition;
        this.markJob(job, {});
        return;
      }
      case 'replicate': {
        const task = this.tasks.get(d.taskId)!;
        if (task.preferred.includes(d.workerId)) return;
        this.addReplica(task, d.workerId, task.unplaced > 0 ? 'placed' : 'extra');
        return;
      }
      case 'move-node': {
        const w = this.workers.get(d.workerId)!;
        w.cluster = d.toCluster;
        this.markWorker(w);
        return;
      }
    }
  }

  /** A new replica of a map's input: recorded, and the task is local there from now on. */
  private addReplica(task: TaskModel, workerId: string, cause: ReplicaCause): void {
    const rack = this.rackOf.get(workerId)!;
    const crossRack = !task.preferred.some((id) => this.rackOf.get(id) === rack);
    this.replicationRecords.push({ timeMs: this.now, jobId: task.job.id, taskId: task.id, workerId, bytes: task.spec.inputBytes ?? 0, crossRack, cause });
    if (cause !== 'extra') task.unplaced--;
    task.preferred = this.fz([...task.preferred, workerId]);
    if (!task.racks.includes(rack)) task.racks = this.fz([...task.racks, rack]);
    task.view = null;
    this.markJob(task.job, { pending: true, running: task.state === 'running' });
    for (const a of task.job.running) if (a.task === task) a.view = null;
  }

  /** The placement window closed: owed replicas no policy placed go next to the existing ones. */
  private completeOwedReplicas(job: JobModel): void {
    const live = this.workersById.filter((w) => w.alive).map((w) => ({ id: w.shape.id, rack: w.shape.rack }));
    for (const task of job.maps) {
      while (task.unplaced > 0) {
        const target = owedReplicaTarget(task.preferred, live, task.index);
        if (target === undefined) break;
        this.addReplica(task, target, 'completed');
      }
      task.unplaced = 0;
    }
  }

  private launch(task: TaskModel, w: WorkerModel, memoryMb: number, locality: Locality): void {
    const job = task.job;
    const spec = task.spec;
    const id = `${task.id.replace(/^task_/, 'attempt_')}_${task.attemptsMade}`;
    task.attemptsMade++;
    const rand = streamFor(this.settings.seed, id);
    const noise = 1 + this.settings.noise * (2 * rand() - 1);
    const failsByChance = rand() < this.failureProbability;
    const failPoint = rand();
    const input = spec.inputBytes ?? 0;
    const stored = task.kind === 'map' && task.preferred.length > 0 && input > 0;
    const remote: AttemptModel['remote'] = !stored || locality === 'node' ? 'none' : locality === 'rack' ? 'rack' : 'off-rack';
    const readMs = remote === 'rack' ? transferMs(input, this.settings.rackMBps) : remote === 'off-rack' ? transferMs(input, this.settings.offRackMBps) : 0;
    const fullMs = Math.max(1, Math.round(penalizedMs(spec, spec.workMs * noise, memoryMb, w.shape.diskMBps) + readMs));
    const oom = memoryMb < minimumMemoryMb(spec);
    const failure: AttemptModel['failure'] = oom ? 'out-of-memory' : failsByChance ? 'task-error' : 'none';
    const runMs = oom ? 0 : failsByChance ? Math.max(1, Math.round(fullMs * failPoint)) : fullMs;
    // A reduce launched before its job's last map holds the slot and works only once the maps are done.
    const waits = task.kind === 'reduce' && job.mapsDone < job.maps.length;
    const endMs = waits ? Number.POSITIVE_INFINITY : this.now + runMs;
    const a: AttemptModel = {
      id,
      task,
      worker: w,
      startMs: this.now,
      endMs,
      fullMs,
      workStartMs: this.now,
      waitingRunMs: waits ? runMs : null,
      failure,
      memoryMb,
      locality,
      partition: job.partition,
      remote,
      ended: false,
      view: null,
    };
    this.launches++;
    this.attempts.set(id, a);
    task.state = 'running';
    if (spec.memoryMb <= this.minPending[task.kind]) this.minPendingStale = true;
    removeItem(task.kind === 'map' ? job.pendingMaps : job.pendingReduces, task);
    job.running.push(a);
    if (task.kind === 'map') job.mapFirstStart ??= this.now;
    else job.reduceFirstStart ??= this.now;
    this.markJob(job, { pending: true, running: true });
    w.running.add(a);
    this.busyWorkers.add(w);
    if (task.kind === 'map') {
      w.usedMap++;
      this.usage.map++;
    } else {
      w.usedReduce++;
      this.usage.reduce++;
    }
    w.usedMem += memoryMb;
    this.usage.mem += memoryMb;
    if (memoryMb < spec.memoryMb) this.usage.elastic++;
    this.partitionSlots[a.partition] = (this.partitionSlots[a.partition] ?? 0) + 1;
    this.markWorker(w);
    this.lastChangeMs = this.now;
    if (!waits) this.push(endMs, { kind: 'end', attempt: a });
  }

  // ---- the loop --------------------------------------------------------------------------------

  run(): SimulationResult {
    const batch = this.settings.batchSameTime;
    while (this.heap.size > 0) {
      const t = this.heap.peek()!.time;
      if (t > this.maxSimMs) break;
      // Only heartbeats left and nothing running: a policy that will never launch again.
      if (this.pendingRealEvents === 0 && this.attempts.size === 0 && t - this.lastChangeMs > this.stallMs) break;
      this.sampleUntil(t);
      this.now = t;
      let trigger: SchedulingTrigger | null = null;
      do {
        const ev = this.heap.pop()!;
        this.events++;
        const tr = this.process(ev.value);
        trigger ??= tr;
        if (this.onProgress && (this.events & 0xffff) === 0) {
          this.onProgress({ simMs: this.now, events: this.events, jobsDone: this.jobsDone, jobsTotal: this.jobs.length });
        }
      } while (batch && this.heap.size > 0 && this.heap.peek()!.time === t);
      if (trigger) this.consult(trigger);
    }
    this.pushSample(this.now);
    return { run: this.record(), decisions: this.decisionLog, stats: this.statsNow() };
  }

  private statsNow(): SimulationStats {
    return {
      events: this.events,
      policyCalls: this.calls,
      decisions: this.decisionCount,
      launches: this.launches,
      simulatedMs: this.now,
      policyCallMode: this.mode,
      heartbeatMs: this.heartbeatMs,
    };
  }

  private record(): RunRecord {
    const jobs: JobRunRecord[] = this.jobs.map((j) => {
      const phase = (request: number | null, first: number | null, end: number | null, count: number, done: number) =>
        count === 0 || request === null ? null : { requestMs: request, firstStartMs: first, endMs: done === count ? end : null };
      return {
        id: j.id,
        name: j.spec.name,
        app: j.spec.app,
        pool: j.spec.pool ?? 'default',
        cluster: j.spec.cluster ?? 'default',
        submitMs: j.submitMs,
        finishMs: j.finishMs,
        state: j.state === 'succeeded' ? 'succeeded' : j.state === 'failed' ? 'failed' : 'unfinished',
        mapsTotal: j.maps.length,
        reducesTotal: j.reduces.length,
        mapPhase: phase(j.mapRequestMs, j.mapFirstStart, j.mapEnd, j.maps.length, j.mapsDone),
        reducePhase: phase(j.reduceRequestMs, j.reduceFirstStart, j.reduceEnd, j.reduces.length, j.reducesDone),
        partition: j.partition,
        migrations: j.migrations,
      };
    });
    return {
      policy: this.policy.name,
      workload: this.workloadName,
      cluster: this.clusterName,
      seed: this.settings.seed,
      endMs: this.now,
      jobs,
      attempts: this.attemptRecords,
      replications: this.replicationRecords,
      utilization: this.samples,
    };
  }
}

/** The simulator's settings among `o`'s fields (other options ride along in the same objects). */
export function pickSettings(o: Partial<SimSettings>): Partial<SimSettings> {
  const keys: Array<keyof SimSettings> = ['seed', 'heartbeatMs', 'replication', 'rackMBps', 'offRackMBps', 'noise', 'maxAttempts', 'sampleEveryMs', 'policyCalls', 'batchSameTime', 'reduceSlowStart'];
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out as Partial<SimSettings>;
}

/** Runs a workload on a cluster under a policy and returns the run record and decision log. */
export function simulate(options: SimulationOptions): SimulationResult {
  return new Simulator(options).run();
}
