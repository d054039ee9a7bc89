/**
 * Penalty models (YARN-ME, docs/specs/yarn-me.md): how long a task runs with a given memory grant, how much of
 * its node's disk an elastic run uses, and which elastic grant a memory-elastic policy picks. Pure
 * functions of the model, shared by the policies (predictions) and the simulator (its model of
 * time), so a prediction and the simulated truth differ only by the estimates they are given.
 *
 * T(m) for a task of ideal duration T and ideal memory M, granted m:
 *   m >= M         T                                  (regular)
 *   'none'         T                                  (insensitive to memory)
 *   'step'         factor * T                         (mappers: one extra merge pass, any m < M)
 *   'power'        (M / m)^n * T                      (the paper's simulator's POWER1/2, SQUAREROOT)
 *   'spill'        T + spilledBytes(m) / diskRate     (the paper's model; 'reduce' has a sawtooth)
 */
import type { PenaltyModel } from './types.js';

const MiB = 1024 * 1024;

/** Disk rate assumed when neither the model nor the worker knows one, MB/s. */
export const DEFAULT_DISK_MBPS = 100;

type SpillModel = Extract<PenaltyModel, { kind: 'spill' }>;

/** Bytes spilled to disk with `grantedMb` (spill model), 0 when the buffer holds everything. */
export function spilledBytes(p: SpillModel, grantedMb: number): number {
  const buffer = Math.max(MiB, (grantedMb - p.overheadMb) * MiB);
  if (buffer >= p.bufferBytes) return 0;
  if (p.rule === 'map') return p.bufferBytes;
  return buffer * (Math.ceil(p.bufferBytes / buffer) - 1);
}

/** The disk rate a spill model works with: its own, else the worker's, else DEFAULT_DISK_MBPS. */
function diskRateOf(p: SpillModel, workerDiskMBps: number): number {
  return p.diskMBps ?? (workerDiskMBps > 0 ? workerDiskMBps : DEFAULT_DISK_MBPS);
}

/**
 * Duration of `idealMs` of work granted `grantedMb` by a task of ideal memory `idealMemoryMb`:
 * the penalty model applied, nothing else. `workerDiskMBps` is the rate a spill model naming none uses.
 */
export function penalizedMs(
  idealMemoryMb: number,
  penalty: PenaltyModel | undefined,
  idealMs: number,
  grantedMb: number,
  workerDiskMBps: number,
): number {
  if (!penalty || penalty.kind === 'none' || grantedMb >= idealMemoryMb) return idealMs;
  if (penalty.kind === 'step') return idealMs * penalty.factor;
  if (penalty.kind === 'power') return idealMs * (idealMemoryMb / grantedMb) ** penalty.exponent;
  return idealMs + (spilledBytes(penalty, grantedMb) / (diskRateOf(penalty, workerDiskMBps) * MiB)) * 1000;
}

/**
 * The average disk bandwidth an elastic run uses for its spills, MB/s: the spill model's spilled
 * bytes over its whole duration. Step and memory-insensitive models say nothing of bytes: 0 (the
 * disk share does not limit them; the paper's simulated traces use step penalties).
 */
export function elasticDiskMBps(
  idealMemoryMb: number,
  penalty: PenaltyModel | undefined,
  idealMs: number,
  grantedMb: number,
  workerDiskMBps: number,
): number {
  if (penalty?.kind !== 'spill' || grantedMb >= idealMemoryMb) return 0;
  const ms = penalizedMs(idealMemoryMb, penalty, idealMs, grantedMb, workerDiskMBps);
  return ms > 0 ? spilledBytes(penalty, grantedMb) / MiB / (ms / 1000) : 0;
}

export interface ElasticGrant {
  readonly memoryMb: number;
  readonly durationMs: number;
}

/**
 * YARN-ME's elastic allocation: among the grants in [minimum, free memory] in whole steps (and
 * below ideal: an ideal grant is a regular one), the one of lowest predicted duration, and among
 * equal durations the smallest (the reduce sawtooth makes a bigger grant no faster at times).
 * Null when not even the minimum fits.
 */
export function bestElasticGrant(
  task: { readonly memoryMb: number; readonly penalty?: PenaltyModel; readonly idealDurationMs?: number },
  freeMemoryMb: number,
  minimumMb: number,
  stepMb: number,
  workerDiskMBps: number,
): ElasticGrant | null {
  const idealMs = task.idealDurationMs ?? 0;
  let best: ElasticGrant | null = null;
  const top = Math.min(freeMemoryMb, task.memoryMb - 1);
  const first = Math.ceil(minimumMb / stepMb) * stepMb;
  // A step penalty lasts as long at every grant below ideal: the smallest grant is the best.
  if (task.penalty?.kind === 'step' && first <= top)
    return { memoryMb: first, durationMs: penalizedMs(task.memoryMb, task.penalty, idealMs, first, workerDiskMBps) };
  for (let m = first; m <= top; m += stepMb) {
    const durationMs = penalizedMs(task.memoryMb, task.penalty, idealMs, m, workerDiskMBps);
    // Strictly lower only: equal durations keep the smaller grant found first.
    if (best === null || durationMs < best.durationMs) best = { memoryMb: m, durationMs };
  }
  return best;
}
