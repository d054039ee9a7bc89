import { compareByteRanges } from './bytes-compare.js';
import type { KeyComparator } from './types.js';

/**
 * The sort of one spill, over the metadata entries of MapOutputBuffer's arena (see its design note).
 * Each record has one entry of META_WORDS u32 words, stored in a ring: the entry of record i of a
 * generation is at word `base - META_WORDS * (i + 1)`, plus the ring's size in words when negative.
 *
 *   W_PART   partition          W_KEY   key offset in the arena   W_KLEN key length   W_VLEN value length
 *   W_PFX_HI key bytes 0..3 (big-endian)
 *   W_PFX_LO key bytes 4..5 << 16 | min(keyLength, 7)   (only for byte order)
 *   W_S0, W_S1  scratch: the permutation (rank -> record number) and its double buffer
 *
 * Byte order: one stable MSD counting pass on (partition, top bits of the key), the bits chosen so
 * that partitions x buckets fit the 65536-entry histogram, then a stable sort of each bucket on
 * (6-byte prefix, min(length, 7)) and, for two keys longer than 6 bytes with equal prefixes, the
 * rest of the key. Random keys leave ~n/65536 records per bucket, so the buckets are sorted by
 * insertion, in small arrays holding each record's prefix words once (SMALL_BUCKET); skewed keys
 * make larger buckets, sorted by the merge sort (n log n compares of prefix words, full keys only
 * on prefix ties). One sequential pass replaces the four LSD passes this used
 * to make (two random reads of the entries per record each; figures: docs/performance-notes.md#map-sort).
 * (More than 32768 partitions: LSD radix passes on
 * (partition, prefix, length) instead, then the same tie sort.) Equal keys keep collection order
 * (every step is stable and starts from record order), so the output does not depend on the buffer
 * size. A custom comparator: radix on the partition, then the merge sort per partition.
 * The scratch lives in the entries themselves: a sort allocates nothing per record.
 */
export const META_WORDS = 8;
export const META_BYTES = META_WORDS * 4;
export const W_PART = 0;
export const W_KEY = 1;
export const W_KLEN = 2;
export const W_VLEN = 3;
export const W_PFX_HI = 4;
export const W_PFX_LO = 5;
export const W_S0 = 6;
export const W_S1 = 7;

/** Key prefix words for byte order (see above). */
export function prefixHi(key: Uint8Array, start: number, len: number): number {
  const b0 = len > 0 ? key[start]! : 0;
  const b1 = len > 1 ? key[start + 1]! : 0;
  const b2 = len > 2 ? key[start + 2]! : 0;
  const b3 = len > 3 ? key[start + 3]! : 0;
  return ((b0 << 24) | (b1 << 16) | (b2 << 8) | b3) >>> 0;
}

export function prefixLo(key: Uint8Array, start: number, len: number): number {
  const b4 = len > 4 ? key[start + 4]! : 0;
  const b5 = len > 5 ? key[start + 5]! : 0;
  return ((b4 << 24) | (b5 << 16) | (len > 6 ? 7 : len)) >>> 0;
}

export interface SortSpec {
  readonly meta: Uint32Array;
  readonly data: Buffer;
  /** Word index of the generation's equator (entry i ends there minus i entries). */
  readonly base: number;
  readonly n: number;
  readonly numPartitions: number;
  /** undefined = byte order with the prefix words filled in. */
  readonly compare: KeyComparator | undefined;
  /** 65536-entry histogram, reused across spills. */
  readonly hist: Uint32Array;
}

export interface SortResult {
  /** Which scratch word holds the final permutation (W_S0 or W_S1). */
  readonly permWord: number;
  /** Ranks of partition p are starts[p] .. starts[p + 1]. */
  readonly starts: Float64Array;
}

/** Partitions up to this many take the MSD path (at least one key bit per bucket). */
const MSD_MAX_PARTITIONS = 32768;
/** MSD buckets up to this size are sorted in small arrays (msdSort's sortSmallBucket), larger ones in place. */
const SMALL_BUCKET = 32;

export function sortSpill(spec: SortSpec): SortResult {
  if (spec.compare === undefined && spec.numPartitions <= MSD_MAX_PARTITIONS) return msdSort(spec);
  const { meta, data, base, n, numPartitions, compare, hist } = spec;
  const ring = meta.length;
  const slot = (i: number): number => {
    const a = base - META_WORDS * (i + 1);
    return a < 0 ? a + ring : a;
  };
  for (let i = 0; i < n; i++) meta[slot(i) + W_S0] = i;
  let src = W_S0;
  let dst = W_S1;

  // One LSD pass on the 16-bit digit (word >>> shift) & 0xffff; skipped when all digits are equal.
  const pass = (word: number, shift: number): void => {
    hist.fill(0);
    for (let j = 0; j < n; j++) {
      const r = meta[slot(j) + src]!;
      hist[(meta[slot(r) + word]! >>> shift) & 0xffff]!++;
    }
    let sum = 0;
    for (let d = 0; d < 65536; d++) {
      const c = hist[d]!;
      if (c === n) return;
      hist[d] = sum;
      sum += c;
    }
    for (let j = 0; j < n; j++) {
      const r = meta[slot(j) + src]!;
      const d = (meta[slot(r) + word]! >>> shift) & 0xffff;
      meta[slot(hist[d]!++) + dst] = r;
    }
    const t = src;
    src = dst;
    dst = t;
  };

  if (compare === undefined && n > 1) {
    pass(W_PFX_LO, 0);
    pass(W_PFX_LO, 16);
    pass(W_PFX_HI, 0);
    pass(W_PFX_HI, 16);
  }
  if (numPartitions > 1 && n > 1) {
    pass(W_PART, 0);
    if (numPartitions > 65536) pass(W_PART, 16);
  }

  const starts = new Float64Array(numPartitions + 1);
  for (let i = 0; i < n; i++) starts[meta[slot(i) + W_PART]! + 1]!++;
  for (let p = 0; p < numPartitions; p++) starts[p + 1]! += starts[p]!;

  if (compare === undefined) {
    // Full-key sort of the runs that the radix key could not separate.
    const cmp = (a: number, b: number): number => {
      const sa = slot(a);
      const sb = slot(b);
      const ka = meta[sa + W_KEY]!;
      const kb = meta[sb + W_KEY]!;
      return compareByteRanges(data, ka, ka + meta[sa + W_KLEN]!, data, kb, kb + meta[sb + W_KLEN]!);
    };
    let j = 0;
    while (j < n) {
      const s = slot(meta[slot(j) + src]!);
      const part = meta[s + W_PART]!;
      const hi = meta[s + W_PFX_HI]!;
      const lo = meta[s + W_PFX_LO]!;
      let k = j + 1;
      if ((lo & 0xffff) === 7) {
        while (k < n) {
          const t = slot(meta[slot(k) + src]!);
          if (meta[t + W_PFX_HI] !== hi || meta[t + W_PFX_LO] !== lo || meta[t + W_PART] !== part) break;
          k++;
        }
        if (k - j > 1) mergeSortRange(meta, slot, src, dst, j, k, cmp);
      }
      j = k;
    }
  } else {
    const cmp = (a: number, b: number): number => {
      const sa = slot(a);
      const sb = slot(b);
      const ka = meta[sa + W_KEY]!;
      const kb = meta[sb + W_KEY]!;
      return compare(data.subarray(ka, ka + meta[sa + W_KLEN]!), data.subarray(kb, kb + meta[sb + W_KLEN]!));
    };
    for (let p = 0; p < numPartitions; p++) {
      if (starts[p + 1]! - starts[p]! > 1) mergeSortRange(meta, slot, src, dst, starts[p]!, starts[p + 1]!, cmp);
    }
  }
  return { permWord: src, starts };
}

/** Byte order, at most MSD_MAX_PARTITIONS partitions (see the note at the top). */
function msdSort(spec: SortSpec): SortResult {
  const { meta, data, base, n, numPartitions, hist } = spec;
  const ring = meta.length;
  const slot = (i: number): number => {
    const a = base - META_WORDS * (i + 1);
    return a < 0 ? a + ring : a;
  };
  const partBits = numPartitions <= 1 ? 0 : 32 - Math.clz32(numPartitions - 1);
  // No more buckets per partition than about n: a small generation (a tiny job's map) would spend
  // most of its sort walking 65536 empty buckets, twice. Fewer key bits only make buckets larger,
  // and every bucket is sorted in full, so the order is the same. At least one bit: a shift by 32
  // shifts by 0 in JS.
  const keyBits = Math.max(1, Math.min(16 - partBits, 32 - Math.clz32(n)));
  const keyShift = 32 - keyBits;
  const buckets = numPartitions << keyBits;
  hist.fill(0, 0, buckets);
  // Entries in record order are consecutive words (downwards, wrapping once at most): walk them
  // with a pointer instead of computing each slot.
  for (let i = 0, s = slot(0); i < n; i++) {
    hist[(meta[s + W_PART]! << keyBits) | (meta[s + W_PFX_HI]! >>> keyShift)]!++;
    s -= META_WORDS;
    if (s < 0) s += ring;
  }
  const starts = new Float64Array(numPartitions + 1);
  let sum = 0;
  for (let d = 0; d < buckets; d++) {
    if ((d & ((1 << keyBits) - 1)) === 0) starts[d >>> keyBits] = sum;
    const c = hist[d]!;
    hist[d] = sum;
    sum += c;
  }
  starts[numPartitions] = n;
  for (let i = 0, s = slot(0); i < n; i++) {
    const d = (meta[s + W_PART]! << keyBits) | (meta[s + W_PFX_HI]! >>> keyShift);
    meta[slot(hist[d]!++) + W_S0] = i;
    s -= META_WORDS;
    if (s < 0) s += ring;
  }
  // hist[d] is now the end of bucket d.
  const cmp = (a: number, b: number): number => {
    const sa = slot(a);
    const sb = slot(b);
    const ha = meta[sa + W_PFX_HI]!;
    const hb = meta[sb + W_PFX_HI]!;
    if (ha !== hb) return ha < hb ? -1 : 1;
    const la = meta[sa + W_PFX_LO]!;
    const lb = meta[sb + W_PFX_LO]!;
    if (la !== lb) return la < lb ? -1 : 1;
    // Same first 6 bytes and same length class: equal keys unless both are longer than 6 bytes.
    if ((la & 0xffff) !== 7) return 0;
    const ka = meta[sa + W_KEY]!;
    const kb = meta[sb + W_KEY]!;
    return compareByteRanges(data, ka + 6, ka + meta[sa + W_KLEN]!, data, kb + 6, kb + meta[sb + W_KLEN]!);
  };
  // A small bucket's prefixes and record numbers are read into these once and sorted there by
  // insertion, then written back: each record's entry is read once, where sorting the entries in
  // place read two of them at every comparison (TeraSort's ~10-record buckets: most of the sort).
  const bucketHi = new Uint32Array(SMALL_BUCKET);
  const bucketLo = new Uint32Array(SMALL_BUCKET);
  const bucketRec = new Uint32Array(SMALL_BUCKET);
  const sortSmallBucket = (lo: number, hi: number): void => {
    const m = hi - lo;
    for (let t = 0; t < m; t++) {
      const rec = meta[slot(lo + t) + W_S0]!;
      const s = slot(rec);
      bucketHi[t] = meta[s + W_PFX_HI]!;
      bucketLo[t] = meta[s + W_PFX_LO]!;
      bucketRec[t] = rec;
    }
    for (let i = 1; i < m; i++) {
      const h = bucketHi[i]!;
      const l = bucketLo[i]!;
      const rec = bucketRec[i]!;
      let j = i - 1;
      // Stable: stop at the first earlier record that is not greater.
      for (; j >= 0; j--) {
        const hj = bucketHi[j]!;
        if (hj < h) break;
        if (hj === h) {
          const lj = bucketLo[j]!;
          if (lj < l || (lj === l && ((l & 0xffff) !== 7 || cmp(bucketRec[j]!, rec) <= 0))) break;
        }
        bucketHi[j + 1] = hj;
        bucketLo[j + 1] = bucketLo[j]!;
        bucketRec[j + 1] = bucketRec[j]!;
      }
      bucketHi[j + 1] = h;
      bucketLo[j + 1] = l;
      bucketRec[j + 1] = rec;
    }
    for (let t = 0; t < m; t++) meta[slot(lo + t) + W_S0] = bucketRec[t]!;
  };
  let lo = 0;
  for (let d = 0; d < buckets; d++) {
    const hi = hist[d]!;
    if (hi - lo > SMALL_BUCKET) mergeSortRange(meta, slot, W_S0, W_S1, lo, hi, cmp);
    else if (hi - lo > 1) sortSmallBucket(lo, hi);
    lo = hi;
  }
  return { permWord: W_S0, starts };
}

/**
 * Stable bottom-up merge sort of ranks lo..hi of the permutation held in word `src` of the entries,
 * using word `tmp` of the same entries as the merge buffer; the result ends in `src`.
 */
function mergeSortRange(
  meta: Uint32Array,
  slot: (i: number) => number,
  src: number,
  tmp: number,
  lo: number,
  hi: number,
  cmp: (a: number, b: number) => number,
): void {
  // Insertion sort of small blocks first.
  const BLOCK = 12;
  for (let b = lo; b < hi; b += BLOCK) {
    const end = Math.min(hi, b + BLOCK);
    for (let i = b + 1; i < end; i++) {
      const v = meta[slot(i) + src]!;
      let j = i - 1;
      while (j >= b) {
        const u = meta[slot(j) + src]!;
        if (cmp(u, v) <= 0) break;
        meta[slot(j + 1) + src] = u;
        j--;
      }
      meta[slot(j + 1) + src] = v;
    }
  }
  let from = src;
  let to = tmp;
  for (let width = BLOCK; width < hi - lo; width *= 2) {
    for (let left = lo; left < hi; left += 2 * width) {
      const mid = Math.min(hi, left + width);
      const right = Math.min(hi, left + 2 * width);
      let i = left;
      let j = mid;
      let k = left;
      while (i < mid && j < right) {
        const a = meta[slot(i) + from]!;
        const b = meta[slot(j) + from]!;
        if (cmp(b, a) < 0) {
          meta[slot(k++) + to] = b;
          j++;
        } else {
          meta[slot(k++) + to] = a;
          i++;
        }
      }
      while (i < mid) meta[slot(k++) + to] = meta[slot(i++) + from]!;
      while (j < right) meta[slot(k++) + to] = meta[slot(j++) + from]!;
    }
    const t = from;
    from = to;
    to = t;
  }
  if (from !== src) for (let i = lo; i < hi; i++) meta[slot(i) + src] = meta[slot(i) + from]!;
}
