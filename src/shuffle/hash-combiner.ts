/**
 * HashCombiner: map-side combining by hash (Spark's map-side combine), in front of the sort buffer.
 *
 * Without it, every record a map emits is serialized into the sort buffer, sorted, and combined at
 * each spill: WordCount pays for a hundred million words to combine them into a few thousand. With
 * it, a job with a combiner emits into a hash table keyed by the encoded key bytes, holding per key
 * one combined value. A record for a key already there is appended to a pending list (one shared
 * buffer of values, linked per key); when that buffer is full, each key's pending values are
 * combined with its value in one call of the job's `combine(key, [value, ...pending])`, so a
 * frequent key costs one call per many records, and a key seen once costs none. Only what the
 * table holds reaches the sort buffer: when the table is full, and at the end of the map. The
 * combiner must keep the key, so a key it changes is EBADJOB (the table would file the record under
 * the wrong key); a combiner that emits several values has nothing left to gain here: its values go
 * on to the sort buffer, where the spills combine them again, in order.
 *
 * Outputs are the same bytes as without the table: a combiner may run any number of times on any
 * grouping of a key's values (Hadoop's contract; the spills already rely on it), and each key's
 * values keep their emission order (the table holds all not-yet-passed values of a key, and passes
 * them in order, before any later value of that key).
 *
 * Memory. The table lives inside the attempt's buffer budget: the runtime gives it a share of
 * `shuffle.map.bufferBytes` and the sort buffer the rest. It counts what it allocates (typed
 * arrays: the slot index, a row of 32-bit fields per entry, two arenas of key and value bytes, a JS
 * array slot per entry, the pending buffer) plus an estimate of the JS values it keeps (a value that
 * is a primitive: a heap number or a string). Values that
 * are objects are kept encoded (in the value arena, or as a copy while pending), so a map that
 * reuses and mutates an object after emitting it changes nothing here, and their size is known.
 * The arrays grow by doubling while that fits the budget; when an entry does not fit, the table is
 * flushed through the sort buffer and starts again empty (with its arrays kept). A key too large
 * for the table (over 1/8 of its budget, at most 64 KiB) bypasses it: the sort buffer takes it, and
 * one larger than the whole sort buffer is written as a spill of its own there. At the map's end
 * `release` passes everything on and drops the arrays, so the map's final merge runs without them.
 *
 * When it does not pay. If a flush passes on more than 90% of the records the table took in since
 * the last one (nearly every key distinct), the table is turned off for the rest of the attempt:
 * records go straight to the sort buffer, whose spills still combine.
 */
import { MinimrError } from '../errors.js';
import { describeKey, keyHash, keySlotHash } from '../util/index.js';
import type { ShuffleCounters } from './types.js';

/** A key or value codec of the job (structurally the API's `Codec`). */
export interface ValueCodec {
  readonly name: string;
  encode(value: unknown): Buffer;
  decode(bytes: Buffer): unknown;
}

/** The job's combiner over decoded values. */
export type ValueCombiner = (
  key: unknown,
  values: readonly unknown[],
  emit: (key: unknown, value: unknown) => void,
) => void;

export interface HashCombinerOptions {
  /** Bytes the table may use, arrays and estimated JS values together. */
  readonly budgetBytes: number;
  readonly keyCodec: ValueCodec;
  readonly valueCodec: ValueCodec;
  readonly combine: ValueCombiner;
  /** The reduce partition of an encoded key. */
  readonly partitionOf: (keyBytes: Buffer) => number;
  /** Where records go on: the sort buffer. */
  readonly collect: (partition: number, key: Buffer, value: Buffer) => void;
  readonly counters?: ShuffleCounters;
  /**
   * The combiner is the API's `sumValues` (a left fold of `+` over numbers): a number for a key
   * whose value is a number is added to it in place, with no pending value and no combine call.
   */
  readonly sumsNumbers?: boolean;
}

/** No value (the combiner emitted none, or the value went on). */
const EMPTY = Symbol('empty');
/** The value is an object, stored encoded in the value arena. */
const ENCODED = Symbol('encoded');

/** A pending value that is an object: a copy of its encoding, decoded when combined. */
class EncodedValue {
  constructor(readonly bytes: Buffer) {}
}

const MIN_BUDGET_BYTES = 64 << 10;
const MAX_KEY_BYTES = 64 << 10;
const INITIAL_ENTRIES = 1024;
/**
 * An entry's fields, in one row of `meta` (one cache line per entry: a lookup in a table of a
 * million keys touches its slot, its row and its key bytes, nothing else). M_HASH is the key's
 * `keySlotHash`, where its probing starts.
 */
const M_HASH = 0;
const M_KEY = 1;
const M_KEY_LENGTH = 2;
const M_VALUE = 3;
const M_VALUE_LENGTH = 4;
/** First and last of the entry's pending values (-1: none). */
const M_HEAD = 5;
const M_TAIL = 6;
/** Pending values of the entry. */
const M_PENDING = 7;
const STRIDE = 8;
/** A slot's fields (see `slots`). */
const S_ENTRY = 0;
const S_HASH = 1;
const S_KEY = 2;
const S_KEY_LENGTH = 3;
const SLOT_STRIDE = 4;
/** In a slot's S_KEY_LENGTH: the entry has pending values (M_HEAD >= 0). */
const PENDING_BIT = 0x80000000 | 0;
const KEY_LENGTH_MASK = 0x7fffffff;
/** Keys up to this long are copied into the arena byte by byte (no subarray to allocate). */
const SHORT_KEY_BYTES = 32;
/** A key with this many values pending at a drain is decoded once and kept for its next combines. */
const HOT_KEY_VALUES = 4;
/** Heap bytes of a kept key's Map entry, beyond its string. */
const KEPT_KEY_BYTES = 48;
/** An entry's row and its JS array slot (8 bytes). */
const BYTES_PER_ENTRY = STRIDE * 4 + 8;
/** A pending value: its JS array slot, its next link and a slot of the touched list. */
const BYTES_PER_PENDING = 8 + 4 + 4;
const MAX_PENDING = 1 << 16;
/** A flush passing on more than this fraction of what the table took in turns the table off. */
const USELESS_FLUSH_RATIO = 0.9;

export class HashCombiner {
  private readonly budget: number;
  private readonly maxKeyBytes: number;
  private readonly keyCodec: ValueCodec;
  private readonly valueCodec: ValueCodec;
  private readonly textKeys: boolean;
  private readonly combine: ValueCombiner;
  private readonly partitionOf: (keyBytes: Buffer) => number;
  private readonly collect: (partition: number, key: Buffer, value: Buffer) => void;
  private readonly counters: ShuffleCounters | undefined;
  private readonly sumsNumbers: boolean;

  /**
   * Open addressing, linear probing, at most 3/4 full. A slot is four fields (S_*): the entry index
   * + 1 (0 when free), the key's hash, where its bytes are in the key arena, and its length with
   * PENDING_BIT when the entry has pending values. A lookup compares the hash, length and bytes, and
   * a number for `sumsNumbers` is added, without reading the entry's row: with a million keys
   * (a Zipf corpus) each of those reads is a cache miss, and a word costs what its misses cost.
   */
  private slots: Int32Array = new Int32Array(0);
  private mask = 0;
  private capacity = 0;
  private entries = 0;
  /** Entry rows of STRIDE fields (M_*). */
  private meta: Int32Array = new Int32Array(0);
  /** Bytes of the arrays sized by the capacity (rows, slots, JS array slots, pending buffer). */
  private fixedBytes = 0;
  /** Combined value per entry: a primitive, ENCODED, or EMPTY. */
  private values: unknown[] = [];
  /** Decoded keys of frequent entries (primitives), so that they are not decoded at every drain. */
  private readonly hotKeys = new Map<number, unknown>();
  private keyArena: Buffer = Buffer.alloc(0);
  private keyUsed = 0;
  private valueArena: Buffer = Buffer.alloc(0);
  private valueUsed = 0;
  /** Estimated heap bytes of the JS values held (combined and pending). */
  private heapBytes = 0;

  // Pending values, linked per entry, and the entries that have some.
  private readonly pendingCapacity: number;
  private pending: unknown[];
  private pendingNext: Int32Array;
  private touched: Int32Array;
  private pendingCount = 0;
  private touchedCount = 0;

  private scratch: Buffer = Buffer.alloc(256);
  private peak = 0;
  private takenSinceFlush = 0;
  private off = false;
  private released = false;

  // The combine call in progress: its key, and what it emitted (one value, or more).
  private combining = -1;
  private combiningKey: unknown;
  private emittedCount = 0;
  private emittedFirst: unknown;
  private emittedMore: unknown[] = [];
  private readonly onEmit = (key: unknown, value: unknown): void => {
    if (key !== this.combiningKey && !this.isCombiningKey(key)) {
      throw new MinimrError(
        'EBADJOB',
        `the combiner emitted the key ${describeKey(key)} for the ` +
          `key ${describeKey(this.combiningKey)}; a combiner must keep its ` +
          `key (map-side combining files its output under the key it was ` +
          `given)`,
      );
    }
    if (this.emittedCount++ === 0) this.emittedFirst = value;
    else this.emittedMore.push(value);
  };

  constructor(options: HashCombinerOptions) {
    if (!(options.budgetBytes >= MIN_BUDGET_BYTES)) {
      throw new MinimrError(
        'EBADJOB',
        `the map-side combining table needs at least ${MIN_BUDGET_BYTES} bytes, got ${options.budgetBytes}`,
      );
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
    this.sumsNumbers = options.sumsNumbers === true;
    this.pendingCapacity = Math.min(MAX_PENDING, Math.floor(this.budget / 32 / BYTES_PER_PENDING));
    this.pending = new Array<unknown>(this.pendingCapacity).fill(undefined);
    this.pendingNext = new Int32Array(this.pendingCapacity);
    this.touched = new Int32Array(this.pendingCapacity);
    // Small to start with (a map may emit a handful of keys), and never over a quarter of the budget.
    let capacity = INITIAL_ENTRIES;
    while (capacity > 16 && this.fixedBytesFor(capacity) > this.budget / 4) capacity >>= 1;
    this.resize(capacity);
    this.keyArena = Buffer.allocUnsafe(Math.min(16 << 10, this.budget >> 3));
  }

  /** Most bytes the table used at once. */
  get peakBytes(): number {
    return this.peak;
  }

  /** Bytes in use now (allocated arrays and arenas, estimated JS values). */
  get usedBytes(): number {
    return this.fixedBytes + this.keyArena.length + this.valueArena.length + this.heapBytes;
  }

  /** A record whose key is a JS value: text keys are encoded into a scratch buffer, others by their codec. */
  add(key: unknown, value: unknown): void {
    if (this.textKeys && typeof key === 'string') {
      if (key.length > this.maxKeyBytes) {
        const bytes = this.keyCodec.encode(key);
        this.addBytes(bytes, 0, bytes.length, value);
        return;
      }
      if (key.length * 3 > this.scratch.length)
        this.scratch = Buffer.allocUnsafe(Math.max(key.length * 3, this.scratch.length * 2));
      this.addBytes(this.scratch, 0, this.scratch.write(key, 0, 'utf8'), value);
      return;
    }
    const bytes = this.keyCodec.encode(key);
    this.addBytes(bytes, 0, bytes.length, value);
  }

  /**
   * A record whose key is bytes [start, end) of `bytes`, already encoded; `hashOfKey`, when the
   * caller worked it out, is their `keyHash` (a wrong one files the key under another entry).
   */
  addBytes(bytes: Uint8Array, start: number, end: number, value: unknown, hashOfKey?: number): void {
    if (this.released) {
      throw new MinimrError(
        'ETASK',
        'the map emitted a record after it ended (from a timer or a promise it did not await); it would be lost',
      );
    }
    if (this.counters) this.counters.hashCombineInputRecords++;
    const length = end - start;
    if (this.off || length > this.maxKeyBytes) {
      this.passOn(Buffer.from(bytes.buffer, bytes.byteOffset + start, length), value);
      return;
    }
    const hash = keySlotHash(hashOfKey ?? keyHash(bytes, start, end));
    const { slots, mask, keyArena } = this;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const at = slot * SLOT_STRIDE;
      const s = slots[at + S_ENTRY]!;
      if (s === 0) break;
      if (slots[at + S_HASH] !== hash || (slots[at + S_KEY_LENGTH]! & KEY_LENGTH_MASK) !== length) continue;
      const offset = slots[at + S_KEY]! - start;
      let i = start;
      while (i < end && keyArena[offset + i] === bytes[i]) i++;
      if (i === end) {
        this.append(s - 1, value, at);
        return;
      }
    }
    this.insert(bytes, start, length, hash, value);
  }

  /**
   * Passes everything held on to the sort buffer and gives the table's memory up: for the end of a
   * map, whose final merge then runs without the table's arrays (a map with a million keys holds
   * most of its budget in them). A record added afterwards is ETASK: nothing would pass it on.
   */
  release(): void {
    this.flush();
    this.released = true;
    this.slots = new Int32Array(0);
    this.meta = new Int32Array(0);
    this.mask = 0;
    this.capacity = 0;
    this.fixedBytes = 0;
    this.values = [];
    this.keyArena = Buffer.alloc(0);
    this.valueArena = Buffer.alloc(0);
    this.pending = [];
    this.pendingNext = new Int32Array(0);
    this.touched = new Int32Array(0);
  }

  /** Passes everything held on to the sort buffer and empties the table. */
  flush(): void {
    this.drain();
    const values = this.values;
    let passed = 0;
    for (let e = 0; e < this.entries; e++) {
      const v = values[e];
      if (v === EMPTY) continue;
      const key = this.keyBytesOf(e);
      const value = v === ENCODED ? this.valueBytesOf(e) : this.valueCodec.encode(v);
      this.collect(this.partitionOf(key), key, value);
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
    this.hotKeys.clear();
    this.heapBytes = 0;
  }

  // ------------------------------------------------------------------ the table

  private insert(bytes: Uint8Array, start: number, length: number, hash: number, value: unknown): void {
    if (!this.makeRoom(length)) {
      this.flush();
      if (this.off || !this.makeRoom(length)) {
        this.passOn(Buffer.from(bytes.buffer, bytes.byteOffset + start, length), value);
        return;
      }
    }
    const e = this.entries++;
    const row = e * STRIDE;
    this.meta[row + M_HASH] = hash;
    this.meta[row + M_KEY] = this.keyUsed;
    this.meta[row + M_KEY_LENGTH] = length;
    this.meta[row + M_HEAD] = -1;
    this.meta[row + M_PENDING] = 0;
    this.index(e);
    if (length <= SHORT_KEY_BYTES) {
      const arena = this.keyArena;
      const offset = this.keyUsed - start;
      for (let i = start; i < start + length; i++) arena[offset + i] = bytes[i]!;
    } else {
      this.keyArena.set(bytes.subarray(start, start + length), this.keyUsed);
    }
    this.keyUsed += length;
    this.values.push(EMPTY);
    this.takenSinceFlush++;
    this.setValue(e, value);
    this.afterChange();
  }

  /**
   * Grows the arrays or the key arena for one more entry if the budget allows; false when it does
   * not. Each grows by doubling, or by as much as still fits: the last growth fills the budget.
   */
  private makeRoom(keyLength: number): boolean {
    if (this.entries >= this.capacity) {
      const room = this.budget - this.usedBytes + this.fixedBytes;
      let capacity = this.capacity * 2;
      while (capacity > this.capacity && this.fixedBytesFor(capacity) > room) capacity = Math.floor(capacity * 0.9);
      if (capacity <= this.capacity) return false;
      this.resize(capacity);
    }
    if (this.keyUsed + keyLength > this.keyArena.length) {
      const room = this.budget - this.usedBytes + this.keyArena.length;
      const size = Math.min(this.keyArena.length * 2, room);
      if (size < this.keyUsed + keyLength) return false;
      this.keyArena = grow(this.keyArena, size, this.keyUsed);
    }
    return this.usedBytes <= this.budget;
  }

  /** Bytes of the arrays for `capacity` entries: rows, slot index, pending buffer. */
  private fixedBytesFor(capacity: number): number {
    return capacity * BYTES_PER_ENTRY + 4 * SLOT_STRIDE * slotsFor(capacity) + this.pendingCapacity * BYTES_PER_PENDING;
  }

  /** A value for an entry that has one: pending until the next drain. `slotAt`: where the entry's slot starts. */
  private append(e: number, value: unknown, slotAt: number): void {
    this.takenSinceFlush++;
    if (this.sumsNumbers && typeof value === 'number') {
      // Added now, as the fold would add it at the next drain: the entry has nothing pending before it.
      const current = this.values[e];
      if (typeof current === 'number' && (this.slots[slotAt + S_KEY_LENGTH]! & PENDING_BIT) === 0) {
        const sum = current + value;
        this.values[e] = sum;
        const grown = heapSize(sum) - heapSize(current);
        if (grown !== 0) {
          this.heapBytes += grown;
          if (this.heapBytes > this.budget >> 4) this.afterChange();
        }
        return;
      }
    }
    const i = this.pendingCount++;
    if (isPrimitive(value)) {
      this.pending[i] = value;
      this.heapBytes += heapSize(value);
    } else {
      // Copied: the map may change the object (or the codec reuse its buffer) after emitting it.
      const bytes = Buffer.from(this.valueCodec.encode(value));
      this.pending[i] = new EncodedValue(bytes);
      this.heapBytes += bytes.length + 64;
    }
    this.pendingNext[i] = -1;
    const row = e * STRIDE;
    const meta = this.meta;
    if (meta[row + M_HEAD]! < 0) {
      meta[row + M_HEAD] = i;
      this.slots[slotAt + S_KEY_LENGTH] |= PENDING_BIT;
      this.touched[this.touchedCount++] = e;
    } else {
      this.pendingNext[meta[row + M_TAIL]!] = i;
    }
    meta[row + M_TAIL] = i;
    meta[row + M_PENDING]++;
    if (this.pendingCount === this.pendingCapacity) {
      this.drain();
      this.afterChange();
    } else if (this.heapBytes > this.budget >> 4) {
      this.afterChange();
    }
  }

  /** Combines each entry's pending values into its value: one combine call per entry. */
  private drain(): void {
    const { touched, pending, pendingNext, meta, values } = this;
    for (let t = 0; t < this.touchedCount; t++) {
      const e = touched[t]!;
      const row = e * STRIDE;
      const current = values[e];
      const count = meta[row + M_PENDING]!;
      const group = new Array<unknown>(current === EMPTY ? count : count + 1);
      let g = 0;
      if (current !== EMPTY) group[g++] = current === ENCODED ? this.valueCodec.decode(this.valueBytesOf(e)) : current;
      this.clearValue(e);
      for (let i = meta[row + M_HEAD]!; i >= 0; i = pendingNext[i]!) {
        const v = pending[i];
        pending[i] = undefined;
        if (v instanceof EncodedValue) {
          this.heapBytes -= v.bytes.length + 64;
          group[g++] = this.valueCodec.decode(v.bytes);
        } else {
          this.heapBytes -= heapSize(v);
          group[g++] = v;
        }
      }
      meta[row + M_HEAD] = -1;
      meta[row + M_PENDING] = 0;
      this.slots[this.slotOf(e) + S_KEY_LENGTH] &= KEY_LENGTH_MASK;
      if (g === 1) this.setValue(e, group[0]);
      else this.combineGroup(e, group, count >= HOT_KEY_VALUES);
    }
    this.pendingCount = 0;
    this.touchedCount = 0;
  }

  /** Combines entry e's values; a `hot` key is decoded once and kept (while the budget has room). */
  private combineGroup(e: number, group: unknown[], hot: boolean): void {
    let key = this.hotKeys.get(e);
    if (key === undefined) {
      key = this.keyCodec.decode(this.keyBytesOf(e));
      const bytes = heapSize(key) + KEPT_KEY_BYTES;
      if (hot && isPrimitive(key) && this.usedBytes + bytes <= this.budget) {
        this.hotKeys.set(e, key);
        this.heapBytes += bytes;
      }
    }
    this.combining = e;
    this.combiningKey = key;
    this.emittedCount = 0;
    try {
      this.combine(key, group, this.onEmit);
    } finally {
      this.combining = -1;
      this.combiningKey = undefined;
    }
    if (this.emittedCount === 1) {
      this.setValue(e, this.emittedFirst);
    } else if (this.emittedCount > 1) {
      // Nothing to gain here: on to the sort buffer, whose spills combine again.
      const keyBytes = this.keyBytesOf(e);
      const partition = this.partitionOf(keyBytes);
      this.collect(partition, keyBytes, this.valueCodec.encode(this.emittedFirst));
      for (const v of this.emittedMore) this.collect(partition, keyBytes, this.valueCodec.encode(v));
      if (this.counters) this.counters.hashCombineOutputRecords += this.emittedCount;
      this.emittedMore = [];
    }
    this.emittedFirst = undefined;
  }

  /** Keeps `value` as entry e's value: primitives as they are, objects encoded. */
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
        const keyBytes = this.keyBytesOf(e);
        this.collect(this.partitionOf(keyBytes), keyBytes, encoded);
        if (this.counters) this.counters.hashCombineOutputRecords++;
        return;
      }
      this.valueArena = grow(this.valueArena, size, this.valueUsed);
    }
    encoded.copy(this.valueArena, this.valueUsed);
    this.meta[e * STRIDE + M_VALUE] = this.valueUsed;
    this.meta[e * STRIDE + M_VALUE_LENGTH] = encoded.length;
    this.valueUsed += encoded.length;
    this.values[e] = ENCODED;
  }

  private clearValue(e: number): void {
    const v = this.values[e];
    if (v !== ENCODED && v !== EMPTY) this.heapBytes -= heapSize(v);
    this.values[e] = EMPTY;
  }

  private keyBytesOf(e: number): Buffer {
    const at = this.meta[e * STRIDE + M_KEY]!;
    return this.keyArena.subarray(at, at + this.meta[e * STRIDE + M_KEY_LENGTH]!);
  }

  private valueBytesOf(e: number): Buffer {
    const at = this.meta[e * STRIDE + M_VALUE]!;
    return this.valueArena.subarray(at, at + this.meta[e * STRIDE + M_VALUE_LENGTH]!);
  }

  /** Whether a key the combiner emitted encodes to the bytes of the key it was given. */
  private isCombiningKey(key: unknown): boolean {
    if (this.textKeys && typeof key === 'string' && typeof this.combiningKey === 'string') return false;
    return this.keyBytesOf(this.combining).equals(this.keyCodec.encode(key));
  }

  /** A record the table does not keep: straight to the sort buffer. */
  private passOn(key: Buffer, value: unknown): void {
    this.collect(this.partitionOf(key), key, this.valueCodec.encode(value));
    if (this.counters) this.counters.hashCombineOutputRecords++;
  }

  /** Notes the peak; a table over its budget (values grown by the combiner, e.g. joined strings) is flushed. */
  private afterChange(): void {
    const used = this.usedBytes;
    if (used > this.peak) this.peak = used;
    if (used > this.budget) this.flush();
  }

  /** New rows for `capacity` entries; a new slot index (the entries held re-indexed) when its size changes. */
  private resize(capacity: number): void {
    const meta = new Int32Array(capacity * STRIDE);
    meta.set(this.meta.subarray(0, this.entries * STRIDE));
    this.meta = meta;
    this.capacity = capacity;
    this.fixedBytes = this.fixedBytesFor(capacity);
    const slots = slotsFor(capacity);
    if (SLOT_STRIDE * slots === this.slots.length) return;
    this.slots = new Int32Array(SLOT_STRIDE * slots);
    this.mask = slots - 1;
    for (let e = 0; e < this.entries; e++) this.index(e);
  }

  /** Puts entry e (its row written) into the slot index. */
  private index(e: number): void {
    const { slots, mask, meta } = this;
    const row = e * STRIDE;
    const hash = meta[row + M_HASH]!;
    let slot = hash & mask;
    while (slots[slot * SLOT_STRIDE + S_ENTRY] !== 0) slot = (slot + 1) & mask;
    const at = slot * SLOT_STRIDE;
    slots[at + S_ENTRY] = e + 1;
    slots[at + S_HASH] = hash;
    slots[at + S_KEY] = meta[row + M_KEY]!;
    slots[at + S_KEY_LENGTH] = meta[row + M_KEY_LENGTH]! | (meta[row + M_HEAD]! >= 0 ? PENDING_BIT : 0);
  }

  /** Where entry e's slot starts in `slots`. */
  private slotOf(e: number): number {
    const { slots, mask } = this;
    let slot = this.meta[e * STRIDE + M_HASH]! & mask;
    while (slots[slot * SLOT_STRIDE + S_ENTRY] !== e + 1) slot = (slot + 1) & mask;
    return slot * SLOT_STRIDE;
  }
}

/** Slots of the index for `capacity` entries: a power of two, at most 3/4 full. */
function slotsFor(capacity: number): number {
  return 2 ** Math.ceil(Math.log2(Math.ceil((capacity * 4) / 3)));
}

function grow(old: Buffer, size: number, used: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  old.copy(b, 0, 0, used);
  return b;
}

function isPrimitive(v: unknown): boolean {
  return typeof v !== 'object' ? typeof v !== 'function' : v === null;
}

/** Heap bytes a primitive held by the table keeps alive, beyond its array slot. */
function heapSize(v: unknown): number {
  if (typeof v === 'number') return (v | 0) === v ? 0 : 16;
  if (typeof v === 'string') return 24 + 2 * v.length;
  return typeof v === 'bigint' ? 32 : 0;
}
