import type { JsonValue } from '../../api/index.js';
import type { LineChartOptions } from '../../util/index.js';
import type { JobClient } from './job-client.js';
import { MinimrError } from '../../errors.js';
import { JOB_CONF_DEFAULTS, TASK_OVERHEAD_MB, type AttemptSummary, type JobConf } from '../wire/index.js';

/**
 * The elasticity profile of a job (YARN-ME, docs/specs/yarn-me.md): how much slower its map
 * and its reduce run when given a fraction of their ideal memory, and how well the model
 *   T(m) = T + spilledBytes(m) / diskRate
 * predicts that from two runs. T is the runtime at ideal memory; spilledBytes(m) is computed from
 * the input size, the buffer size and the spill rules (not measured); diskRate is fitted from one
 * under-sized run (the smallest fraction); every other point is then a prediction, and its error
 * is reported next to the measurement.
 *
 * Each point runs the job on its first `maps` splits with one reducer, so the map and the reduce
 * are timed separately (TASK_MS, measured inside the task process: launch excluded).
 */

export interface ProfileOptions {
  modulePath: string;
  input: readonly string[];
  /** Block-store directory for the runs' outputs (removed afterwards). */
  workDir: string;
  params?: Record<string, JsonValue>;
  /** Memory fractions of ideal to run at; 1 is always included. */
  fractions?: readonly number[];
  /** Map tasks per run (their outputs are the reducer's input). Default 1. */
  maps?: number;
  conf?: JobConf;
  onProgress?: (message: string) => void;
}

export interface ProfilePoint {
  fraction: number;
  mapBufferBytes: number;
  reduceBufferBytes: number;
  mapMs: number;
  reduceMs: number;
  mapSpilledBytes: number;
  reduceSpilledBytes: number;
  mapSpills: number;
  mapMergePasses: number;
  reduceMergePasses: number;
  /** Model's spilled bytes beyond the ideal run (computed, not measured). */
  mapModelSpilledBytes: number;
  reduceModelSpilledBytes: number;
  mapModelMs: number;
  reduceModelMs: number;
}

export interface PhaseModel {
  /** Runtime at ideal memory, ms. */
  idealMs: number;
  /** Fitted from the smallest fraction, bytes per ms (0 when that run spilled nothing extra). */
  diskBytesPerMs: number;
  fittedAt: number;
  /** Mean and max |predicted - measured| / measured over the points not used for fitting. */
  meanError: number;
  maxError: number;
}

export interface ElasticityProfile {
  /** The profiled module's file name. */
  job: string;
  /**
   * The job's own name (`defineJob({ name })`), under which the JobTracker keeps its profile; absent in profiles
   * written before it was recorded.
   */
  jobName?: string;
  maps: number;
  idealMapBufferBytes: number;
  idealReduceBufferBytes: number;
  /** Inputs of the spill rules, measured at ideal memory. */
  mapBufferedBytes: number;
  mapOutputStoredBytes: number;
  reduceInputRawBytes: number;
  reduceStoredPerRaw: number;
  /**
   * Mean input bytes of a profiled map (the reducer read the output of `maps` of them); absent in profiles written
   * before it was recorded.
   */
  mapInputBytes?: number;
  points: ProfilePoint[];
  map: PhaseModel;
  reduce: PhaseModel;
}

const MiB = 1024 * 1024;
/** The reduce side's rules (see src/shuffle/reduce-shuffle.ts): in-memory merge threshold, single-segment limit. */
const REDUCE_MERGE_THRESHOLD = 0.66;
const REDUCE_SINGLE_SEGMENT_FRACTION = 0.25;

interface RunResult {
  jobName: string;
  maps: AttemptSummary[];
  reduce: AttemptSummary;
}

function mean(xs: number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function sumCounter(attempts: AttemptSummary[], name: string): number {
  return attempts.reduce((acc, a) => acc + (a.counters[name] ?? 0), 0);
}

/** Merge passes needed to bring `runs` down to one final merge of at most `factor` runs. */
function intermediatePasses(runs: number, factor: number): number {
  let passes = 0;
  while (runs > factor) {
    runs = runs - factor + 1;
    passes++;
  }
  return passes;
}

/**
 * Extra bytes a map writes with buffer B, beyond the single final write at ideal memory.
 * `spilledOutputBytes`: what the whole map output takes as spill files, which MapOutputBuffer
 * writes uncompressed by default (its raw bytes, MAP_OUTPUT_RAW_BYTES). `outputRuns`: the job's
 * shuffle.map.outputRuns; with 2, the first spill takes the output's codec (it may become the
 * output's first run), at `storedPerRaw` of its raw bytes.
 */
export function mapSpilledBytesModel(
  bufferedBytes: number,
  spilledOutputBytes: number,
  bufferBytes: number,
  spillPercent: number,
  factor: number,
  outputRuns = 1,
  storedPerRaw = 1,
): number {
  const generation = spillPercent * bufferBytes;
  const spills = Math.max(1, Math.ceil(bufferedBytes / generation));
  if (spills === 1) return 0;
  // Two generations published as two runs: each is written once, which the ideal run writes too.
  if (spills === 2 && outputRuns >= 2) return 0;
  const firstSpillSaving =
    outputRuns >= 2 ? spilledOutputBytes * Math.min(1, generation / bufferedBytes) * (1 - storedPerRaw) : 0;
  // Up to `factor` spills: every full generation is written once as a spill, and the last one goes
  // from the buffer into the final merge (MapOutputBuffer), whose output the ideal run writes too.
  if (spills <= factor)
    return spilledOutputBytes * Math.min(1, ((spills - 1) * generation) / bufferedBytes) - firstSpillSaving;
  // More: every spill is written, then merged into the final output; each intermediate merge pass
  // rewrites (about) everything once more.
  return spilledOutputBytes * (1 + intermediatePasses(spills, factor)) - firstSpillSaving;
}

/**
 * Extra stored bytes a reducer writes with buffer B: segments above the single-segment limit go to
 * disk as they arrive; the others fill memory, which is merged to disk whenever it passes the merge
 * threshold: a sawtooth in input/buffer. A segment above the limit from a map on the reducer's own
 * worker is read where it lies and writes nothing (merge-manager.ts): `localShare` is the share of
 * the input that is local (a run's SHUFFLE_BYTES_LOCAL over all it fetched; 0 counts every such
 * segment as written).
 */
export function reduceSpilledBytesModel(
  segmentsRaw: readonly number[],
  storedPerRaw: number,
  bufferBytes: number,
  factor: number,
  localShare = 0,
): number {
  let onDisk = 0;
  let inMemory = 0;
  let runs = 0;
  let spilledRaw = 0;
  for (const seg of segmentsRaw) {
    if (seg > REDUCE_SINGLE_SEGMENT_FRACTION * bufferBytes) {
      spilledRaw += seg * (1 - localShare);
      runs++;
      continue;
    }
    inMemory += seg;
    if (inMemory > REDUCE_MERGE_THRESHOLD * bufferBytes) {
      spilledRaw += inMemory;
      onDisk += inMemory;
      inMemory = 0;
      runs++;
    }
  }
  const finalRuns = runs + (inMemory > 0 ? 1 : 0);
  if (finalRuns > factor) spilledRaw += (onDisk + inMemory) * intermediatePasses(finalRuns, factor);
  return spilledRaw * storedPerRaw;
}

/** Stored bytes a reduce fetched, from its own worker and from others. */
function fetchedBytes(reduce: AttemptSummary): number {
  return (reduce.counters.SHUFFLE_BYTES_LOCAL ?? 0) + (reduce.counters.SHUFFLE_BYTES_REMOTE ?? 0);
}

/** The share of what a reduce fetched that came from maps on its own worker. */
function localShareOf(reduce: AttemptSummary): number {
  const all = fetchedBytes(reduce);
  return all > 0 ? (reduce.counters.SHUFFLE_BYTES_LOCAL ?? 0) / all : 0;
}

/**
 * The model's two-run fit (docs/specs/yarn-me.md): T from the point at fraction 1, diskRate from the smallest
 * fraction, every other point predicted. Used by the profiler on its runs and by the JobTracker on
 * what earlier runs of a job measured (job-profile.ts), each with its own spilled-bytes rule.
 */
export function fitSpillModel<P extends { readonly fraction: number }>(
  points: readonly P[],
  measured: (p: P) => number,
  modelBytes: (p: P) => number,
): PhaseModel {
  const ideal = points.find((p) => p.fraction === 1);
  if (!ideal)
    throw new MinimrError('EINTERNAL', 'a spill model is fitted against a point at ideal memory (fraction 1)');
  const idealMs = measured(ideal);
  const fitPoint = [...points].sort((a, b) => a.fraction - b.fraction)[0]!;
  const extraMs = measured(fitPoint) - idealMs;
  const bytes = modelBytes(fitPoint);
  const diskBytesPerMs = bytes > 0 && extraMs > 0 ? bytes / extraMs : 0;
  const errors: number[] = [];
  for (const p of points) {
    if (p === fitPoint || p === ideal) continue;
    const predicted = idealMs + (diskBytesPerMs > 0 ? modelBytes(p) / diskBytesPerMs : 0);
    errors.push(Math.abs(predicted - measured(p)) / measured(p));
  }
  return {
    idealMs,
    diskBytesPerMs,
    fittedAt: fitPoint.fraction,
    meanError: mean(errors),
    maxError: errors.length ? Math.max(...errors) : 0,
  };
}

/**
 * The smallest map buffer that holds `bufferedBytes` (data + record metadata) without a spill: they must stay under the
 * spill threshold.
 */
export function mapBufferNeedBytes(
  bufferedBytes: number,
  spillPercent: number,
  hashTablePeakBytes = 0,
  hashTableShare = 0,
): number {
  // With map-side combining the buffer is shared: the hash table may take `hashTableShare` of it,
  // so both the table's peak and the sort buffer's need must fit their parts.
  const share = hashTablePeakBytes > 0 ? hashTableShare : 0;
  const need = Math.max(bufferedBytes / spillPercent / (1 - share), share > 0 ? hashTablePeakBytes / share : 0);
  return Math.max(64 * 1024, Math.ceil(need / MiB) * MiB);
}

/**
 * The smallest reduce buffer that keeps `inputRawBytes` (decompressed) in memory: under the
 * in-memory merge threshold, and every segment under the single-segment limit.
 */
export function reduceBufferNeedBytes(inputRawBytes: number, largestSegmentRawBytes: number): number {
  return Math.max(
    64 * 1024,
    Math.ceil(
      Math.max(inputRawBytes / REDUCE_MERGE_THRESHOLD, largestSegmentRawBytes / REDUCE_SINGLE_SEGMENT_FRACTION) / MiB,
    ) * MiB,
  );
}

export async function profileJob(client: JobClient, options: ProfileOptions): Promise<ElasticityProfile> {
  const say = options.onProgress ?? (() => undefined);
  const maps = options.maps ?? 1;
  const conf: JobConf = { ...options.conf };
  const spillPercent = conf['shuffle.map.spillPercent'] ?? JOB_CONF_DEFAULTS['shuffle.map.spillPercent'];
  const factor = conf['shuffle.merge.factor'] ?? JOB_CONF_DEFAULTS['shuffle.merge.factor'];
  const outputRuns = conf['shuffle.map.outputRuns'] ?? JOB_CONF_DEFAULTS['shuffle.map.outputRuns'];
  const fractions = [...new Set([1, ...(options.fractions ?? [0.75, 0.5, 0.25, 0.1])])].sort((a, b) => b - a);
  let runNo = 0;
  const run = async (mapBufferBytes: number, reduceBufferBytes: number): Promise<RunResult> => {
    const output = `${options.workDir}/run-${runNo++}`;
    const status = await client.run(options.modulePath, {
      input: options.input,
      output,
      overwrite: true,
      reducers: 1,
      params: options.params,
      conf: {
        ...conf,
        'job.maxMaps': maps,
        'shuffle.map.bufferBytes': Math.round(mapBufferBytes),
        'shuffle.reduce.bufferBytes': Math.round(reduceBufferBytes),
      },
    });
    const attempts = (await client.attempts(status.jobId)).filter((a) => a.state === 'succeeded');
    await client.fs.remove(output, { recursive: true }).catch(() => undefined);
    const reduce = attempts.find((a) => a.kind === 'reduce');
    if (!reduce) throw new Error(`profile run ${status.jobId} has no succeeded reduce`);
    return { jobName: status.name, maps: attempts.filter((a) => a.kind === 'map'), reduce };
  };

  // Calibration: buffers large enough that nothing spills, to measure what ideal memory is. A task
  // needs its buffer + the fixed overhead in memory, so no buffer may exceed what a worker offers.
  const workerMb = Math.min(...(await client.clusterInfo()).workers.map((w) => w.memoryMb));
  const maxBuffer = (workerMb - TASK_OVERHEAD_MB) * MiB;
  if (!(maxBuffer >= MiB))
    throw new MinimrError(
      'EBADJOB',
      `workers offer ${workerMb} MiB, too little to profile (each task needs its buffer + ${TASK_OVERHEAD_MB} MiB)`,
    );
  const firstFile =
    (await client.fs.stat(options.input[0]!)).type === 'file'
      ? options.input[0]!
      : (await client.fs.list(options.input[0]!)).find((f) => f.type === 'file')!.path;
  const splitBytes = (await client.fs.getBlocks(firstFile))[0]?.length ?? MiB;
  let calibrationBuffer = Math.min(maxBuffer, Math.max(16 * MiB, 8 * splitBytes));
  let calibration: RunResult;
  for (;;) {
    say(`calibrating with a ${Math.round(calibrationBuffer / MiB)} MiB map buffer`);
    calibration = await run(calibrationBuffer, maxBuffer);
    if (calibration.maps.every((m) => (m.counters.SPILLS ?? 1) <= 1)) break;
    if (calibrationBuffer >= maxBuffer) {
      throw new MinimrError(
        'EBADJOB',
        `a map still spills with a ${Math.round(maxBuffer / MiB)} MiB ` +
          `buffer, the most a worker can give: profile a smaller input ` +
          `(smaller blocks) or use workers with more memory`,
      );
    }
    calibrationBuffer = Math.min(maxBuffer, calibrationBuffer * 2);
  }
  const mapBufferedBytes = Math.max(...calibration.maps.map((m) => m.counters.PEAK_BUFFER_BYTES ?? 0));
  // A job with a combiner has a hash table in front of its sort buffer, with its share of the map
  // buffer: the ideal buffer has room for both peaks, and spills come from the sort buffer's share.
  const tablePeak = Math.max(...calibration.maps.map((m) => m.counters.PEAK_HASH_COMBINE_BYTES ?? 0));
  const tableShare =
    tablePeak > 0 ? (conf['shuffle.map.hashCombinePercent'] ?? JOB_CONF_DEFAULTS['shuffle.map.hashCombinePercent']) : 0;
  const mapOutputStoredBytes = mean(calibration.maps.map((m) => m.counters.SPILLED_BYTES ?? 0));
  // Spill files are written uncompressed (MapOutputBuffer's spillCodec), so spills take raw bytes.
  const mapOutputRawBytes = mean(calibration.maps.map((m) => m.counters.MAP_OUTPUT_RAW_BYTES ?? 0));
  // At the calibration's buffer the map output is written once, with the output's codec.
  const mapStoredPerRaw = mapOutputRawBytes > 0 ? mapOutputStoredBytes / mapOutputRawBytes : 1;
  const segmentsRaw = calibration.maps.map((m) => m.counters.MAP_OUTPUT_RAW_BYTES ?? 0);
  const reduceInputRawBytes = segmentsRaw.reduce((a, b) => a + b, 0);
  const fetched = fetchedBytes(calibration.reduce);
  const reduceStoredPerRaw = reduceInputRawBytes > 0 ? fetched / reduceInputRawBytes : 1;
  const idealMapBufferBytes = mapBufferNeedBytes(mapBufferedBytes, spillPercent, tablePeak, tableShare);
  const idealReduceBufferBytes = reduceBufferNeedBytes(reduceInputRawBytes, Math.max(...segmentsRaw));
  if (idealReduceBufferBytes > maxBuffer) {
    throw new MinimrError(
      'EBADJOB',
      `the reducer's ideal buffer ` +
        `(${Math.round(idealReduceBufferBytes / MiB)} MiB ` +
        `for ${Math.round(reduceInputRawBytes / MiB)} MiB of input) ` +
        `exceeds what a worker can give (${Math.round(maxBuffer / MiB)} ` +
        `MiB): profile fewer maps or smaller blocks`,
    );
  }
  say(
    `ideal memory: map ` +
      `buffer ${Math.round(idealMapBufferBytes / MiB)} MiB, reduce ` +
      `buffer ${Math.round(idealReduceBufferBytes / MiB)} MiB`,
  );

  const points: ProfilePoint[] = [];
  for (const fraction of fractions) {
    const mapBufferBytes = Math.max(64 * 1024, idealMapBufferBytes * fraction);
    const reduceBufferBytes = Math.max(64 * 1024, idealReduceBufferBytes * fraction);
    const r = await run(mapBufferBytes, reduceBufferBytes);
    const point: ProfilePoint = {
      fraction,
      mapBufferBytes,
      reduceBufferBytes,
      mapMs: mean(r.maps.map((m) => m.counters.TASK_MS ?? 0)),
      reduceMs: r.reduce.counters.TASK_MS ?? 0,
      mapSpilledBytes: sumCounter(r.maps, 'SPILLED_BYTES') / r.maps.length,
      reduceSpilledBytes: r.reduce.counters.SPILLED_BYTES ?? 0,
      mapSpills: sumCounter(r.maps, 'SPILLS') / r.maps.length,
      mapMergePasses: sumCounter(r.maps, 'MERGE_PASSES') / r.maps.length,
      reduceMergePasses: r.reduce.counters.MERGE_PASSES ?? 0,
      mapModelSpilledBytes: mapSpilledBytesModel(
        mapBufferedBytes,
        mapOutputRawBytes,
        mapBufferBytes * (1 - tableShare),
        spillPercent,
        factor,
        outputRuns,
        mapStoredPerRaw,
      ),
      reduceModelSpilledBytes: reduceSpilledBytesModel(
        segmentsRaw,
        reduceStoredPerRaw,
        reduceBufferBytes,
        factor,
        localShareOf(r.reduce),
      ),
      mapModelMs: 0,
      reduceModelMs: 0,
    };
    points.push(point);
    say(
      `${Math.round(fraction * 100)}% of ideal: ` +
        `map ${point.mapMs.toFixed(0)} ms, ` +
        `reduce ${point.reduceMs.toFixed(0)} ms`,
    );
  }
  const map = fitSpillModel(
    points,
    (p) => p.mapMs,
    (p) => p.mapModelSpilledBytes,
  );
  const reduce = fitSpillModel(
    points,
    (p) => p.reduceMs,
    (p) => p.reduceModelSpilledBytes,
  );
  for (const p of points) {
    p.mapModelMs = map.idealMs + (map.diskBytesPerMs > 0 ? p.mapModelSpilledBytes / map.diskBytesPerMs : 0);
    p.reduceModelMs =
      reduce.idealMs + (reduce.diskBytesPerMs > 0 ? p.reduceModelSpilledBytes / reduce.diskBytesPerMs : 0);
  }
  return {
    job: options.modulePath.split('/').pop() ?? options.modulePath,
    jobName: calibration.jobName,
    maps,
    idealMapBufferBytes,
    idealReduceBufferBytes,
    mapBufferedBytes,
    mapOutputStoredBytes,
    reduceInputRawBytes,
    reduceStoredPerRaw,
    mapInputBytes: mean(calibration.maps.map((m) => m.counters.MAP_INPUT_BYTES ?? m.inputBytes)),
    points,
    map,
    reduce,
  };
}

const mb = (b: number) => (b / MiB).toFixed(1);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function profileMarkdown(p: ElasticityProfile): string {
  const ideal = p.points.find((x) => x.fraction === 1)!;
  const lines = [
    `### Elasticity profile of ${p.job} (${p.maps} map${p.maps > 1 ? 's' : ''} + 1 reduce)`,
    '',
    `Ideal memory: map buffer ${mb(p.idealMapBufferBytes)} MiB (map ` +
      `holds ${mb(p.mapBufferedBytes)} MiB), reduce ` +
      `buffer ${mb(p.idealReduceBufferBytes)} MiB (reduce ` +
      `input ${mb(p.reduceInputRawBytes)} MiB raw).`,
    '',
    '| memory | map buffer MiB | map ms | map penalty | map spilled ' +
      'MiB (model) | map model ms | reduce buffer MiB | reduce ms | ' +
      'reduce penalty | reduce spilled MiB (model) | reduce model ms |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const x of p.points) {
    lines.push(
      `| ${pct(x.fraction)} | ${mb(x.mapBufferBytes)} ` +
        `| ${x.mapMs.toFixed(0)} ` +
        `| ${(x.mapMs / ideal.mapMs).toFixed(2)}x ` +
        `| ${mb(x.mapSpilledBytes - ideal.mapSpilledBytes)} ` +
        `(${mb(x.mapModelSpilledBytes)}) | ${x.mapModelMs.toFixed(0)} ` +
        `| ${mb(x.reduceBufferBytes)} | ${x.reduceMs.toFixed(0)} ` +
        `| ${(x.reduceMs / ideal.reduceMs).toFixed(2)}x ` +
        `| ${mb(x.reduceSpilledBytes - ideal.reduceSpilledBytes)} ` +
        `(${mb(x.reduceModelSpilledBytes)}) ` +
        `| ${x.reduceModelMs.toFixed(0)} |`,
    );
  }
  const model = (name: string, m: PhaseModel) =>
    `- ${name}: T = ${m.idealMs.toFixed(0)} ms, diskRate fitted ` +
    `at ${pct(m.fittedAt)} ` +
    `= ${((m.diskBytesPerMs * 1000) / MiB).toFixed(1)} MiB/s; ` +
    `prediction error on the other points: mean ${pct(m.meanError)}, ` +
    `max ${pct(m.maxError)}`;
  lines.push(
    '',
    'Spilled MiB: stored bytes written beyond what the ideal run ' +
      'writes, measured (and, in parentheses, computed by the model ' +
      'from the spill rules). Model T(m) = T + ' +
      'spilledBytes(m)/diskRate:',
    model('map', p.map),
    model('reduce', p.reduce),
  );
  return lines.join('\n');
}

/** The profile's penalty curves, measured and modelled, as a line chart. */
export function profileChart(p: ElasticityProfile): LineChartOptions {
  const ideal = p.points.find((x) => x.fraction === 1)!;
  const pts = (f: (x: ProfilePoint) => number, base: number) =>
    p.points.map((x) => [x.fraction * 100, f(x) / base] as const);
  return {
    title: `Elasticity of ${p.job}: runtime penalty vs memory`,
    xLabel: '% of ideal memory',
    yLabel: 'runtime / runtime at ideal memory',
    yFromZero: false,
    series: [
      { name: 'map measured', points: pts((x) => x.mapMs, ideal.mapMs) },
      { name: 'map model', points: pts((x) => x.mapModelMs, ideal.mapMs), dashed: true },
      { name: 'reduce measured', points: pts((x) => x.reduceMs, ideal.reduceMs) },
      { name: 'reduce model', points: pts((x) => x.reduceModelMs, ideal.reduceMs), dashed: true },
    ],
  };
}
