import type { KeyComparator } from './types.js';

/**
 * Byte-order comparison in plain JS. Keys are mostly short (words, ids), and for those a JS loop beats
 * Buffer.compare, whose every call crosses into C++ and validates its arguments; the sort and the merge
 * compare tens of millions of times. Long keys go to the native compare, which wins past a few dozen bytes.
 */
const NATIVE_FROM = 64;

export function compareByteRanges(
  a: Uint8Array,
  aStart: number,
  aEnd: number,
  b: Uint8Array,
  bStart: number,
  bEnd: number,
): number {
  const aLen = aEnd - aStart;
  const bLen = bEnd - bStart;
  const n = aLen < bLen ? aLen : bLen;
  if (n >= NATIVE_FROM) {
    const c = Buffer.prototype.compare.call(b, a, aStart, aEnd, bStart, bEnd);
    return c === 0 ? 0 : -c;
  }
  for (let i = 0; i < n; i++) {
    const d = a[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return aLen === bLen ? 0 : aLen < bLen ? -1 : 1;
}

export const compareBytes: KeyComparator = (a, b) => compareByteRanges(a, 0, a.length, b, 0, b.length);

/** The comparator to actually call: the JS byte compare when the job asked for plain byte order. */
export function effectiveComparator(compare: KeyComparator | undefined): KeyComparator {
  return compare === undefined || compare === Buffer.compare ? compareBytes : compare;
}
