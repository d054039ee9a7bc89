/**
 * Keeps a benchmark from hanging on a job that can never finish: polls the JobTracker's job list
 * and kills (a) any job running longer than `jobTimeoutS` and (b) any unfinished job that has had
 * no attempt running for `stallS` seconds (e.g. a task whose memory request no worker can ever
 * grant). The kill makes the waiting `client.run` / `waitForCompletion` reject, so the benchmark
 * records the failure, with the reason this watchdog logged, instead of waiting forever.
 */
import type { JobClient, JobStatus } from '../../src/runtime/index.js';

export interface WatchdogOptions {
  jobTimeoutS: number;
  stallS: number;
  pollMs?: number;
  log: (message: string) => void;
}

export interface WatchdogKill {
  jobId: string;
  name: string;
  reason: string;
}

export class JobWatchdog {
  readonly kills: WatchdogKill[] = [];
  private readonly idleSince = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(
    private readonly client: JobClient,
    private readonly options: WatchdogOptions,
  ) {
    this.timer = setInterval(() => void this.tick(), options.pollMs ?? 2000);
    this.timer.unref();
  }

  /** The reason the watchdog killed `jobId`, if it did. */
  reasonFor(jobId: string): string | undefined {
    return this.kills.find((k) => k.jobId === jobId)?.reason;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const now = Date.now();
      const jobs = await this.client.list();
      for (const job of jobs) {
        if (job.state !== 'pending' && job.state !== 'running') {
          this.idleSince.delete(job.jobId);
          continue;
        }
        if (this.kills.some((k) => k.jobId === job.jobId)) continue;
        if ((now - job.submitTime) / 1000 > this.options.jobTimeoutS) {
          await this.kill(job, `running for over --job-timeout-s ${this.options.jobTimeoutS} s (${describe(job)})`);
          continue;
        }
        const attempts = await this.client.attempts(job.jobId);
        if (attempts.some((a) => a.state === 'running')) {
          this.idleSince.delete(job.jobId);
          continue;
        }
        const since = this.idleSince.get(job.jobId) ?? now;
        this.idleSince.set(job.jobId, since);
        if ((now - since) / 1000 >= this.options.stallS) {
          const info = await this.client.clusterInfo();
          const workers = info.workers
            .map((w) => `${w.workerId} ${w.memoryMb} MB, ${w.runningAttempts} running`)
            .join('; ');
          const launched = attempts.map((a) => `${a.kind} ${a.memoryMb} MB ${a.state}`).join(', ') || 'none';
          await this.kill(
            job,
            `stalled: no attempt running for ${this.options.stallS} s while ${describe(job)}; ` +
              `attempts so far: ${launched}; workers: ${workers}`,
          );
        }
      }
    } catch (err) {
      this.options.log(`watchdog: ${(err as Error).message}`);
    } finally {
      this.busy = false;
    }
  }

  private async kill(job: JobStatus, reason: string): Promise<void> {
    this.kills.push({ jobId: job.jobId, name: job.name, reason });
    this.options.log(`watchdog: killing ${job.jobId} (${job.name}): ${reason}`);
    await this.client
      .kill(job.jobId)
      .catch((err: unknown) => this.options.log(`watchdog: kill ${job.jobId} failed: ${(err as Error).message}`));
  }
}

function describe(s: JobStatus): string {
  return `${s.state}, maps ${s.mapsCompleted}/${s.mapsTotal}, reduces ${s.reducesCompleted}/${s.reducesTotal}`;
}
