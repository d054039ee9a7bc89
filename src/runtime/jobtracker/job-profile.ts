/**
 * Profiles of recurring jobs (YARN-ME, docs/specs/yarn-me.md): what earlier runs of a job of
 * the same name measured, so that the JobTracker can hand each task of a new run its ideal duration
 * and penalty model (the books' TaskPlan.idealDurationMs and .penalty) and a memory-elastic policy
 * can grant it less than its ideal memory. A job with no profile runs regular, as YARN-ME says.
 *
 * What is kept, per job name and phase (map, reduce): one bucket per shuffle-buffer size the
 * phase's attempts ran with, in whole MiB, holding how many attempts and the sums of their
 * durations, of the input each stands for, of the buffer each would have needed not to spill, and
 * of what each spilled. Buckets rather than a list of runs: a recurring job adds attempts at the
 * same few sizes (its ideal, the grants elastic policies gave it), so a profile stays small however
 * often the job runs; a bucket keeps about its last MAX_BUCKET_ATTEMPTS attempts' worth (older sums
 * are scaled down), so a job whose data grows is followed. `minimr profile` results are imported
 * into the same buckets: their points are runs at fractions of the ideal buffer.
 *
 * Scaling to a new task. The input an attempt stands for is a map's split and a reduce's share of
 * the job's input (job input / reducers); needed buffer and duration are taken per byte of it, so a
 * recurring job whose input grew gets longer tasks and bigger buffers. Attempts of generated-input
 * jobs (no input bytes) are not scaled.
 *
 * The fit, for a task standing for X input bytes (the model of docs/specs/yarn-me.md,
 * T(m) = T + spilledBytes(m)/diskRate):
 * - need(X): needed buffer bytes per input byte times X: the buffer with which it does not spill;
 * - T: the mean (scaled) duration of the buckets whose buffer held what their attempts needed
 *   (if none did, the bucket closest to it, and need(X) is what that bucket had);
 * - the penalty: the books' 'spill' model with that buffer, the task overhead, a minimum grant that
 *   still leaves a real buffer, and the disk rate fitted the way the profiler fits it
 *   (fitSpillModel: T and the most under-sized bucket) with the policies' own spilled-bytes rule,
 *   so the policy's prediction reproduces what the runs measured; with no under-sized bucket that
 *   ran slower there is no rate of its own and the worker's measured disk rate is used;
 * - a map-only map buffers nothing: insensitive to memory down to its minimum ('none').
 * A profile with absurd numbers (negative or not finite, no duration, an ideal memory above every
 * worker) gives no estimate but a reason: the job runs regular and the JobTracker logs a warning.
 */
import { META_BYTES } from '../../shuffle/index.js';
import { DEFAULT_MIN_MEMORY_FRACTION, spilledBytes, type PenaltyModel } from '../../scheduler/index.js';
import { MinimrError } from '../../errors.js';
import {
  fitSpillModel,
  mapBufferNeedBytes,
  reduceBufferNeedBytes,
  type ElasticityProfile,
} from '../client/elasticity-profile.js';
import { attemptShuffleSettings, MIN_ELASTIC_BUFFER_BYTES, type RuntimeJob } from './runtime-data.js';
import {
  JOB_CONF_DEFAULTS,
  TASK_OVERHEAD_MB,
  type BufferBucket,
  type JobConf,
  type JobProfile,
  type PhaseFitSummary,
  type ProfileUse,
  type TaskKind,
} from '../wire/index.js';

const MiB = 1024 * 1024;

/** A bucket's sums are scaled down past this many attempts, so recent runs weigh most. */
export const MAX_BUCKET_ATTEMPTS = 200;

/** What one successful attempt measured. */
export interface AttemptObservation {
  readonly kind: TaskKind;
  readonly bufferBytes: number;
  readonly taskMs: number;
  readonly inputBytes: number;
  readonly needBytes: number;
  readonly spilledBytes: number;
}

/** Adds attempts to a profile (a fresh one when there is none), a new object. */
export function addObservations(
  profile: JobProfile | undefined,
  job: string,
  observations: readonly AttemptObservation[],
  now: number,
  source: 'run' | 'import',
  /** Who adds them: the owner of a profile made now (a profile keeps the owner it was made with). */
  by?: string,
): JobProfile {
  const phases = {
    map: new Map((profile?.map ?? []).map((b) => [b.bufferMiB, b])),
    reduce: new Map((profile?.reduce ?? []).map((b) => [b.bufferMiB, b])),
  };
  for (const o of observations) {
    const key = Math.max(0, Math.round(o.bufferBytes / MiB));
    const phase = phases[o.kind];
    const b = phase.get(key) ?? {
      bufferMiB: key,
      attempts: 0,
      taskMs: 0,
      inputBytes: 0,
      needBytes: 0,
      spilledBytes: 0,
    };
    const keep = b.attempts >= MAX_BUCKET_ATTEMPTS ? (MAX_BUCKET_ATTEMPTS - 1) / b.attempts : 1;
    phase.set(key, {
      bufferMiB: key,
      attempts: b.attempts * keep + 1,
      taskMs: b.taskMs * keep + o.taskMs,
      inputBytes: b.inputBytes * keep + o.inputBytes,
      needBytes: b.needBytes * keep + o.needBytes,
      spilledBytes: b.spilledBytes * keep + o.spilledBytes,
    });
  }
  const sorted = (m: Map<number, BufferBucket>) => [...m.values()].sort((a, b) => a.bufferMiB - b.bufferMiB);
  const owner = profile ? profile.owner : by;
  return {
    job,
    ...(owner !== undefined ? { owner } : {}),
    updatedAt: now,
    runs: (profile?.runs ?? 0) + (source === 'run' ? 1 : 0),
    imports: (profile?.imports ?? 0) + (source === 'import' ? 1 : 0),
    map: sorted(phases.map),
    reduce: sorted(phases.reduce),
  };
}

/** The successful attempts of a job that succeeded, as profile observations. */
export function observationsOf(job: RuntimeJob): AttemptObservation[] {
  const submission = job.data.submission;
  const conf = { ...JOB_CONF_DEFAULTS, ...submission.conf };
  const won = (tasks: RuntimeJob['maps']) =>
    tasks.flatMap((t) =>
      t.successfulAttempt?.state === 'succeeded' && t.successfulAttempt.finishTime !== undefined
        ? [t.successfulAttempt]
        : [],
    );
  const maps = won(job.maps);
  const reduces = won(job.reduces);
  const counter = (a: (typeof maps)[number], name: string) => a.data.counters[name] ?? 0;
  const out: AttemptObservation[] = [];
  let jobInput = 0;
  let mapRaw = 0;
  let mapStored = 0;
  for (const a of maps) {
    const input = a.data.counters.MAP_INPUT_BYTES ?? a.task.inputBytes;
    jobInput += input;
    mapRaw += counter(a, 'MAP_OUTPUT_RAW_BYTES');
    mapStored += (a.data.mapOutput?.partitionBytes ?? []).reduce((s, b) => s + b, 0);
    const buffered = Math.max(
      counter(a, 'MAP_OUTPUT_BYTES') + META_BYTES * counter(a, 'MAP_OUTPUT_RECORDS'),
      counter(a, 'SPILLS') <= 1 ? counter(a, 'PEAK_BUFFER_BYTES') : 0,
    );
    out.push({
      kind: 'map',
      bufferBytes: attemptShuffleSettings(submission, 'map', a.memoryMb).mapBufferBytes,
      taskMs: a.finishTime! - a.startTime,
      inputBytes: input,
      needBytes: job.reduces.length > 0 ? mapBufferNeedBytes(buffered, conf['shuffle.map.spillPercent']) : 0,
      spilledBytes: counter(a, 'SPILLED_BYTES'),
    });
  }
  // A reduce's decompressed input: what it fetched, at the ratio of raw to stored bytes of the maps' output.
  const rawPerStored = mapStored > 0 ? mapRaw / mapStored : 1;
  for (const a of reduces) {
    const raw = (counter(a, 'SHUFFLE_BYTES_LOCAL') + counter(a, 'SHUFFLE_BYTES_REMOTE')) * rawPerStored;
    out.push({
      kind: 'reduce',
      bufferBytes: attemptShuffleSettings(submission, 'reduce', a.memoryMb).reduceBufferBytes,
      taskMs: a.finishTime! - a.startTime,
      inputBytes: job.reduces.length > 0 ? jobInput / job.reduces.length : 0,
      needBytes: reduceBufferNeedBytes(raw, raw / Math.max(1, maps.length)),
      spilledBytes: counter(a, 'SPILLED_BYTES'),
    });
  }
  return out;
}

/**
 * A `minimr profile` result as observations: each point is its maps (and its one reduce) run with
 * that point's buffers; what they needed is the profile's ideal buffer. TASK_MS, launch excluded.
 */
export function profileObservations(p: ElasticityProfile): AttemptObservation[] {
  const mapInput = p.mapInputBytes ?? 0;
  const out: AttemptObservation[] = [];
  for (const point of p.points) {
    for (let i = 0; i < p.maps; i++) {
      out.push({
        kind: 'map',
        bufferBytes: point.mapBufferBytes,
        taskMs: point.mapMs,
        inputBytes: mapInput,
        needBytes: p.idealMapBufferBytes,
        spilledBytes: point.mapSpilledBytes,
      });
    }
    out.push({
      kind: 'reduce',
      bufferBytes: point.reduceBufferBytes,
      taskMs: point.reduceMs,
      inputBytes: mapInput * p.maps,
      needBytes: p.idealReduceBufferBytes,
      spilledBytes: point.reduceSpilledBytes,
    });
  }
  return out;
}

/** Checks an imported `minimr profile` result (JSON from a file): EBADCONF naming what is wrong. */
export function validateElasticityProfile(raw: unknown): ElasticityProfile {
  const bad = (what: string): never => {
    throw new MinimrError('EBADCONF', `not a usable \`minimr profile\` result: ${what}`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    bad('it must be the JSON object `minimr profile` writes (profile-JOB.json)');
  const p = raw as Record<string, unknown>;
  const count = (v: unknown, name: string, min = 0): number =>
    typeof v === 'number' && Number.isFinite(v) && v >= min
      ? v
      : bad(`"${name}" must be a number >= ${min}, got ${JSON.stringify(v)}`);
  if (typeof p.job !== 'string' || p.job === '') bad('"job" must be the profiled job\'s name');
  if (!Number.isInteger(p.maps) || (p.maps as number) < 1)
    bad(`"maps" must be a whole number >= 1, got ${JSON.stringify(p.maps)}`);
  count(p.idealMapBufferBytes, 'idealMapBufferBytes', 1);
  count(p.idealReduceBufferBytes, 'idealReduceBufferBytes', 1);
  if (p.mapInputBytes !== undefined) count(p.mapInputBytes, 'mapInputBytes');
  if (!Array.isArray(p.points) || p.points.length === 0) bad('"points" must list the profile\'s runs');
  (p.points as unknown[]).forEach((point, i) => {
    if (typeof point !== 'object' || point === null) bad(`points[${i}] must be an object`);
    const q = point as Record<string, unknown>;
    for (const field of [
      'mapBufferBytes',
      'reduceBufferBytes',
      'mapMs',
      'reduceMs',
      'mapSpilledBytes',
      'reduceSpilledBytes',
    ] as const)
      count(q[field], `points[${i}].${field}`);
  });
  return raw as ElasticityProfile;
}

/** What the JobTracker hands the books for one task. */
export interface TaskEstimate {
  readonly idealDurationMs?: number;
  readonly penalty?: PenaltyModel;
}

/** A phase of the job being planned, as the fit needs it. */
export interface PhaseShape {
  readonly kind: TaskKind;
  /** The task's ideal memory (the books' TaskPlan.memoryMb). */
  readonly memoryMb: number;
  /** Its configured shuffle buffer: the most it has at ideal memory. */
  readonly bufferBytes: number;
  /** A map-only job's maps buffer nothing. */
  readonly buffers: boolean;
}

type Verdict<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

const finiteAtLeast0 = (x: number) => Number.isFinite(x) && x >= 0;

/**
 * need(X): the buffer a task of the phase standing for `inputBytes` needs not to spill, by the
 * needed bytes per input byte of the attempts that had input (else their mean need).
 */
export function neededBufferBytes(buckets: readonly BufferBucket[], inputBytes: number): number {
  const known = buckets.filter((b) => b.inputBytes > 0);
  const knownInput = known.reduce((s, b) => s + b.inputBytes, 0);
  if (inputBytes > 0 && knownInput > 0) return (known.reduce((s, b) => s + b.needBytes, 0) / knownInput) * inputBytes;
  return (
    buckets.reduce((s, b) => s + b.needBytes, 0) /
    Math.max(
      1e-9,
      buckets.reduce((s, b) => s + b.attempts, 0),
    )
  );
}

/**
 * The fit of one phase for a task standing for `inputBytes` (see the top of this file); null when the profile has no
 * attempts of this phase.
 */
export function phaseEstimate(
  buckets: readonly BufferBucket[],
  shape: PhaseShape,
  inputBytes: number,
  maxWorkerMemoryMb: number,
): Verdict<TaskEstimate & { neededMemoryMb: number; fitted: boolean }> | null {
  if (buckets.length === 0) return null;
  for (const b of buckets) {
    if (
      ![b.bufferMiB, b.taskMs, b.inputBytes, b.needBytes, b.spilledBytes].every(finiteAtLeast0) ||
      !(b.attempts > 0 && Number.isFinite(b.attempts))
    ) {
      return {
        ok: false,
        reason: `its ${shape.kind} measurements are negative or not numbers (bucket of ${b.bufferMiB} MiB buffers)`,
      };
    }
  }
  const scaleOf = (b: BufferBucket) =>
    inputBytes > 0 && b.inputBytes > 0 ? inputBytes / (b.inputBytes / b.attempts) : 1;
  const need = neededBufferBytes(buckets, inputBytes);
  const points = buckets.map((b) => ({
    // What the bucket's buffer was of what its attempts needed (Infinity: they needed nothing).
    fraction: b.needBytes > 0 ? (b.bufferMiB * MiB) / (b.needBytes / b.attempts) : Infinity,
    ms: (b.taskMs / b.attempts) * scaleOf(b),
    attempts: b.attempts,
  }));
  const ideal = points.filter((p) => p.fraction >= 1);
  const reference = ideal.length > 0 ? 1 : Math.max(...points.map((p) => p.fraction));
  const atReference = ideal.length > 0 ? ideal : points.filter((p) => p.fraction === reference);
  const idealMs =
    atReference.reduce((s, p) => s + p.ms * p.attempts, 0) / atReference.reduce((s, p) => s + p.attempts, 0);
  if (!(idealMs > 0 && Number.isFinite(idealMs)))
    return { ok: false, reason: `its ${shape.kind}s' ideal duration comes out as ${idealMs} ms` };
  const neededMemoryMb = Math.ceil(need / MiB) + TASK_OVERHEAD_MB;
  if (maxWorkerMemoryMb > 0 && neededMemoryMb > maxWorkerMemoryMb) {
    return {
      ok: false,
      reason:
        `its ${shape.kind}s need ${neededMemoryMb} MB not to spill, ` +
        `more than any worker offers (${maxWorkerMemoryMb} MB)`,
    };
  }
  // Below overhead + the smallest buffer a grant is not a real allocation: the process would not fit in it.
  const minFraction = Math.min(
    1,
    Math.max(DEFAULT_MIN_MEMORY_FRACTION, (TASK_OVERHEAD_MB + MIN_ELASTIC_BUFFER_BYTES / MiB) / shape.memoryMb),
  );
  if (!shape.buffers || need <= 0)
    return {
      ok: true,
      value: { idealDurationMs: idealMs, penalty: { kind: 'none', minFraction }, neededMemoryMb, fitted: false },
    };
  const modelNeed = Number.isFinite(reference) ? need * reference : need;
  const base = {
    kind: 'spill',
    rule: shape.kind,
    bufferBytes: Math.round(Math.min(modelNeed, shape.bufferBytes)),
    overheadMb: TASK_OVERHEAD_MB,
    minFraction,
  } as const;
  const fitPoints = [
    { fraction: 1, ms: idealMs },
    ...points.filter((p) => p.fraction < reference).map((p) => ({ fraction: p.fraction / reference, ms: p.ms })),
  ];
  let diskMBps: number | undefined;
  if (fitPoints.length > 1) {
    const model = fitSpillModel(
      fitPoints,
      (p) => p.ms,
      (p) => spilledBytes(base, TASK_OVERHEAD_MB + (p.fraction * modelNeed) / MiB),
    );
    const rate = (model.diskBytesPerMs * 1000) / MiB;
    if (rate > 0 && Number.isFinite(rate)) diskMBps = rate;
  }
  return {
    ok: true,
    value: {
      idealDurationMs: idealMs,
      penalty: diskMBps !== undefined ? { ...base, diskMBps } : base,
      neededMemoryMb,
      fitted: diskMBps !== undefined,
    },
  };
}

/** The job being planned: its tasks' inputs and ideal memory. */
export interface JobShape {
  readonly conf: JobConf | undefined;
  readonly mapInputBytes: readonly number[];
  readonly reducers: number;
  readonly mapMemoryMb: number;
  readonly reduceMemoryMb: number;
}

/** The profile's use (as `minimr job status` shows it) and, when used, each task's estimate. */
export interface ProfileVerdict {
  readonly use: ProfileUse;
  readonly estimates?: { readonly maps: readonly TaskEstimate[]; readonly reduce: TaskEstimate };
}

/**
 * Each task's estimate from the job's profile, or why there is none; never throws (a stored profile may be damaged).
 */
export function estimatesFor(
  profile: JobProfile | undefined,
  job: JobShape,
  maxWorkerMemoryMb: number,
): ProfileVerdict {
  if (!profile) return { use: { state: 'none' } };
  try {
    return estimatesFrom(profile, job, maxWorkerMemoryMb);
  } catch (err) {
    return { use: { state: 'rejected', reason: `it cannot be read (${(err as Error).message})` } };
  }
}

function estimatesFrom(profile: JobProfile, job: JobShape, maxWorkerMemoryMb: number): ProfileVerdict {
  const conf = { ...JOB_CONF_DEFAULTS, ...job.conf };
  const mapShape: PhaseShape = {
    kind: 'map',
    memoryMb: job.mapMemoryMb,
    bufferBytes: conf['shuffle.map.bufferBytes'],
    buffers: job.reducers > 0,
  };
  const reduceShape: PhaseShape = {
    kind: 'reduce',
    memoryMb: job.reduceMemoryMb,
    bufferBytes: conf['shuffle.reduce.bufferBytes'],
    buffers: true,
  };
  const totalInput = job.mapInputBytes.reduce((s, b) => s + b, 0);
  const meanInput = job.mapInputBytes.length > 0 ? totalInput / job.mapInputBytes.length : 0;
  const mapsOf = profile.map;
  const maps: TaskEstimate[] = [];
  let mapSummary: PhaseFitSummary | undefined;
  const summaryOf = (
    buckets: readonly BufferBucket[],
    e: TaskEstimate & { neededMemoryMb: number },
  ): PhaseFitSummary => ({
    attempts: Math.round(buckets.reduce((s, b) => s + b.attempts, 0)),
    idealDurationMs: Math.round(e.idealDurationMs ?? 0),
    neededMemoryMb: e.neededMemoryMb,
    ...(e.penalty?.kind === 'spill' && e.penalty.diskMBps !== undefined
      ? { diskMBps: Math.round(e.penalty.diskMBps * 10) / 10 }
      : {}),
    penalty: e.penalty?.kind ?? 'none',
  });
  if (mapsOf.length > 0) {
    const mean = phaseEstimate(mapsOf, mapShape, meanInput, maxWorkerMemoryMb)!;
    if (!mean.ok) return { use: { state: 'rejected', reason: mean.reason } };
    mapSummary = summaryOf(mapsOf, mean.value);
    for (const input of job.mapInputBytes) {
      const e = phaseEstimate(mapsOf, mapShape, input, maxWorkerMemoryMb)!;
      if (!e.ok) return { use: { state: 'rejected', reason: e.reason } };
      maps.push({ idealDurationMs: e.value.idealDurationMs, penalty: e.value.penalty });
    }
  } else {
    for (let i = 0; i < job.mapInputBytes.length; i++) maps.push({});
  }
  let reduce: TaskEstimate = {};
  let reduceSummary: PhaseFitSummary | undefined;
  if (job.reducers > 0 && profile.reduce.length > 0) {
    const e = phaseEstimate(profile.reduce, reduceShape, totalInput / job.reducers, maxWorkerMemoryMb)!;
    if (!e.ok) return { use: { state: 'rejected', reason: e.reason } };
    reduce = { idealDurationMs: e.value.idealDurationMs, penalty: e.value.penalty };
    reduceSummary = summaryOf(profile.reduce, e.value);
  }
  return {
    use: {
      state: 'used',
      ...(mapSummary ? { map: mapSummary } : {}),
      ...(reduceSummary ? { reduce: reduceSummary } : {}),
    },
    estimates: { maps, reduce },
  };
}
