/**
 * RSS a reused process may have grown by, after a full GC, beyond what any process running this
 * job's attempts comes to. Small, so that an attempt in a reused process has the memory one in a
 * fresh process has (a task's memory is its buffer + TASK_OVERHEAD_MB, and bench:shuffle's tasks
 * peak within a few MiB of it): processes of big attempts, whose heaps and malloc arenas grew, are
 * not reused; they gain little from it. See `memoryFitForReuse` for what the growth is measured from.
 */
export const MAX_REUSE_GROWTH_BYTES = 8 << 20;

/**
 * What a fresh process's first attempt may grow it by, from the clean process: what any attempt in a
 * fresh process grows it by (see `memoryFitForReuse`), not memory left for the next. A 64 MB Grep
 * map grows a clean process by 6-10 MiB (measured: 57-59 to 65-68 MiB with the runtime loaded as
 * one bundle; the TypeBox modules that bundle no longer loads one by one used to pre-grow the heap
 * by a few MiB, so 8 MiB, which sufficed then, now turned most first processes away). A first attempt
 * that grows it by more (a non-local read's 25 MiB that stays) still ends its process.
 */
export const MAX_FIRST_ATTEMPT_GROWTH_BYTES = 16 << 20;

/**
 * Growth past those allowances a process may still carry into its next attempt when that attempt
 * would still peak well within its memory bound (`Headroom`): at most this much over the state the
 * allowances are measured from, so memory that creeps from attempt to attempt still ends a process.
 */
export const MAX_HEADROOM_GROWTH_BYTES = 32 << 20;

/** What a reused process's next attempt is expected to leave free below its bound, at least. */
export const REUSE_BOUND_MARGIN_BYTES = 32 << 20;

/**
 * The last attempt's memory, for `memoryFitForReuse`: its RSS when it started and its peak (VmHWM),
 * and the least memory an attempt of the job may use (its smaller buffer + TASK_OVERHEAD_MB).
 */
export interface Headroom {
  readonly lastStartRss: number;
  readonly lastPeakRss: number;
  readonly boundBytes: number;
}

/**
 * Whether a process's memory, after a full GC, lets it run another attempt.
 *
 * A fresh process grows during its first attempt whatever that attempt does: libuv's thread pool
 * and its malloc arena, the WebAssembly memory of the newline counter, the runtime's code compiled,
 * V8's heap sized to the job. Any attempt in a fresh process pays that too, so it is not memory an
 * attempt leaves behind for the next. The first attempt's growth is measured from the clean
 * process (`cleanRss`); once it passes, the RSS after it (`warmRss`) is what later attempts are
 * measured from, so what the limit catches is memory that accumulates from attempt to attempt
 * (a job module that keeps data in a global, a heap or arena that a big attempt grew). Measured
 * from the clean process, the few hundred KiB that every attempt's own module instance adds made
 * grep's processes cross 8 MiB after about 7 maps and start afresh (measured: 3-6 MiB after the
 * first attempt, up to 8.6 MiB after the seventh, each fresh process ~100+ ms of CPU to start).
 *
 * Past those allowances, with `headroom`: a process that grew by up to MAX_HEADROOM_GROWTH_BYTES is
 * still reused when its next attempt, starting that much bigger than the last one did, would peak
 * at least REUSE_BOUND_MARGIN_BYTES below the bound. Grep's and WordCount's processes crossed 8 MiB
 * after 3-5 maps (V8's heap grows by a job module instance per attempt) and started afresh mid-job,
 * ~200 ms on the job's path each time, while their maps peak at ~75 of 164 MiB.
 */
export function memoryFitForReuse(
  rssAfterGc: number,
  cleanRss: number,
  warmRss: number | undefined,
  headroom?: Headroom,
): boolean {
  const from = warmRss ?? cleanRss;
  if (rssAfterGc <= from + (warmRss === undefined ? MAX_FIRST_ATTEMPT_GROWTH_BYTES : MAX_REUSE_GROWTH_BYTES))
    return true;
  if (headroom === undefined || rssAfterGc > from + MAX_HEADROOM_GROWTH_BYTES) return false;
  const nextPeak = headroom.lastPeakRss + Math.max(0, rssAfterGc - headroom.lastStartRss);
  return nextPeak <= headroom.boundBytes - REUSE_BOUND_MARGIN_BYTES;
}

/**
 * Whether a process is fit for reuse on its RSS as it is now, before the full GC that would
 * measure it: that GC (5-10 ms of a Grep map's process) is on the job's path, since the worker's
 * next launch of the job waits for the process to settle. Only once the warm state is taken (the
 * first attempt's check sets it from a GC'd RSS). A GC only lowers RSS, and `memoryFitForReuse`
 * never turns false as RSS falls, so a process fit now would be fit after the GC too; one that is
 * not fit now is measured after a GC, as before.
 */
export function fitWithoutGc(
  rssNow: number,
  cleanRss: number,
  warmRss: number | undefined,
  headroom?: Headroom,
): boolean {
  return warmRss !== undefined && memoryFitForReuse(rssNow, cleanRss, warmRss, headroom);
}
