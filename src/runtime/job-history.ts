/**
 * Job retirement and the history (Hadoop 1's `mapred.jobtracker.retirejob.interval` and
 * `completeuserjobs.maximum`): an ended job stays in the JobTracker's memory, with every task and
 * attempt, for `retainMs` or until `retainedJobs` newer ones have ended; then it leaves the books
 * (`Books.retire`). Its final status and attempts were written to the journal's history when it
 * ended (job-journal.ts), so `job status`, `job attempts` and `job list --all` still answer for it.
 */
import type { Books } from '../books/index.js';
import { MinimrError } from '../errors.js';
import type { Logger } from '../log.js';
import { attemptSummaries, jobStatus, type RuntimeData, type RuntimeJob } from './job-in-progress.js';
import type { JobHistoryEntry, JobJournal } from './job-journal.js';
import type { AttemptNumbering } from './job-recovery.js';
import type { JobStatus } from './protocol.js';

export interface RetentionOptions {
  readonly retainedJobs: number;
  readonly retainMs: number;
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
      if (this.ended.length <= this.retention.retainedJobs && now - (job.finishTime ?? now) < this.retention.retainMs) break;
      this.ended.shift();
      this.books.retire(job);
      this.numbering.forget([...job.maps, ...job.reduces].map((t) => t.id));
      this.logger.debug({ job: job.id }, 'job retired to the history');
    }
  }

  /** A job's status and attempts: from memory, or from the history once it has retired. */
  async record(jobId: string): Promise<JobHistoryEntry> {
    const job = this.books.job(jobId);
    if (job) return { status: jobStatus(job), attempts: attemptSummaries(job) };
    const entry = typeof jobId === 'string' ? await this.journal.history(jobId) : undefined;
    if (!entry) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker or in its history (see \`minimr job list --all\`)`, { jobId });
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
}
