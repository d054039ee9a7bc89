/**
 * A job's skewed map output as a workload states it (the "skew" field of minimr workload JSON): how
 * many distinct keys, their Zipf exponent, and the skew strategy that assigns its partitions. The
 * simulator's model of such output is src/sim/skew-model.ts.
 */
import { MinimrError } from '../errors.js';
import { SKEW_STRATEGIES, type SkewStrategy } from '../skew/index.js';

export interface SkewSpec {
  readonly strategy: SkewStrategy;
  /** Virtual partitions per reduce (P = factor x R); default 1. */
  readonly partitionFactor?: number;
  /** Distinct keys of the job's map output. */
  readonly keys: number;
  /** Zipf exponent of their frequencies; 0 is uniform. */
  readonly zipf: number;
  /** 'cms': rows of the sketch; default 4, as the client's `skew.sketchDepth`. */
  readonly sketchDepth?: number;
}

const MAX_KEYS = 1_000_000;

/** Checks a job's "skew" field (minimr workload JSON); `at` names the job for the error. */
export function parseSkewSpec(value: unknown, at: string): SkewSpec {
  const bad = (message: string, field: string): never => {
    throw new MinimrError('EBADCONF', `${at}: "skew": ${message}`, { field: `skew.${field}` });
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return bad('must be an object {strategy, keys, zipf, partitionFactor?}', 'strategy');
  const v = value as Record<string, unknown>;
  if (!SKEW_STRATEGIES.includes(v.strategy as SkewStrategy))
    bad(`"strategy" must be one of ${SKEW_STRATEGIES.join(', ')}, got ${JSON.stringify(v.strategy)}`, 'strategy');
  const keys = v.keys;
  if (!Number.isInteger(keys) || (keys as number) < 1 || (keys as number) > MAX_KEYS)
    bad(`"keys" must be an integer in 1..${MAX_KEYS}`, 'keys');
  if (typeof v.zipf !== 'number' || !(v.zipf >= 0 && v.zipf <= 10)) bad('"zipf" must be a number in [0, 10]', 'zipf');
  const integerAtLeast1 = (field: string): number | undefined => {
    const x = v[field];
    if (x === undefined) return undefined;
    return Number.isInteger(x) && (x as number) >= 1 && (x as number) <= 64
      ? (x as number)
      : bad(`"${field}" must be an integer in 1..64`, field);
  };
  const partitionFactor = integerAtLeast1('partitionFactor');
  const sketchDepth = integerAtLeast1('sketchDepth');
  return {
    strategy: v.strategy as SkewStrategy,
    keys: keys as number,
    zipf: v.zipf as number,
    ...(partitionFactor !== undefined ? { partitionFactor } : {}),
    ...(sketchDepth !== undefined ? { sketchDepth } : {}),
  };
}
