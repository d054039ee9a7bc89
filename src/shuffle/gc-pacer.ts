/**
 * Paced full garbage collections for a task process.
 *
 * A task streams hundreds of MiB through short-lived buffers that V8 does not weigh properly when it
 * decides to collect: the LZ4 addon's outputs live in native memory V8 hardly sees, and the map's
 * input chunks and the reduce's output chunks are tracked as external memory, which V8 lets grow by
 * 64 MiB before it reacts. With a 4 MiB semi-space those buffers are promoted before they die, so
 * they stay mapped until an unrelated full GC: most of a task's RSS beyond its sort buffer was such
 * garbage.
 *
 * So the shuffle reports the bytes that pass through such buffers (`noteTransientBytes`) and a full
 * GC runs every GC_PACE_BYTES of them, when the process allows it (task processes run with
 * --expose-gc; elsewhere this does nothing). A GC takes a few ms on a task's small heap (the sort
 * buffer is one ArrayBuffer, not traced). 16 MiB: a wider pace left a reduce's peak RSS higher,
 * a narrower one lowered it no further and cost ~20% more CPU.
 *
 * The pace is set by the task's peak, and a task peaks while it holds its largest buffer (a map at its
 * last spill, sort buffer full). Memory given back for good is lent to the pace (`lendToGcPace`):
 * a map's final merge runs after its sort buffer is freed and may let its garbage pile up by the
 * buffer's size longer. Loans at most double the pace (MAX_LENT_BYTES): garbage nobody counts (JS
 * objects, write batches) piles up longer too. Each full GC saved is a pause of this thread on a
 * task's heap plus V8's marking threads' work. A reduce lends nothing: lending its unheld budget
 * (capped) during the final merge saved full GCs but raised its peak RSS over its bound. A GC
 * run for another reason (`collectGarbageNow`) restarts the count.
 *
 * figures: docs/performance-notes.md#gc-pacer
 */
export const GC_PACE_BYTES = 16 << 20;
/** The most that loans widen the pace by. */
export const MAX_LENT_BYTES = GC_PACE_BYTES;

const collectGarbage = (globalThis as { gc?: () => void }).gc;
let bytesSinceGc = 0;
/** Bytes lent to the pace by holders that gave memory back (see lendToGcPace). */
let lentBytes = 0;

export function noteTransientBytes(bytes: number): void {
  if (collectGarbage === undefined) return;
  bytesSinceGc += bytes;
  if (bytesSinceGc >= GC_PACE_BYTES + Math.min(lentBytes, MAX_LENT_BYTES)) collectGarbageNow();
}

/** A full GC now, e.g. to give back a large buffer just dropped; the next paced GC is a full pace away. */
export function collectGarbageNow(): void {
  if (collectGarbage === undefined) return;
  bytesSinceGc = 0;
  collectGarbage();
}

/**
 * Lets `bytes` more transient garbage (all loans together: at most MAX_LENT_BYTES) pile up between
 * GCs until the returned function is called: for a holder that has given back that much memory (and
 * collected it) and stays below its own peak while it lasts. Loans add up and are returned one by one, so overlapping
 * holders in one process (tests, benchmarks) leave the pace as it was.
 */
export function lendToGcPace(bytes: number): () => void {
  lentBytes += bytes;
  let returned = false;
  return () => {
    if (returned) return;
    returned = true;
    lentBytes -= bytes;
  };
}
