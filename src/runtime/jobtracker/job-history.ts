/**
 * Job retirement and the history (Hadoop 1's `mapred.jobtracker.retirejob.interval` and
 * `completeuserjobs.maximum`): an ended job stays in the JobTracker's memory, with every task and
 * attempt, for `retainMs` or until `retainedJobs` newer ones have ended; then it leaves the books
 * (`Books.retire`). Its final status, tasks and attempts were written to the journal's history when
 * it ended (job-journal.ts), so `job status`, `job attempts`, `job list --all`, the job's web page
 * and its attempts' logs (while their workers keep them) still answer for it.
 */
import { jobIdOfAttempt, type Books } from '../../books/index.js';
import { MinimrError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { attemptSummaries, jobStatus, type RuntimeData, type RuntimeJob } from './runtime-data.js';
import type { FinishedCursor, JobHistoryEntry, JobJournal } from './job-journal.js';
import type { AttemptNumbering } from './job-recovery.js';
import type { AttemptSummary, JobStatus } from '../wire/index.js';

export interface RetentionOptions {
  readonly retainedJobs: number;
  readonly retainMs: number;
}

/** A page of the ended jobs, newest first. */
export interface FinishedJobsPage {
  readonly jobs: readonly JobStatus[];
  /** Ended jobs in the history, all pages. */
  readonly total: number;
  /** Where the next (older) page starts; absent on the last page. */
  readonly older?: FinishedCursor;
}

/** An attempt of a retired job, with whose job it was. */
export interface RetiredAttempt {
  readonly jobId: string;
  readonly owner: string;
  readonly attempt: AttemptSummary;
}

/** What the history keeps of an ended job: its status, its tasks and every attempt. */
export function historyEntry(job: RuntimeJob): JobHistoryEntry {
  return {
    status: jobStatus(job),
    attempts: attemptSummaries(job),
    tasks: [...job.maps, ...job.reduces].map((t) => ({
      taskId: t.id,
      kind: t.kind,
      index: t.index,
      state: t.state,
      inputBytes: t.inputBytes,
    })),
  };
}

/** The history's order of ended jobs (its `finished!` keys'): by finish time, then id. */
function finishedBefore(a: JobStatus, b: FinishedCursor): boolean {
  const t = Math.floor(a.finishTime ?? a.submitTime);
  return t < b.finishTime || (t === b.finishTime && a.jobId < b.jobId);
}

function cursorOf(s: JobStatus): FinishedCursor {
  return { finishTime: Math.floor(s.finishTime ?? s.submitTime), jobId: s.jobId };
}

export class JobHistory {
  /** Ended and settled jobs still in memory, oldest first. */
  private readonly ended: RuntimeJob[] = [];

  constructor(
    private readonly books: Books<RuntimeData>,
    private readonly journal: JobJournal,
    private readonly numbering: AttemptNumbering,
    private readonly retention: RetentionOptions,
    private readonly logger: Logger,
  ) {}

  /** The job has ended and its clean-up is done: it is retired in its turn. */
  settled(job: RuntimeJob, now: number): void {
    this.ended.push(job);
    this.retire(now);
  }

  /** Retires the ended jobs beyond `retainedJobs` and those in memory for longer than `retainMs`. */
  retire(now: number): void {
    while (this.ended.length > 0) {
      const job = this.ended[0]!;
      if (this.ended.length <= this.retention.retainedJobs && now - (job.finishTime ?? now) < this.retention.retainMs)
        break;
      this.ended.shift();
      this.books.retire(job);
      this.numbering.forget([...job.maps, ...job.reduces].map((t) => t.id));
      this.logger.debug({ job: job.id }, 'job retired to the history');
    }
  }

  /** A job's status, tasks and attempts: from memory, or from the history once it has retired. */
  async record(jobId: string): Promise<JobHistoryEntry> {
    const job = this.books.job(jobId);
    if (job) return historyEntry(job);
    const entry = typeof jobId === 'string' ? await this.journal.history(jobId) : undefined;
    if (!entry)
      throw new MinimrError(
        'ENOJOB',
        `no job ${jobId} on this JobTracker or in its history (see \`minimr job list --all\`)`,
        { jobId },
      );
    return entry;
  }

  /** The jobs in memory; with `all`, the retired ones from the history too, in submission order. */
  async list(all: boolean): Promise<JobStatus[]> {
    const live = [...this.books.jobs()].map(jobStatus);
    if (!all) return live;
    const inMemory = new Set(live.map((s) => s.jobId));
    const retired = (await this.journal.historyStatuses()).filter((s) => !inMemory.has(s.jobId));
    return [...retired, ...live].sort((a, b) => a.submitTime - b.submitTime || (a.jobId < b.jobId ? -1 : 1));
  }

  /**
   * Up to `limit` ended jobs, newest first, older than `before` when given: those of the history,
   * with the ones still in memory as memory has them.
   */
  async finished(limit: number, before?: FinishedCursor): Promise<FinishedJobsPage> {
    const byId = new Map((await this.journal.finishedPage(limit + 1, before)).map((s) => [s.jobId, s]));
    for (const job of this.ended) {
      const s = jobStatus(job);
      if (!before || finishedBefore(s, before)) byId.set(s.jobId, s);
    }
    const newestFirst = [...byId.values()].sort((a, b) => (finishedBefore(a, cursorOf(b)) ? 1 : -1));
    const jobs = newestFirst.slice(0, limit);
    const last = jobs.at(-1);
    return {
      jobs,
      total: this.journal.historySize,
      ...(newestFirst.length > limit && last ? { older: cursorOf(last) } : {}),
    };
  }

  /** An attempt of a job that has left memory, from the history; undefined when it has none such. */
  async retiredAttempt(attemptId: string): Promise<RetiredAttempt | undefined> {
    const jobId = jobIdOfAttempt(attemptId);
    const entry = jobId === undefined || this.books.job(jobId) ? undefined : await this.journal.history(jobId);
    const attempt = entry?.attempts.find((a) => a.attemptId === attemptId);
    return entry && attempt ? { jobId: entry.status.jobId, owner: entry.status.user, attempt } : undefined;
  }
}
