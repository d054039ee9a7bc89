import { MinimrError } from '../../errors.js';
import { keyValuePairs, parseSize } from '../../util/index.js';
import type { JsonValue } from '../../api/index.js';
import { CountMinSketch, SKEW_STRATEGIES, type SkewStrategy } from '../../skew/index.js';
import { MAX_MAP_OUTPUT_RUNS } from '../../shuffle/index.js';
import { isExternalUri, parseStoreUri } from '../../storage/index.js';
import {
  JOB_CONF_DEFAULTS,
  MAX_STREAMING_FILES_BYTES,
  SKEW_CONF_DEFAULTS,
  STORE_SETTINGS,
  type JobConf,
  type JobSubmission,
  type SkewSample,
  type StreamingSubmission,
} from './types.js';

const MIN_BUFFER_BYTES = 64 * 1024;
const MAX_PARTITION_FACTOR = 1000;
/** Map output partitions (P = factor x reducers): each is an index entry in every map output. */
const MAX_PARTITIONS = 100_000;

/** Checks job settings; unknown keys are refused so that a misspelt setting is not silently ignored. */
export function validateJobConf(raw: unknown): JobConf {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) bad('`conf` must be an object of settings');
  const conf: JobConf = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const int = (min: number) => {
      if (!Number.isInteger(value) || (value as number) < min)
        bad(`conf ${key} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
      return value as number;
    };
    switch (key) {
      case 'shuffle.map.bufferBytes':
      case 'shuffle.reduce.bufferBytes':
        conf[key] = int(MIN_BUFFER_BYTES);
        break;
      case 'shuffle.merge.factor':
        conf[key] = int(2);
        break;
      case 'shuffle.map.outputRuns':
        conf[key] = int(1);
        if (conf[key] > MAX_MAP_OUTPUT_RUNS) bad(`conf ${key} must be 1 or ${MAX_MAP_OUTPUT_RUNS}, got ${conf[key]}`);
        break;
      case 'shuffle.parallelCopies':
      case 'job.maxMaps':
      case 'job.outputReplication':
        conf[key] = int(1);
        break;
      case 'shuffle.map.spillPercent':
        if (typeof value !== 'number' || !(value > 0 && value <= 1))
          bad(`conf ${key} must be a number in (0, 1], got ${JSON.stringify(value)}`);
        conf[key] = value;
        break;
      case 'shuffle.map.hashCombinePercent':
        if (typeof value !== 'number' || !(value >= 0 && value < 1))
          bad(`conf ${key} must be a number in [0, 1), got ${JSON.stringify(value)}`);
        conf[key] = value;
        break;
      case 'job.reduceSlowStart':
        if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
          bad(
            `conf ${key} must be the fraction of maps done before reduces ` +
              `start, a number in [0, 1], got ${JSON.stringify(value)}`,
          );
        }
        conf[key] = value;
        break;
      case 'job.speculative':
        if (value !== true && value !== false && value !== 'true' && value !== 'false')
          bad(`conf ${key} must be true or false, got ${JSON.stringify(value)}`);
        conf[key] = value === true || value === 'true';
        break;
      case 'shuffle.compress':
        if (value !== 'lz4' && value !== 'none')
          bad(`conf ${key} must be "lz4" or "none", got ${JSON.stringify(value)}`);
        conf[key] = value;
        break;
      case 'skew.strategy':
        if (!SKEW_STRATEGIES.includes(value as SkewStrategy))
          bad(
            `conf ${key} must be one ` +
              `of ${SKEW_STRATEGIES.map((v) => `"${v}"`).join(', ')}, ` +
              `got ${JSON.stringify(value)}`,
          );
        conf[key] = value as SkewStrategy;
        break;
      case 'skew.partitionFactor':
        conf[key] = int(1);
        if (conf[key] > MAX_PARTITION_FACTOR)
          bad(`conf ${key} must be at most ${MAX_PARTITION_FACTOR}, got ${conf[key]}`);
        break;
      case 'skew.sketchDepth':
        conf[key] = int(1);
        if (conf[key] > 16) bad(`conf ${key} must be at most 16, got ${conf[key]}`);
        break;
      case 'skew.sampleRecords':
      case 'skew.sampleSplits':
        conf[key] = int(1);
        break;
      default:
        if (key in STORE_SETTINGS) {
          if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
            bad(`conf ${key} must be a string, got ${JSON.stringify(value)}`);
          (conf as Record<string, string>)[key] = String(value);
          break;
        }
        if (key === 'webhdfs.password')
          bad('conf webhdfs.password would hand a secret to job code: give webhdfs.token (a delegation token)');
        bad(
          `unknown setting "${key}" ` +
            `(known: ${[...Object.keys(JOB_CONF_DEFAULTS), 'job.maxMaps', 'job.outputReplication', 'job.speculative', ...Object.keys(SKEW_CONF_DEFAULTS), ...Object.keys(STORE_SETTINGS)].join(', ')})`,
        );
    }
  }
  const slowStart = conf['job.reduceSlowStart'];
  if (conf['skew.strategy'] === 'simple' && slowStart !== undefined && slowStart < 1) {
    bad(
      `conf job.reduceSlowStart ${slowStart} cannot be used with ` +
        `skew.strategy "simple": it assigns partitions from every map's ` +
        `output sizes, so its reduces wait for the last map (use "hash" ` +
        `or "cms", or drop job.reduceSlowStart)`,
    );
  }
  return conf;
}

const PATH_RE = /^\/[^\0]*$/;

function bad(message: string): never {
  throw new MinimrError('EBADJOB', `malformed job submission: ${message}`);
}

/** Checks a submission that arrived over the network before any of it is trusted. */
export function validateSubmission(raw: unknown): JobSubmission {
  if (typeof raw !== 'object' || raw === null) bad('the job must be an object');
  const s = raw as Partial<JobSubmission>;
  if (typeof s.name !== 'string' || s.name.length === 0 || s.name.length > 200)
    bad('`name` must be a string of 1-200 characters');
  if (typeof s.moduleSource !== 'string' || s.moduleSource.length === 0)
    bad("`moduleSource` must be the job module's source text");
  if (typeof s.moduleName !== 'string') bad('`moduleName` must be a string');
  if (
    !Array.isArray(s.inputPaths) ||
    !s.inputPaths.every((p) => typeof p === 'string' && (PATH_RE.test(p) || isExternalUri(p)))
  ) {
    bad('`inputPaths` must be a list of absolute paths or URIs (file://, s3://, webhdfs://)');
  }
  // A malformed URI is EBADPATH naming what is wrong with it.
  for (const p of s.inputPaths) if (isExternalUri(p)) parseStoreUri(p);
  if (typeof s.outputPath !== 'string' || !(PATH_RE.test(s.outputPath) || isExternalUri(s.outputPath))) {
    bad('`outputPath` must be an absolute path or a URI (file://, s3://, webhdfs://)');
  }
  // One spelling per location (hdfs:// is webhdfs://, no trailing slash), so that the checks below compare alike.
  const outputPath = isExternalUri(s.outputPath) ? parseStoreUri(s.outputPath).uri : s.outputPath.replace(/\/+$/, '');
  if (outputPath === '' || parseStoreUri(outputPath).path === '/') bad(`the output cannot be a root (${s.outputPath})`);
  for (const input of s.inputPaths) {
    const a = isExternalUri(input) ? parseStoreUri(input).uri : input.replace(/\/+$/, '');
    if (a === outputPath || a.startsWith(`${outputPath}/`))
      bad(`output path ${s.outputPath} would overwrite the input ${input}`);
  }
  if (!Number.isInteger(s.reducers) || (s.reducers as number) < 0 || (s.reducers as number) > 100_000)
    bad('`reducers` must be an integer in 0..100000');
  const input = s.input as JobSubmission['input'] | undefined;
  if (!input || typeof input !== 'object') bad('`input` format missing');
  if (input.kind === 'fixed') {
    if (!Number.isInteger(input.recordLength) || input.recordLength <= 0)
      bad('fixed input needs a positive integer recordLength');
  } else if (input.kind === 'generated') {
    if (!Array.isArray(input.splits)) bad('generated input needs a list of splits');
  } else if (input.kind !== 'text') bad(`unknown input format "${String((input as { kind?: unknown }).kind)}"`);
  const output = s.output as JobSubmission['output'] | undefined;
  if (!output || (output.kind !== 'text' && output.kind !== 'records'))
    bad('`output` must be a text or records format');
  if (output.kind === 'text' && typeof output.separator !== 'string') bad('text output needs a separator string');
  if (typeof s.params !== 'object' || s.params === null) bad('`params` must be an object');
  if (typeof s.shared !== 'object' || s.shared === null) bad('`shared` must be an object');
  if (s.maxAttempts !== undefined && (!Number.isInteger(s.maxAttempts) || s.maxAttempts < 1))
    bad('`maxAttempts` must be a positive integer');
  for (const f of ['mapMemoryMb', 'reduceMemoryMb'] as const) {
    if (s[f] !== undefined && (!Number.isInteger(s[f]) || (s[f] as number) <= 0))
      bad(`\`${f}\` must be a positive integer`);
  }
  if (s.pool !== undefined && typeof s.pool !== 'string') bad('`pool` must be a string');
  if (s.mrCluster !== undefined && s.mrCluster !== null && (typeof s.mrCluster !== 'string' || s.mrCluster === ''))
    bad('`mrCluster` must be the name of an MR-cluster');
  if (s.weight !== undefined && !(typeof s.weight === 'number' && Number.isFinite(s.weight) && s.weight > 0))
    bad('`weight` must be a positive number');
  const placement = s.inputPlacement as JobSubmission['inputPlacement'];
  if (placement !== undefined) {
    if (typeof placement !== 'object' || placement === null) bad('`inputPlacement` must be an object');
    if (!Number.isInteger(placement.replication) || placement.replication < 1 || placement.replication > 16)
      bad('`inputPlacement.replication` must be an integer in 1..16');
    if (!(typeof placement.windowMs === 'number' && Number.isFinite(placement.windowMs) && placement.windowMs >= 0))
      bad('`inputPlacement.windowMs` must be a number of milliseconds >= 0');
  }
  const conf = validateJobConf(s.conf);
  const factor = conf['skew.partitionFactor'] ?? SKEW_CONF_DEFAULTS['skew.partitionFactor'];
  if ((s.reducers as number) * factor > MAX_PARTITIONS) {
    bad(`${s.reducers} reducers x skew.partitionFactor ${factor} is more than ${MAX_PARTITIONS} partitions`);
  }
  const skewSample = validateSkewSample(s.skewSample, conf, s.reducers as number);
  const streaming = validateStreaming(s.streaming);
  return {
    name: s.name,
    moduleName: s.moduleName,
    moduleSource: s.moduleSource,
    inputPaths: s.inputPaths,
    outputPath,
    overwrite: s.overwrite === true,
    reducers: s.reducers as number,
    params: s.params,
    shared: s.shared,
    input,
    output,
    pool: s.pool,
    weight: s.weight,
    ...(typeof s.mrCluster === 'string' ? { mrCluster: s.mrCluster } : {}),
    maxAttempts: s.maxAttempts,
    mapMemoryMb: s.mapMemoryMb,
    reduceMemoryMb: s.reduceMemoryMb,
    conf,
    skewSample,
    ...(placement ? { inputPlacement: { replication: placement.replication, windowMs: placement.windowMs } } : {}),
    ...(streaming ? { streaming } : {}),
  };
}

/** A streaming job's files: plain names (each lands in the task's working directory), bounded in all. */
function validateStreaming(raw: unknown): StreamingSubmission | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || !Array.isArray((raw as { files?: unknown }).files))
    bad('`streaming` must be an object with a list of `files`');
  const files: StreamingSubmission['files'] = [];
  const names = new Set<string>();
  let bytes = 0;
  for (const f of (raw as { files: unknown[] }).files) {
    const file = f as Partial<StreamingSubmission['files'][number]> | null;
    const name = file?.name;
    if (typeof name !== 'string' || !/^[^/\0]{1,255}$/.test(name) || name === '.' || name === '..')
      bad(`streaming file name ${JSON.stringify(name)} must be a file name (no directory)`);
    if (!(file!.data instanceof Uint8Array)) bad(`streaming file ${name} must carry its bytes`);
    if (names.has(name)) bad(`streaming file ${name} is given twice`);
    names.add(name);
    bytes += file!.data.length;
    files.push({ name, data: file!.data, executable: file!.executable === true });
  }
  if (bytes > MAX_STREAMING_FILES_BYTES)
    bad(`streaming files hold ${bytes} bytes, more than the ${MAX_STREAMING_FILES_BYTES} a job may ship`);
  return { files };
}

/** A 'cms' job with reducers needs the client's sketch, one counter per partition in every row. */
function validateSkewSample(raw: unknown, conf: JobConf, reducers: number): SkewSample | undefined {
  if (conf['skew.strategy'] !== 'cms' || reducers === 0) return undefined;
  if (typeof raw !== 'object' || raw === null)
    bad(
      'a job with skew.strategy "cms" needs the sketch its client ' +
        'builds (`skewSample`); submit it with the minimr client',
    );
  const sample = raw as Partial<SkewSample>;
  let sketch: CountMinSketch;
  try {
    sketch = CountMinSketch.fromWire(sample.sketch);
  } catch (err) {
    bad(`skewSample: ${(err as Error).message}`);
  }
  const partitions = reducers * (conf['skew.partitionFactor'] ?? SKEW_CONF_DEFAULTS['skew.partitionFactor']);
  if (sketch.width !== partitions)
    bad(`skewSample: the sketch has ${sketch.width} counters per row, the job ${partitions} partitions`);
  for (const f of ['sampleMs', 'inputRecords', 'outputRecords'] as const) {
    if (!(typeof sample[f] === 'number' && Number.isFinite(sample[f]) && sample[f] >= 0))
      bad(`skewSample.${f} must be a non-negative number`);
  }
  return {
    sketch: sample.sketch!,
    sampleMs: sample.sampleMs!,
    inputRecords: sample.inputRecords!,
    outputRecords: sample.outputRecords!,
  };
}

/**
 * `--conf key=value` pairs (the CLI's and the benchmarks'); numbers become numbers, sizes may be written as 64m, 16k
 * ...
 */
export function parseConfPairs(list: readonly string[] | undefined): JobConf {
  const raw: Record<string, JsonValue> = {};
  for (const [key, value] of keyValuePairs(list, '--conf')) {
    if (/bufferBytes$/.test(key)) raw[key] = parseSize(value);
    else raw[key] = value !== '' && /^-?[\d.]+$/.test(value) ? Number(value) : value;
  }
  return validateJobConf(raw);
}
