/**
 * Whether a task process, after a successful attempt, may run another: what its memory says.
 *
 * Two measures, both after a full GC (and once V8 has given back the memory of the ArrayBuffers it
 * collected, which it does on a background thread):
 *  - live memory (V8's heap in use + the ArrayBuffers alive, Buffers' memory among them):
 *    what an attempt leaves reachable, e.g. a job module that keeps data in a module-level
 *    variable (every attempt's module instance stays loaded) or on `globalThis`'s objects. It may
 *    grow by MAX_REUSE_GROWTH_BYTES: a later attempt has nearly all of its memory, as in a fresh
 *    process;
 *  - RSS: besides live memory, what the process keeps of memory it has freed (V8's heap pages,
 *    malloc's free lists of libuv's thread pool and the codecs, compiled code). A fresh process
 *    grows by that during its first attempt, whatever the attempt does, and a later attempt reuses
 *    it before the process grows further: so the first attempt may grow RSS by
 *    MAX_FIRST_ATTEMPT_GROWTH_BYTES, and from the RSS after it (`warm`), what accumulates from
 *    attempt to attempt is caught at MAX_REUSE_GROWTH_BYTES.
 * Measured: a TeraSort map or reduce with a 64 MiB buffer leaves 27-34 MiB of RSS above the clean
 * process and ~1 MiB of live memory; grep's maps 3-6 MiB of RSS after the first, up to 8.6 MiB
 * after the seventh (each attempt's module instance adds a few hundred KiB), hence the warm state.
 * With an 8 MiB limit from the clean process every TeraSort attempt ran in a fresh process (~150
 * ms of CPU and ~200 ms before it ran, each). What keeps a reused attempt within its grant
 * (buffer + TASK_OVERHEAD_MB): it starts with at most 8 MiB more live memory than a fresh one, and
 * the rest of what the process holds is free memory its own allocations take first; every
 * attempt's peak RSS is its own (PEAK_RSS_BYTES, VmHWM reset when it starts), and
 * `npm run bench:shuffle` checks it against the grant for every task, reused or not.
 */
export const MAX_REUSE_GROWTH_BYTES = 8 << 20;
/** RSS a process may have grown by over its first attempt (see above). */
export const MAX_FIRST_ATTEMPT_GROWTH_BYTES = 48 << 20;

/** A process's memory after a full GC. */
export interface MemorySample {
  readonly rssBytes: number;
  /**
   * V8 heap used + ArrayBuffers alive (Buffers included). Not `external`: V8 updates it lazily, it
   * still counted a map's freed 64 MiB sort buffer after RSS had dropped.
   */
  readonly liveBytes: number;
}

/**
 * This process's memory now (call after a full GC). `keptBytes`: ArrayBuffers kept for the next
 * attempt's own use (a map's sort buffer arena, its pages mostly never written), not left behind.
 */
export function sampleMemory(keptBytes = 0): MemorySample {
  const m = process.memoryUsage();
  return { rssBytes: m.rss, liveBytes: m.heapUsed + m.arrayBuffers - keptBytes };
}

/**
 * Whether a process measured at `now` may run another attempt, given its memory before it ran any
 * user code (`clean`) and after its first attempt (`warm`, once that one passed).
 */
export function memoryFitForReuse(now: MemorySample, clean: MemorySample, warm: MemorySample | undefined): boolean {
  return now.liveBytes <= (warm ?? clean).liveBytes + MAX_REUSE_GROWTH_BYTES && now.rssBytes <= rssLimit(clean, warm);
}

/** What the worker knows of an idle process when an attempt could take it. */
export interface IdleProcessMemory {
  /** RSS after a GC above the clean process's (the free memory it kept: see above). */
  readonly retainedRssBytes: number;
  /** Memory granted to the attempt the process ran last. */
  readonly grantMb: number;
}

/**
 * Whether an idle process may run an attempt granted `grantMb`. One that kept more than
 * MAX_REUSE_GROWTH_BYTES of RSS kept free memory of the size its last attempt's peak needed (heap
 * pages, malloc free lists): an attempt granted as much reuses it, as the last one did; one granted
 * less (an elastic attempt, whose smaller buffer would leave that memory idle beside its own) starts
 * in a fresh process instead, so the retained memory cannot push it over its grant.
 */
export function idleProcessFits(idle: IdleProcessMemory, grantMb: number): boolean {
  return idle.retainedRssBytes <= MAX_REUSE_GROWTH_BYTES || grantMb >= idle.grantMb;
}

/** The most RSS a process may have to be reused. */
export function rssLimit(clean: MemorySample, warm: MemorySample | undefined): number {
  return warm ? warm.rssBytes + MAX_REUSE_GROWTH_BYTES : clean.rssBytes + MAX_FIRST_ATTEMPT_GROWTH_BYTES;
}
