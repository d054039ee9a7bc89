/**
 * Speculative execution, as Hadoop's LATE (Zaharia et al., "Improving MapReduce Performance in
 * Heterogeneous Environments", OSDI 2008): a task whose attempt runs on a slow worker gets a backup
 * attempt on a fast one, the first of the two to finish is the task's, and the other is killed. The
 * books run it (`Books.speculate`), so the JobTracker and the simulator speculate by the same rule;
 * this file holds its parts that are plain arithmetic.
 *
 * The rule, at each look (every `intervalMs`):
 * - A running attempt's progress rate is its progress over the time it has run, and its time left
 *   `(1 - progress) / rate` (LATE's estimate). An attempt that has reported no progress yet has no
 *   estimate and is not judged (as Hadoop 2's estimators): a task process starting on a loaded machine
 *   reports none for a while, and a backup then would only load it more.
 * - It is a candidate when its job speculates (`job.speculative`, on by default as in Hadoop), it has
 *   run `minRuntimeMs`, its task has no other running attempt, it is not elastic (a YARN-ME grant is
 *   slow by its memory, not by its worker), its job has no pending task of its kind (new work first,
 *   as Hadoop's JobInProgress hands out speculative tasks only when none is left to start), and its
 *   time left is more than a fresh copy would take: the mean run of its job's done tasks of its kind
 *   (before any is done, the shortest projected run of the running ones). That test is Hadoop 2's
 *   DefaultSpeculator's (a backup only when the replacement would end first); LATE's SlowTaskThreshold,
 *   the 25th percentile of progress rates, never fires when a quarter or more of the slots are slow,
 *   as one slow worker of three makes them.
 * - Candidates are taken slowest first (the longest time left), each onto a fast worker: live, heard
 *   from, not graylisted, with a free slot of the task's kind and its ideal memory, where the task has
 *   not failed, and not below LATE's SlowNodeThreshold (a worker whose total progress, its succeeded
 *   attempts plus the progress of its running ones, is below the 25th percentile of the live
 *   workers'). The best of them holds the task's input, else its rack, else has the most progress.
 * - At most `capFraction` of the cluster's slots (LATE's SpeculativeCap, 10%; at least one) run
 *   backups at once.
 * - Backups only take slots the policy left free in its round: a policy's launches of pending tasks
 *   come first.
 */

export interface SpeculationOptions {
  /** Jobs speculate unless their plan says otherwise (`JobPlan.speculative`). */
  readonly enabled: boolean;
  /** The share of all slots backups may hold at once (LATE's SpeculativeCap). */
  readonly capFraction: number;
  /** Workers below this percentile of total progress get no backups (LATE's SlowNodeThreshold). */
  readonly slowNodePercentile: number;
  /** An attempt is judged after it has run this long, ms (Hadoop 1's SPECULATIVE_LAG: 60 s; our tasks run seconds). */
  readonly minRuntimeMs: number;
  /** How often the books look for candidates, ms (Hadoop 2's speculator looks every second). */
  readonly intervalMs: number;
}

export const DEFAULT_SPECULATION: SpeculationOptions = {
  enabled: true,
  capFraction: 0.1,
  slowNodePercentile: 0.25,
  minRuntimeMs: 1000,
  intervalMs: 1000,
};

/** LATE's time left of an attempt with `progress` (0..1) after `runMs`: infinite without progress (no estimate). */
export function timeLeftMs(progress: number, runMs: number): number {
  if (progress >= 1) return 0;
  if (!(progress > 0) || !(runMs > 0)) return Number.POSITIVE_INFINITY;
  return ((1 - progress) * runMs) / progress;
}

/** The `p` quantile (0..1) of `values`, interpolated linearly between the nearest ranks. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = p * (sorted.length - 1);
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

/** Backups the cluster may run at once: `capFraction` of its slots, at least one. */
export function speculativeCap(totalSlots: number, capFraction: number): number {
  return Math.max(1, Math.floor(totalSlots * capFraction));
}

/** Checks options given by a user; returns the problem, or undefined. */
export function speculationProblem(o: SpeculationOptions): string | undefined {
  if (!(o.capFraction > 0 && o.capFraction <= 1)) return `capFraction must be in (0, 1], got ${o.capFraction}`;
  if (!(o.slowNodePercentile >= 0 && o.slowNodePercentile < 1))
    return `slowNodePercentile must be in [0, 1), got ${o.slowNodePercentile}`;
  if (!(o.minRuntimeMs >= 0)) return `minRuntimeMs must be >= 0, got ${o.minRuntimeMs}`;
  if (!(o.intervalMs > 0)) return `intervalMs must be > 0, got ${o.intervalMs}`;
  return undefined;
}
