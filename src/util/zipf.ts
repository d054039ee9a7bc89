/**
 * Zipf-distributed ranks 0..n-1 (rank k drawn with probability proportional to 1 / (k + 1)^s), from a
 * uniform [0, 1) source such as `seededRandom`: inverse CDF by binary search over the precomputed
 * cumulative weights. Skew experiments draw keys from it.
 */
export function zipfSampler(n: number, s: number, uniform: () => number): () => number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`zipfSampler: n must be a positive integer, got ${n}`);
  if (!(s >= 0 && Number.isFinite(s))) throw new RangeError(`zipfSampler: s must be a finite number >= 0, got ${s}`);
  const cdf = new Float64Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    total += 1 / (k + 1) ** s;
    cdf[k] = total;
  }
  return () => {
    const u = uniform() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}
