import { MinimrError, type SerializedError } from '../errors.js';
import type { Locality } from '../scheduler/index.js';
import {
  JOB_CONF_DEFAULTS,
  TASK_OVERHEAD_MB,
  type AttemptShuffleSettings,
  type AttemptState,
  type AttemptSummary,
  type Counters,
  type JobState,
  type JobStatus,
  type JobSubmission,
  type MapOutputSummary,
  type TaskInput,
  type TaskKind,
} from './protocol.js';
import { JobSkew } from './job-skew.js';

/**
 * Job, task and attempt state as the JobTracker keeps it.
 *
 * job:     pending -> running -> succeeded | failed | killed
 * task:    pending -> running -> succeeded            (back to pending when an attempt fails and
 *                                                        attempts remain, or a map's output is lost)
 *                             -> failed | killed       (job ends)
 * attempt: running -> succeeded | failed | killed
 *
 * Only failures of the task's own code count toward `maxAttempts`; attempts lost with a worker or
 * killed by the scheduler do not (as in Hadoop).
 */

export type TaskState = 'pending' | 'running' | 'succeeded' | 'failed' | 'killed';

export interface AttemptRecord {
  readonly id: string;
  readonly task: TaskRecord;
  readonly workerId: string;
  readonly startTime: number;
  readonly memoryMb: number;
  readonly locality: Locality;
  state: AttemptState;
  finishTime?: number;
  progress: number;
  counters: Counters;
  mapOutput?: MapOutputSummary;
  error?: SerializedError;
}

export interface TaskRecord {
  readonly id: string;
  readonly job: JobInProgress;
  readonly kind: TaskKind;
  readonly index: number;
  readonly input: TaskInput;
  /** Replaced (never mutated) when a `replicate` decision adds a replica of the input. */
  preferredWorkers: readonly string[];
  preferredRacks: readonly string[];
  readonly inputBytes: number;
  readonly memoryMb: number;
  state: TaskState;
  readonly attempts: AttemptRecord[];
  failures: number;
  fetchFailures: number;
  readonly failedOnWorkers: Set<string>;
  /** Maps: replicas the input's upload still owes a policy may place (`InputPlacement`); 0 once the window closed. */
  unplacedReplicas: number;
  /** Maps: the attempt whose output reducers read. Reduces/map-only maps: the committed attempt. */
  successfulAttempt?: AttemptRecord;
}

/** One work-conserving move of a job between partitions, as the JobTracker recorded it. */
export interface MigrationRecord {
  readonly time: number;
  readonly jobId: string;
  readonly from: number;
  readonly to: number;
  readonly partialSizeMs?: number;
  readonly timerMs?: number;
}

export interface TaskInputPlan {
  input: TaskInput;
  preferredWorkers: readonly string[];
  preferredRacks: readonly string[];
  inputBytes: number;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

export class JobInProgress {
  readonly id: string;
  readonly submission: JobSubmission;
  readonly submitTime: number;
  readonly maxAttempts: number;
  state: JobState = 'pending';
  startTime?: number;
  finishTime?: number;
  error?: SerializedError;
  readonly maps: TaskRecord[];
  readonly reduces: TaskRecord[];
  /** Counters of succeeded attempts, summed. */
  readonly counters: Counters = {};
  failedAttempts = 0;
  killedAttempts = 0;
  /** Set by the policy's `migrate` decisions; see `JobView.partition`. */
  partition = 0;
  /** MR-cluster the job runs in (FAWKES); see `JobView.cluster`. */
  cluster = 'default';
  readonly migrations: MigrationRecord[] = [];
  /** Virtual partitions and which reduce reads which (skew strategy); see job-skew.ts. */
  readonly skew: JobSkew;
  /** Running totals of the job's successful attempts, for the policy (`JobView.stats`). */
  readonly stats: { completedMapMs: number; completedReduceMs: number; mapInputBytes: number; mapOutputBytes: number } = {
    completedMapMs: 0,
    completedReduceMs: 0,
    mapInputBytes: 0,
    mapOutputBytes: 0,
  };

  constructor(id: string, submission: JobSubmission, splits: readonly TaskInputPlan[], now: number, maxAttempts: number) {
    this.id = id;
    this.submission = submission;
    this.submitTime = now;
    this.maxAttempts = maxAttempts;
    this.skew = new JobSkew(submission);
    const num = id.replace(/^job_/, '');
    const mapMemory = submission.mapMemoryMb ?? idealMemoryMb(submission, 'map');
    const reduceMemory = submission.reduceMemoryMb ?? idealMemoryMb(submission, 'reduce');
    this.maps = splits.map((plan, index) => this.newTask(`task_${num}_m_${pad(index, 6)}`, 'map', index, plan, mapMemory));
    this.reduces = Array.from({ length: submission.reducers }, (_, index) =>
      this.newTask(`task_${num}_r_${pad(index, 6)}`, 'reduce', index, { input: { kind: 'none' }, preferredWorkers: [], preferredRacks: [], inputBytes: 0 }, reduceMemory),
    );
  }

  private newTask(id: string, kind: TaskKind, index: number, plan: TaskInputPlan, memoryMb: number): TaskRecord {
    return {
      id,
      job: this,
      kind,
      index,
      input: plan.input,
      preferredWorkers: plan.preferredWorkers,
      preferredRacks: plan.preferredRacks,
      inputBytes: plan.inputBytes,
      memoryMb,
      state: 'pending',
      attempts: [],
      failures: 0,
      fetchFailures: 0,
      failedOnWorkers: new Set(),
      unplacedReplicas: kind === 'map' && plan.input.kind === 'file' && plan.preferredWorkers.length > 0 ? Math.max(0, (this.submission.inputPlacement?.replication ?? 0) - plan.preferredWorkers.length) : 0,
    };
  }

  get isActive(): boolean {
    return this.state === 'pending' || this.state === 'running';
  }

  get mapOnly(): boolean {
    return this.reduces.length === 0;
  }

  allMapsSucceeded(): boolean {
    return this.maps.every((t) => t.state === 'succeeded');
  }

  allTasksSucceeded(): boolean {
    return this.allMapsSucceeded() && this.reduces.every((t) => t.state === 'succeeded');
  }

  /** Whether `task` may be launched now (the test behind `runnableTasks`, for one task). */
  isRunnable(task: TaskRecord): boolean {
    return this.isActive && task.job === this && task.state === 'pending' && (task.kind === 'map' || this.allMapsSucceeded());
  }

  completed(kind: TaskKind): number {
    let n = 0;
    for (const t of kind === 'map' ? this.maps : this.reduces) if (t.state === 'succeeded') n++;
    return n;
  }

  /** Tasks that may be launched now; reduces wait until every map has succeeded (slow start 1.0). */
  runnableTasks(): TaskRecord[] {
    if (!this.isActive) return [];
    const maps = this.maps.filter((t) => t.state === 'pending');
    if (maps.length > 0 || !this.allMapsSucceeded()) return maps;
    return this.reduces.filter((t) => t.state === 'pending');
  }

  *runningAttempts(): Iterable<AttemptRecord> {
    for (const task of [...this.maps, ...this.reduces]) {
      for (const a of task.attempts) if (a.state === 'running') yield a;
    }
  }

  findTask(taskId: string): TaskRecord | undefined {
    const m = /_(m|r)_(\d+)$/.exec(taskId);
    if (!m) return undefined;
    const list = m[1] === 'm' ? this.maps : this.reduces;
    const task = list[Number(m[2])];
    return task?.id === taskId ? task : undefined;
  }

  newAttempt(task: TaskRecord, workerId: string, now: number, memoryMb: number, locality: Locality): AttemptRecord {
    if (task.state !== 'pending') {
      throw new MinimrError('EINTERNAL', `task ${task.id} is ${task.state}, not pending`, { taskId: task.id });
    }
    const attempt: AttemptRecord = {
      id: `${task.id.replace(/^task_/, 'attempt_')}_${task.attempts.length}`,
      task,
      workerId,
      startTime: now,
      memoryMb,
      locality,
      state: 'running',
      progress: 0,
      counters: {},
    };
    task.attempts.push(attempt);
    task.state = 'running';
    if (this.state === 'pending') {
      this.state = 'running';
      this.startTime = now;
    }
    return attempt;
  }

  /** Adds a successful attempt's runtime and byte counts to `stats`. */
  recordSuccess(attempt: AttemptRecord): void {
    const ms = Math.max(0, (attempt.finishTime ?? attempt.startTime) - attempt.startTime);
    if (attempt.task.kind === 'reduce') {
      this.stats.completedReduceMs += ms;
      return;
    }
    this.stats.completedMapMs += ms;
    this.stats.mapInputBytes += attempt.counters.MAP_INPUT_BYTES ?? attempt.task.inputBytes;
    this.stats.mapOutputBytes += attempt.counters.MAP_OUTPUT_BYTES ?? 0;
  }

  /** Job counters sum the attempts' counters, except PEAK_* ones, which keep the largest. */
  addCounters(counters: Counters): void {
    for (const [name, value] of Object.entries(counters)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const prev = this.counters[name] ?? 0;
      this.counters[name] = name.startsWith('PEAK_') ? Math.max(prev, value) : prev + value;
    }
  }

  attemptSummaries(): AttemptSummary[] {
    const out: AttemptSummary[] = [];
    for (const task of [...this.maps, ...this.reduces]) {
      for (const a of task.attempts) {
        out.push({
          attemptId: a.id,
          taskId: task.id,
          kind: task.kind,
          workerId: a.workerId,
          state: a.state,
          startTime: a.startTime,
          finishTime: a.finishTime,
          memoryMb: a.memoryMb,
          locality: a.locality,
          inputBytes: task.inputBytes,
          counters: a.counters,
          error: a.error,
        });
      }
    }
    return out;
  }

  status(): JobStatus {
    const progressOf = (tasks: TaskRecord[]) => {
      if (tasks.length === 0) return this.state === 'succeeded' || this.allMapsSucceeded() ? 1 : 0;
      let sum = 0;
      for (const t of tasks) {
        if (t.state === 'succeeded') sum += 1;
        else if (t.state === 'running') sum += Math.max(0, ...t.attempts.filter((a) => a.state === 'running').map((a) => a.progress));
      }
      return sum / tasks.length;
    };
    return {
      jobId: this.id,
      name: this.submission.name,
      pool: this.submission.pool ?? 'default',
      state: this.state,
      submitTime: this.submitTime,
      startTime: this.startTime,
      finishTime: this.finishTime,
      mapsTotal: this.maps.length,
      mapsCompleted: this.completed('map'),
      reducesTotal: this.reduces.length,
      reducesCompleted: this.completed('reduce'),
      mapProgress: progressOf(this.maps),
      reduceProgress: this.reduces.length === 0 ? (this.state === 'succeeded' ? 1 : 0) : progressOf(this.reduces),
      counters: { ...this.counters },
      outputPath: this.submission.outputPath,
      error: this.error,
      failedAttempts: this.failedAttempts,
      killedAttempts: this.killedAttempts,
      partition: this.partition,
      migrations: this.migrations.map(({ jobId: _jobId, ...m }) => ({ ...m })),
      skew: this.mapOnly ? undefined : this.skew.status(this.reduces),
    };
  }
}

const MiB = 1024 * 1024;

/** A task's ideal memory: its whole shuffle buffer plus the process's fixed overhead. */
export function idealMemoryMb(submission: JobSubmission, kind: TaskKind): number {
  const conf = { ...JOB_CONF_DEFAULTS, ...submission.conf };
  const buffer = kind === 'map' ? conf['shuffle.map.bufferBytes'] : conf['shuffle.reduce.bufferBytes'];
  return Math.ceil(buffer / MiB) + TASK_OVERHEAD_MB;
}

/**
 * The shuffle settings of an attempt. Granted less memory than ideal (an elastic allocation), the
 * attempt gets a proportionally smaller buffer and spills more: the allocation is real.
 */
export function attemptShuffleSettings(submission: JobSubmission, kind: TaskKind, grantedMb: number): AttemptShuffleSettings {
  const conf = { ...JOB_CONF_DEFAULTS, ...submission.conf };
  const ideal = idealMemoryMb(submission, kind);
  const scale = (bytes: number) => {
    if (grantedMb >= ideal) return bytes;
    return Math.max(MIN_ELASTIC_BUFFER_BYTES, Math.min(bytes, (grantedMb - TASK_OVERHEAD_MB) * MiB));
  };
  return {
    mapBufferBytes: kind === 'map' ? scale(conf['shuffle.map.bufferBytes']) : conf['shuffle.map.bufferBytes'],
    spillPercent: conf['shuffle.map.spillPercent'],
    reduceBufferBytes: kind === 'reduce' ? scale(conf['shuffle.reduce.bufferBytes']) : conf['shuffle.reduce.bufferBytes'],
    mergeFactor: conf['shuffle.merge.factor'],
    codec: conf['shuffle.compress'],
    parallelCopies: conf['shuffle.parallelCopies'],
  };
}

/** Below this a buffer is useless; an allocation under overhead + this still gets this much. */
const MIN_ELASTIC_BUFFER_BYTES = 1024 * 1024;

export function partFileName(kind: TaskKind, index: number): string {
  return `part-${kind === 'map' ? 'm' : 'r'}-${pad(index, 5)}`;
}
