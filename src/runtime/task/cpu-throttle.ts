import { setTimeout as sleep } from 'node:timers/promises';

/** Longest stretch of work between two checks of the reduce loop. */
const PACE_EVERY_MS = 20;

/**
 * What a throttled task stretches (`minimr worker --cpu-throttle-basis`).
 * - 'working': all of its working time, waits for a core included.
 * - 'cpu': its CPU time only.
 */
export type ThrottleBasis = 'working' | 'cpu';

export const THROTTLE_BASES: readonly ThrottleBasis[] = ['working', 'cpu'];

/** Where a throttle reads the time; injected in tests. */
export interface ThrottleClock {
  /** Monotonic wall time, ms. */
  nowMs(): number;
  /** CPU time this process has used (user + system, every thread), ms. */
  cpuMs(): number;
}

const processClock: ThrottleClock = {
  nowMs: () => performance.now(),
  cpuMs: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  },
};

/**
 * Makes a task process slower on purpose, for experiments (`minimr worker --cpu-throttle F`,
 * LocalCluster `throttleOf`). At points of the task's main loop (every ~20 ms of a map's records;
 * after the shuffle and every ~20 ms of a reduce's grouping loop; at the end) it sleeps, so the task
 * takes about F times as long, while the worker process (heartbeats, shuffle serving) runs at full
 * speed. The sleep is asynchronous: I/O in flight (spill writes) goes on during it.
 *
 * Two questions an experiment can ask, hence two bases:
 * - **Heterogeneous workers** ('working', the default): "this worker is F times slower than the
 *   others". The task sleeps (F - 1) x the time it worked since the previous point. Working time,
 *   not CPU time: workers of a local cluster share the machine's cores, and with more busy task
 *   processes than cores a task's CPU time is only a part of its time, so stretching CPU time alone
 *   would slow a "2x slower" worker by much less than 2x. Stretched working time makes it 2x slower
 *   whatever else runs; but a wait for a core is stretched F-fold too, so contention between the
 *   workers grows with F instead of fading.
 * - **Workers with CPUs of their own** ('cpu'): "each worker has a core F times slower than this
 *   machine's, not shared with the others". The task sleeps until F x the CPU time it used since the
 *   previous point has passed; time it spent waiting for a core counts toward that. As long as the
 *   busy tasks need no more than F x this machine's cores, each runs as on a core of its own, which
 *   is what the simulator's processor-sharing model (hosts with `cores`) assumes; beyond that, they
 *   share. This is the basis for runs compared with a simulated cluster of separate machines
 *   (bench:yarn-me-real). Only the task's own work is stretched: starting its process, the
 *   worker's heartbeats and its serving of blocks and map outputs still share the machine, which
 *   made one MR-cluster slow another in bench:fawkes; a worker CPU quota (cpu-quota.ts) holds all
 *   of a worker's work, and bench:fawkes's real part uses that.
 */
export class CpuThrottle {
  /** Total time slept, ms (the THROTTLE_SLEEP_MS counter). */
  sleptMs = 0;
  private workingSince: number;
  private cpuSince: number;

  constructor(
    private readonly factor: number,
    private readonly basis: ThrottleBasis = 'working',
    private readonly clock: ThrottleClock = processClock,
  ) {
    this.workingSince = clock.nowMs();
    this.cpuSince = basis === 'cpu' ? clock.cpuMs() : 0;
  }

  /** Whether the task worked long enough since the last pace for another to be worth it. */
  due(): boolean {
    return this.factor > 1 && this.clock.nowMs() - this.workingSince >= PACE_EVERY_MS;
  }

  /** Sleeps what the basis says is owed since the last call. */
  async pace(): Promise<void> {
    if (this.factor <= 1) return;
    const now = this.clock.nowMs();
    const ms = this.owedMs(now);
    if (ms >= 1) {
      await sleep(ms);
      this.sleptMs += this.clock.nowMs() - now;
    }
    this.workingSince = this.clock.nowMs();
    if (this.basis === 'cpu') this.cpuSince = this.clock.cpuMs();
  }

  /** How long to sleep now, ms. */
  owedMs(now: number = this.clock.nowMs()): number {
    const elapsed = now - this.workingSince;
    if (this.basis === 'working') return elapsed * (this.factor - 1);
    return this.factor * (this.clock.cpuMs() - this.cpuSince) - elapsed;
  }
}
