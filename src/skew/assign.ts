import { MinimrError } from '../errors.js';
import type { CountMinSketch } from './count-min.js';

/**
 * How map output partitions are given to reducers: 'hash' (partition p to reducer p mod R),
 * 'simple' (Simple Partitions Assignment on the sizes the maps measured), 'cms' (Count-Min Sketch
 * Assignment from a sketch of a sample of the input). The algorithms: docs/specs/skew-count-min.md.
 */
export type SkewStrategy = 'hash' | 'simple' | 'cms';
export const SKEW_STRATEGIES: readonly SkewStrategy[] = ['hash', 'simple', 'cms'];

/** Which reducer each of P partitions goes to, and what that is expected to cost. */
export interface PartitionAssignment {
  /** reducerOf[p] = the reducer (0..R-1) that reads partition p. */
  readonly reducerOf: number[];
  /** Estimated bytes each reducer reads. */
  readonly loads: number[];
  /** Estimated finish time of each reducer: loads[r] / speeds[r]. */
  readonly times: number[];
  /** Estimated reduce-phase time: the largest of `times`. */
  readonly makespan: number;
}

/** Baseline: partition p to reducer p mod R. With P = R it is plain hash partitioning. */
export function hashAssignment(sizes: ArrayLike<number>, speeds: readonly number[]): PartitionAssignment {
  checkSpeeds(speeds);
  const r = speeds.length;
  const reducerOf = Array.from({ length: sizes.length }, (_, p) => p % r);
  return withCosts(reducerOf, sizes, speeds);
}

/**
 * Simple Partitions Assignment: partitions by decreasing size (ties: lower index first), each onto
 * the reducer whose estimated finish time once it is added is smallest (ties: lower reducer index).
 * This is LPT scheduling on machines of different speeds: estimated time = bytes / speed, so a slow
 * reducer takes less. Deterministic: the same sizes and speeds give the same assignment everywhere.
 */
export function simpleAssignment(sizes: ArrayLike<number>, speeds: readonly number[]): PartitionAssignment {
  checkSpeeds(speeds);
  const n = sizes.length;
  for (let p = 0; p < n; p++) {
    const s = sizes[p]!;
    if (!(Number.isFinite(s) && s >= 0)) throw new MinimrError('EINTERNAL', `partition ${p} has size ${s}`);
  }
  const order = Array.from({ length: n }, (_, p) => p).sort((a, b) => sizes[b]! - sizes[a]! || a - b);
  const r = speeds.length;
  const loads = new Array<number>(r).fill(0);
  const reducerOf = new Array<number>(n).fill(-1);
  for (const p of order) {
    const size = sizes[p]!;
    let best = 0;
    let bestTime = Infinity;
    for (let i = 0; i < r; i++) {
      const t = (loads[i]! + size) / speeds[i]!;
      if (t < bestTime) {
        bestTime = t;
        best = i;
      }
    }
    reducerOf[p] = best;
    loads[best]! += size;
  }
  return withCosts(reducerOf, sizes, speeds);
}

/** What the Count-Min Sketch Assignment chose. */
export interface SketchAssignment {
  /** The row whose hash partitions the map output. */
  readonly row: number;
  readonly seed: number;
  readonly assignment: PartitionAssignment;
  /** Estimated reduce-phase time of every row's Simple assignment (the chosen one is the smallest). */
  readonly rowMakespans: number[];
}

/**
 * Count-Min Sketch Assignment: one Simple assignment per sketch row, with that row's byte counters as
 * the partition sizes (w = P partitions); keeps the row with the smallest estimated reduce-phase time
 * (ties: the lower row).
 */
export function sketchAssignment(sketch: CountMinSketch, speeds: readonly number[]): SketchAssignment {
  let best: SketchAssignment | undefined;
  const rowMakespans: number[] = [];
  for (let row = 0; row < sketch.depth; row++) {
    const assignment = simpleAssignment(sketch.row(row).bytes, speeds);
    rowMakespans.push(assignment.makespan);
    if (!best || assignment.makespan < best.assignment.makespan)
      best = { row, seed: sketch.seeds[row]!, assignment, rowMakespans };
  }
  return { ...best!, rowMakespans };
}

/** The partitions of each reducer, in increasing order. */
export function partitionsByReducer(reducerOf: readonly number[], reducers: number): number[][] {
  const out = Array.from({ length: reducers }, () => [] as number[]);
  reducerOf.forEach((r, p) => out[r]!.push(p));
  return out;
}

function withCosts(reducerOf: number[], sizes: ArrayLike<number>, speeds: readonly number[]): PartitionAssignment {
  const loads = new Array<number>(speeds.length).fill(0);
  reducerOf.forEach((r, p) => {
    loads[r]! += sizes[p]!;
  });
  const times = loads.map((l, i) => l / speeds[i]!);
  return { reducerOf, loads, times, makespan: Math.max(0, ...times) };
}

function checkSpeeds(speeds: readonly number[]): void {
  if (speeds.length === 0) throw new MinimrError('EINTERNAL', 'an assignment needs at least one reducer');
  for (const s of speeds)
    if (!(Number.isFinite(s) && s > 0)) throw new MinimrError('EINTERNAL', `reducer speed must be positive, got ${s}`);
}
