/**
 * A tiny in-memory cluster that drives a scheduling policy tick by tick: it turns its state into
 * ClusterSnapshots, checks and applies the decisions, and completes each launched attempt a fixed
 * number of ticks later. Everything is deterministic (no clocks, no randomness), so two runs with
 * two fresh policies see the very same snapshots. It is meant to grow into the discrete-event
 * simulator's test double, hence the plain model/step/run split.
 */
import type {
  AttemptView,
  ClusterSnapshot,
  Decision,
  JobView,
  Locality,
  Policy,
  PoolView,
  SchedulingTrigger,
  TaskKind,
  TaskView,
  WorkerView,
} from '../../src/scheduler/index.js';
import { validateDecisions } from '../../src/scheduler/index.js';

export interface WorkerSpec {
  readonly id: string;
  readonly rack: string;
  readonly host?: string;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly diskMBps?: number;
}

export interface MapSpec {
  /** Workers holding the split; empty or absent for a map without input locality. */
  readonly preferredWorkers?: readonly string[];
  readonly memoryMb?: number;
  readonly inputBytes?: number;
  /** Replicas the split's upload still owes (a private data set arriving with its job); default 0. */
  readonly unplacedReplicas?: number;
}

export interface JobSpec {
  readonly id: string;
  readonly name?: string;
  readonly pool?: string;
  readonly weight?: number;
  /** Milliseconds; the job enters the cluster on the first tick at or after this time. */
  readonly submitTime: number;
  /** A count (no locality, default memory) or one spec per map. */
  readonly maps: number | readonly MapSpec[];
  readonly reduces: number;
  readonly mapMemoryMb?: number;
  readonly reduceMemoryMb?: number;
  /** Ticks from launch to completion of this job's attempts; default the driver's `taskTicks`. */
  readonly taskTicks?: number;
}

export interface DriverOptions {
  readonly workers: readonly WorkerSpec[];
  readonly jobs?: readonly JobSpec[];
  /** Simulated milliseconds per tick; default 1000. */
  readonly tickMs?: number;
  /** Ticks from launch to completion of every attempt; default 3. */
  readonly taskTicks?: number;
  /** Memory of a task whose spec gives none; default 256. */
  readonly defaultMemoryMb?: number;
  /** Deep-freeze snapshots so a policy that mutates its input throws; default true. */
  readonly freeze?: boolean;
  /** Pools the snapshots list; default none. */
  readonly pools?: readonly PoolView[];
  /** Ticks until a copy asked for by a `replicate` decision lands (the task lists the worker then); default 0. */
  readonly replicationTicks?: number;
  /** Called when an attempt reaches its end; returning true makes it fail instead of succeed. */
  readonly failAttempt?: (attempt: { taskId: string; workerId: string; attemptNo: number }) => boolean;
}

export interface Round {
  readonly snapshot: ClusterSnapshot;
  readonly decisions: readonly Decision[];
}

export interface RunResult {
  /** Completion time (ms) of every job that finished. */
  readonly finishTimes: ReadonlyMap<string, number>;
  /** Jobs submitted or still to be submitted that had not finished when the run stopped. */
  readonly unfinished: readonly string[];
  readonly ticks: number;
  readonly rounds: readonly Round[];
}

type TaskState = 'pending' | 'running' | 'done';

interface TaskModel {
  readonly id: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly index: number;
  readonly preferredWorkers: string[];
  readonly memoryMb: number;
  readonly inputBytes: number;
  readonly failedOnWorkers: string[];
  unplacedReplicas: number;
  readonly ticks: number;
  state: TaskState;
  attempts: number;
}

interface JobModel {
  readonly spec: JobSpec;
  readonly maps: readonly TaskModel[];
  readonly reduces: readonly TaskModel[];
  partition: number;
  readonly stats: { completedMapMs: number; completedReduceMs: number; mapInputBytes: number; mapOutputBytes: number };
}

interface AttemptModel {
  readonly id: string;
  readonly task: TaskModel;
  readonly workerId: string;
  readonly attemptNo: number;
  readonly startTime: number;
  readonly endTime: number;
  readonly memoryMb: number;
  readonly locality: Locality;
}

export class SnapshotDriver {
  readonly tickMs: number;
  readonly taskTicks: number;
  private readonly defaultMemoryMb: number;
  private readonly freeze: boolean;
  private readonly failAttempt: NonNullable<DriverOptions['failAttempt']>;
  private readonly replicationTicks: number;
  /** Copies on their way: the task lists the worker from `landsAt` on. */
  private copies: Array<{ readonly taskId: string; readonly workerId: string; readonly landsAt: number }> = [];
  private readonly pools: readonly PoolView[];

  private readonly workers = new Map<string, WorkerSpec>();
  /** Not yet submitted, in submission order. */
  private readonly arriving: JobSpec[] = [];
  /** Submitted and unfinished, in submission order. */
  private readonly active: JobModel[] = [];
  private readonly tasks = new Map<string, TaskModel>();
  /** Running attempts in launch order, which is also the order they are completed in. */
  private readonly running: AttemptModel[] = [];
  private readonly finished = new Map<string, number>();
  private tickCount = 0;
  /** Events of the current tick, for choosing its trigger. */
  private events: SchedulingTrigger[] = [];

  now = 0;

  constructor(options: DriverOptions) {
    this.tickMs = options.tickMs ?? 1000;
    this.taskTicks = options.taskTicks ?? 3;
    this.defaultMemoryMb = options.defaultMemoryMb ?? 256;
    this.freeze = options.freeze ?? true;
    this.failAttempt = options.failAttempt ?? (() => false);
    this.replicationTicks = options.replicationTicks ?? 0;
    this.pools = options.pools ?? [];
    for (const w of options.workers) this.addWorker(w);
    this.events = [];
    for (const j of options.jobs ?? []) this.submit(j);
  }

  addWorker(spec: WorkerSpec): void {
    if (this.workers.has(spec.id)) throw new Error(`duplicate worker ${spec.id}`);
    this.workers.set(spec.id, spec);
    this.events.push({ kind: 'worker-joined', workerId: spec.id });
  }

  /** Queues a job; it enters the cluster at its submitTime. */
  submit(spec: JobSpec): void {
    const known = this.arriving.some((j) => j.id === spec.id) || this.active.some((j) => j.spec.id === spec.id);
    if (known || this.finished.has(spec.id)) throw new Error(`duplicate job ${spec.id}`);
    // Stable by submitTime, so equal times keep the order in which they were given.
    const at = this.arriving.findIndex((j) => j.submitTime > spec.submitTime);
    if (at < 0) this.arriving.push(spec);
    else this.arriving.splice(at, 0, spec);
  }

  /** True when every job given so far has finished. */
  get idle(): boolean {
    return this.arriving.length === 0 && this.active.length === 0;
  }

  get finishTimes(): ReadonlyMap<string, number> {
    return this.finished;
  }

  /** Ends attempts that are due and admits jobs whose time has come. */
  advanceTo(now: number): void {
    this.now = now;
    for (const c of this.copies.filter((c) => c.landsAt <= now)) this.land(c.taskId, c.workerId);
    this.copies = this.copies.filter((c) => c.landsAt > now);
    for (let i = 0; i < this.running.length; ) {
      const a = this.running[i]!;
      if (a.endTime > now) {
        i++;
        continue;
      }
      this.running.splice(i, 1);
      const failed = this.failAttempt({ taskId: a.task.id, workerId: a.workerId, attemptNo: a.attemptNo });
      if (failed) {
        a.task.state = 'pending';
        if (!a.task.failedOnWorkers.includes(a.workerId)) a.task.failedOnWorkers.push(a.workerId);
      } else {
        a.task.state = 'done';
        const stats = this.active.find((j) => j.spec.id === a.task.jobId)!.stats;
        if (a.task.kind === 'map') {
          stats.completedMapMs += now - a.startTime;
          stats.mapInputBytes += a.task.inputBytes;
          stats.mapOutputBytes += a.task.inputBytes;
        } else {
          stats.completedReduceMs += now - a.startTime;
        }
      }
      this.events.push({ kind: 'attempt-finished', attemptId: a.id, jobId: a.task.jobId });
    }
    for (let i = 0; i < this.active.length; ) {
      const job = this.active[i]!;
      if ([...job.maps, ...job.reduces].every((t) => t.state === 'done')) {
        this.active.splice(i, 1);
        this.finished.set(job.spec.id, now);
      } else {
        i++;
      }
    }
    while (this.arriving.length > 0 && this.arriving[0]!.submitTime <= now) {
      const spec = this.arriving.shift()!;
      this.admit(spec);
      this.events.push({ kind: 'job-submitted', jobId: spec.id });
    }
  }

  private admit(spec: JobSpec): void {
    const mapSpecs: readonly MapSpec[] = typeof spec.maps === 'number' ? Array.from({ length: spec.maps }, () => ({})) : spec.maps;
    const make = (kind: TaskKind, index: number, m: MapSpec, memoryMb: number): TaskModel => {
      const task: TaskModel = {
        id: `${spec.id}-${kind === 'map' ? 'm' : 'r'}${index}`,
        jobId: spec.id,
        kind,
        index,
        preferredWorkers: [...(m.preferredWorkers ?? [])],
        memoryMb,
        inputBytes: m.inputBytes ?? (kind === 'map' ? 64 * 1024 * 1024 : 0),
        failedOnWorkers: [],
        unplacedReplicas: m.unplacedReplicas ?? 0,
        ticks: spec.taskTicks ?? this.taskTicks,
        state: 'pending',
        attempts: 0,
      };
      this.tasks.set(task.id, task);
      return task;
    };
    const maps = mapSpecs.map((m, i) => make('map', i, m, m.memoryMb ?? spec.mapMemoryMb ?? this.defaultMemoryMb));
    const reduces = Array.from({ length: spec.reduces }, (_, i) =>
      make('reduce', i, {}, spec.reduceMemoryMb ?? this.defaultMemoryMb),
    );
    this.active.push({ spec, maps, reduces, partition: 0, stats: { completedMapMs: 0, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 } });
  }

  /**
   * The trigger for this tick: a submission, else a finished attempt, else a worker joining,
   * else a heartbeat from the workers in turn, so every trigger kind the driver can produce is
   * exercised without any randomness.
   */
  private nextTrigger(): SchedulingTrigger {
    const order: SchedulingTrigger['kind'][] = ['job-submitted', 'attempt-finished', 'worker-joined'];
    for (const kind of order) {
      const e = this.events.find((ev) => ev.kind === kind);
      if (e) return e;
    }
    const ids = [...this.workers.keys()].sort();
    if (ids.length === 0) return { kind: 'tick' };
    return { kind: 'heartbeat', workerId: ids[this.tickCount % ids.length]! };
  }

  snapshot(trigger: SchedulingTrigger = this.nextTrigger()): ClusterSnapshot {
    const snap: ClusterSnapshot = {
      now: this.now,
      trigger,
      workers: [...this.workers.values()].map((w) => this.workerView(w)),
      jobs: this.active.map((j) => this.jobView(j)),
      pools: this.pools,
    };
    return this.freeze ? deepFreeze(snap) : snap;
  }

  private workerView(w: WorkerSpec): WorkerView {
    const mine = this.running.filter((a) => a.workerId === w.id);
    const count = (kind: TaskKind): number => mine.filter((a) => a.task.kind === kind).length;
    return {
      id: w.id,
      host: w.host ?? w.id,
      rack: w.rack,
      mapSlots: w.mapSlots,
      reduceSlots: w.reduceSlots,
      memoryMb: w.memoryMb,
      freeMapSlots: w.mapSlots - count('map'),
      freeReduceSlots: w.reduceSlots - count('reduce'),
      freeMemoryMb: w.memoryMb - mine.reduce((sum, a) => sum + a.memoryMb, 0),
      diskMBps: w.diskMBps ?? 0,
      cluster: 'default',
    };
  }

  private taskView(t: TaskModel): TaskView {
    const racks: string[] = [];
    for (const id of t.preferredWorkers) {
      const rack = this.workers.get(id)?.rack;
      if (rack !== undefined && !racks.includes(rack)) racks.push(rack);
    }
    return {
      id: t.id,
      jobId: t.jobId,
      kind: t.kind,
      index: t.index,
      preferredWorkers: [...t.preferredWorkers],
      preferredRacks: racks,
      memoryMb: t.memoryMb,
      inputBytes: t.inputBytes,
      failedOnWorkers: [...t.failedOnWorkers],
      ...(t.unplacedReplicas > 0 ? { unplacedReplicas: t.unplacedReplicas } : {}),
    };
  }

  private jobView(j: JobModel): JobView {
    const done = (ts: readonly TaskModel[]): number => ts.filter((t) => t.state === 'done').length;
    const mapsDone = done(j.maps) === j.maps.length;
    const pending = [...j.maps, ...(mapsDone ? j.reduces : [])].filter((t) => t.state === 'pending');
    return {
      id: j.spec.id,
      name: j.spec.name ?? j.spec.id,
      pool: j.spec.pool ?? 'default',
      weight: j.spec.weight ?? 1,
      partition: j.partition,
      cluster: 'default',
      submitTime: j.spec.submitTime,
      mapsTotal: j.maps.length,
      mapsCompleted: done(j.maps),
      reducesTotal: j.reduces.length,
      reducesCompleted: done(j.reduces),
      pendingTasks: pending.map((t) => this.taskView(t)),
      runningAttempts: this.running
        .filter((a) => a.task.jobId === j.spec.id)
        .map(
          (a): AttemptView => ({
            id: a.id,
            taskId: a.task.id,
            jobId: a.task.jobId,
            kind: a.task.kind,
            workerId: a.workerId,
            startTime: a.startTime,
            progress: Math.min(1, Math.max(0, (this.now - a.startTime) / (a.endTime - a.startTime))),
            memoryMb: a.memoryMb,
            locality: a.locality,
            inputWorkers: [...a.task.preferredWorkers],
            inputBytes: a.task.inputBytes,
          }),
        ),
      stats: { ...j.stats },
    };
  }

  private land(taskId: string, workerId: string): void {
    const task = this.tasks.get(taskId)!;
    if (!task.preferredWorkers.includes(workerId)) task.preferredWorkers.push(workerId);
  }

  /** Checks the decisions against the snapshot they answer, then carries them out. */
  apply(snapshot: ClusterSnapshot, decisions: readonly Decision[]): void {
    const problems = validateDecisions(snapshot, decisions);
    if (problems.length > 0) throw new Error(`invalid decisions at t=${snapshot.now}:\n  ${problems.join('\n  ')}`);
    for (const d of decisions) {
      if (d.kind === 'migrate') {
        this.active.find((j) => j.spec.id === d.jobId)!.partition = d.toPartition;
        continue;
      }
      if (d.kind === 'move-node') continue;
      if (d.kind === 'replicate') {
        // The copy is owed from the moment it is asked for (as the JobTracker counts it).
        const task = this.tasks.get(d.taskId);
        if (task && task.unplacedReplicas > 0) task.unplacedReplicas--;
        if (this.replicationTicks === 0) this.land(d.taskId, d.workerId);
        else this.copies.push({ taskId: d.taskId, workerId: d.workerId, landsAt: this.now + this.replicationTicks * this.tickMs });
        continue;
      }
      if (d.kind === 'kill') {
        const i = this.running.findIndex((a) => a.id === d.attemptId);
        const [a] = this.running.splice(i, 1);
        a!.task.state = 'pending';
        continue;
      }
      const task = this.tasks.get(d.taskId)!;
      task.attempts += 1;
      task.state = 'running';
      this.running.push({
        id: `${task.id}_${task.attempts}`,
        task,
        workerId: d.workerId,
        attemptNo: task.attempts,
        startTime: this.now,
        endTime: this.now + task.ticks * this.tickMs,
        memoryMb: d.memoryMb ?? task.memoryMb,
        locality: d.locality,
      });
    }
  }

  /** One tick: due events, one scheduling round, then the clock moves on. */
  step(policy: Policy, schedule?: (snapshot: ClusterSnapshot) => readonly Decision[]): Round {
    this.advanceTo(this.now);
    const snapshot = this.snapshot();
    this.events = [];
    const decisions = schedule ? schedule(snapshot) : policy.schedule(snapshot);
    this.apply(snapshot, decisions);
    this.tickCount += 1;
    this.now += this.tickMs;
    return { snapshot, decisions };
  }

  /**
   * Steps until every job has finished or `maxTicks` ticks have passed. `schedule` lets a caller
   * wrap the policy call (the conformance suite uses it to forbid clocks during the call).
   */
  run(
    policy: Policy,
    opts: { maxTicks: number; record?: boolean; schedule?: (snapshot: ClusterSnapshot) => readonly Decision[] },
  ): RunResult {
    const rounds: Round[] = [];
    let ticks = 0;
    for (; ticks < opts.maxTicks; ticks++) {
      this.advanceTo(this.now);
      if (this.idle) break;
      const round = this.step(policy, opts.schedule);
      if (opts.record) rounds.push(round);
    }
    this.advanceTo(this.now);
    return {
      finishTimes: new Map(this.finished),
      unfinished: [...this.active.map((j) => j.spec.id), ...this.arriving.map((j) => j.id)],
      ticks,
      rounds,
    };
  }
}

export { validateDecisions } from '../../src/scheduler/index.js';

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Hand-made snapshots for single-round tests; fields not given take harmless defaults. */
export function mkWorker(id: string, rack: string, over: Partial<WorkerView> = {}): WorkerView {
  const mapSlots = over.mapSlots ?? 2;
  const reduceSlots = over.reduceSlots ?? 1;
  const memoryMb = over.memoryMb ?? 4096;
  return {
    id,
    host: id,
    rack,
    mapSlots,
    reduceSlots,
    memoryMb,
    freeMapSlots: mapSlots,
    freeReduceSlots: reduceSlots,
    freeMemoryMb: memoryMb,
    diskMBps: 0,
    cluster: 'default',
    ...over,
  };
}

export function mkTask(
  jobId: string,
  kind: TaskKind,
  index: number,
  over: Partial<TaskView> & { workers?: readonly WorkerView[] } = {},
): TaskView {
  const { workers: all = [], ...rest } = over;
  const preferredWorkers = rest.preferredWorkers ?? [];
  const racks: string[] = [];
  for (const id of preferredWorkers) {
    const rack = all.find((w) => w.id === id)?.rack;
    if (rack !== undefined && !racks.includes(rack)) racks.push(rack);
  }
  return {
    id: `${jobId}-${kind === 'map' ? 'm' : 'r'}${index}`,
    jobId,
    kind,
    index,
    preferredWorkers,
    preferredRacks: racks,
    memoryMb: 256,
    inputBytes: kind === 'map' ? 64 * 1024 * 1024 : 0,
    failedOnWorkers: [],
    ...rest,
  };
}

export function mkJob(id: string, pendingTasks: readonly TaskView[], over: Partial<JobView> = {}): JobView {
  const maps = pendingTasks.filter((t) => t.kind === 'map').length;
  const reduces = pendingTasks.filter((t) => t.kind === 'reduce').length;
  return {
    id,
    name: id,
    pool: 'default',
    weight: 1,
    partition: 0,
    cluster: 'default',
    submitTime: 0,
    mapsTotal: maps,
    mapsCompleted: 0,
    reducesTotal: reduces,
    reducesCompleted: 0,
    pendingTasks,
    runningAttempts: [],
    stats: { completedMapMs: 0, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 },
    ...over,
  };
}

export function mkSnapshot(
  workers: readonly WorkerView[],
  jobs: readonly JobView[],
  over: Partial<ClusterSnapshot> = {},
): ClusterSnapshot {
  return deepFreeze({ now: 0, trigger: { kind: 'tick' }, workers, jobs, pools: [], ...over });
}

export { seededRandom } from '../../src/util/index.js';
