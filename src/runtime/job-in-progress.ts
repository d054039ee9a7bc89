import { MinimrError, type SerializedError } from '../errors.js';
import type { Locality } from '../scheduler/types.js';
import type {
  AttemptState,
  Counters,
  JobState,
  JobStatus,
  JobSubmission,
  MapOutputSummary,
  TaskInput,
  TaskKind,
} from './protocol.js';

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
  readonly preferredWorkers: readonly string[];
  readonly preferredRacks: readonly string[];
  readonly inputBytes: number;
  readonly memoryMb: number;
  state: TaskState;
  readonly attempts: AttemptRecord[];
  failures: number;
  fetchFailures: number;
  readonly failedOnWorkers: Set<string>;
  /** Maps: the attempt whose output reducers read. Reduces/map-only maps: the committed attempt. */
  successfulAttempt?: AttemptRecord;
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

  constructor(id: string, submission: JobSubmission, splits: readonly TaskInputPlan[], now: number, maxAttempts: number) {
    this.id = id;
    this.submission = submission;
    this.submitTime = now;
    this.maxAttempts = maxAttempts;
    const num = id.replace(/^job_/, '');
    const mapMemory = submission.mapMemoryMb ?? 512;
    const reduceMemory = submission.reduceMemoryMb ?? 512;
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

  addCounters(counters: Counters): void {
    for (const [name, value] of Object.entries(counters)) {
      if (typeof value === 'number' && Number.isFinite(value)) this.counters[name] = (this.counters[name] ?? 0) + value;
    }
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
      mapsCompleted: this.maps.filter((t) => t.state === 'succeeded').length,
      reducesTotal: this.reduces.length,
      reducesCompleted: this.reduces.filter((t) => t.state === 'succeeded').length,
      mapProgress: progressOf(this.maps),
      reduceProgress: this.reduces.length === 0 ? (this.state === 'succeeded' ? 1 : 0) : progressOf(this.reduces),
      counters: { ...this.counters },
      outputPath: this.submission.outputPath,
      error: this.error,
      failedAttempts: this.failedAttempts,
      killedAttempts: this.killedAttempts,
    };
  }
}

export function partFileName(kind: TaskKind, index: number): string {
  return `part-${kind === 'map' ? 'm' : 'r'}-${pad(index, 5)}`;
}
