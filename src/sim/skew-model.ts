/**
 * The simulator's model of skewed map output, so that skew assignment (src/books/skew.ts) runs in
 * the simulator as it runs on the JobTracker: a job's output is `keys` distinct keys ("k0", "k1",
 * ...) of Zipf(s) frequencies, every map writing the same mix. A partition's share of the output is
 * the share of the keys that hash into it under the partitioner the real maps use
 * (`partitionOfKey`, seed 0, or the seed of the sketch row a 'cms' job chose), so 'hash', 'simple'
 * and 'cms' see the partition sizes the real engine would see for such keys. A 'cms' job plans with
 * a count-min sketch of the exact frequencies: a client's sample, without its sampling error.
 *
 * A reduce's work is its task's `workMs` scaled by the share of the output it reads against an even
 * share (R x share), so the total reduce work of the job is what its tasks say.
 */
import { CountMinSketch, partitionOfKey, type SketchWire } from '../skew/index.js';
import type { SkewSpec } from '../workloads/index.js';

/** The keys, serialized as the real maps serialize a string key (UTF-8). */
function keyBytes(i: number): Uint8Array {
  return Buffer.from(`k${i}`, 'utf8');
}

/** Each key's share of the output: Zipf(s) over ranks 1..keys, summing to 1. */
export function keyShares(spec: SkewSpec): Float64Array {
  const shares = new Float64Array(spec.keys);
  let sum = 0;
  for (let i = 0; i < spec.keys; i++) sum += shares[i] = 1 / (i + 1) ** spec.zipf;
  for (let i = 0; i < spec.keys; i++) shares[i]! /= sum;
  return shares;
}

/** Each partition's share of the output under the partitioner seeded `seed`. */
export function partitionShares(spec: SkewSpec, partitions: number, seed: number): Float64Array {
  const keys = keyShares(spec);
  const out = new Float64Array(partitions);
  for (let i = 0; i < keys.length; i++) out[partitionOfKey(keyBytes(i), partitions, seed)]! += keys[i]!;
  return out;
}

/** A 'cms' job's sketch: width P, the client's depth and seeds, the exact frequencies. */
export function sketchOf(spec: SkewSpec, partitions: number): SketchWire {
  const sketch = new CountMinSketch(spec.sketchDepth ?? 4, partitions);
  const keys = keyShares(spec);
  // Counts in parts per billion: the sketch keeps records and bytes; only their ratios matter here.
  for (let i = 0; i < keys.length; i++) sketch.add(keyBytes(i), keys[i]! * 1e9, keys[i]! * 1e9);
  return sketch.toWire();
}
