import { setTimeout as sleep } from 'node:timers/promises';

/** Longest stretch of work between two checks of the reduce loop. */
const PACE_EVERY_MS = 20;

/**
 * Makes a task process slower on purpose, for experiments with heterogeneous workers (`minimr worker
 * --cpu-throttle F`, LocalCluster `throttleOf`). At points of the task's main loop (after each input
 * batch of a map; after the shuffle and every ~20 ms of a reduce's grouping loop; at the end) it reads
 * the CPU time the process used since the last such point (process.cpuUsage: user + system, every
 * thread of the process, so compression on the thread pool counts too) and sleeps (F - 1) times that.
 * The task's work thus takes about F times as long, as on a CPU F times slower, while the worker
 * process (heartbeats, shuffle serving) runs at full speed. The sleep is asynchronous, so I/O in
 * flight (spill writes, fetches) goes on during it, as it would on a slow CPU.
 */
export class CpuThrottle {
  /** Total time slept, ms (the THROTTLE_SLEEP_MS counter). */
  sleptMs = 0;
  private last = process.cpuUsage();
  private lastPace = performance.now();

  constructor(private readonly factor: number) {}

  /** Whether enough wall time passed since the last pace for another to be worth it. */
  due(): boolean {
    return this.factor > 1 && performance.now() - this.lastPace >= PACE_EVERY_MS;
  }

  /** Sleeps (factor - 1) x the CPU time used since the last call. */
  async pace(): Promise<void> {
    if (this.factor <= 1) return;
    const now = process.cpuUsage();
    const cpuMs = (now.user - this.last.user + now.system - this.last.system) / 1000;
    this.last = now;
    const ms = cpuMs * (this.factor - 1);
    if (ms >= 1) {
      const started = performance.now();
      await sleep(ms);
      this.sleptMs += performance.now() - started;
    }
    // CPU used during the sleep (background compression, I/O threads) is charged at the next call.
    this.lastPace = performance.now();
  }
}
