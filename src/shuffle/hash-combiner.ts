/**
 * HashCombiner: map-side combining by hash (Spark's map-side combine), in front of the sort buffer.
 *
 * Without it, every record a map emits is serialized into the sort buffer, sorted, and combined at
 * each spill: WordCount pays for a hundred million words to combine them into a few thousand. With
 * it, a job with a combiner emits into a hash table keyed by the encoded key bytes, holding per key
 * one pending value; a record for a key already there is combined with the pending value at once
 * (the job's `combine(key, [pending, value])`). Only what the table holds reaches the sort buffer,
 * when the table is full and at the end of the map. The combiner is required to keep the key, so
 * a key it changes is EBADJOB (the table would file the record under the wrong key); a combiner
 * that emits several values has nothing left to gain here: its values go on to the sort buffer,
 * where the spills combine them again, in order.
 *
 * Outputs are the same bytes as without the table: a combiner may run any number of times on any
 * grouping of a key's values (Hadoop's contract; the spills already rely on it), and each key's
 * values keep their emission order (the table holds all not-yet-passed values of a key, and passes
 * them in order, before any later value of that key).
 *
 * Memory. The table lives inside the attempt's buffer budget: the runtime gives it a share of
 * `shuffle.map.bufferBytes` and the sort buffer the rest. It counts what it allocates (typed
 * arrays: the slot index, five 32-bit columns per entry, two arenas of key and value bytes, two JS
 * array slots per entry) plus an estimate of the JS values it keeps (a pending value that is a
 * primitive: a heap number or a string; decoded keys kept for the combiner). Values that are
 * objects are stored encoded, in the value arena, so a map that reuses and mutates an object after
 * emitting it changes nothing here, and their size is exact. The arrays grow by doubling while that
 * fits the budget; when an entry does not fit, the table is flushed through the sort buffer and
 * starts again empty (with its arrays kept). A key too large for the table (over 1/8 of its budget,
 * at most 64 KiB) bypasses it: the sort buffer takes it, and one larger than the whole sort buffer
 * is written as a spill of its own there.
 *
 * When it does not pay. If a flush passes on more than 90% of the records the table took in since
 * the last one (nearly every key distinct), the table is turned off for the rest of the attempt:
 * records go straight to the sort buffer, whose spills still combine.
 */
import { MinimrError } from '../errors.js';
import { murmur3_32 } from './partitioner.js';
import type { ShuffleCounters } from './types.js';

/** A key or value codec of the job (structurally the API's `Codec`). */
export interface ValueCodec {
  readonly name: string;
  encode(value: unknown): Buffer;
  decode(bytes: Buffer): unknown;
}

/** The job's combiner over decoded values. */
export type ValueCombiner = (key: unknown, values: readonly unknown[], emit: (key: unknown, value: unknown) => void) => void;

export interface HashCombinerOptions {
  /** Bytes the table may use, arrays and estimated JS values together. */
  readonly budgetBytes: number;
  readonly keyCodec: ValueCodec;
  readonly valueCodec: ValueCodec;
  readonly combine: ValueCombiner;
  /** The reduce partition of an encoded key; `hash` is its MurmurHash3 (seed 0), the default partitioner's hash. */
  readonly partitionOf: (keyBytes: Buffer, hash: number) => number;
  /** Where records go on: the sort buffer. */
  readonly collect: (partition: number, key: Buffer, value: Buffer) => void;
  readonly counters?: ShuffleCounters;
}

/** No pending value (the combiner emitted none, or the value went on). */
const EMPTY = Symbol('empty');
/** The pending value is an object, stored encoded in the value arena. */
const ENCODED = Symbol('encoded');

const MIN_BUDGET_BYTES = 64 << 10;
const MAX_KEY_BYTES = 64 << 10;
const INITIAL_ENTRIES = 1024;
/** Five Int32 columns and two JS array slots (8 bytes each) per entry. */
const BYTES_PER_ENTRY = 5 * 4 + 2 * 8;
/** A flush passing on more than this fraction of what the table took in turns the table off. */
const USELESS_FLUSH_RATIO = 0.9;

export class HashCombiner {
  private readonly budget: number;
  private readonly maxKeyBytes: number;
  private readonly keyCodec: ValueCodec;
  private readonly valueCodec: ValueCodec;
  private readonly textKeys: boolean;
  private readonly combine: ValueCombiner;
  private readonly partitionOf: (keyBytes: Buffer, hash: number) => number;
  private readonly collect: (partition: number, key: Buffer, value: Buffer) => void;
  private readonly counters: ShuffleCounters | undefined;

  /** Open addressing, linear probing: entry index + 1, 0 when free. Twice the entry capacity. */
  private slots: Int32Array = new Int32Array(0);
  private mask = 0;
  private capacity = 0;
  private hashes: Int32Array = new Int32Array(0);
  private keyStart: Int32Array = new Int32Array(0);
  private keyLength: Int32Array = new Int32Array(0);
  private valueStart: Int32Array = new Int32Array(0);
  private valueLength: Int32Array = new Int32Array(0);
  /** Pending value per entry: a primitive, ENCODED, or EMPTY. */
  private values: unknown[] = [];
  /** The decoded key per entry, once the combiner needed it (primitives only). */
  private keys: unknown[] = [];
  private keyArena: Buffer = Buffer.alloc(0);
  private keyUsed = 0;
  private valueArena: Buffer = Buffer.alloc(0);
  private valueUsed = 0;
  private heapBytes = 0;
  private entries = 0;
  private scratch: Buffer = Buffer.alloc(256);
  private peak = 0;
  private takenSinceFlush = 0;
  private off = false;

  // The combine call in progress.
  private readonly pair: unknown[] = [undefined, undefined];
  private combining = -1;
  private combiningKey: unknown;
  private emitted: unknown[] = [];
  private readonly onEmit = (key: unknown, value: unknown): void => {
    if (key !== this.combiningKey && !this.isCombiningKey(key)) {
      throw new MinimrError(
        'EBADJOB',
        `the combiner emitted the key ${describe(key)} for the key ${describe(this.combiningKey)}; a combiner must keep its key (map-side combining files its output under the key it was given)`,
      );
    }
    this.emitted.push(value);
  };

  constructor(options: HashCombinerOptions) {
    if (!(options.budgetBytes >= MIN_BUDGET_BYTES)) {
      throw new MinimrError('EBADJOB', `the map-side combining table needs at least ${MIN_BUDGET_BYTES} bytes, got ${options.budgetBytes}`);
    }
    this.budget = options.budgetBytes;
    this.maxKeyBytes = Math.min(MAX_KEY_BYTES, Math.floor(this.budget / 8));
    this.keyCodec = options.keyCodec;
    this.valueCodec = options.valueCodec;
    this.textKeys = options.keyCodec.name === 'text';
    this.combine = options.combine;
    this.partitionOf = options.partitionOf;
    this.collect = options.collect;
    this.counters = options.counters;
    this.resize(INITIAL_ENTRIES);
    this.keyArena = Buffer.allocUnsafe(16 << 10);
  }

  /** Most bytes the table used at once. */
  get peakBytes(): number {
    return this.peak;
  }

  /** Bytes in use now (allocated arrays and arenas, estimated JS values). */
  get usedBytes(): number {
    return this.arrayBytes(this.capacity) + this.keyArena.length + this.valueArena.length + this.heapBytes;
  }

  /** A record whose key is a JS value: text keys are encoded into a scratch buffer, others by their codec. */
  add(key: unknown, value: unknown): void {
    if (this.textKeys && typeof key === 'string') {
      if (key.length > this.maxKeyBytes) {
        this.count(1);
        this.passOn(this.keyCodec.encode(key), value);
        return;
      }
      if (key.length * 3 > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(key.length * 3, this.scratch.length * 2));
      this.addBytes(this.scratch, 0, this.scratch.write(key, 0, 'utf8'), value);
      return;
    }
    const bytes = this.keyCodec.encode(key);
    this.addBytes(bytes, 0, bytes.length, value);
  }

  /** A record whose key is bytes [start, end) of `bytes`, already encoded. */
  addBytes(bytes: Uint8Array, start: number, end: number, value: unknown): void {
    this.count(1);
    const length = end - start;
    if (this.off || length > this.maxKeyBytes) {
      this.passOn(Buffer.from(bytes.buffer, bytes.byteOffset + start, length), value);
      return;
    }
    const hash = murmur3_32(bytes, 0, start, end) | 0;
    const e = this.find(bytes, start, length, hash);
    if (e >= 0) this.combineInto(e, value);
    else this.insert(bytes, start, length, hash, value);
  }

  /** Passes everything held on to the sort buffer and empties the table. */
  flush(): void {
    const { values, keyArena, valueArena } = this;
    let passed = 0;
    for (let e = 0; e < this.entries; e++) {
      const v = values[e];
      if (v === EMPTY) continue;
      const key = keyArena.subarray(this.keyStart[e]!, this.keyStart[e]! + this.keyLength[e]!);
      const value = v === ENCODED ? valueArena.subarray(this.valueStart[e]!, this.valueStart[e]! + this.valueLength[e]!) : this.valueCodec.encode(v);
      this.collect(this.partitionOf(key, this.hashes[e]!), key, value);
      passed++;
    }
    const c = this.counters;
    if (c) {
      c.hashCombineOutputRecords += passed;
      if (this.entries > 0) c.hashCombineFlushes++;
    }
    if (this.takenSinceFlush > 0 && passed > USELESS_FLUSH_RATIO * this.takenSinceFlush) this.off = true;
    this.takenSinceFlush = 0;
    this.slots.fill(0);
    this.entries = 0;
    this.keyUsed = 0;
    this.valueUsed = 0;
    this.values.length = 0;
    this.keys.length = 0;
    this.heapBytes = 0;
  }

  // ------------------------------------------------------------------ the table

  private find(bytes: Uint8Array, start: number, length: number, hash: number): number {
    const { slots, mask, hashes, keyLength, keyStart, keyArena } = this;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const s = slots[slot]!;
      if (s === 0) return -1;
      const e = s - 1;
      if (hashes[e] !== hash || keyLength[e] !== length) continue;
      const at = keyStart[e]!;
      let i = 0;
      while (i < length && keyArena[at + i] === bytes[start + i]) i++;
      if (i === length) return e;
    }
  }

  private insert(bytes: Uint8Array, start: number, length: number, hash: number, value: unknown): void {
    if (!this.makeRoom(length)) {
      this.flush();
      if (this.off || !this.makeRoom(length)) {
        this.passOn(Buffer.from(bytes.buffer, bytes.byteOffset + start, length), value);
        return;
      }
    }
    const e = this.entries++;
    let slot = hash & this.mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
    this.slots[slot] = e + 1;
    this.hashes[e] = hash;
    this.keyStart[e] = this.keyUsed;
    this.keyLength[e] = length;
    if (length > 0) this.keyArena.set(bytes.subarray(start, start + length), this.keyUsed);
    this.keyUsed += length;
    this.values.push(EMPTY);
    this.keys.push(undefined);
    this.takenSinceFlush++;
    this.setValue(e, value);
    this.afterChange();
  }

  /** Grows the arrays or the key arena for one more entry if the budget allows; false when it does not. */
  private makeRoom(keyLength: number): boolean {
    if (this.entries >= this.capacity) {
      const grown = this.capacity * 2;
      if (this.usedBytes + this.arrayBytes(grown) - this.arrayBytes(this.capacity) > this.budget) return false;
      this.resize(grown);
    }
    if (this.keyUsed + keyLength > this.keyArena.length) {
      const size = Math.max(this.keyArena.length * 2, this.keyUsed + keyLength);
      if (this.usedBytes + size - this.keyArena.length > this.budget) return false;
      this.keyArena = grow(this.keyArena, size, this.keyUsed);
    }
    return this.usedBytes <= this.budget;
  }

  private combineInto(e: number, value: unknown): void {
    const pending = this.values[e];
    this.takenSinceFlush++;
    if (pending === EMPTY) {
      this.setValue(e, value);
      this.afterChange();
      return;
    }
    let key = this.keys[e];
    if (key === undefined) {
      key = this.keyCodec.decode(this.keyArena.subarray(this.keyStart[e]!, this.keyStart[e]! + this.keyLength[e]!));
      if (isPrimitive(key)) {
        this.keys[e] = key;
        this.heapBytes += heapSize(key);
      }
    }
    const pair = this.pair;
    pair[0] = pending === ENCODED ? this.valueCodec.decode(this.valueArena.subarray(this.valueStart[e]!, this.valueStart[e]! + this.valueLength[e]!)) : pending;
    pair[1] = value;
    this.clearValue(e);
    this.combining = e;
    this.combiningKey = key;
    const emitted = this.emitted;
    emitted.length = 0;
    try {
      this.combine(key, pair, this.onEmit);
    } finally {
      this.combining = -1;
      this.combiningKey = undefined;
      pair[0] = pair[1] = undefined;
    }
    if (emitted.length === 1) {
      this.setValue(e, emitted[0]);
    } else if (emitted.length > 1) {
      // Nothing to gain here: on to the sort buffer, whose spills combine again.
      const keyBytes = this.keyArena.subarray(this.keyStart[e]!, this.keyStart[e]! + this.keyLength[e]!);
      const partition = this.partitionOf(keyBytes, this.hashes[e]!);
      for (const v of emitted) this.collect(partition, keyBytes, this.valueCodec.encode(v));
      if (this.counters) this.counters.hashCombineOutputRecords += emitted.length;
    }
    emitted.length = 0;
    this.afterChange();
  }

  /** Keeps `value` as entry e's pending value: primitives as they are, objects encoded. */
  private setValue(e: number, value: unknown): void {
    if (isPrimitive(value)) {
      this.values[e] = value;
      this.heapBytes += heapSize(value);
      return;
    }
    const encoded = this.valueCodec.encode(value);
    if (this.valueUsed + encoded.length > this.valueArena.length) {
      const size = Math.max(this.valueArena.length * 2, this.valueUsed + encoded.length, 16 << 10);
      if (this.usedBytes + size - this.valueArena.length > this.budget) {
        // No room to keep it: it goes on now (the entry holds nothing else of this key).
        this.values[e] = EMPTY;
        this.collect(this.partitionOf(this.keyBytesOf(e), this.hashes[e]!), this.keyBytesOf(e), encoded);
        if (this.counters) this.counters.hashCombineOutputRecords++;
        return;
      }
      this.valueArena = grow(this.valueArena, size, this.valueUsed);
    }
    encoded.copy(this.valueArena, this.valueUsed);
    this.valueStart[e] = this.valueUsed;
    this.valueLength[e] = encoded.length;
    this.valueUsed += encoded.length;
    this.values[e] = ENCODED;
  }

  private clearValue(e: number): void {
    const v = this.values[e];
    if (v !== ENCODED && v !== EMPTY) this.heapBytes -= heapSize(v);
    this.values[e] = EMPTY;
  }

  private keyBytesOf(e: number): Buffer {
    return this.keyArena.subarray(this.keyStart[e]!, this.keyStart[e]! + this.keyLength[e]!);
  }

  /** Whether a key the combiner emitted encodes to the bytes of the key it was given. */
  private isCombiningKey(key: unknown): boolean {
    if (this.textKeys && typeof key === 'string' && typeof this.combiningKey === 'string') return false;
    return this.keyBytesOf(this.combining).equals(this.keyCodec.encode(key));
  }

  /** A record the table does not keep: straight to the sort buffer. */
  private passOn(key: Buffer, value: unknown): void {
    this.collect(this.partitionOf(key, murmur3_32(key) | 0), key, this.valueCodec.encode(value));
    if (this.counters) this.counters.hashCombineOutputRecords++;
  }

  private count(records: number): void {
    if (this.counters) this.counters.hashCombineInputRecords += records;
  }

  /** Notes the peak; a table over its budget (values grown by the combiner, e.g. joined strings) is flushed. */
  private afterChange(): void {
    const used = this.usedBytes;
    if (used > this.peak) this.peak = used;
    if (used > this.budget) this.flush();
  }

  private arrayBytes(capacity: number): number {
    return capacity * (BYTES_PER_ENTRY + 2 * 4);
  }

  /** New columns and slot index for `capacity` entries; the entries held are re-indexed. */
  private resize(capacity: number): void {
    const copy = (old: Int32Array): Int32Array => {
      const a = new Int32Array(capacity);
      a.set(old.subarray(0, this.entries));
      return a;
    };
    this.hashes = copy(this.hashes);
    this.keyStart = copy(this.keyStart);
    this.keyLength = copy(this.keyLength);
    this.valueStart = copy(this.valueStart);
    this.valueLength = copy(this.valueLength);
    this.capacity = capacity;
    this.slots = new Int32Array(capacity * 2);
    this.mask = capacity * 2 - 1;
    for (let e = 0; e < this.entries; e++) {
      let slot = this.hashes[e]! & this.mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask;
      this.slots[slot] = e + 1;
    }
  }
}

function grow(old: Buffer, size: number, used: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  old.copy(b, 0, 0, used);
  return b;
}

function isPrimitive(v: unknown): boolean {
  return v === null || (typeof v !== 'object' && typeof v !== 'function');
}

/** Heap bytes a primitive held by the table keeps alive, beyond its array slot. */
function heapSize(v: unknown): number {
  switch (typeof v) {
    case 'number':
      return Number.isInteger(v) && (v as number) >= -0x80000000 && (v as number) <= 0x7fffffff ? 0 : 16;
    case 'string':
      return 24 + 2 * (v as string).length;
    case 'bigint':
      return 32;
    default:
      return 0;
  }
}

function describe(key: unknown): string {
  const text = typeof key === 'string' ? JSON.stringify(key) : Buffer.isBuffer(key) ? `0x${key.toString('hex')}` : String(key);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
