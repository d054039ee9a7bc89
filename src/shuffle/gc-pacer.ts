/**
 * Paced full garbage collections for a task process.
 *
 * A task streams hundreds of MiB through short-lived buffers that V8 does not weigh properly when it
 * decides to collect: the LZ4 addon's outputs live in native memory V8 hardly sees, and the map's
 * input chunks and the reduce's output chunks are tracked as external memory, which V8 lets grow by
 * 64 MiB before it reacts. With a 4 MiB semi-space those buffers are promoted before they die, so
 * they stay mapped until an unrelated full GC: most of a task's RSS beyond its sort buffer was such
 * garbage (a 512 MiB reduce: peak RSS 161 MiB on a 16 MiB heap with 14 MiB of tracked external
 * memory; a 64 MiB map: ~110 MiB beyond its buffer).
 *
 * So the shuffle reports the bytes that pass through such buffers (`noteTransientBytes`) and a full
 * GC runs every GC_PACE_BYTES of them, when the process allows it (task processes run with
 * --expose-gc; elsewhere this does nothing). A GC takes a few ms on a task's small heap (the sort
 * buffer is one ArrayBuffer, not traced). Measured on that reduce (benchmarks/shuffle-cpu.ts, task
 * flags): every 32 MiB, peak RSS 131 MiB; every 16 MiB, 112 MiB with CPU within noise; every
 * 8 MiB, 112 MiB and ~20% more CPU.
 */
export const GC_PACE_BYTES = 16 << 20;

const collectGarbage = (globalThis as { gc?: () => void }).gc;
let bytesSinceGc = 0;

export function noteTransientBytes(bytes: number): void {
  if (collectGarbage === undefined) return;
  bytesSinceGc += bytes;
  if (bytesSinceGc >= GC_PACE_BYTES) {
    bytesSinceGc = 0;
    collectGarbage();
  }
}
