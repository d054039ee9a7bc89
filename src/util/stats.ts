/** A sample's mean, the standard error of that mean (NaN below two values), and its size. */
export interface MeanWithError {
  readonly mean: number;
  readonly standardError: number;
  readonly n: number;
}

/**
 * How the benchmarks judge policies on repeated runs: the mean of the values (paired differences,
 * usually) and its standard error, sqrt(sample variance / n).
 */
export function meanWithStandardError(xs: readonly number[]): MeanWithError {
  const n = xs.length;
  const mean = xs.reduce((s, x) => s + x, 0) / n;
  const standardError = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1) / n) : Number.NaN;
  return { mean, standardError, n };
}
