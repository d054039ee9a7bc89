/**
 * The attempts the JobTracker told their workers to kill, until each worker confirms the attempt is
 * over: its `attempt-finished` report, which a worker sends for a killed attempt once its task process
 * has exited (or, for one whose report crossed the kill, once the process sent its last word), or the
 * worker's loss. The books end an attempt the moment it is killed; its process may still be running.
 * So do they one given up at the task expiry, whose worker is told to kill it only once it is back.
 *
 * A job writing to another store has its output aborted (or, after a success, cleaned up) only once
 * its killed attempts are confirmed stopped: a reduce killed as its job failed may be between starting
 * its S3 upload and recording it, and an abort that ran before it died would not see that upload
 * (issue 37: a failed job leaves no unfinished upload behind). Only such jobs' attempts are kept here,
 * and a job's entries go once its end has waited for them.
 */

interface PendingStop {
  readonly jobId: string;
  readonly workerId: string;
  readonly stopped: Promise<void>;
  readonly confirm: () => void;
}

export class AttemptStops {
  private readonly pending = new Map<string, PendingStop>();

  /**
   * The worker `workerId` was told to kill the job's attempt `attemptId`, or will be once it is heard
   * from again (an attempt given up while it was silent past the task expiry).
   */
  told(attemptId: string, jobId: string, workerId: string): void {
    if (this.pending.has(attemptId)) return;
    let confirm!: () => void;
    const stopped = new Promise<void>((resolve) => {
      confirm = resolve;
    });
    this.pending.set(attemptId, { jobId, workerId, stopped, confirm });
  }

  /** The attempt's worker reported it finished: its process will write nothing more. */
  confirmed(attemptId: string, workerId: string): void {
    const stop = this.pending.get(attemptId);
    // Only its own worker speaks for an attempt.
    if (!stop || stop.workerId !== workerId) return;
    this.pending.delete(attemptId);
    stop.confirm();
  }

  /** The worker is gone: nothing more will be heard of its attempts (it kills them when it loses us). */
  workerGone(workerId: string): void {
    for (const [attemptId, stop] of this.pending) {
      if (stop.workerId !== workerId) continue;
      this.pending.delete(attemptId);
      stop.confirm();
    }
  }

  /**
   * Resolves once every attempt of the job that its worker was told to kill is confirmed stopped, or
   * after `timeoutMs`, with the ids of those not confirmed by then; the job's entries are dropped.
   */
  async ofJob(jobId: string, timeoutMs: number): Promise<string[]> {
    const stops = [...this.pending].filter(([, stop]) => stop.jobId === jobId);
    if (stops.length === 0) return [];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    await Promise.race([Promise.all(stops.map(([, stop]) => stop.stopped)), timedOut]);
    clearTimeout(timer);
    const unconfirmed = stops.filter(([attemptId]) => this.pending.has(attemptId)).map(([attemptId]) => attemptId);
    for (const attemptId of unconfirmed) this.pending.delete(attemptId);
    return unconfirmed;
  }
}
