/**
 * The hash a map's table of keys (shuffle/hash-combiner.ts) finds a key's slot by: 32-bit FNV-1a
 * over the key's encoded bytes, then one mixing step so that the low bits the table keeps depend on
 * every byte. Not the partitioner's MurmurHash3: the table needs spread, not that hash's values,
 * and on short keys (WordCount's words) FNV-1a's one multiply per byte costs less than murmur's
 * block reads and finaliser (docs/performance-notes.md, "The map-side table's hash").
 *
 * A map that reads its keys byte by byte can hash them on the way (start at KEY_HASH_START, fold
 * each byte in with keyHashStep) and pass the result to `emitKeyBytes`, so the table need not
 * read the bytes again to hash them.
 */

/** FNV-1a's 32-bit offset basis: the hash of no bytes, before any `keyHashStep`. */
export const KEY_HASH_START = 0x811c9dc5 | 0;

/** Folds one byte into a key hash (FNV-1a: xor, then multiply by the 32-bit FNV prime). */
export function keyHashStep(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, 0x01000193);
}

/** The key hash of bytes [start, end): `keyHashStep` over each from KEY_HASH_START. */
export function keyHash(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let h = KEY_HASH_START;
  for (let i = start; i < end; i++) h = keyHashStep(h, bytes[i]!);
  return h;
}

/** Where a key hash starts probing: the hash mixed so its low bits depend on all of it. */
export function keySlotHash(hash: number): number {
  let h = hash ^ (hash >>> 15);
  h = Math.imul(h, 0x2c1b3c6d);
  return h ^ (h >>> 12);
}
