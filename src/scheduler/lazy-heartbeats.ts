/**
 * DSS's lazy node heartbeats (`lazyHeartbeats`, part of `compat: 'dss'`). DSS, the YARN-ME paper's
 * simulator, does not heartbeat every node every second: after a heartbeat that allocated nothing a
 * node stays silent until something wakes it (events/yarn/yarn.py, should_generate_next_heartbeat
 * and the generate_next_heartbeat calls). Its own rule, not YARN's: a silent node keeps a
 * reservation for a job that has since been served elsewhere until it wakes, and serves no one
 * meanwhile. Emulated so that `compat: 'dss'` runs as DSS runs.
 *
 * After a heartbeat a node goes silent when the queue is empty; when it allocated nothing and is
 * reserved; or when it allocated nothing, is not reserved, and the queue's head is the one it saw at
 * its last such heartbeat. It wakes, and heartbeats again at its next phase point, when a job arrives
 * or an ApplicationMaster starts (every node), or a container starts or ends on it.
 */
import type { WorkerView } from './types.js';

/** Inserts `t` into the ascending `times`. */
function insertSorted(times: number[], t: number): void {
  let i = times.length;
  while (i > 0 && times[i - 1]! > t) i--;
  times.splice(i, 0, t);
}

/** Whether ascending `times` holds one in the open interval (after, before). */
function anyBetween(times: readonly number[], after: number, before: number): boolean {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo < times.length && times[lo]! < before;
}

function usedSlots(w: WorkerView): number {
  return w.mapSlots - w.freeMapSlots + (w.reduceSlots - w.freeReduceSlots);
}

/** What a heartbeat came to, for the rule that silences a node. */
export interface HeartbeatOutcome {
  readonly allocated: boolean;
  readonly reserved: boolean;
  /** The node was reserved and its job's container did not fit (DSS ends that heartbeat at once). */
  readonly reservedFailed: boolean;
  /** The first job of the queue after the heartbeat; undefined when the queue is empty. */
  readonly headJobId: string | undefined;
}

export class LazyHeartbeats {
  /**
   * Silent nodes: since when, the slots in use then (fewer later: a container ended there), and when
   * that was first seen.
   */
  private readonly silent = new Map<
    string,
    { readonly sinceMs: number; readonly usedSlots: number; endedMs?: number }
  >();
  /** The head of the queue each node saw at its last heartbeat that allocated nothing. */
  private readonly lastHead = new Map<string, string>();
  private readonly arrivals: number[] = [];
  private readonly amStartTimes: number[] = [];
  private readonly startsByNode = new Map<string, number[]>();

  /** A job arrived (submitted) at `submitMs`. */
  jobArrived(submitMs: number): void {
    insertSorted(this.arrivals, submitMs);
  }

  /** An ApplicationMaster starts at `runsFromMs`. */
  amStarts(runsFromMs: number): void {
    insertSorted(this.amStartTimes, runsFromMs);
  }

  /**
   * A container starts on `nodeId` at `atMs` (a task's launch through its AM's heartbeat, an AM's
   * start), or one that is not a task attempt ends there (an AM released with its job).
   */
  containerEvent(nodeId: string, atMs: number): void {
    const times = this.startsByNode.get(nodeId);
    if (times) insertSorted(times, atMs);
    else this.startsByNode.set(nodeId, [atMs]);
  }

  /** Whether a container allocated on the node has yet to start (DSS: the node's allocated containers). */
  private startsLater(nodeId: string, now: number): boolean {
    const times = this.startsByNode.get(nodeId);
    return times !== undefined && times.length > 0 && times[times.length - 1]! > now;
  }

  /**
   * Notes when containers ended on silent nodes, from a call at `now` that is not a heartbeat (an
   * attempt ending is one): a node woken at `now` heartbeats at its first phase point after it, as
   * in DSS, not at one falling at `now` itself.
   */
  noteEnds(workerById: (id: string) => WorkerView | undefined, now: number): void {
    for (const [id, quiet] of this.silent) {
      if (quiet.endedMs !== undefined) continue;
      const w = workerById(id);
      if (w && usedSlots(w) < quiet.usedSlots) quiet.endedMs = now;
    }
  }

  /** Whether a silent node has something coming that will wake it (a container starting or an AM let go). */
  anyWaking(): boolean {
    for (const [id, quiet] of this.silent) {
      if (quiet.endedMs !== undefined) return true;
      const times = this.startsByNode.get(id);
      if (times !== undefined && times.length > 0 && times[times.length - 1]! > quiet.sinceMs) return true;
    }
    return false;
  }

  /** Whether the node heartbeats at `now`: it is not silent, or something woke it since it went silent. */
  heartbeats(worker: WorkerView, now: number): boolean {
    const quiet = this.silent.get(worker.id);
    if (!quiet) return true;
    const since = quiet.sinceMs;
    const starts = this.startsByNode.get(worker.id);
    const ended = quiet.endedMs !== undefined ? quiet.endedMs < now : usedSlots(worker) < quiet.usedSlots;
    const woken =
      ended ||
      anyBetween(this.arrivals, since, now) ||
      anyBetween(this.amStartTimes, since, now) ||
      (starts !== undefined && anyBetween(starts, since, now));
    if (!woken) return false;
    this.silent.delete(worker.id);
    if (starts) {
      // Starts up to now have woken it: keep the later ones only.
      let i = 0;
      while (i < starts.length && starts[i]! < now) i++;
      starts.splice(0, i);
    }
    return true;
  }

  /**
   * After the node's heartbeat at `now`: DSS's rule for whether it heartbeats again. It goes on while
   * containers allocated on it have yet to start, unless its reserving job's container did not fit.
   */
  after(worker: WorkerView, now: number, outcome: HeartbeatOutcome): void {
    const goSilent = () => this.silent.set(worker.id, { sinceMs: now, usedSlots: usedSlots(worker) });
    const allocated = outcome.allocated || (!outcome.reservedFailed && this.startsLater(worker.id, now));
    if (outcome.headJobId === undefined) {
      this.lastHead.delete(worker.id);
      goSilent();
    } else if (allocated) {
      this.lastHead.delete(worker.id);
    } else if (outcome.reserved) {
      this.lastHead.delete(worker.id);
      goSilent();
    } else if (this.lastHead.get(worker.id) !== outcome.headJobId) {
      this.lastHead.set(worker.id, outcome.headJobId);
    } else goSilent();
  }
}
