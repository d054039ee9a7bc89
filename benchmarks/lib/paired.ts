/**
 * minimr against a peer over repeated runs. The machine's speed drifts by 10-20% within minutes and
 * the two sides run one after the other, so one run of each can put the ratio anywhere in that
 * band. Repeated pairs, the order alternating from pair to pair, spread the drift over both sides;
 * the ratio is judged pair by pair (minimr's run k over the peer's run k).
 */
import { meanWithStandardError } from '../../src/util/index.js';
import { median, r3 } from './shell.js';

/** Pair k (from 0): even pairs run minimr first, odd ones the peer first. */
export async function runPair(k: number, minimr: () => Promise<void>, peer: () => Promise<void>): Promise<void> {
  if (k % 2 === 1) {
    await peer();
    await minimr();
  } else {
    await minimr();
    await peer();
  }
}

export interface RatioSummary {
  readonly ratios: number[];
  readonly median: number;
  readonly mean: number;
  readonly standardError: number;
}

/** The ratios of paired runs and their median, mean and standard error; undefined below two pairs. */
export function pairedRatios(
  minimrSeconds: readonly number[] | undefined,
  peerSeconds: readonly number[] | undefined,
): RatioSummary | undefined {
  if (!minimrSeconds || !peerSeconds || minimrSeconds.length < 2 || peerSeconds.length !== minimrSeconds.length)
    return undefined;
  const ratios = minimrSeconds.map((s, k) => s / peerSeconds[k]!);
  const { mean, standardError } = meanWithStandardError(ratios);
  return { ratios, median: median(ratios), mean, standardError };
}

/** For a benchmark's JSON: the ratios and their median, mean and standard error (nothing below two pairs). */
export function ratioSummaryJson(s: RatioSummary | undefined): Record<string, number | number[]> {
  if (!s) return {};
  return {
    pairedRatios: s.ratios.map(r3),
    medianRatio: r3(s.median),
    meanRatio: r3(s.mean),
    ratioStandardError: r3(s.standardError),
  };
}

/** "1.25 (median of 5 pairs; mean 1.22, standard error 0.02)" */
export function describeRatios(s: RatioSummary, digits = 2): string {
  return (
    `${s.median.toFixed(digits)} (median of ${s.ratios.length} ` +
    `pairs; mean ${s.mean.toFixed(digits)}, standard ` +
    `error ${s.standardError.toFixed(digits)})`
  );
}
