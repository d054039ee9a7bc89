/**
 * The JobTracker's journal of its jobs, in `level` under its directory (beside the NameNode's
 * namespace and the profiles), as Hadoop 1's JobTracker kept its job history and info files for
 * `mapred.jobtracker.restart.recover`:
 *
 * - an active job: its submission (the job module's source, conf, input splits as planned, the
 *   profile estimates it was planned with) written before the job is admitted, so a client that
 *   holds a job id holds a job that survives a restart;
 * - per task: how many attempt numbers were used (attempt ids are never reused across a restart,
 *   so a stale file of a dead attempt cannot be taken for a new one's) and its success: a map's
 *   output location (worker, attempt, partition sizes) and a reduce's (or map-only map's) commit;
 * - an ended job: its final status, tasks and attempts, the history `job status`, `job list --all`
 *   and the web UI answer from once the job has left the JobTracker's memory; and its status alone
 *   again under its finish time (`finished!`), so that the most recent ended jobs are read a page at
 *   a time, newest first, without unpacking every job's attempts (Hadoop's JobHistory server lists
 *   them so). A history written before that index existed is indexed once, at open.
 *
 * What is journaled is facts the world already holds (an output on a worker's disk, a part file
 * in the namespace); job-recovery.ts replays them through the books' own transitions. Writes go
 * one at a time, in order, and each resolves when it is on disk.
 */
import { Packr } from 'msgpackr';
import type { Level } from 'level';
import type { AttemptMeasures, TaskState } from '../../books/index.js';
import type { Locality } from '../../scheduler/index.js';
import type { PendingPart } from '../../storage/index.js';
import { openExclusively } from '../../util/index.js';
import type { TaskEstimates, TaskInputPlan } from './runtime-data.js';
import type {
  AttemptSummary,
  Counters,
  JobStatus,
  JobSubmission,
  MapOutputSummary,
  ProfileUse,
} from '../wire/index.js';

/** What a job was admitted with: enough to admit it again, unchanged, after a restart. */
export interface JournaledJob {
  readonly jobId: string;
  readonly submission: JobSubmission;
  /** Who submitted it: the job's owner again after a restart. Older records without it belong to the admin. */
  readonly user?: string;
  readonly splits: readonly TaskInputPlan[];
  readonly estimates?: { readonly maps: readonly TaskEstimates[]; readonly reduce: TaskEstimates };
  readonly maxAttempts: number;
  readonly profile: ProfileUse;
  readonly submitTime: number;
  /** Set once the job has ended: a restart finishes its clean-up instead of running it again. */
  readonly ended?: { readonly state: 'succeeded' | 'failed' | 'killed'; readonly error?: JobStatus['error'] };
}

/** A task's successful attempt as the books recorded it. */
export interface JournaledSuccess {
  readonly attemptId: string;
  readonly workerId: string;
  readonly startTime: number;
  readonly finishTime: number;
  readonly memoryMb: number;
  readonly elastic: boolean;
  readonly locality: Locality;
  readonly counters: Counters;
  readonly measures: AttemptMeasures;
  readonly mapOutput?: MapOutputSummary;
  /** Its part of an output in another store, staged there until the job commits (store-output.ts). */
  readonly outputPart?: PendingPart;
  /** Its output is in the job's output directory (reduces, maps of map-only jobs). */
  readonly committed: boolean;
}

export interface JournaledTask {
  /** One more than the highest attempt number used. */
  nextAttempt: number;
  success?: JournaledSuccess;
}

/** An active job as the journal holds it, with its tasks by task id. */
export interface RecoveredJob {
  readonly job: JournaledJob;
  readonly tasks: ReadonlyMap<string, JournaledTask>;
}

/** A task of an ended job, as its page shows it (its attempts are the entry's). */
export interface TaskSummary {
  readonly taskId: string;
  readonly kind: 'map' | 'reduce';
  readonly index: number;
  readonly state: TaskState;
  readonly inputBytes: number;
}

/** An ended job's record in the history. */
export interface JobHistoryEntry {
  readonly status: JobStatus;
  readonly attempts: readonly AttemptSummary[];
  /** Absent in records written before tasks were recorded. */
  readonly tasks?: readonly TaskSummary[];
}

/** Where a page of the finished jobs starts: after (older than) this job. */
export interface FinishedCursor {
  readonly finishTime: number;
  readonly jobId: string;
}

const JOB = 'job!';
const TASK = 'task!';
const HISTORY = 'history!';
const FINISHED = 'finished!';
/** Set once every history record has its `finished!` entry. */
const FINISHED_INDEXED = 'meta!finished-indexed';
const END = '\uffff';

/** Sorts as the finish time, then the job id: the newest job is the last key. */
function finishedKey(c: FinishedCursor): string {
  return `${FINISHED}${String(Math.max(0, Math.floor(c.finishTime))).padStart(16, '0')}!${c.jobId}`;
}

function finishedKeyOf(status: JobStatus): string {
  return finishedKey({ finishTime: status.finishTime ?? status.submitTime, jobId: status.jobId });
}

// The same plain msgpack the protocol speaks: a submission stored is the submission received.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });

/** Attempt ids end in their number (`attempt_..._m_000003_2`). */
export function attemptNumberOf(attemptId: string): number {
  const m = /_(\d+)$/.exec(attemptId);
  return m ? Number(m[1]) : 0;
}

export class JobJournal {
  private db!: Level<string, Buffer>;
  private opened = false;
  /** Set by `freeze`: nothing more is written. */
  private frozen = false;
  private queue: Promise<unknown> = Promise.resolve();
  /** Tasks of the active jobs, by job, then task id: a change is written as the whole record. */
  private readonly tasks = new Map<string, Map<string, JournaledTask>>();
  private readonly jobs = new Map<string, JournaledJob>();
  /** Keys of records found damaged at open, for the JobTracker to report. */
  readonly damaged: string[] = [];
  /** Ended jobs in the history. */
  private finishedCount = 0;

  constructor(private readonly dbPath: string) {}

  async open(): Promise<void> {
    if (this.opened) return;
    const { Level } = await import('level');
    this.db = new Level<string, Buffer>(this.dbPath, { valueEncoding: 'buffer' });
    await openExclusively(this.db, this.dbPath);
    for await (const [key, value] of this.db.iterator({ gte: JOB, lt: `${JOB}${END}` })) {
      const job = this.decode<JournaledJob>(key, value);
      if (job === undefined) continue;
      if (
        typeof job.jobId !== 'string' ||
        typeof job.submission !== 'object' ||
        !Array.isArray(job.splits) ||
        (job.user !== undefined && typeof job.user !== 'string')
      ) {
        this.damaged.push(key);
        continue;
      }
      this.jobs.set(job.jobId, job as JournaledJob);
      this.tasks.set(job.jobId, new Map());
    }
    for await (const [key, value] of this.db.iterator({ gte: TASK, lt: `${TASK}${END}` })) {
      const [jobId, taskId] = key.slice(TASK.length).split('!');
      const tasks = this.tasks.get(jobId!);
      const task = this.decode<JournaledTask>(key, value);
      if (tasks && taskId && typeof task?.nextAttempt === 'number') tasks.set(taskId, task as JournaledTask);
    }
    if ((await this.db.get(FINISHED_INDEXED)) === undefined) await this.indexFinished();
    for await (const _ of this.db.keys({ gte: FINISHED, lt: `${FINISHED}${END}` })) this.finishedCount++;
    this.opened = true;
  }

  /** The `finished!` entries of a history written before they existed: once, in one batch. */
  private async indexFinished(): Promise<void> {
    const batch: { type: 'put'; key: string; value: Buffer }[] = [];
    for await (const [key, value] of this.db.iterator({ gte: HISTORY, lt: `${HISTORY}${END}` })) {
      const entry = this.decode<JobHistoryEntry>(key, value);
      if (entry?.status && typeof entry.status.jobId === 'string')
        batch.push({ type: 'put', key: finishedKeyOf(entry.status), value: packr.pack(entry.status) });
    }
    batch.push({ type: 'put', key: FINISHED_INDEXED, value: packr.pack(true) });
    await this.db.batch(batch);
  }

  /** A record that does not decode is left out (its job is not recovered; a task's, re-run) and named here. */
  private decode<T>(key: string, value: Buffer): Partial<T> | undefined {
    try {
      return packr.unpack(value) as Partial<T>;
    } catch {
      this.damaged.push(key);
      return undefined;
    }
  }

  /**
   * Writes nothing from now on: a JobTracker shutting down in order sees its workers leave, and
   * what that does to its jobs is not what a restart should resume from (it resumes from before).
   */
  freeze(): void {
    this.frozen = true;
  }

  async close(): Promise<void> {
    this.frozen = true;
    if (!this.opened) return;
    await this.queue.catch(() => undefined);
    await this.db.close();
    this.opened = false;
  }

  /** The jobs that were active (or ending) when the journal was last written. */
  activeJobs(): RecoveredJob[] {
    return [...this.jobs.values()].map((job) => ({ job, tasks: this.tasks.get(job.jobId) ?? new Map() }));
  }

  /** Ids of every job in the journal and its history. */
  async jobIds(): Promise<string[]> {
    const ids = [...this.jobs.keys()];
    for await (const key of this.db.keys({ gte: HISTORY, lt: `${HISTORY}${END}` })) ids.push(key.slice(HISTORY.length));
    return ids;
  }

  jobSubmitted(job: JournaledJob): Promise<void> {
    this.jobs.set(job.jobId, job);
    this.tasks.set(job.jobId, new Map());
    return this.write(() => this.db.put(JOB + job.jobId, packr.pack(job)));
  }

  /** A job that could not be admitted after all. */
  forget(jobId: string): Promise<void> {
    return this.removeJob(jobId, []);
  }

  attemptLaunched(jobId: string, taskId: string, attemptId: string): Promise<void> {
    return this.updateTask(jobId, taskId, (t) => {
      t.nextAttempt = Math.max(t.nextAttempt, attemptNumberOf(attemptId) + 1);
    });
  }

  taskSucceeded(jobId: string, taskId: string, success: JournaledSuccess): Promise<void> {
    return this.updateTask(jobId, taskId, (t) => {
      t.success = success;
      t.nextAttempt = Math.max(t.nextAttempt, attemptNumberOf(success.attemptId) + 1);
    });
  }

  /** A map's output was lost: it runs again. */
  taskLost(jobId: string, taskId: string): Promise<void> {
    return this.updateTask(jobId, taskId, (t) => {
      delete t.success;
    });
  }

  /** The job has ended; its clean-up follows (a restart meanwhile finishes it). */
  jobEnding(jobId: string, ended: NonNullable<JournaledJob['ended']>): Promise<void> {
    const job = this.jobs.get(jobId);
    if (!job) return Promise.resolve();
    const next = { ...job, ended };
    this.jobs.set(jobId, next);
    return this.write(() => this.db.put(JOB + jobId, packr.pack(next)));
  }

  /** The job's clean-up is done: it leaves the journal for the history, in one batch. */
  async jobEnded(entry: JobHistoryEntry): Promise<void> {
    const written = !this.frozen;
    await this.removeJob(entry.status.jobId, [
      { type: 'put', key: HISTORY + entry.status.jobId, value: packr.pack(entry) },
      { type: 'put', key: finishedKeyOf(entry.status), value: packr.pack(entry.status) },
    ]);
    if (written) this.finishedCount++;
  }

  async history(jobId: string): Promise<JobHistoryEntry | undefined> {
    const value = await this.db.get(HISTORY + jobId);
    return value === undefined ? undefined : (packr.unpack(value) as JobHistoryEntry);
  }

  /** Every ended job's final status, oldest first. */
  async historyStatuses(): Promise<JobStatus[]> {
    return this.finishedStatuses({ limit: Infinity, newestFirst: false });
  }

  /** How many ended jobs the history holds. */
  get historySize(): number {
    return this.finishedCount;
  }

  /** Up to `limit` ended jobs' statuses, newest first, those older than `before` when given. */
  finishedPage(limit: number, before?: FinishedCursor): Promise<JobStatus[]> {
    return this.finishedStatuses({ limit, newestFirst: true, ...(before ? { before } : {}) });
  }

  private async finishedStatuses(q: {
    limit: number;
    newestFirst: boolean;
    before?: FinishedCursor;
  }): Promise<JobStatus[]> {
    const out: JobStatus[] = [];
    const range = {
      gte: FINISHED,
      lt: q.before ? finishedKey(q.before) : `${FINISHED}${END}`,
      reverse: q.newestFirst,
      limit: q.limit,
    };
    for await (const value of this.db.values(range)) out.push(packr.unpack(value) as JobStatus);
    return out;
  }

  private removeJob(jobId: string, extra: { type: 'put'; key: string; value: Buffer }[]): Promise<void> {
    const taskIds = [...(this.tasks.get(jobId)?.keys() ?? [])];
    this.jobs.delete(jobId);
    this.tasks.delete(jobId);
    return this.write(() =>
      this.db.batch([
        ...extra,
        { type: 'del', key: JOB + jobId },
        ...taskIds.map((taskId) => ({ type: 'del' as const, key: `${TASK}${jobId}!${taskId}` })),
      ]),
    );
  }

  private updateTask(jobId: string, taskId: string, change: (task: JournaledTask) => void): Promise<void> {
    const tasks = this.tasks.get(jobId);
    if (!tasks) return Promise.resolve();
    const task = tasks.get(taskId) ?? { nextAttempt: 0 };
    change(task);
    tasks.set(taskId, task);
    const bytes = packr.pack(task);
    return this.write(() => this.db.put(`${TASK}${jobId}!${taskId}`, bytes));
  }

  /** One write at a time, in call order; a failed write rejects its caller and not the ones after it. */
  private write(step: () => Promise<unknown>): Promise<void> {
    if (this.frozen) return Promise.resolve();
    const next = this.queue.then(step, step);
    this.queue = next.catch(() => undefined);
    return next.then(() => undefined);
  }
}
