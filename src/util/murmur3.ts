/**
 * MurmurHash3 x86_32 (Austin Appleby's public-domain reference, 32-bit variant). A hash of bytes alone,
 * the same in every process and on every run, unlike the JS engine's string hash: the default partitioner
 * (shuffle/partitioner.ts), the map-side hash combiner and the count-min sketch's rows all rely on that.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** MurmurHash3 x86_32 of bytes [start, end). */
export function murmur3_32(bytes: Uint8Array, seed = 0, start = 0, end = bytes.length): number {
  let h = seed >>> 0;
  const len = end - start;
  const blocks = start + (len & ~3);
  for (let i = start; i < blocks; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = len & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= bytes[blocks + 2]! << 16;
    if (tail >= 2) k ^= bytes[blocks + 1]! << 8;
    k ^= bytes[blocks]!;
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
