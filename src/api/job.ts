import { MinimrError } from '../errors.js';
import type { Codec } from './codecs.js';
import type { InputFormat, InputValue, OutputFormat, SplitInput } from './formats.js';
import type { JsonObject, JsonValue } from './json.js';

/** What every user function can see about the attempt running it. */
export interface TaskContext {
  readonly jobId: string;
  readonly taskId: string;
  readonly attemptId: string;
  /** Job parameters given at submission (`--param k=v` or the API). */
  readonly params: Readonly<Record<string, JsonValue>>;
  /** What the job's `prepare` returned in the submitting client (e.g. TeraSort's split points). */
  readonly shared: Readonly<JsonObject>;
  /** Adds to a user counter; counters are summed per job and shown in job status. */
  count(name: string, delta?: number): void;
}

export interface MapContext<K, V> extends TaskContext {
  /**
   * Index of this map's split. Splits are numbered in input order: input paths as given, files of a
   * directory by name, and blocks of a file by offset.
   */
  readonly mapIndex: number;
  /** The byte range this map reads (absent for generated input). */
  readonly split?: { readonly path: string; readonly start: number; readonly length: number };
  emit(key: K, value: V): void;
  /**
   * Emits a record whose key is given encoded: bytes [start, end) of `keyBytes` must be exactly what
   * `mapKey.encode(key)` returns for the key meant (for `codecs.text`, its UTF-8, so valid UTF-8).
   * The bytes are copied before this returns. Lets a whole-split map emit slices of its input as
   * keys without making a string per key.
   *
   * `keyHash`, optional: the bytes' `keyHash` (from 'minimr'), for a map that reads its keys byte
   * by byte and can work it out on the way (`KEY_HASH_START`, then `keyHashStep` per byte): the
   * job's combining table then need not read the bytes again to hash them. A wrong one costs
   * combining, never output: a key filed under two hashes is two entries, combined again later.
   */
  emitKeyBytes(keyBytes: Uint8Array, start: number, end: number, value: V, keyHash?: number): void;
  /**
   * Emits a record given encoded, key and value side by side: bytes [keyStart, keyEnd) of `bytes`
   * are `mapKey.encode(key)` and bytes [keyEnd, valueEnd) are `mapValue.encode(value)` for the
   * record meant. The bytes are copied before this returns. Lets a whole-split map of fixed-width
   * records (TeraSort) hand each record's bytes from its input chunk to the sort buffer, with no
   * Buffer or decoded value per record.
   */
  emitRecordBytes(bytes: Uint8Array, keyStart: number, keyEnd: number, valueEnd: number): void;
}

export interface ReduceContext<K, V> extends TaskContext {
  readonly reduceIndex: number;
  emit(key: K, value: V): void;
}

/** A combiner's output goes back into the shuffle, so it has the map output's types. */
export interface CombineContext<K, V> {
  emit(key: K, value: V): void;
}

/** One key's values, as `reducePartition` reads them: consume `values` before asking for the next group. */
export interface ReduceGroup<K, V> {
  readonly key: K;
  readonly values: Iterable<V>;
}

export interface PrepareContext<VIn> {
  readonly params: Readonly<Record<string, JsonValue>>;
  readonly inputPaths: readonly string[];
  readonly reducers: number;
  /**
   * Up to `maxRecords` input records taken evenly from up to `maxSplits` input splits, as Hadoop's
   * TeraSort sampler does. Empty for generated input.
   */
  sample(maxRecords: number, maxSplits?: number): Promise<VIn[]>;
}

export type MaybePromise<T> = T | Promise<T>;

export interface JobDefinition<F extends InputFormat, KMid, VMid, KOut = KMid, VOut = VMid> {
  readonly name: string;
  readonly input: F;
  readonly output?: OutputFormat;
  /** Number of reduce tasks; 0 makes a map-only job. Default 1; `--reducers` overrides. */
  readonly reducers?: number;
  readonly mapKey?: Codec<KMid>;
  readonly mapValue?: Codec<VMid>;
  /** Called once per input record. A job defines `map` or `mapSplit`, not both (EBADJOB). */
  map?(key: number, value: InputValue<F>, ctx: MapContext<KMid, VMid>): MaybePromise<void>;
  /**
   * Called once per map task with its whole split (Hadoop's Mapper.run, Spark's mapPartitions):
   * reads the split's bytes (`input.chunks()`) or records (`input.records()`) and emits, so a map
   * can scan bytes instead of taking a string per line. Retried and failed like `map` when it throws.
   */
  mapSplit?(input: SplitInput<F>, ctx: MapContext<KMid, VMid>): MaybePromise<void>;
  combine?(key: KMid, values: Iterable<VMid>, ctx: CombineContext<KMid, VMid>): void;
  reduce?(key: KMid, values: Iterable<VMid>, ctx: ReduceContext<KOut, VOut>): MaybePromise<void>;
  /**
   * Called once per reduce task with its whole input, sorted and grouped by key (Hadoop's Reducer.run):
   * for a reduce that must see every group in one pass, such as a streaming reducer (one process per
   * task). A job defines `reduce` or `reducePartition`, not both.
   */
  reducePartition?(groups: AsyncIterable<ReduceGroup<KMid, VMid>>, ctx: ReduceContext<KOut, VOut>): MaybePromise<void>;
  /**
   * Runs once after a map task's last record (Hadoop's Mapper.cleanup) and may emit, e.g. a per-task
   * summary. Every attempt imports the job module afresh (in a task process, never in the
   * worker), so module-level state is per attempt.
   */
  cleanupMap?(ctx: MapContext<KMid, VMid>): MaybePromise<void>;
  /** Runs once after a reduce task's last group (Hadoop's Reducer.cleanup) and may emit. */
  cleanupReduce?(ctx: ReduceContext<KOut, VOut>): MaybePromise<void>;
  /** Reduce partition for a map output key; default: a hash of the encoded key mod `partitions`. */
  partition?(key: KMid, partitions: number, ctx: TaskContext): number;
  /** Order of encoded map output keys; default: byte order. */
  compareKeys?(a: Buffer, b: Buffer): number;
  /** Runs once in the submitting client before the job is submitted; the result is `ctx.shared`. */
  prepare?(ctx: PrepareContext<InputValue<F>>): Promise<JsonObject>;
}

/** A job as loaded from a module: the types are erased at this boundary. */
export type AnyJobDefinition = JobDefinition<InputFormat, unknown, unknown, unknown, unknown>;

const JOB_MARK = Symbol.for('minimr.job');

/**
 * Declares a job. `export default defineJob({...})` from a module is what `minimr submit` loads.
 * Checks the shape eagerly so a bad job fails at submission, not in the middle of a map.
 */
export function defineJob<F extends InputFormat, KMid = string, VMid = unknown, KOut = KMid, VOut = VMid>(
  def: JobDefinition<F, KMid, VMid, KOut, VOut>,
): JobDefinition<F, KMid, VMid, KOut, VOut> {
  assertOneMapFunction(def, 'defineJob');
  const problems = validateJobDefinition(def as unknown);
  if (problems.length > 0) throw new TypeError(`defineJob: ${problems.join('; ')}`);
  Object.defineProperty(def, JOB_MARK, { value: true, enumerable: false });
  return def;
}

/** Lists what is wrong with a would-be job definition (empty when it is valid). */
export function validateJobDefinition(def: unknown): string[] {
  if (typeof def !== 'object' || def === null) return ['the job must be an object (export default defineJob({...}))'];
  const d = def as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof d.name !== 'string' || d.name.length === 0) problems.push('`name` must be a non-empty string');
  if (d.map !== undefined && d.mapSplit !== undefined) problems.push(BOTH_MAP_FUNCTIONS);
  else if (d.map === undefined && d.mapSplit === undefined)
    problems.push('`map` must be a function (or define `mapSplit`)');
  for (const fn of [
    'map',
    'mapSplit',
    'reduce',
    'reducePartition',
    'combine',
    'partition',
    'compareKeys',
    'prepare',
    'cleanupMap',
    'cleanupReduce',
  ]) {
    if (d[fn] !== undefined && typeof d[fn] !== 'function') problems.push(`\`${fn}\` must be a function when given`);
  }
  const input = d.input as { kind?: unknown; recordLength?: unknown; splits?: unknown } | undefined;
  if (!input || !['text', 'fixed', 'generated'].includes(String(input.kind))) {
    problems.push('`input` must be textInput(), fixedRecordInput(n) or generatedInput(fn)');
  } else if (input.kind === 'fixed' && !(Number.isInteger(input.recordLength) && (input.recordLength as number) > 0)) {
    problems.push('fixedRecordInput needs a positive integer record length');
  } else if (input.kind === 'generated' && typeof input.splits !== 'function') {
    problems.push('generatedInput needs a splits function');
  }
  if (d.reduce !== undefined && d.reducePartition !== undefined)
    problems.push('the job defines both `reduce` and `reducePartition`: define one');
  if (d.reducers !== undefined && !(Number.isInteger(d.reducers) && (d.reducers as number) >= 0)) {
    problems.push('`reducers` must be a non-negative integer');
  }
  return problems;
}

const BOTH_MAP_FUNCTIONS =
  'the job defines both `map` and `mapSplit`: define one (`map` per record, `mapSplit` per split)';

/** A job with both map functions is EBADJOB: which one should run is not something to guess. */
export function assertOneMapFunction(def: unknown, where: string): void {
  if (typeof def !== 'object' || def === null) return;
  const d = def as Record<string, unknown>;
  if (d.map !== undefined && d.mapSplit !== undefined) {
    const name = typeof d.name === 'string' ? ` "${d.name}"` : '';
    throw new MinimrError('EBADJOB', `${where}: job${name}: ${BOTH_MAP_FUNCTIONS}`);
  }
}
