import { setTimeout as sleep } from 'node:timers/promises';

/** Longest stretch of work between two checks of the reduce loop. */
const PACE_EVERY_MS = 20;

/**
 * Makes a task process slower on purpose, for experiments with heterogeneous workers (`minimr worker
 * --cpu-throttle F`, LocalCluster `throttleOf`). At points of the task's main loop (after each input
 * batch of a map; after the shuffle and every ~20 ms of a reduce's grouping loop; at the end) it
 * sleeps (F - 1) times the time the task worked since the previous point, so the task takes about
 * F times as long, as on a machine F times slower, while the worker process (heartbeats, shuffle
 * serving) runs at full speed.
 *
 * Why working time and not CPU time (process.cpuUsage): workers of a local cluster share the
 * machine's cores, and with more busy task processes than cores a task's CPU time is only a part of
 * its time (the rest is waiting for a core, or for I/O), so stretching CPU time alone would slow a
 * "2x slower" worker by much less than 2x. Stretching all of its working time makes it 2x slower
 * whatever else runs. The sleep is asynchronous: I/O in flight (spill writes) goes on during it.
 */
export class CpuThrottle {
  /** Total time slept, ms (the THROTTLE_SLEEP_MS counter). */
  sleptMs = 0;
  private workingSince = performance.now();

  constructor(private readonly factor: number) {}

  /** Whether the task worked long enough since the last pace for another to be worth it. */
  due(): boolean {
    return this.factor > 1 && performance.now() - this.workingSince >= PACE_EVERY_MS;
  }

  /** Sleeps (factor - 1) x the time worked since the last call. */
  async pace(): Promise<void> {
    if (this.factor <= 1) return;
    const now = performance.now();
    const ms = (now - this.workingSince) * (this.factor - 1);
    if (ms >= 1) {
      await sleep(ms);
      this.sleptMs += performance.now() - now;
    }
    this.workingSince = performance.now();
  }
}
