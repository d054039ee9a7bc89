/**
 * A single-process stand-in for the runtime, enough to unit-test job modules: fake contexts, and a
 * run that goes map -> cleanupMap -> encode -> partition -> sort by encoded key -> combine -> merge
 * -> reduce -> cleanupReduce -> format, through the job's own codecs, so codec round trips are
 * exercised too. Unlike the runtime, every task runs in this one process, one after the other, each
 * with an attempt id of its own: so module-level state that a job resets per attempt (as it must
 * not rely on a fresh process) is exercised as well.
 */
import { crc32 } from 'node:zlib';
import {
  codecs,
  type AnyJobDefinition,
  type Codec,
  type JsonObject,
  type JsonValue,
  type MapContext,
  type ReduceContext,
  type PrepareContext,
  type InputFormat,
  type SplitInput,
  type ChunkOptions,
} from 'minimr';

export type Params = Record<string, JsonValue>;

export interface ContextOptions {
  /** How `emitKeyBytes` and `emitRecordBytes` keys are decoded (default: text). */
  keyCodec?: Codec<unknown>;
  /** How `emitRecordBytes` values are decoded (default: bytes). */
  valueCodec?: Codec<unknown>;
  params?: Params;
  shared?: JsonObject;
  mapIndex?: number;
  reduceIndex?: number;
  attemptId?: string;
  split?: { path: string; start: number; length: number };
}

export interface Collected<K, V> {
  pairs: [K, V][];
  counters: Map<string, number>;
}

function baseContext(opts: ContextOptions, taskId: string, counters: Map<string, number>) {
  return {
    jobId: 'job_test',
    taskId,
    attemptId: opts.attemptId ?? `${taskId}_0`,
    params: opts.params ?? {},
    shared: opts.shared ?? {},
    count(name: string, delta = 1) {
      counters.set(name, (counters.get(name) ?? 0) + delta);
    },
  };
}

export function fakeMapContext<K, V>(opts: ContextOptions = {}): { ctx: MapContext<K, V> } & Collected<K, V> {
  const pairs: [K, V][] = [];
  const counters = new Map<string, number>();
  const mapIndex = opts.mapIndex ?? 0;
  const ctx: MapContext<K, V> = {
    ...baseContext(opts, `m_${mapIndex}`, counters),
    mapIndex,
    ...(opts.split ? { split: opts.split } : {}),
    emit: (k, v) => void pairs.push([k, v]),
    emitKeyBytes: (bytes, start, end, v) =>
      void pairs.push([(opts.keyCodec ?? codecs.text).decode(Buffer.from(bytes.subarray(start, end))) as K, v]),
    emitRecordBytes: (bytes, keyStart, keyEnd, valueEnd) =>
      void pairs.push([
        (opts.keyCodec ?? codecs.text).decode(Buffer.from(bytes.subarray(keyStart, keyEnd))) as K,
        (opts.valueCodec ?? codecs.bytes).decode(Buffer.from(bytes.subarray(keyEnd, valueEnd))) as V,
      ]),
  };
  return { ctx, pairs, counters };
}

export function fakeReduceContext<K, V>(opts: ContextOptions = {}): { ctx: ReduceContext<K, V> } & Collected<K, V> {
  const pairs: [K, V][] = [];
  const counters = new Map<string, number>();
  const reduceIndex = opts.reduceIndex ?? 0;
  const ctx: ReduceContext<K, V> = {
    ...baseContext(opts, `r_${reduceIndex}`, counters),
    reduceIndex,
    emit: (k, v) => void pairs.push([k, v]),
  };
  return { ctx, pairs, counters };
}

export function fakePrepareContext<V>(opts: { params?: Params; reducers: number; records: V[] }): PrepareContext<V> {
  return {
    params: opts.params ?? {},
    inputPaths: ['/in'],
    reducers: opts.reducers,
    // Evenly spaced, as the runtime's sampler promises; split structure does not matter here.
    async sample(maxRecords: number) {
      const n = opts.records.length;
      if (n <= maxRecords) return opts.records.slice();
      const out: V[] = [];
      for (let i = 0; i < maxRecords; i++) out.push(opts.records[Math.floor((i * n) / maxRecords)]!);
      return out;
    },
  };
}

/** One map task's input: (key, value) records in the order the reader would hand them over. */
export type MapInput = [number, unknown][];

/** Text split into lines with byte offsets, as the text input reader does (newline dropped). */
export function textRecords(text: string): MapInput {
  const out: MapInput = [];
  let offset = 0;
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    out.push([offset, line]);
    offset += Buffer.byteLength(line, 'utf8') + 1;
  }
  return out;
}

/** Splits one map input into `n` contiguous chunks, as block-sized splits of one file would be. */
export function chunk<T>(records: T[], n: number): T[][] {
  const out: T[][] = [];
  const size = Math.ceil(records.length / n);
  for (let i = 0; i < n; i++) out.push(records.slice(i * size, (i + 1) * size));
  return out;
}

export function fixedRecords(data: Buffer, recordLength: number): MapInput {
  const out: MapInput = [];
  for (let off = 0; off + recordLength <= data.length; off += recordLength)
    out.push([off, data.subarray(off, off + recordLength)]);
  return out;
}

export interface RunOptions {
  params?: Params;
  reducers?: number;
  shared?: JsonObject;
  /** Reverse each combine group's values, to check a combiner does not depend on arrival order. */
  reverseCombineInput?: boolean;
  /** `ctx.split` of map i (default: none, as for generated input). */
  splits?: { path: string; start: number; length: number }[];
}

/**
 * A map task's input as a whole-split map reads it: the records' bytes (text lines joined with
 * `\n`, each line ending in one, as read from a file; fixed records back to back) in chunks of
 * `linesPerChunk` records, or the records themselves.
 */
export function splitInputOf(input: MapInput, linesPerChunk = 7): SplitInput<InputFormat> {
  let read = false;
  const once = () => {
    if (read) throw new Error('a split input is read once');
    read = true;
  };
  return {
    async *chunks(options?: ChunkOptions) {
      once();
      for (let i = 0; i < input.length; i += linesPerChunk) {
        const part = input.slice(i, i + linesPerChunk);
        const bytes = Buffer.concat(
          part.map(([, v]) => (Buffer.isBuffer(v) ? v : Buffer.from(`${v as string}\n`, 'utf8'))),
        );
        yield { bytes, offset: part[0]![0] };
        // As a reader reusing its buffers would: a map that kept a slice of the chunk sees it change.
        if (options?.reuseBuffers === true) bytes.fill(0xff);
      }
    },
    async *records() {
      once();
      for (const [k, v] of input) yield [k, v as never] as const;
    },
  };
}

/** Runs one map task: every record (or the whole split), then the job's cleanupMap, as the runtime does. */
export async function runMapTask(
  job: AnyJobDefinition,
  input: MapInput,
  opts: ContextOptions = {},
): Promise<Collected<unknown, unknown> & { ctx: MapContext<unknown, unknown> }> {
  const task = fakeMapContext<unknown, unknown>({
    keyCodec: (job.mapKey ?? codecs.msgpack()) as Codec<unknown>,
    valueCodec: (job.mapValue ?? codecs.msgpack()) as Codec<unknown>,
    ...opts,
  });
  if (job.mapSplit) await job.mapSplit(splitInputOf(input), task.ctx);
  else for (const [k, v] of input) await job.map!(k, v as never, task.ctx);
  if (job.cleanupMap) await job.cleanupMap(task.ctx);
  return task;
}

export interface RunResult {
  /** One entry per output part (per map when map-only, else per reducer), as (key, value) pairs. */
  parts: [unknown, unknown][][];
  /** The parts as the output format would write them. */
  files: Buffer[];
  counters: Map<string, number>;
}

type Rec = { key: Buffer; value: Buffer };

function groupSorted(recs: Rec[], compare: (a: Buffer, b: Buffer) => number): { key: Buffer; values: Buffer[] }[] {
  const sorted = recs.slice().sort((a, b) => compare(a.key, b.key));
  const groups: { key: Buffer; values: Buffer[] }[] = [];
  for (const r of sorted) {
    const last = groups[groups.length - 1];
    if (last !== undefined && compare(last.key, r.key) === 0) last.values.push(r.value);
    else groups.push({ key: r.key, values: [r.value] });
  }
  return groups;
}

function formatPart(job: AnyJobDefinition, pairs: [unknown, unknown][]): Buffer {
  const output = job.output ?? { kind: 'text', separator: '\t' };
  const chunks: Buffer[] = [];
  const asBytes = (x: unknown): Buffer => (Buffer.isBuffer(x) ? x : Buffer.from(String(x), 'utf8'));
  for (const [k, v] of pairs) {
    if (output.kind === 'records') {
      chunks.push(asBytes(k), asBytes(v));
    } else {
      chunks.push(asBytes(k), Buffer.from(output.separator, 'utf8'), asBytes(v), Buffer.from('\n'));
    }
  }
  return Buffer.concat(chunks);
}

/** Runs a job over in-memory map inputs (one array per map task). */
export async function runJob(job: AnyJobDefinition, inputs: MapInput[], opts: RunOptions = {}): Promise<RunResult> {
  const reducers = opts.reducers ?? job.reducers ?? 1;
  const keyCodec = (job.mapKey ?? codecs.msgpack()) as Codec<unknown>;
  const valueCodec = (job.mapValue ?? codecs.msgpack()) as Codec<unknown>;
  const compare = job.compareKeys ?? Buffer.compare;
  const counters = new Map<string, number>();
  const ctxOpts = { params: opts.params ?? {}, shared: opts.shared ?? {} };
  const addCounters = (c: Map<string, number>) => {
    for (const [k, v] of c) counters.set(k, (counters.get(k) ?? 0) + v);
  };

  if (reducers === 0) {
    const parts: [unknown, unknown][][] = [];
    for (let m = 0; m < inputs.length; m++) {
      const { pairs, counters: c } = await runMapTask(job, inputs[m]!, {
        ...ctxOpts,
        mapIndex: m,
        split: opts.splits?.[m],
      });
      addCounters(c);
      // Through the codecs anyway, as a remote writer would receive them.
      parts.push(pairs.map(([k, v]) => [keyCodec.decode(keyCodec.encode(k)), valueCodec.decode(valueCodec.encode(v))]));
    }
    return { parts, files: parts.map((p) => formatPart(job, p)), counters };
  }

  // Map side: per map and partition, encoded records, sorted and combined.
  const byPartition: Rec[][] = Array.from({ length: reducers }, () => []);
  for (let m = 0; m < inputs.length; m++) {
    const {
      ctx,
      pairs,
      counters: c,
    } = await runMapTask(job, inputs[m]!, { ...ctxOpts, mapIndex: m, split: opts.splits?.[m] });
    addCounters(c);
    const local: Rec[][] = Array.from({ length: reducers }, () => []);
    for (const [k, v] of pairs) {
      const key = Buffer.from(keyCodec.encode(k)); // copy: the map may reuse or view its buffers
      const value = Buffer.from(valueCodec.encode(v));
      const p = job.partition ? job.partition(k, reducers, ctx) : crc32(key) % reducers;
      if (!Number.isInteger(p) || p < 0 || p >= reducers) throw new Error(`partition ${p} out of range`);
      local[p]!.push({ key, value });
    }
    for (let p = 0; p < reducers; p++) {
      if (!job.combine) {
        byPartition[p]!.push(...local[p]!);
        continue;
      }
      for (const g of groupSorted(local[p]!, compare)) {
        const values = g.values.map((b) => valueCodec.decode(b));
        if (opts.reverseCombineInput) values.reverse();
        job.combine(keyCodec.decode(g.key), values, {
          emit: (k, v) =>
            void byPartition[p]!.push({
              key: Buffer.from(keyCodec.encode(k)),
              value: Buffer.from(valueCodec.encode(v)),
            }),
        });
      }
    }
  }

  const parts: [unknown, unknown][][] = [];
  for (let p = 0; p < reducers; p++) {
    const { ctx, pairs, counters: c } = fakeReduceContext<unknown, unknown>({ ...ctxOpts, reduceIndex: p });
    for (const g of groupSorted(byPartition[p]!, compare)) {
      const values = g.values.map((b) => valueCodec.decode(b));
      if (job.reduce) await job.reduce(keyCodec.decode(g.key), values, ctx);
      else for (const v of values) ctx.emit(keyCodec.decode(g.key), v);
    }
    if (job.cleanupReduce) await job.cleanupReduce(ctx);
    addCounters(c);
    parts.push(pairs);
  }
  return { parts, files: parts.map((p) => formatPart(job, p)), counters };
}

/** Splits a generated-input job's params into its map inputs, as the submitting client does. */
export function generatedInputs(job: AnyJobDefinition, params: Params): MapInput[] {
  if (job.input.kind !== 'generated') throw new Error('not a generated-input job');
  return job.input.splits(params).map((split, i) => [[i, split]]);
}
