/**
 * The memory rules of the resource model (YARN-ME, docs/specs/yarn-me.md), shared by the decision check and
 * the policies: a task may be granted less than its ideal memory (an elastic grant) down to a
 * minimum, in whole steps. One place, so the books refuse exactly what the policies avoid.
 */
import type { ClusterSnapshot, PenaltyModel } from './types.js';

/** Elastic grants are whole multiples of this unless the snapshot says otherwise (the paper's simulator: 100 MB). */
export const DEFAULT_MEMORY_STEP_MB = 100;

/** The smallest fraction of its ideal memory a task runs with when its penalty model names none. */
export const DEFAULT_MIN_MEMORY_FRACTION = 0.1;

/** The step of elastic grants in this snapshot. */
export function memoryStepOf(snapshot: Pick<ClusterSnapshot, 'memoryStepMb'>): number {
  return snapshot.memoryStepMb ?? DEFAULT_MEMORY_STEP_MB;
}

/** The smallest grant a task with this ideal memory and penalty model can run with, MB (whole MB, rounded up). */
export function minimumGrantMb(idealMemoryMb: number, penalty: PenaltyModel | undefined): number {
  const fraction = penalty?.minFraction ?? DEFAULT_MIN_MEMORY_FRACTION;
  // The epsilon keeps 0.1 * 3000 = 300.00000000000006 from rounding up to 301.
  return Math.ceil(fraction * idealMemoryMb - 1e-9);
}

/**
 * Why this grant is not allowed for the task, or null when it is. `elastic` is what the decision
 * says (undefined: whatever the grant implies).
 */
export function grantProblem(
  task: { readonly id: string; readonly memoryMb: number; readonly penalty?: PenaltyModel },
  grantedMb: number,
  elastic: boolean | undefined,
  stepMb: number,
): string | null {
  if (!Number.isFinite(grantedMb) || grantedMb <= 0) return `grants ${grantedMb} MB`;
  const ideal = task.memoryMb;
  if (grantedMb >= ideal)
    return elastic === true
      ? `marks ${task.id} elastic with ${grantedMb} MB, not less than its ideal ${ideal} MB`
      : null;
  if (elastic === false)
    return `grants ${task.id} ${grantedMb} MB, less than its ideal ${ideal} MB, yet says it is not elastic`;
  if (!task.penalty)
    return (
      `grants ${task.id} ${grantedMb} MB, less than its ` +
      `ideal ${ideal} MB, but the task has no penalty model: it runs ` +
      `only with its ideal memory`
    );
  const minimum = minimumGrantMb(ideal, task.penalty);
  if (grantedMb < minimum)
    return (
      `grants ${task.id} ${grantedMb} MB, below its ` +
      `minimum ${minimum} MB ` +
      `(${task.penalty.minFraction ?? DEFAULT_MIN_MEMORY_FRACTION} of ` +
      `its ideal ${ideal} MB)`
    );
  if (grantedMb % stepMb !== 0)
    return `grants ${task.id} ${grantedMb} MB elastically, not a whole number of ${stepMb} MB steps`;
  return null;
}
