/**
 * A job's output, committed as Hadoop's FileOutputCommitter does on the block store: each task's
 * part file renamed from its attempt's `_temporary` directory when the task succeeds, `_SUCCESS`
 * once every task has, and the clean-up when the job ends (the `_temporary` directory, or a failed
 * job's whole output), its profile recorded and its history written before its waiters hear of it.
 * A job replacing an output (`--overwrite`) does all this in its staging directory
 * (runtime-data's `outputWorkDir`), which replaces the output at the job's commit in one NameNode
 * step; a failed or killed one removes only its staging directory, the previous output untouched.
 * The core runs these steps on the job's own chain, one after another (carryOut's `later`).
 */
import { MinimrError } from '../../errors.js';
import type { TrackerCore } from './core.js';
import { historyEntry } from './job-history.js';
import { observationsOf } from './job-profile.js';
import { journaledSuccess } from './job-recovery.js';
import { outputWorkDir, partFileName, type RuntimeAttempt, type RuntimeJob } from './runtime-data.js';
import { partsToCommit, storeCommitterOf, writesToStore } from './store-output.js';

/**
 * How long after a job's end its store output is aborted again: a request a killed attempt's process
 * sent just before it died may reach the store after the first abort.
 */
const ABORT_AGAIN_AFTER_MS = 2000;
/** How long a job's end waits for its workers to confirm its killed attempts stopped (attempt-stops.ts). */
const STOPS_CONFIRMED_WITHIN_MS = 10_000;

export class JobCompletion {
  constructor(private readonly core: TrackerCore) {}

  async commitTaskOutput(attempt: RuntimeAttempt): Promise<void> {
    const task = attempt.task;
    const job = task.job;
    if (job.state !== 'running' && job.state !== 'committing') return;
    // Another store's part stays where its attempt wrote it until the job commits: it is only journaled.
    if (writesToStore(job.data.submission)) {
      this.core.journaled(this.core.journal.taskSucceeded(job.id, task.id, journaledSuccess(attempt, true)));
      return;
    }
    const out = outputWorkDir(job.id, job.data.submission);
    const part = partFileName(task.kind, task.index);
    try {
      await this.core.namenode.rename(`${out}/_temporary/${attempt.id}/${part}`, `${out}/${part}`);
      this.core.journaled(this.core.journal.taskSucceeded(job.id, task.id, journaledSuccess(attempt, true)));
    } catch (err) {
      // Not awaited: the failure's clean-up runs on this same chain, after this step.
      void this.core.carryOut(
        this.core.books.failJob(job, this.core.clock(), {
          code: 'EJOBFAILED',
          message: `cannot commit the output of ${attempt.id}: ${(err as Error).message}`,
        }),
      );
    }
  }

  async commitJob(job: RuntimeJob): Promise<void> {
    if (job.state !== 'committing') return;
    const out = job.data.submission.outputPath;
    const workDir = outputWorkDir(job.id, job.data.submission);
    try {
      if (writesToStore(job.data.submission)) {
        const committer = await storeCommitterOf(job.id, job.data.submission);
        await committer.commitJob(partsToCommit(job), { cancelled: () => job.state !== 'committing' });
        void this.core.carryOut(this.core.books.jobCommitted(job, this.core.clock()));
        return;
      }
      // The marker belongs to the job's owner, like the rest of its output.
      const owner = this.core.namenode.callerFor(job.data.owner);
      if (workDir === out || (await this.exists(workDir))) {
        await this.core.namenode.create(`${workDir}/_SUCCESS`, { overwrite: true, replication: 1 }, owner);
        await this.core.namenode.complete(`${workDir}/_SUCCESS`, undefined, owner);
        // The point of no return of a job replacing an output: before it the old output is whole, after it the new.
        if (workDir !== out && job.state === 'committing')
          await this.core.namenode.renameReplacing(workDir, out, owner);
      } else if (!(await this.exists(`${out}/_SUCCESS`))) {
        // No staging directory: a JobTracker that died after the replacement committed it, unless it was removed.
        throw new MinimrError('ENOENT', `the staging directory ${workDir} is gone`, { path: workDir });
      }
    } catch (err) {
      void this.core.carryOut(
        this.core.books.failJob(job, this.core.clock(), {
          code: 'EJOBFAILED',
          message: `cannot commit job output: ${(err as Error).message}`,
        }),
      );
      return;
    }
    void this.core.carryOut(this.core.books.jobCommitted(job, this.core.clock()));
  }

  async jobEnded(job: RuntimeJob): Promise<void> {
    const ended =
      job.state === 'succeeded'
        ? { state: job.state }
        : { state: job.state as 'failed' | 'killed', ...(job.error ? { error: job.error } : {}) };
    await this.core.journal.jobEnding(job.id, ended).catch((err: Error) => this.core.journaled(Promise.reject(err)));
    for (const worker of this.core.books.liveWorkers()) worker.data.commands['cleanup-job']({ jobId: job.id });
    // Before the job is reported done: a client that runs the same job again right away finds its profile.
    if (job.state === 'succeeded') await this.recordProfile(job);
    this.core.copier.jobEnded(job.id);
    const out = job.data.submission.outputPath;
    if (writesToStore(job.data.submission)) {
      // Its committer drops what the job wrote: nothing visible, no upload left open. After a success,
      // what attempts still running at the commit left (a speculative loser's upload) goes.
      if (job.state !== 'succeeded') await this.abortStoreOutput(job);
      else await this.cleanUpStoreOutput(job);
    } else {
      // A failed or killed job's partial output is of no use and would block a re-run; one that was
      // to replace an output has only its staging directory to remove (or nothing, if it committed).
      await this.removeOutput(job, job.state === 'succeeded' ? `${out}/_temporary` : this.discardable(job));
      // An attempt still writing when the commit replaced the output may have made the staging directory again.
      if (job.state === 'succeeded' && this.discardable(job) !== out)
        await this.removeOutput(job, this.discardable(job));
    }
    job.data.settled = true;
    const entry = historyEntry(job);
    const status = entry.status;
    // Written before the client hears of the end: an ended job never runs again after a restart.
    await this.core.journal.jobEnded(entry).catch((err: Error) => this.core.journaled(Promise.reject(err)));
    this.core.metrics.jobEnded(job.state);
    this.core.logger.info({ job: job.id, state: job.state, error: job.error?.message }, 'job finished');
    this.core.jobSettled(job.id, status);
    this.core.history.settled(job, this.core.clock());
  }

  /**
   * What the job's successful attempts measured joins the profile of its name; a failure to store it is only logged.
   */
  async recordProfile(job: RuntimeJob): Promise<void> {
    try {
      const profile = await this.core.profiles.record(job.name, observationsOf(job), this.core.clock(), job.data.owner);
      this.core.logger.debug({ job: job.id, name: job.name, runs: profile.runs }, 'profile updated');
    } catch (err) {
      this.core.logger.warn(
        { job: job.id, name: job.name, err: (err as Error).message },
        "cannot store the job's profile",
      );
    }
  }

  /** What a job that did not succeed leaves to be removed: its output, or its staging directory. */
  discardable(job: RuntimeJob): string {
    return outputWorkDir(job.id, job.data.submission);
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await this.core.namenode.stat(path);
      return true;
    } catch (err) {
      if (err instanceof MinimrError && err.code === 'ENOENT') return false;
      throw err;
    }
  }

  async removeOutput(job: RuntimeJob, path: string): Promise<void> {
    try {
      await this.core.namenode.remove(path, { recursive: true });
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT'))
        this.core.logger.warn({ job: job.id, err: (err as Error).message }, 'output cleanup failed');
    }
  }

  /** What a job that ended while its commit ran had written: removed, or its store's committer aborts it. */
  async discardOutput(job: RuntimeJob): Promise<void> {
    if (writesToStore(job.data.submission)) await this.abortStoreOutput(job);
    else await this.removeOutput(job, this.discardable(job));
  }

  /**
   * Waits until the workers confirmed the job's killed attempts stopped (or a bound passed): a task
   * process killed as its job ended may be between starting its part's S3 upload and recording it,
   * and what it starts before it dies is the job's to abort.
   */
  private async attemptsStopped(job: RuntimeJob): Promise<void> {
    const unconfirmed = await this.core.attemptStops.ofJob(job.id, STOPS_CONFIRMED_WITHIN_MS);
    if (unconfirmed.length > 0)
      this.core.logger.warn(
        { job: job.id, attempts: unconfirmed, waitedMs: STOPS_CONFIRMED_WITHIN_MS },
        'killed attempts not confirmed stopped: the output is cleaned up without waiting longer',
      );
  }

  /**
   * A job writing to another store that did not succeed: its committer's abort once its killed
   * attempts are confirmed stopped, and again after a pause, when the store has carried out any
   * request a dying process had sent (the first abort keeps the committer's records for it); the
   * second also retries a first that failed (a store's bounded retries spent on a passing outage).
   * A failure of the last is logged.
   */
  private async abortStoreOutput(job: RuntimeJob): Promise<void> {
    await this.attemptsStopped(job);
    let failure: unknown;
    for (const pauseMs of [0, ABORT_AGAIN_AFTER_MS]) {
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      try {
        await (await storeCommitterOf(job.id, job.data.submission)).abortJob({ keepRecords: pauseMs === 0 });
        failure = undefined;
      } catch (err) {
        failure = err;
      }
    }
    if (failure)
      this.core.logger.warn(
        { job: job.id, output: job.data.submission.outputPath, err: (failure as Error).message },
        "cannot abort the job's output: what it staged may be left",
      );
  }

  /**
   * A job writing to another store that succeeded: its committer's cleanup of what attempts still
   * running at the commit left, once they are confirmed stopped (the client, told next, finds only the
   * output), and once more after a pause in the background (a request a dying process sent may reach
   * the store after the first). A failure is logged: the output itself is whole.
   */
  private async cleanUpStoreOutput(job: RuntimeJob): Promise<void> {
    await this.attemptsStopped(job);
    const cleanUp = async (): Promise<void> => {
      try {
        await (await storeCommitterOf(job.id, job.data.submission)).cleanupJob();
      } catch (err) {
        this.core.logger.warn(
          { job: job.id, output: job.data.submission.outputPath, err: (err as Error).message },
          "cannot clean up after the job's commit: a killed attempt's upload or staging may be left",
        );
      }
    };
    await cleanUp();
    setTimeout(() => void cleanUp(), ABORT_AGAIN_AFTER_MS).unref();
  }

  async removeAttemptOutput(attempt: RuntimeAttempt): Promise<void> {
    const job = attempt.task.job;
    if (attempt.task.kind === 'map' && job.reduces.length > 0) return; // the worker removes its own map output
    // Another store's attempt parts go at the job's commit or abort, with every other attempt's (store-output.ts).
    if (writesToStore(job.data.submission)) return;
    try {
      await this.core.namenode.remove(`${outputWorkDir(job.id, job.data.submission)}/_temporary/${attempt.id}`, {
        recursive: true,
      });
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT'))
        this.core.logger.warn({ attempt: attempt.id, err: (err as Error).message }, 'cannot remove attempt output');
    }
  }
}
