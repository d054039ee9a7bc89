/**
 * The JobTracker's clock-driven duties, every half heartbeat: silent workers are judged, ended jobs
 * retire to the history, input-placement windows close, MR-clusters are balanced.
 *
 * A silent worker whose connection is still open (a stopped process, a long GC, a stalled VM) is
 * judged in steps, as Hadoop's: past the heartbeat timeout it is suspect (no new work, new blocks
 * go elsewhere); past the task expiry its attempts run again elsewhere; past the datanode expiry it
 * is lost and its blocks are re-replicated. A dropped connection is a dead process: the worker
 * service loses it at once.
 */
import type { TrackerCore } from './core.js';

/** How long a connected worker may be silent before each step (ms). */
export interface SilenceLimits {
  /** Suspect: no new attempts, no new blocks. */
  readonly workerTimeoutMs: number;
  /** Its attempts are lost and run elsewhere. */
  readonly taskExpiryMs: number;
  /** Lost: its blocks are re-replicated. */
  readonly datanodeExpiryMs: number;
}

export class Liveness {
  private timer?: NodeJS.Timeout;
  /** When the check last ran (performance.now()), to tell a stalled tracker from silent workers. */
  private lastCheck?: number;

  constructor(
    private readonly core: TrackerCore,
    private readonly limits: SilenceLimits,
  ) {}

  get intervalMs(): number {
    return Math.max(50, Math.floor(this.core.heartbeatMs / 2));
  }

  start(): void {
    this.timer = setInterval(() => this.check(), this.intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Whether this tick came late enough that the tracker itself was stalled (CPU starvation, a long
   * GC, a synchronous step). Node runs due timers before it reads sockets, so after a stall the
   * check would see every worker's last heartbeat as old while their fresh heartbeats still wait
   * unread: a stalled tracker would declare its whole cluster lost at once. Such a tick passes no
   * verdict; the next one, on time, judges with the heartbeats read.
   */
  private tickLate(): boolean {
    const tick = performance.now();
    const previous = this.lastCheck;
    this.lastCheck = tick;
    return previous !== undefined && tick - previous > 2 * this.intervalMs;
  }

  private check(): void {
    const core = this.core;
    const now = core.clock();
    core.history.retire(now);
    if (core.recovery) core.schedule({ kind: 'tick' });
    if (this.tickLate()) {
      core.logger.debug('liveness check came late (the JobTracker was stalled): no worker judged on this tick');
    } else {
      const limits = this.limits;
      for (const worker of core.books.liveWorkers()) {
        const silentMs = now - worker.data.lastHeartbeat;
        if (silentMs > limits.datanodeExpiryMs) {
          core.workerLost(
            worker,
            `no heartbeat for ${silentMs} ms (the datanode expiry is ${limits.datanodeExpiryMs} ms)`,
          );
          worker.data.peer.terminate();
          continue;
        }
        if (silentMs > limits.workerTimeoutMs) core.workerSuspect(worker, silentMs);
        if (silentMs > limits.taskExpiryMs) core.workerTasksExpired(worker, silentMs);
      }
    }
    for (const job of core.books.jobs()) {
      const placement = job.inputPlacement;
      if (!placement || !job.placementOpen) continue;
      if (core.books.isActive(job) && now - job.submitTime < placement.windowMs) continue;
      void core.carryOut(core.books.closePlacementWindow(job));
    }
    core.mrc.tick(now);
  }
}
