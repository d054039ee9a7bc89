import { MinimrError } from '../errors.js';
import { murmur3_32 } from '../util/index.js';

/**
 * A count-min sketch over serialized map output keys, counting records AND bytes.
 *
 * d rows x w counters; row i hashes a key with MurmurHash3 x86_32 under seed `seeds[i]` and adds to
 * counter `h_i(key) mod w`. The hash depends only on the key bytes and the seed, never on the process,
 * so the JobTracker, the submitting client and every map task agree on which counter a key is in.
 * That is what makes a row usable as a partitioning: with w = P, row i's counters ARE the sizes of
 * the P partitions of "h_i(key) mod P", and a map task partitions with exactly `partitionOfKey(key, P,
 * seeds[i])`. Row 0 uses seed 0, i.e. minimr's default hash partitioner (`hashPartition`).
 *
 * Guarantee (Cormode & Muthukrishnan): for a key with exact count c, c <= estimate, and with
 * probability >= 1 - delta, estimate <= c + epsilon * N, where N is the total count, epsilon = e / w
 * and delta = e^-d. It holds for the record counts and the byte counts alike.
 *
 * Counts live in flat Float64Arrays (row-major, d * w): doubles hold byte totals past 2^32 exactly
 * up to 2^53, and merging is one vectorisable loop. Sketches merge by adding counters, which requires
 * the same d, w and seeds; the merge of the sketches of two inputs is the sketch of their union.
 */
export class CountMinSketch {
  readonly depth: number;
  readonly width: number;
  readonly seeds: readonly number[];
  /** Record counts, row-major: row i is [i * width, (i + 1) * width). */
  readonly records: Float64Array;
  /** Byte counts (key + value bytes), same layout. */
  readonly bytes: Float64Array;

  constructor(
    depth: number,
    width: number,
    seeds: readonly number[] = sketchSeeds(depth),
    records?: Float64Array,
    bytes?: Float64Array,
  ) {
    if (!Number.isInteger(depth) || depth < 1 || depth > 64)
      throw badSketch(`depth must be an integer in 1..64, got ${depth}`);
    if (!Number.isInteger(width) || width < 1 || width > 1 << 20)
      throw badSketch(`width must be an integer in 1..${1 << 20}, got ${width}`);
    if (seeds.length !== depth || !seeds.every((s) => Number.isInteger(s) && s >= 0 && s <= 0xffffffff)) {
      throw badSketch(`needs ${depth} seeds, unsigned 32-bit integers`);
    }
    this.depth = depth;
    this.width = width;
    this.seeds = [...seeds];
    this.records = records ?? new Float64Array(depth * width);
    this.bytes = bytes ?? new Float64Array(depth * width);
    if (this.records.length !== depth * width || this.bytes.length !== depth * width)
      throw badSketch('counter arrays do not match depth x width');
  }

  /** Dimensions for an error of at most epsilon * N with probability 1 - delta. */
  static forError(epsilon: number, delta: number): CountMinSketch {
    if (!(epsilon > 0 && epsilon < 1) || !(delta > 0 && delta < 1))
      throw badSketch('epsilon and delta must be in (0, 1)');
    return new CountMinSketch(Math.ceil(Math.log(1 / delta)), Math.ceil(Math.E / epsilon));
  }

  /** The counter row `row` puts a key in. */
  bucket(row: number, key: Uint8Array): number {
    return partitionOfKey(key, this.width, this.seeds[row]!);
  }

  /** Counts one record of `key` whose serialized key + value take `recordBytes` bytes. */
  add(key: Uint8Array, recordBytes: number, records = 1): void {
    const w = this.width;
    for (let i = 0; i < this.depth; i++) {
      const at = i * w + partitionOfKey(key, w, this.seeds[i]!);
      this.records[at]! += records;
      this.bytes[at]! += recordBytes;
    }
  }

  /** Point query: never below the exact counts, above them by at most epsilon * N w.p. 1 - delta. */
  estimate(key: Uint8Array): { records: number; bytes: number } {
    let records = Infinity;
    let bytes = Infinity;
    const w = this.width;
    for (let i = 0; i < this.depth; i++) {
      const at = i * w + partitionOfKey(key, w, this.seeds[i]!);
      records = Math.min(records, this.records[at]!);
      bytes = Math.min(bytes, this.bytes[at]!);
    }
    return { records, bytes };
  }

  /** Row i's counters: the partition sizes of "h_i(key) mod width" (views, not copies). */
  row(i: number): { records: Float64Array; bytes: Float64Array } {
    if (!Number.isInteger(i) || i < 0 || i >= this.depth)
      throw badSketch(`no row ${i} in a sketch of depth ${this.depth}`);
    return {
      records: this.records.subarray(i * this.width, (i + 1) * this.width),
      bytes: this.bytes.subarray(i * this.width, (i + 1) * this.width),
    };
  }

  /** Total records counted (every row sums to it). */
  get totalRecords(): number {
    return sum(this.records.subarray(0, this.width));
  }

  get totalBytes(): number {
    return sum(this.bytes.subarray(0, this.width));
  }

  /** Adds `other`'s counts into this one (both must hash the same way). */
  merge(other: CountMinSketch): this {
    if (other.depth !== this.depth || other.width !== this.width || other.seeds.some((s, i) => s !== this.seeds[i])) {
      throw badSketch(
        `cannot merge a ${other.depth}x${other.width} sketch into a ${this.depth}x${this.width} one with other seeds`,
      );
    }
    for (let i = 0; i < this.records.length; i++) {
      this.records[i]! += other.records[i]!;
      this.bytes[i]! += other.bytes[i]!;
    }
    return this;
  }

  /**
   * The sketch as plain msgpack-able data. msgpackr (as minimr's frames use it) turns a typed array
   * into a plain byte string, so the counters travel as the bytes of their Float64Arrays
   * (little-endian on every platform Node runs on) and are rebuilt by `fromWire`.
   */
  toWire(): SketchWire {
    return {
      depth: this.depth,
      width: this.width,
      seeds: [...this.seeds],
      records: new Uint8Array(this.records.buffer, this.records.byteOffset, this.records.byteLength),
      bytes: new Uint8Array(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength),
    };
  }

  /** Checks and rebuilds a sketch that crossed a process or a socket. */
  static fromWire(raw: unknown): CountMinSketch {
    if (typeof raw !== 'object' || raw === null) throw badSketch('the sketch must be an object');
    const r = raw as Partial<Record<keyof SketchWire, unknown>>;
    const depth = r.depth;
    const width = r.width;
    if (typeof depth !== 'number' || typeof width !== 'number' || !Array.isArray(r.seeds))
      throw badSketch('the sketch needs depth, width and seeds');
    const counters = (v: unknown, name: string): Float64Array => {
      if (!(v instanceof Uint8Array) || v.byteLength !== depth * width * 8)
        throw badSketch(`${name} must be ${depth * width} doubles`);
      // Copied so that the doubles are aligned whatever buffer offset the decoder left them at.
      const out = new Float64Array(depth * width);
      new Uint8Array(out.buffer).set(v);
      if (!out.every((x) => Number.isFinite(x) && x >= 0))
        throw badSketch(`${name} must be finite non-negative counts`);
      return out;
    };
    return new CountMinSketch(
      depth,
      width,
      r.seeds as number[],
      counters(r.records, 'records'),
      counters(r.bytes, 'bytes'),
    );
  }
}

/** A sketch as it travels in a job submission (msgpack). */
export interface SketchWire {
  depth: number;
  width: number;
  seeds: number[];
  records: Uint8Array;
  bytes: Uint8Array;
}

/**
 * The partition of a serialized key under the hash seeded `seed`: minimr's default partitioner when
 * the seed is 0, a sketch row's partitioning otherwise.
 */
export function partitionOfKey(key: Uint8Array, partitions: number, seed: number): number {
  return murmur3_32(key, seed) % partitions;
}

/**
 * Row seeds, fixed forever (a JobTracker and its task processes of another build must agree): row 0
 * is seed 0 (the default partitioner), row i > 0 a murmur3 mix of i (golden-ratio spaced inputs), so
 * rows are as independent as murmur3 under different seeds is.
 */
export function sketchSeeds(depth: number): number[] {
  const seeds: number[] = [];
  const word = new Uint8Array(4);
  for (let i = 0; i < depth; i++) {
    if (i === 0) {
      seeds.push(0);
      continue;
    }
    const v = Math.imul(i, 0x9e3779b9) >>> 0;
    word[0] = v & 0xff;
    word[1] = (v >>> 8) & 0xff;
    word[2] = (v >>> 16) & 0xff;
    word[3] = v >>> 24;
    seeds.push(murmur3_32(word, 0x5bd1e995));
  }
  return seeds;
}

function sum(a: Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]!;
  return s;
}

function badSketch(why: string): MinimrError {
  return new MinimrError('EBADJOB', `bad count-min sketch: ${why}`);
}
