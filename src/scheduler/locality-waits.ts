/**
 * Delay scheduling's memory (Zaharia et al., EuroSys 2010, Algorithm 2's `j.wait` and `j.level`),
 * shared by FAIR and FIFO: for each job, how long it has skipped free slots for lack of a
 * well-placed task, kept between policy calls from the snapshots' times alone. A job skipped in
 * one call (it declined a slot) has waited the time until the next call; a call in which it was
 * not offered a slot, or took one, adds nothing.
 */
import type { ClusterSnapshot } from './types.js';

export interface LocalityWait {
  /** Locality level of its last launch with a home: 0 node, 1 rack, 2 off-rack. */
  level: 0 | 1 | 2;
  /** Time spent skipping slots since that launch, summed over calls at which it was skipped. */
  waitMs: number;
  /** Skipped at least one slot in the current call. */
  skipped: boolean;
}

export class LocalityWaits {
  private readonly waits = new Map<string, LocalityWait>();
  private lastNow: number | undefined;

  /** First in each call: jobs skipped in the last call have waited since; jobs gone are forgotten. */
  advance(snapshot: ClusterSnapshot): void {
    const elapsed = this.lastNow === undefined ? 0 : Math.max(0, snapshot.now - this.lastNow);
    this.lastNow = snapshot.now;
    const present = new Set(snapshot.jobs.map((j) => j.id));
    for (const [id, wait] of this.waits) {
      if (!present.has(id)) {
        this.waits.delete(id);
        continue;
      }
      if (wait.skipped) wait.waitMs += elapsed;
      wait.skipped = false;
    }
  }

  /** The job's wait, made (level 0, nothing waited) if it has none. */
  of(jobId: string): LocalityWait {
    let wait = this.waits.get(jobId);
    if (!wait) {
      wait = { level: 0, waitMs: 0, skipped: false };
      this.waits.set(jobId, wait);
    }
    return wait;
  }

  /** The job's wait if it has one, without making it. */
  peek(jobId: string): Readonly<LocalityWait> | undefined {
    return this.waits.get(jobId);
  }

  /** A launch at `level` ends the job's wait. */
  launched(jobId: string, level: 0 | 1 | 2): void {
    const wait = this.of(jobId);
    wait.level = level;
    wait.waitMs = 0;
    wait.skipped = false;
  }
}
