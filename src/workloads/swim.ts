/**
 * SWIM workloads (Chen et al., "The Case for Evaluating MapReduce Performance Using Workload
 * Suites", MASCOTS 2011; github.com/SWIMProjectUCB/SWIM): the TSV samples of Facebook's 2009 and
 * 2010 clusters, one job a line: job name, submit time (s), gap since the previous job (s), map input
 * bytes, shuffle bytes, reduce output bytes. SWIM keeps only sizes and times, so the tasks are
 * derived here, each by a rule stated once:
 * - maps: one per block of input, ceil(input / blockBytes), at least one (a job with no input still
 *   runs a map); the last split holds the remainder. A map's output is its share of the shuffle,
 *   in proportion to its split (all of it on the one map of a job without input).
 * - reduces: ceil(shuffle / bytesPerReduce), none when the shuffle is zero (a map-only job; its maps
 *   then write the job's output). bytesPerReduce defaults to 64 MiB, the data per reduce task SWIM's
 *   own replay script (GenerateReplayScript) is run with in its examples.
 * - work: taskStartMs plus bytes at a rate: a map's split (and, map-only, its share of the output)
 *   at mapMBps, a reduce's share of the shuffle plus its share of the output at reduceMBps. The
 *   defaults are measured on minimr (SWIM_DEFAULTS says where); MB = 10^6 bytes.
 * - arrivals: the submit times, which must not decrease (the gap column is checked to be a number
 *   >= 0 and otherwise not used: it is the difference of the submit times in SWIM's samples).
 * - scaling: sizeScale multiplies every byte count before the rules above (SWIM's replay scales by
 *   machines now / machines then), timeScale every submit time.
 * Each job's sizeClass is small, medium or large by its unscaled input bytes (swimSizeClass).
 * A malformed line is EBADCONF naming its line number and field, and nothing is returned.
 */
import { MinimrError } from '../errors.js';
import { BLOCK_BYTES } from './generators.js';
import type { JobSpec, TaskSpec, Workload } from './types.js';

const MiB = 1024 * 1024;
const GB = 1e9;

/**
 * Rates and sizes the rules use unless told otherwise. The rates are the task CPU of a 1 GiB
 * TeraSort on minimr (bench:tera-phases, 16 maps of 64 MiB and 2 reduces; docs/results/issue-38-swim.md
 * gives the runs): maps 16 x 64 MiB in ~18.4 s of task CPU, ~58 MB/s; reduces 1 GiB shuffled in and
 * 1 GiB written in ~6.3 s, ~340 MB/s of bytes read plus written. A fresh task process takes ~200 ms
 * to start (commit 11e4126's measurement), charged to every task.
 */
export const SWIM_DEFAULTS = {
  blockBytes: BLOCK_BYTES,
  bytesPerReduce: 64 * MiB,
  mapMBps: 58,
  reduceMBps: 340,
  taskStartMs: 200,
  memoryMb: 1024,
  sizeScale: 1,
  timeScale: 1,
} as const;

/**
 * Size classes by input bytes, in orders of magnitude after Chen et al.'s job types for FB-2009
 * (KB- and MB-scale small jobs and loads, GB-scale loads, aggregations of hundreds of GB and more);
 * the edges are ours: small below 1 GB, medium from 1 GB to below 100 GB, large from 100 GB.
 */
export const SWIM_SIZE_CLASS_EDGES = { mediumFromBytes: 1 * GB, largeFromBytes: 100 * GB } as const;
export const SWIM_SIZE_CLASSES = ['small', 'medium', 'large'] as const;
export type SwimSizeClass = (typeof SWIM_SIZE_CLASSES)[number];

export function swimSizeClass(inputBytes: number): SwimSizeClass {
  if (inputBytes >= SWIM_SIZE_CLASS_EDGES.largeFromBytes) return 'large';
  if (inputBytes >= SWIM_SIZE_CLASS_EDGES.mediumFromBytes) return 'medium';
  return 'small';
}

export interface SwimOptions {
  /** The workload's name; default "swim". */
  readonly name?: string;
  /** Split size: one map per block of input; default 64 MiB (minimr's block size). */
  readonly blockBytes?: number;
  /** Shuffle bytes per reduce task; default 64 MiB. */
  readonly bytesPerReduce?: number;
  /** A map's rate over its split (and, map-only, its output), MB/s; default 58. */
  readonly mapMBps?: number;
  /** A reduce's rate over its shuffle plus output bytes, MB/s; default 340. */
  readonly reduceMBps?: number;
  /** Work every task has whatever its bytes (starting its process), ms; default 200. */
  readonly taskStartMs?: number;
  /** Memory every task asks for, MB; default 1024 (as SLS and Rumen tasks). */
  readonly memoryMb?: number;
  /** Multiplies every byte count of the trace; default 1. */
  readonly sizeScale?: number;
  /** Multiplies every submit time; default 1 (0.5 replays the trace in half the time). */
  readonly timeScale?: number;
}

/** The six columns, as error messages name them. */
export const SWIM_FIELDS = [
  'job name',
  'submit time',
  'inter-job gap',
  'map input bytes',
  'shuffle bytes',
  'reduce output bytes',
] as const;
type SwimField = (typeof SWIM_FIELDS)[number];

function bad(source: string, line: number, field: string, why: string): never {
  throw new MinimrError('EBADCONF', `${source} line ${line}: ${field}: ${why}`, { line, field });
}

/** A plain decimal number >= 0 (digits, optional fraction and exponent); no signs, blanks, hex or Infinity. */
const NUMBER = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function nonNegative(text: string, source: string, line: number, field: SwimField): number {
  const value = Number(text);
  if (!NUMBER.test(text) || !Number.isFinite(value))
    bad(source, line, field, `expected a number >= 0, got ${JSON.stringify(text)}`);
  return value;
}

function positiveOption(options: SwimOptions, key: keyof SwimOptions, fallback: number, zeroOk = false): number {
  const value = options[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (!zeroOk && value === 0))
    throw new MinimrError(
      'EBADCONF',
      `SWIM option ${key} must be a number ${zeroOk ? '>= 0' : '> 0'}, got ${JSON.stringify(value)}`,
      { field: key },
    );
  return value;
}

interface SwimLine {
  readonly line: number;
  readonly name: string;
  readonly submitS: number;
  readonly inputBytes: number;
  readonly shuffleBytes: number;
  readonly outputBytes: number;
}

function readLines(text: string, source: string): SwimLine[] {
  const lines: SwimLine[] = [];
  let previousSubmitS = 0;
  const rows = text.split('\n');
  for (const [index, raw] of rows.entries()) {
    const line = index + 1;
    const row = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (row.trim() === '') continue;
    const cells = row.split('\t');
    if (cells.length < SWIM_FIELDS.length)
      bad(source, line, SWIM_FIELDS[cells.length]!, `missing: a line has ${SWIM_FIELDS.length} tab-separated fields`);
    if (cells.length > SWIM_FIELDS.length)
      bad(
        source,
        line,
        SWIM_FIELDS[SWIM_FIELDS.length - 1]!,
        `${cells.length - SWIM_FIELDS.length} field(s) after it; a line has ${SWIM_FIELDS.length} tab-separated fields`,
      );
    const [name, submit, gap, input, shuffle, output] = cells as [string, string, string, string, string, string];
    if (name.trim() === '') bad(source, line, 'job name', 'empty');
    const submitS = nonNegative(submit, source, line, 'submit time');
    nonNegative(gap, source, line, 'inter-job gap');
    if (submitS < previousSubmitS)
      bad(source, line, 'submit time', `${submit} s is before the previous job's ${previousSubmitS} s`);
    previousSubmitS = submitS;
    lines.push({
      line,
      name,
      submitS,
      inputBytes: nonNegative(input, source, line, 'map input bytes'),
      shuffleBytes: nonNegative(shuffle, source, line, 'shuffle bytes'),
      outputBytes: nonNegative(output, source, line, 'reduce output bytes'),
    });
  }
  return lines;
}

/** The workload of a SWIM TSV (see the file's comment for the rules); EBADCONF naming the line and field. */
export function parseSwimTrace(text: string, options: SwimOptions = {}): Workload {
  const source = options.name ?? 'swim';
  const blockBytes = positiveOption(options, 'blockBytes', SWIM_DEFAULTS.blockBytes);
  const bytesPerReduce = positiveOption(options, 'bytesPerReduce', SWIM_DEFAULTS.bytesPerReduce);
  const mapMBps = positiveOption(options, 'mapMBps', SWIM_DEFAULTS.mapMBps);
  const reduceMBps = positiveOption(options, 'reduceMBps', SWIM_DEFAULTS.reduceMBps);
  const taskStartMs = positiveOption(options, 'taskStartMs', SWIM_DEFAULTS.taskStartMs, true);
  const memoryMb = positiveOption(options, 'memoryMb', SWIM_DEFAULTS.memoryMb);
  const sizeScale = positiveOption(options, 'sizeScale', SWIM_DEFAULTS.sizeScale);
  const timeScale = positiveOption(options, 'timeScale', SWIM_DEFAULTS.timeScale, true);
  // bytes / (MB/s * 10^6) s = bytes / (MB/s * 1000) ms.
  const mapMs = (bytes: number) => taskStartMs + bytes / (mapMBps * 1000);
  const reduceMs = (bytes: number) => taskStartMs + bytes / (reduceMBps * 1000);

  const lines = readLines(text, source);
  if (lines.length === 0) throw new MinimrError('EBADCONF', `${source}: no jobs (a SWIM file has one job a line)`);
  const jobs: JobSpec[] = lines.map((l, i) => {
    const input = l.inputBytes * sizeScale;
    const shuffle = l.shuffleBytes * sizeScale;
    const output = l.outputBytes * sizeScale;
    const mapCount = Math.max(1, Math.ceil(input / blockBytes));
    const reduceCount = shuffle > 0 ? Math.ceil(shuffle / bytesPerReduce) : 0;
    const maps: TaskSpec[] = Array.from({ length: mapCount }, (_, m) => {
      const split = input > 0 ? Math.min(blockBytes, input - m * blockBytes) : 0;
      // This map's share of the bytes the job's maps put out: in proportion to its split.
      const share = (bytes: number) => (input > 0 ? (bytes * split) / input : bytes);
      const written = reduceCount === 0 ? share(output) : 0;
      return {
        workMs: mapMs(split + written),
        memoryMb,
        inputBytes: split,
        outputBytes: reduceCount === 0 ? written : share(shuffle),
      };
    });
    const reduces: TaskSpec[] = Array.from({ length: reduceCount }, () => ({
      workMs: reduceMs((shuffle + output) / reduceCount),
      memoryMb,
      inputBytes: 0,
    }));
    return {
      id: `job_${String(i + 1).padStart(4, '0')}`,
      name: l.name,
      app: 'swim',
      submitMs: l.submitS * 1000 * timeScale,
      maps,
      reduces,
      sizeClass: swimSizeClass(l.inputBytes),
    };
  });
  return {
    name: source,
    jobs,
    meta: {
      generator: 'swim',
      blockBytes,
      bytesPerReduce,
      mapMBps,
      reduceMBps,
      taskStartMs,
      memoryMb,
      sizeScale,
      timeScale,
    },
  };
}

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'blockBytes',
  'bytesPerReduce',
  'mapMBps',
  'reduceMBps',
  'taskStartMs',
  'memoryMb',
  'sizeScale',
  'timeScale',
]);

/**
 * `--swim-options JSON`: an object of SwimOptions' numeric fields (the values are checked when the
 * trace is read). Not JSON, not an object, an unknown key or a value not a number: EBADCONF.
 */
export function parseSwimOptions(text: string): SwimOptions {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MinimrError('EBADCONF', `--swim-options is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new MinimrError('EBADCONF', '--swim-options must be a JSON object, e.g. {"timeScale": 0.1}');
  const options: Record<string, number> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!OPTION_KEYS.has(key))
      throw new MinimrError(
        'EBADCONF',
        `--swim-options: unknown option ${key}; known: ${[...OPTION_KEYS].join(', ')}`,
        {
          field: key,
        },
      );
    if (typeof value !== 'number')
      throw new MinimrError('EBADCONF', `--swim-options: ${key} must be a number, got ${JSON.stringify(value)}`, {
        field: key,
      });
    options[key] = value;
  }
  return options as SwimOptions;
}
