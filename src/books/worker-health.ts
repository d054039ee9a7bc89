/**
 * Which workers the books stop trusting, and the rules of it (Hadoop's, in one place for both engines):
 *
 * - Per job (MapReduce's `mapreduce.job.maxtaskfailures.per.tracker`, 3): a worker on which
 *   `jobBlacklistFailures` attempts of a job failed or vanished is blacklisted for that job: every
 *   task of the job lists it among the workers it failed on, so policies place the job's tasks
 *   elsewhere whenever another worker can take them.
 * - Cluster-wide (Hadoop 1's graylisting): a worker blacklisted by `graylistJobs` jobs, or whose
 *   last `graylistConsecutiveFailures` attempts all failed or vanished, whatever their jobs, gets
 *   no new attempts for `graylistMs`: the snapshot shows it without free slots. Never more than
 *   `maxGraylistedFraction` of the live workers at once (Hadoop's cap), so a cluster-wide fault
 *   (a bad job, not bad workers) cannot empty the cluster.
 *
 * A failure is an attempt the worker ran that failed (the task's own code included: a worker cannot
 * be told apart from a bad task by one failure, which is why it takes several), one the worker was
 * told to run and never reported (vanished), and a map whose output its reducers could not fetch.
 * A success clears the worker's run of consecutive failures. Counts are kept by worker id, so
 * registering again clears nothing.
 */

export interface WorkerHealthOptions {
  readonly jobBlacklistFailures?: number;
  readonly graylistJobs?: number;
  readonly graylistConsecutiveFailures?: number;
  readonly graylistMs?: number;
  readonly maxGraylistedFraction?: number;
}

export const DEFAULT_WORKER_HEALTH: Required<WorkerHealthOptions> = {
  jobBlacklistFailures: 3,
  graylistJobs: 2,
  graylistConsecutiveFailures: 6,
  graylistMs: 60 * 60_000,
  maxGraylistedFraction: 0.5,
};

export interface HealthChange {
  /** The worker was blacklisted for the job just now. */
  readonly blacklisted: boolean;
  /** The worker was graylisted cluster-wide just now. */
  readonly graylisted: boolean;
}

export class WorkerHealth {
  readonly options: Required<WorkerHealthOptions>;
  /** job -> worker -> failures of that job's attempts on it. */
  private readonly jobFailures = new Map<string, Map<string, number>>();
  /** worker -> jobs that blacklisted it. */
  private readonly blacklistedBy = new Map<string, Set<string>>();
  private readonly consecutive = new Map<string, number>();
  private readonly graylistedUntil = new Map<string, number>();

  constructor(options: WorkerHealthOptions = {}) {
    this.options = { ...DEFAULT_WORKER_HEALTH, ...options };
  }

  /** An attempt of `jobId` failed or vanished on `workerId`; `liveWorkers` bounds the graylist. */
  failure(jobId: string, workerId: string, now: number, liveWorkers: number): HealthChange {
    const o = this.options;
    let perWorker = this.jobFailures.get(jobId);
    if (!perWorker) this.jobFailures.set(jobId, (perWorker = new Map()));
    const count = (perWorker.get(workerId) ?? 0) + 1;
    perWorker.set(workerId, count);
    let blacklisted = false;
    if (count === o.jobBlacklistFailures) {
      let jobs = this.blacklistedBy.get(workerId);
      if (!jobs) this.blacklistedBy.set(workerId, (jobs = new Set()));
      jobs.add(jobId);
      blacklisted = true;
    }
    const run = (this.consecutive.get(workerId) ?? 0) + 1;
    this.consecutive.set(workerId, run);
    let graylisted = false;
    const deserves =
      run >= o.graylistConsecutiveFailures || (this.blacklistedBy.get(workerId)?.size ?? 0) >= o.graylistJobs;
    if (
      deserves &&
      !this.isGraylisted(workerId) &&
      this.graylistedUntil.size + 1 <= Math.floor(liveWorkers * o.maxGraylistedFraction)
    ) {
      this.graylistedUntil.set(workerId, now + o.graylistMs);
      this.consecutive.set(workerId, 0);
      graylisted = true;
    }
    return { blacklisted, graylisted };
  }

  success(workerId: string): void {
    this.consecutive.set(workerId, 0);
  }

  isBlacklisted(jobId: string, workerId: string): boolean {
    return this.blacklistedBy.get(workerId)?.has(jobId) ?? false;
  }

  /** Workers the job blacklisted. */
  blacklistOf(jobId: string): string[] {
    return [...this.blacklistedBy].filter(([, jobs]) => jobs.has(jobId)).map(([workerId]) => workerId);
  }

  /** Until `expire` passes its end: the books' views change only at a snapshot, never between. */
  isGraylisted(workerId: string): boolean {
    return this.graylistedUntil.has(workerId);
  }

  /** Workers whose graylisting ended by `now` (each returned once). */
  expire(now: number): string[] {
    const ended: string[] = [];
    for (const [workerId, until] of this.graylistedUntil) {
      if (until <= now) {
        this.graylistedUntil.delete(workerId);
        ended.push(workerId);
      }
    }
    return ended;
  }

  /** A finished job's per-worker counts are of no more use; the blacklists it made still count toward graylisting. */
  jobEnded(jobId: string): void {
    this.jobFailures.delete(jobId);
  }
}
