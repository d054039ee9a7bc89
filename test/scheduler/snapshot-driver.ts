/**
 * A tiny in-memory cluster that drives a scheduling policy tick by tick: it turns its state into
 * ClusterSnapshots, checks and applies the decisions, and completes each launched attempt a fixed
 * number of ticks later. Everything is deterministic (no clocks, no randomness), so two runs with
 * two fresh policies see the very same snapshots. Its state, transitions, snapshots and decision
 * checks are the books the JobTracker and the simulator keep (src/books); the driver only moves
 * time in ticks.
 */
import type { ClusterSnapshot, Decision, Policy, PoolView, SchedulingTrigger } from '../../src/scheduler/index.js';
import { Books, type AttemptRecord, type Effect } from '../../src/books/index.js';

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

/** What the driver keeps beside the books: a task's run length, an attempt's number and end. */
interface DriverData {
  readonly job: JobSpec;
  readonly task: { readonly ticks: number };
  readonly attempt: { readonly attemptNo: number; readonly endTime: number };
  readonly worker: undefined;
}

type Attempt = AttemptRecord<DriverData>;

export class SnapshotDriver {
  readonly tickMs: number;
  readonly taskTicks: number;
  private readonly defaultMemoryMb: number;
  private readonly failAttempt: NonNullable<DriverOptions['failAttempt']>;
  private readonly replicationTicks: number;
  /** Copies on their way: the task lists the worker from `landsAt` on. */
  private copies: Array<{ readonly taskId: string; readonly workerId: string; readonly landsAt: number }> = [];
  /** The same books the JobTracker and the simulator keep; the driver only moves time. */
  private readonly books: Books<DriverData>;

  /** Not yet submitted, in submission order. */
  private readonly arriving: JobSpec[] = [];
  /** Running attempts in launch order, which is also the order they are completed in. */
  private readonly running: Attempt[] = [];
  private readonly finished = new Map<string, number>();
  private tickCount = 0;
  /** Events of the current tick, for choosing its trigger. */
  private events: SchedulingTrigger[] = [];

  now = 0;

  constructor(options: DriverOptions) {
    this.tickMs = options.tickMs ?? 1000;
    this.taskTicks = options.taskTicks ?? 3;
    this.defaultMemoryMb = options.defaultMemoryMb ?? 256;
    this.failAttempt = options.failAttempt ?? (() => false);
    this.replicationTicks = options.replicationTicks ?? 0;
    this.books = new Books<DriverData>({
      freeze: options.freeze ?? true,
      pools: options.pools ?? [],
      // The driver retries a failing task for as long as the test says it fails.
      maxAttempts: Number.POSITIVE_INFINITY,
      taskId: (jobId, kind, index) => `${jobId}-${kind === 'map' ? 'm' : 'r'}${index}`,
      attemptId: (taskId, n) => `${taskId}_${n + 1}`,
    });
    for (const w of options.workers) this.addWorker(w);
    this.events = [];
    for (const j of options.jobs ?? []) this.submit(j);
  }

  addWorker(spec: WorkerSpec): void {
    if (this.books.worker(spec.id)) throw new Error(`duplicate worker ${spec.id}`);
    this.books.workerJoined({ ...spec, host: spec.host ?? spec.id, diskMBps: spec.diskMBps ?? 0 }, undefined, this.now);
    this.events.push({ kind: 'worker-joined', workerId: spec.id });
  }

  /** Queues a job; it enters the cluster at its submitTime. */
  submit(spec: JobSpec): void {
    const known = this.arriving.some((j) => j.id === spec.id) || this.books.job(spec.id) !== undefined;
    if (known || this.finished.has(spec.id)) throw new Error(`duplicate job ${spec.id}`);
    // Stable by submitTime, so equal times keep the order in which they were given.
    const at = this.arriving.findIndex((j) => j.submitTime > spec.submitTime);
    if (at < 0) this.arriving.push(spec);
    else this.arriving.splice(at, 0, spec);
  }

  /** True when every job given so far has finished. */
  get idle(): boolean {
    return this.arriving.length === 0 && this.books.active.length === 0;
  }

  get finishTimes(): ReadonlyMap<string, number> {
    return this.finished;
  }

  /** Ends attempts that are due and admits jobs whose time has come. */
  advanceTo(now: number): void {
    this.now = now;
    for (const c of this.copies.filter((c) => c.landsAt <= now))
      this.books.replicaLanded(this.books.task(c.taskId)!, c.workerId);
    this.copies = this.copies.filter((c) => c.landsAt > now);
    for (let i = 0; i < this.running.length; ) {
      const a = this.running[i]!;
      if (a.data.endTime > now) {
        i++;
        continue;
      }
      this.running.splice(i, 1);
      const failed = this.failAttempt({ taskId: a.task.id, workerId: a.worker.shape.id, attemptNo: a.data.attemptNo });
      const inputBytes = a.task.inputBytes;
      this.carryOut(
        failed
          ? this.books.attemptFailed(a, { code: 'ETASK', message: 'failed by the test' }, now)
          : this.books.attemptSucceeded(a, now, { inputBytes, outputBytes: inputBytes }),
      );
      this.events.push({ kind: 'attempt-finished', attemptId: a.id, jobId: a.task.job.id });
    }
    while (this.arriving.length > 0 && this.arriving[0]!.submitTime <= now) {
      const spec = this.arriving.shift()!;
      this.admit(spec);
      this.events.push({ kind: 'job-submitted', jobId: spec.id });
    }
  }

  private admit(spec: JobSpec): void {
    const mapSpecs: readonly MapSpec[] =
      typeof spec.maps === 'number' ? Array.from({ length: spec.maps }, () => ({})) : spec.maps;
    const ticks = { ticks: spec.taskTicks ?? this.taskTicks };
    const { job, effects } = this.books.submit(
      {
        id: spec.id,
        name: spec.name ?? spec.id,
        ...(spec.pool !== undefined ? { pool: spec.pool } : {}),
        ...(spec.weight !== undefined ? { weight: spec.weight } : {}),
        maps: mapSpecs.map((m) => ({
          memoryMb: m.memoryMb ?? spec.mapMemoryMb ?? this.defaultMemoryMb,
          inputBytes: m.inputBytes ?? 64 * 1024 * 1024,
          preferredWorkers: m.preferredWorkers ?? [],
          data: ticks,
        })),
        reduces: Array.from({ length: spec.reduces }, () => ({
          memoryMb: spec.reduceMemoryMb ?? this.defaultMemoryMb,
          inputBytes: 0,
          preferredWorkers: [],
          data: ticks,
        })),
        data: spec,
      },
      this.now,
    );
    // A test's private data set: each map owes the replicas its spec says.
    for (const [i, m] of mapSpecs.entries()) job.maps[i]!.unplacedReplicas = m.unplacedReplicas ?? 0;
    this.carryOut(effects);
  }

  private carryOut(effects: readonly Effect<DriverData>[]): void {
    for (const e of effects) {
      if (e.kind === 'commit-job') this.carryOut(this.books.jobCommitted(e.job, this.now));
      else if (e.kind === 'job-ended') this.finished.set(e.job.id, this.now);
      else if (e.kind === 'attempt-ended') {
        const i = this.running.indexOf(e.attempt);
        if (i >= 0) this.running.splice(i, 1);
      } else if (e.kind === 'launch') {
        const a = e.attempt;
        a.data = { attemptNo: a.task.attemptsMade, endTime: this.now + a.task.data.ticks * this.tickMs };
        this.running.push(a);
      } else if (e.kind === 'replicate') {
        if (this.replicationTicks === 0) this.books.replicaLanded(e.task, e.workerId);
        else
          this.copies.push({
            taskId: e.task.id,
            workerId: e.workerId,
            landsAt: this.now + this.replicationTicks * this.tickMs,
          });
      }
    }
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
    const ids = this.books.liveWorkers().map((w) => w.shape.id);
    if (ids.length === 0) return { kind: 'tick' };
    return { kind: 'heartbeat', workerId: ids[this.tickCount % ids.length]! };
  }

  snapshot(trigger: SchedulingTrigger = this.nextTrigger()): ClusterSnapshot {
    for (const a of this.running) {
      this.books.reportProgress(a, (this.now - a.startTime) / (a.data.endTime - a.startTime));
    }
    return this.books.snapshot(trigger, this.now);
  }

  /** Checks the decisions against the snapshot they answer, then carries them out. */
  apply(snapshot: ClusterSnapshot, decisions: readonly Decision[]): void {
    const problems = this.books.check(snapshot, decisions);
    if (problems.length > 0) throw new Error(`invalid decisions at t=${snapshot.now}:\n  ${problems.join('\n  ')}`);
    this.carryOut(this.books.apply(decisions, this.now));
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
      unfinished: [...this.books.active.map((j) => j.id), ...this.arriving.map((j) => j.id)],
      ticks,
      rounds,
    };
  }
}

export { validateDecisions } from '../../src/scheduler/index.js';

// The hand-made snapshot builders moved to test/helpers/books.ts; re-exported for this folder's tests.
export { deepFreeze, mkJob, mkSnapshot, mkTask, mkWorker } from '../helpers/books.js';

export { seededRandom } from '../../src/util/index.js';
