/**
 * mulberry32: a small, fast, seeded 32-bit generator. Test data, workload generators and benchmarks
 * draw from it so that every run (and every failure) can be replayed from its seed.
 */
export function seededUint32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Uniform floats in [0, 1) from `seededUint32`. */
export function seededRandom(seed: number): () => number {
  const next = seededUint32(seed);
  return () => next() / 4294967296;
}

/** FNV-1a over the string, mixed with the seed: a stable 32-bit key for a seeded stream. */
export function hashSeed(seed: number, key: string): number {
  let h = (0x811c9dc5 ^ (seed >>> 0)) >>> 0;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A seeded stream of floats in [0, 1) for one named thing (an attempt, a job's placement). */
export function streamFor(seed: number, key: string): () => number {
  return seededRandom(hashSeed(seed, key));
}
