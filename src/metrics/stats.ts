/** Averages the metrics share. */

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Time-weighted mean of f(sample) over [from, to], each sample holding until the next. */
export function timeWeighted<S extends { readonly timeMs: number }>(
  samples: readonly S[],
  from: number,
  to: number,
  f: (s: S) => number,
): number {
  if (to <= from || samples.length === 0) return Number.NaN;
  let area = 0;
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]!;
    const start = Math.max(from, s.timeMs);
    const end = Math.min(to, i + 1 < samples.length ? samples[i + 1]!.timeMs : to);
    if (end > start) area += f(s) * (end - start);
  }
  return area / (to - from);
}
