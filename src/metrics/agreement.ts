/**
 * Per-job agreement between two runs of the same workload: the share of a reference run's jobs
 * whose duration in the other run is within a tolerance (default 10%) of the reference's. Two runs
 * can agree on the mean by luck while their jobs do not; this figure shows it. Durations are keyed
 * by job id; a job missing from the other run, or unfinished there (null, NaN), counts as
 * disagreeing. The reference's own unfinished jobs have no duration to agree with and are left out
 * of the share; when it finished none, the share is NaN.
 */

export type JobDurations = ReadonlyMap<string, number | null> | Readonly<Record<string, number | null>>;

function entries(durations: JobDurations): Iterable<readonly [string, number | null]> {
  return durations instanceof Map ? durations.entries() : Object.entries(durations);
}

function lookup(durations: JobDurations, id: string): number | null | undefined {
  if (durations instanceof Map) return durations.get(id);
  const record = durations as Readonly<Record<string, number | null>>;
  return Object.hasOwn(record, id) ? record[id] : undefined;
}

const finite = (v: number | null | undefined): v is number => typeof v === 'number' && Number.isFinite(v);

/** Share in [0, 1] of the reference's finished jobs whose duration in `durations` is within `tolerance` of it. */
export function perJobAgreement(durations: JobDurations, reference: JobDurations, tolerance = 0.1): number {
  if (!(tolerance >= 0)) throw new RangeError(`the agreement tolerance is a fraction >= 0, not ${tolerance}`);
  let compared = 0;
  let agreeing = 0;
  for (const [id, ref] of entries(reference)) {
    if (!finite(ref)) continue;
    compared++;
    const other = lookup(durations, id);
    if (finite(other) && Math.abs(other - ref) <= tolerance * ref) agreeing++;
  }
  return compared === 0 ? Number.NaN : agreeing / compared;
}

/** Each finished job's duration (response time) by id, from a run's per-job figures. */
export function jobDurations(
  perJob: readonly { readonly id: string; readonly responseMs: number }[],
): Map<string, number> {
  return new Map(perJob.map((j) => [j.id, j.responseMs]));
}
