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
import { MinimrError } from '../errors.js';
import { CountMinSketch, partitionOfKey, SKEW_STRATEGIES, type SketchWire, type SkewStrategy } from '../skew/index.js';

export interface SkewSpec {
  readonly strategy: SkewStrategy;
  /** Virtual partitions per reduce (P = factor x R); default 1. */
  readonly partitionFactor?: number;
  /** Distinct keys of the job's map output. */
  readonly keys: number;
  /** Zipf exponent of their frequencies; 0 is uniform. */
  readonly zipf: number;
  /** 'cms': rows of the sketch; default 4, as the client's `skew.sketchDepth`. */
  readonly sketchDepth?: number;
}

const MAX_KEYS = 1_000_000;

/** Checks a job's "skew" field (minimr workload JSON); `at` names the job for the error. */
export function parseSkewSpec(value: unknown, at: string): SkewSpec {
  const bad = (message: string, field: string): never => {
    throw new MinimrError('EBADCONF', `${at}: "skew": ${message}`, { field: `skew.${field}` });
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('must be an object {strategy, keys, zipf, partitionFactor?}', 'strategy');
  const v = value as Record<string, unknown>;
  if (!SKEW_STRATEGIES.includes(v.strategy as SkewStrategy)) bad(`"strategy" must be one of ${SKEW_STRATEGIES.join(', ')}, got ${JSON.stringify(v.strategy)}`, 'strategy');
  const keys = v.keys;
  if (!Number.isInteger(keys) || (keys as number) < 1 || (keys as number) > MAX_KEYS) bad(`"keys" must be an integer in 1..${MAX_KEYS}`, 'keys');
  if (typeof v.zipf !== 'number' || !(v.zipf >= 0 && v.zipf <= 10)) bad('"zipf" must be a number in [0, 10]', 'zipf');
  const integerAtLeast1 = (field: string): number | undefined => {
    const x = v[field];
    if (x === undefined) return undefined;
    return Number.isInteger(x) && (x as number) >= 1 && (x as number) <= 64 ? (x as number) : bad(`"${field}" must be an integer in 1..64`, field);
  };
  const partitionFactor = integerAtLeast1('partitionFactor');
  const sketchDepth = integerAtLeast1('sketchDepth');
  return {
    strategy: v.strategy as SkewStrategy,
    keys: keys as number,
    zipf: v.zipf as number,
    ...(partitionFactor !== undefined ? { partitionFactor } : {}),
    ...(sketchDepth !== undefined ? { sketchDepth } : {}),
  };
}

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
