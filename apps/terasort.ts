/**
 * TeraSort: sorts 100-byte records by their first 10 bytes into a total order across reducers.
 *
 *   --reducers N                         number of output parts (default 2)
 *   --param sampleSize=<records>         optional, default 100000
 *   --param sampleSplits=<splits>        optional, default 10
 *
 * `prepare` samples the input, sorts the sampled keys and keeps N-1 evenly spaced ones as split
 * points; `partition` sends a key to the number of split points <= it. So every key in part-r-i is
 * <= every key in part-r-(i+1), and with byte-order sorting inside each reducer the part files read
 * in order are one sorted sequence. Output: the records themselves (key bytes then value bytes).
 */
import { codecs, defineJob, fixedRecordInput, recordOutput, type JsonObject, type JsonValue } from 'minimr';

const RECORD_LENGTH = 100;
const KEY_LENGTH = 10;

type Params = Readonly<Record<string, JsonValue>>;

function optionalIntParam(params: Params, name: string, fallback: number, min: number): number {
  const v = params[name];
  if (v === undefined || v === null) return fallback;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new Error(`terasort: parameter \`${name}\` must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return n;
}

/** Evenly spaced keys of the sorted sample, as Hadoop's TeraInputFormat picks them. */
export function splitPoints(sampleKeys: Buffer[], partitions: number): Buffer[] {
  const points: Buffer[] = [];
  if (sampleKeys.length === 0 || partitions <= 1) return points;
  // Sorted as latin1 strings, one UTF-16 unit per byte: their order is the keys' byte order, and a
  // JS string comparison costs a fraction of a native Buffer.compare call (100,000 sampled keys:
  // 160 ms of every TeraSort's submit with Buffer.compare).
  const sorted = sampleKeys.map((k) => k.toString('latin1')).sort();
  const step = sorted.length / partitions;
  for (let i = 1; i < partitions; i++) {
    points.push(Buffer.from(sorted[Math.min(sorted.length - 1, Math.round(step * i))]!, 'latin1'));
  }
  return points;
}

// 2^40, 2^32, ...: the first 6 key bytes as one exact double (48 bits < 2^53).
const PREFIX_WEIGHTS = [2 ** 40, 2 ** 32, 2 ** 24, 2 ** 16, 2 ** 8, 1];

/** Order-preserving numeric prefix: prefix(a) < prefix(b) implies a < b in byte order. */
function prefix48(key: Buffer): number {
  let p = 0;
  const n = Math.min(6, key.length);
  for (let i = 0; i < n; i++) p += key[i]! * PREFIX_WEIGHTS[i]!;
  return p;
}

interface Partitioner {
  readonly shared: object;
  readonly points: Buffer[];
  readonly prefixes: Float64Array;
}

let partitioner: Partitioner | undefined;

function partitionerFor(shared: Readonly<JsonObject>): Partitioner {
  if (partitioner !== undefined && partitioner.shared === shared) return partitioner;
  const hex = shared.splitPoints;
  if (!Array.isArray(hex) || !hex.every((h) => typeof h === 'string')) {
    throw new Error('terasort: ctx.shared.splitPoints is missing or not a list of hex strings (did prepare run?)');
  }
  const points = (hex as string[]).map((h) => Buffer.from(h, 'hex'));
  partitioner = { shared, points, prefixes: Float64Array.from(points, prefix48) };
  return partitioner;
}

/**
 * Index of the first split point > key (= how many are <= key), by binary search. Comparing the
 * 48-bit prefixes as numbers settles almost every step without a native Buffer.compare call.
 */
export function findPartition(key: Buffer, points: readonly Buffer[], prefixes: Float64Array): number {
  const p = prefix48(key);
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const q = prefixes[mid]!;
    const pointLeKey = q < p || (q === p && Buffer.compare(points[mid]!, key) <= 0);
    if (pointLeKey) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export default defineJob({
  name: 'terasort',
  input: fixedRecordInput(RECORD_LENGTH),
  output: recordOutput(),
  reducers: 2,
  mapKey: codecs.bytes,
  mapValue: codecs.bytes,
  async prepare(ctx) {
    const sampleSize = optionalIntParam(ctx.params, 'sampleSize', 100_000, 1);
    const sampleSplits = optionalIntParam(ctx.params, 'sampleSplits', 10, 1);
    const sample = ctx.reducers > 1 ? await ctx.sample(sampleSize, sampleSplits) : [];
    const points = splitPoints(
      sample.map((rec) => rec.subarray(0, KEY_LENGTH)),
      ctx.reducers,
    );
    return { splitPoints: points.map((b) => b.toString('hex')), sampled: sample.length };
  },
  // Each record's bytes go to the sort buffer as they are (key = its first 10 bytes, value = the
  // rest), straight from the input chunk: no Buffer per record, and the chunks are read into the
  // same memory over and over (`reuseBuffers`: the sort buffer copies what is emitted). The runtime
  // hands fixed-length records over in pieces the sort buffer can take while a spill is written
  // (SplitPacing in src/runtime/input.ts), so spills stay full at small buffers, as they did when
  // this map ran once per record.
  async mapSplit(input, ctx) {
    for await (const { bytes } of input.chunks({ reuseBuffers: true })) {
      for (let at = 0; at < bytes.length; at += RECORD_LENGTH)
        ctx.emitRecordBytes(bytes, at, at + KEY_LENGTH, at + RECORD_LENGTH);
    }
  },
  // No `reduce`: the default emits every value under its key, so duplicate keys are all kept, and
  // with bytes keys and values in byte order the runtime copies the merged records to the output
  // as they are, with no Buffer per record.
  partition(key, partitions, ctx) {
    if (partitions <= 1) return 0;
    const { points, prefixes } = partitionerFor(ctx.shared);
    // No sample (empty input): any single partition keeps the order total.
    if (points.length === 0) return 0;
    if (points.length !== partitions - 1) {
      throw new Error(
        `terasort: prepare computed ${points.length + 1} partitions but the job runs ${partitions} reducers`,
      );
    }
    return findPartition(key, points, prefixes);
  },
});
