/**
 * Entry point of a task process. The worker forks one of these ahead of time, so that a launch only
 * costs a message; each process runs exactly one attempt and exits, so a kill is a plain SIGKILL and
 * no state leaks from one job's code into another's. User code runs here, never in the worker,
 * so a CPU-bound map cannot delay the worker's heartbeats.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { AnyJobDefinition, Codec, MapContext, TaskContext } from '../api/index.js';
import { codecs } from '../api/index.js';
import { MinimrError, deserializeError, serializeError } from '../errors.js';
import {
  HashCombiner,
  MapOutputBuffer,
  MIN_MAP_BUFFER_BYTES,
  codecByName,
  createShuffleCounters,
  mapOutputPaths,
  ReduceShuffle,
  reduceWorkDir,
  groupByKey,
  hashPartition,
  noteTransientBytes,
  preloadLz4,
  type BytesCombiner,
  type KeyComparator,
  type KeyValue,
} from '../shuffle/index.js';
import { partitionOfKey } from '../skew/index.js';
import { FsClient, LocalDiskBlockStore } from '../storage/index.js';
import { CpuThrottle } from './cpu-throttle.js';
import { openTaskInput, TaskSplitInput, type SplitPacing } from './input.js';
import { importJobModule } from './job-loader.js';
import { OutputWriter } from './output-writer.js';
import { NAMENODE_OPS, type AttemptSpec, type Counters, type MapOutputSummary, type NamenodeOp } from './protocol.js';
import type { NamenodeApi } from '../storage/index.js';
import type { TaskProcessConfig, TaskProcessReport, TaskProcessRequest } from './task-ipc.js';

const PROGRESS_INTERVAL_MS = 300;
/** Below this share of the map buffer, a job's combiner runs at spills only (no hash table). */
const MIN_HASH_COMBINE_BYTES = 64 * 1024;
/** A key not decoded (yet): the partitioner decodes it only for a job's own `partition`. */
const NO_KEY = Symbol('no key');

/** Where a map's `emit` and `emitKeyBytes` go; `flush` passes on what a hash table holds. */
interface MapSink {
  emit(key: unknown, value: unknown): void;
  emitKeyBytes(keyBytes: Uint8Array, start: number, end: number, value: unknown): void;
  flush?(): void;
}

/** `start`, once [start, end) is checked to be a range of `bytes`. */
function checkedRange(bytes: Uint8Array, start: number, end: number): number {
  if (!(bytes instanceof Uint8Array) || !Number.isInteger(start) || !Number.isInteger(end) || start < 0 || start > end || end > bytes.length) {
    const length = bytes instanceof Uint8Array ? `${bytes.length} bytes` : `a ${typeof bytes}, not bytes`;
    throw new MinimrError('ETASK', `emitKeyBytes: [${start}, ${end}) is not a range of the key bytes given (${length})`);
  }
  return start;
}

function send(report: TaskProcessReport): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(report, undefined, {}, () => resolve());
  });
}

/** Values decoded as the reduce reads them; the identity codec (bytes) passes them through. */
function decodeAll<T>(values: Iterable<Buffer>, codec: Codec<T>): Iterable<T> {
  if (codec.name === 'bytes') return values as unknown as Iterable<T>;
  return new DecodedValues(values[Symbol.iterator](), codec);
}

class DecodedValues<T> implements IterableIterator<T> {
  constructor(
    private readonly it: Iterator<Buffer>,
    private readonly codec: Codec<T>,
  ) {}

  [Symbol.iterator](): IterableIterator<T> {
    return this;
  }

  next(): IteratorResult<T> {
    const r = this.it.next();
    return r.done ? { done: true, value: undefined } : { done: false, value: this.codec.decode(r.value) };
  }
}

class AttemptRunner {
  readonly counters: Counters = {};
  readonly shuffle = createShuffleCounters();
  progress = 0;
  /** Set by the attempt: reports progress now if the last report is old enough. */
  reportIfDue: () => void = () => undefined;
  private readonly keyCodec: Codec<unknown>;
  private readonly valueCodec: Codec<unknown>;
  private readonly compare: KeyComparator;
  /** Stretches this attempt's working time by the worker's `--cpu-throttle` factor (1: no-op). */
  private readonly throttle: CpuThrottle;
  private reduceInputBytes = 0;
  /** The map's combining hash table, when it has one. */
  private hashTable: HashCombiner | undefined;

  constructor(
    private readonly spec: AttemptSpec,
    private readonly job: AnyJobDefinition,
    private readonly fs: FsClient,
    private readonly config: TaskProcessConfig,
  ) {
    this.keyCodec = (job.mapKey ?? codecs.text) as Codec<unknown>;
    this.valueCodec = (job.mapValue ?? codecs.msgpack()) as Codec<unknown>;
    this.compare = job.compareKeys ?? Buffer.compare;
    this.throttle = new CpuThrottle(config.cpuThrottle ?? 1);
  }

  private baseContext(): TaskContext {
    const counters = this.counters;
    return {
      jobId: this.spec.jobId,
      taskId: this.spec.taskId,
      attemptId: this.spec.attemptId,
      params: this.spec.params,
      shared: this.spec.shared,
      count(name: string, delta = 1) {
        const key = `user.${name}`;
        counters[key] = (counters[key] ?? 0) + delta;
      },
    };
  }

  snapshotCounters(): Counters {
    const s = this.shuffle;
    return {
      ...this.counters,
      MAP_OUTPUT_RECORDS: s.mapOutputRecords,
      MAP_OUTPUT_BYTES: s.mapOutputBytes,
      COMBINE_INPUT_RECORDS: s.combineInputRecords,
      COMBINE_OUTPUT_RECORDS: s.combineOutputRecords,
      ...(this.hashTable
        ? {
            HASH_COMBINE_INPUT_RECORDS: s.hashCombineInputRecords,
            HASH_COMBINE_OUTPUT_RECORDS: s.hashCombineOutputRecords,
            HASH_COMBINE_FLUSHES: s.hashCombineFlushes,
            PEAK_HASH_COMBINE_BYTES: this.hashTable.peakBytes,
          }
        : {}),
      SPILLED_RECORDS: s.spilledRecords,
      SPILLED_BYTES: s.spilledBytes,
      SPILLS: s.spills,
      MERGE_PASSES: s.mergePasses,
      PEAK_BUFFER_BYTES: s.peakBufferBytes,
      SHUFFLE_BYTES_LOCAL: s.shuffleBytesLocal,
      SHUFFLE_BYTES_REMOTE: s.shuffleBytesRemote,
      REDUCE_INPUT_RECORDS: s.reduceInputRecords,
      REDUCE_INPUT_GROUPS: s.reduceInputGroups,
      BYTES_READ_LOCAL: this.fs.bytesRead.local,
      BYTES_READ_RACK: this.fs.bytesRead.rack,
      BYTES_READ_OFF_RACK: this.fs.bytesRead.offRack,
      REDUCE_INPUT_BYTES: this.reduceInputBytes,
      ...(this.throttle.sleptMs > 0 ? { THROTTLE_SLEEP_MS: Math.round(this.throttle.sleptMs) } : {}),
    };
  }

  private add(name: string, delta: number): void {
    this.counters[name] = (this.counters[name] ?? 0) + delta;
  }

  private async openOutput(): Promise<OutputWriter> {
    const sink = await this.fs.createWriter(this.spec.outputTempPath, { overwrite: true });
    return new OutputWriter(this.spec.outputFormat, sink);
  }

  private combiner(): BytesCombiner | undefined {
    const combine = this.job.combine;
    if (!combine) return undefined;
    const { keyCodec, valueCodec } = this;
    return (key, values, emit) => {
      combine.call(this.job, keyCodec.decode(key), decodeAll(values, valueCodec), {
        emit: (k: unknown, v: unknown) => emit(keyCodec.encode(k), valueCodec.encode(v)),
      });
    };
  }

  async runMap(): Promise<MapOutputSummary | undefined> {
    const { spec, job } = this;
    const mapOnly = spec.reducers === 0;
    const output = mapOnly ? await this.openOutput() : undefined;
    const table = mapOnly ? undefined : this.hashTableBytes();
    const collector = mapOnly
      ? undefined
      : new MapOutputBuffer({
          dir: mapOutputPaths(this.config.shuffleRoot, spec.jobId, spec.attemptId).dir,
          numPartitions: spec.mapPartitions ?? spec.reducers,
          bufferBytes: spec.shuffle.mapBufferBytes - table!,
          spillPercent: spec.shuffle.spillPercent,
          mergeFactor: spec.shuffle.mergeFactor,
          codec: codecByName(spec.shuffle.codec),
          compare: this.compare,
          combiner: this.combiner(),
          combineSpills: table === 0,
          counters: this.shuffle,
          ids: { jobId: spec.jobId, attemptId: spec.attemptId },
        });
    const sink = output ? this.mapOnlySink(output) : this.mapOutputSink(collector!, table!);
    const split = spec.input.kind === 'file' ? { path: spec.input.path, start: spec.input.start, length: spec.input.length } : undefined;
    const ctx: MapContext<unknown, unknown> = { ...this.baseContext(), mapIndex: spec.index, split, emit: sink.emit, emitKeyBytes: sink.emitKeyBytes };
    const pacing: SplitPacing = {
      due: () => output?.needsFlush === true || collector?.mustWait === true,
      pause: async (bytesRead, totalBytes) => {
        this.progress = this.mapProgress(bytesRead, totalBytes);
        this.reportIfDue();
        if (output?.needsFlush) await flushOutput(output);
        // The buffer is full and a spill is being written: let it finish rather than spill synchronously.
        if (collector?.mustWait) await collector.waitForRoom();
        if (this.throttle.due()) await this.throttle.pace();
      },
    };
    let bytesRead = 0;
    try {
      if (job.mapSplit) {
        const input = new TaskSplitInput(this.fs, spec.input, spec.inputFormat, spec.index, pacing);
        try {
          await job.mapSplit(input, ctx);
        } finally {
          await input.close();
          this.add('MAP_INPUT_RECORDS', input.recordsRead);
          bytesRead = input.bytesRead;
        }
      } else {
        bytesRead = await this.mapRecords(ctx, pacing);
      }
      if (job.cleanupMap) await job.cleanupMap(ctx);
      sink.flush?.();
      await this.throttle.pace();
    } catch (err) {
      await collector?.abort();
      await output?.abort().catch(() => undefined);
      throw err;
    }
    this.add('MAP_INPUT_BYTES', bytesRead);
    if (output) {
      await output.close();
      this.add('MAP_OUTPUT_RECORDS', output.records);
      this.add('OUTPUT_BYTES', output.bytes);
      return undefined;
    }
    let info;
    try {
      info = await collector!.finish();
    } catch (err) {
      await collector!.abort();
      throw err;
    }
    this.add('MAP_OUTPUT_RAW_BYTES', info.partitions.reduce((sum, p) => sum + p.rawLength, 0));
    return {
      partitionBytes: info.partitions.map((p) => p.length),
      partitionRecords: info.partitions.map((p) => p.records),
    };
  }

  /** `map` once per record of the split; returns the input bytes read. */
  private async mapRecords(ctx: MapContext<unknown, unknown>, pacing: SplitPacing): Promise<number> {
    const { spec, job } = this;
    const map = job.map!;
    const reader = openTaskInput(this.fs, spec.input, spec.inputFormat, spec.index);
    let bytesRead = 0;
    try {
      for (let batch = await reader.next(); batch; batch = await reader.next()) {
        const { offsets, values } = batch;
        for (let i = 0; i < values.length; i++) {
          // CPU-bound map code starves the event loop, so progress is reported from here too.
          if ((i & 63) === 63) {
            this.progress = this.mapProgress(bytesRead + (batch.bytesRead * i) / values.length, reader.totalBytes);
            this.reportIfDue();
          }
          const r = map.call(job, offsets[i]!, values[i] as never, ctx);
          if (r instanceof Promise) await r;
          if (pacing.due()) await pacing.pause(bytesRead + (batch.bytesRead * i) / values.length, reader.totalBytes);
        }
        this.add('MAP_INPUT_RECORDS', values.length);
        bytesRead += batch.bytesRead;
        this.progress = this.mapProgress(bytesRead, reader.totalBytes);
        await this.throttle.pace();
      }
    } finally {
      await reader.close();
    }
    return bytesRead;
  }

  /** A map-only job's output: straight to its part file. */
  private mapOnlySink(output: OutputWriter): MapSink {
    const keyCodec = this.keyCodec;
    return {
      emit: (key, value) => output.emit(key, value),
      emitKeyBytes: (bytes, start, end, value) => {
        const from = checkedRange(bytes, start, end);
        output.emit(keyCodec.decode(Buffer.from(bytes.buffer, bytes.byteOffset + from, end - from)), value);
      },
    };
  }

  /**
   * The map's share of its buffer budget that goes to the combining hash table (0: no table): only
   * for a job with a combiner, and only when the share is big enough to be a table.
   */
  private hashTableBytes(): number {
    if (!this.job.combine) return 0;
    const bytes = Math.floor(this.spec.shuffle.mapBufferBytes * this.spec.shuffle.hashCombinePercent);
    const sortBytes = this.spec.shuffle.mapBufferBytes - bytes;
    return bytes >= MIN_HASH_COMBINE_BYTES && sortBytes >= MIN_MAP_BUFFER_BYTES ? bytes : 0;
  }

  /**
   * Where a map's output goes when there are reducers: partitioned and encoded into the sort buffer,
   * or first into the combining hash table (`tableBytes` > 0).
   */
  private mapOutputSink(collector: MapOutputBuffer, tableBytes: number): MapSink {
    const { spec, job, keyCodec, valueCodec } = this;
    const partitions = spec.mapPartitions ?? spec.reducers;
    const seed = spec.partitionSeed;
    const partition = job.partition;
    const base = this.baseContext();
    const checked = (p: number): number => {
      if (!Number.isInteger(p) || p < 0 || p >= partitions) {
        throw new MinimrError('ETASK', `partition() returned ${p} for a job with ${partitions} partitions`, { taskId: spec.taskId });
      }
      return p;
    };
    // A 'cms' job partitions with the chosen sketch row's hash; otherwise the job's or the default.
    // `hash` is the key's murmur3 with seed 0 when the caller has it (the hash table does), else -1.
    const partitionOf = (k: Buffer, key: unknown, hash: number): number =>
      seed !== undefined
        ? partitionOfKey(k, partitions, seed)
        : partition
          ? checked(partition.call(job, key === NO_KEY ? keyCodec.decode(k) : key, partitions, base))
          : hash >= 0
            ? hash % partitions
            : hashPartition(k, partitions);
    if (tableBytes > 0) {
      const combine = job.combine!;
      let combineCtx: { emit: (key: unknown, value: unknown) => void } | undefined;
      const table = new HashCombiner({
        budgetBytes: tableBytes,
        keyCodec,
        valueCodec,
        combine: (key, values, emit) => combine.call(job, key, values, (combineCtx ??= { emit })),
        partitionOf: (k, hash) => partitionOf(k, NO_KEY, hash >>> 0),
        collect: (p, k, v) => collector.collect(p, k, v),
        counters: this.shuffle,
      });
      this.hashTable = table;
      return {
        emit: (key, value) => table.add(key, value),
        emitKeyBytes: (bytes, start, end, value) => table.addBytes(bytes, checkedRange(bytes, start, end), end, value),
        flush: () => table.flush(),
      };
    }
    return {
      emit: (key, value) => {
        const k = keyCodec.encode(key);
        collector.collect(partitionOf(k, key, -1), k, valueCodec.encode(value));
      },
      emitKeyBytes: (bytes, start, end, value) => {
        const k = Buffer.from(bytes.buffer, bytes.byteOffset + checkedRange(bytes, start, end), end - start);
        collector.collect(partitionOf(k, NO_KEY, -1), k, valueCodec.encode(value));
      },
    };
  }

  private mapProgress(bytesRead: number, totalBytes: number): number {
    return totalBytes > 0 ? Math.min(0.99, bytesRead / totalBytes) : 0.5;
  }

  async runReduce(): Promise<void> {
    const { spec, job } = this;
    const shuffle = new ReduceShuffle({
      jobId: spec.jobId,
      reduceIndex: spec.index,
      partitions: spec.reducePartitions ?? [spec.index],
      locations: spec.mapOutputs,
      local: { workerId: this.config.workerId, rootDir: this.config.shuffleRoot },
      workDir: reduceWorkDir(this.config.shuffleRoot, spec.jobId, spec.attemptId),
      bufferBytes: spec.shuffle.reduceBufferBytes,
      mergeFactor: spec.shuffle.mergeFactor,
      codec: codecByName(spec.shuffle.codec),
      compare: this.compare,
      combiner: this.combiner(),
      concurrency: spec.shuffle.parallelCopies,
      counters: this.shuffle,
    });
    try {
      const records = await shuffle.run();
      // Fetching and merging were CPU work of this attempt too.
      await this.throttle.pace();
      await this.reduceFrom(records);
    } finally {
      await shuffle.close();
    }
  }

  /** Reduce input bytes (key + value, as merged) for REDUCE_INPUT_BYTES: the rate workers are measured by. */
  private countingBytes(records: Iterable<KeyValue>): Iterable<KeyValue> {
    const it = records[Symbol.iterator]();
    const next = (): IteratorResult<KeyValue> => {
      const r = it.next();
      if (!r.done) this.reduceInputBytes += r.value[0].length + r.value[1].length;
      return r;
    };
    return { [Symbol.iterator]: () => ({ next }) };
  }

  private async reduceFrom(records: Iterable<KeyValue>): Promise<void> {
    const { spec, job } = this;
    this.progress = 1 / 3;
    const output = await this.openOutput();
    const ctx = { ...this.baseContext(), reduceIndex: spec.index, emit: (k: unknown, v: unknown) => output.emit(k, v) };
    const { keyCodec, valueCodec } = this;
    // The shuffle counts reduce input records itself; grouping only adds the group count.
    const grouping = createShuffleCounters();
    const reduce = job.reduce;
    try {
      const expected = Math.max(1, spec.expectedInputRecords);
      let groups = 0;
      for (const group of groupByKey(this.countingBytes(records), this.compare, grouping)) {
        if ((++groups & 63) === 0) {
          this.progress = 1 / 3 + (2 / 3) * Math.min(0.99, grouping.reduceInputRecords / expected);
          this.reportIfDue();
          if (this.throttle.due()) await this.throttle.pace();
        }
        const key = keyCodec.decode(group.key);
        if (reduce) {
          const r = reduce.call(job, key, decodeAll(group.values, valueCodec), ctx);
          if (r instanceof Promise) await r;
        } else {
          for (const v of group.values) output.emit(key, valueCodec.decode(v));
        }
        if (output.needsFlush) await flushOutput(output);
      }
      this.shuffle.reduceInputGroups = grouping.reduceInputGroups;
      if (job.cleanupReduce) await job.cleanupReduce(ctx);
      await this.throttle.pace();
    } catch (err) {
      await output.abort().catch(() => undefined);
      throw err;
    }
    await output.close();
    this.add('REDUCE_OUTPUT_RECORDS', output.records);
    this.add('OUTPUT_BYTES', output.bytes);
  }
}

/**
 * Hands full output chunks to the file writer. The writer copies them into blocks it frees once
 * written: a MiB of garbage per MiB of output that V8 lets pile up, so the bytes go to the
 * shuffle's GC pacer like its own buffers do (a reduce of 512 MiB peaked ~20 MiB higher without).
 */
async function flushOutput(output: OutputWriter): Promise<void> {
  const before = output.bytes;
  await output.flush();
  noteTransientBytes(output.bytes - before);
}

/**
 * This process's own peak RSS. Linux's getrusage maxRSS is inherited across fork, so a task forked
 * by a worker that once used more would report the worker's peak; VmHWM is this process's alone.
 */
function peakRssBytes(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux: fall back below
  }
  return process.resourceUsage().maxRSS * 1024;
}

let fs: FsClient | undefined;
let config: TaskProcessConfig | undefined;
const pendingFsCalls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
let nextFsCall = 1;

/** The NameNode, reached through the worker that forked this process. */
function namenodeViaWorker(): NamenodeApi {
  const api: Partial<Record<NamenodeOp, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const op of NAMENODE_OPS) {
    api[op] = (...args: unknown[]) =>
      new Promise((resolve, reject) => {
        const id = nextFsCall++;
        pendingFsCalls.set(id, { resolve, reject });
        void send({ type: 'fs', id, op, args: args.map((a) => (a === undefined ? null : a)) });
      });
  }
  return api as unknown as NamenodeApi;
}

function onFsResult(msg: Extract<TaskProcessRequest, { type: 'fs-result' }>): void {
  const pending = pendingFsCalls.get(msg.id);
  if (!pending) return;
  pendingFsCalls.delete(msg.id);
  if (msg.ok) pending.resolve(msg.result);
  else pending.reject(deserializeError(msg.error));
}

async function runAttempt(spec: AttemptSpec, modulePath: string): Promise<void> {
  const cfg = config!;
  let runner: AttemptRunner | undefined;
  let lastReport = 0;
  const report = () => {
    if (!runner) return;
    lastReport = Date.now();
    void send({ type: 'progress', attemptId: spec.attemptId, progress: runner.progress, counters: runner.snapshotCounters() });
  };
  const timer = setInterval(report, PROGRESS_INTERVAL_MS);
  try {
    const job = await importJobModule(modulePath, spec.jobName);
    runner = new AttemptRunner(spec, job, fs!, cfg);
    runner.reportIfDue = () => {
      if (Date.now() - lastReport >= PROGRESS_INTERVAL_MS) report();
    };
    let mapOutput: MapOutputSummary | undefined;
    const started = performance.now();
    try {
      if (spec.kind === 'map') mapOutput = await runner.runMap();
      else await runner.runReduce();
      // Time inside the task, launch excluded: what the elasticity profiler models.
      runner.counters.TASK_MS = Math.round(performance.now() - started);
      runner.counters.PEAK_RSS_BYTES = peakRssBytes();
    } catch (err) {
      if (err instanceof MinimrError) throw err;
      const e = err as Error;
      const where = spec.kind === 'map' ? 'map' : 'reduce';
      throw new MinimrError('ETASK', `${where} of ${spec.taskId} threw: ${e?.message ?? String(err)}`, {
        jobId: spec.jobId,
        taskId: spec.taskId,
        attemptId: spec.attemptId,
        stack: e?.stack?.split('\n').slice(0, 6).join('\n'),
      });
    }
    runner.progress = 1;
    await send({ type: 'done', attemptId: spec.attemptId, state: 'succeeded', counters: runner.snapshotCounters(), mapOutput });
  } catch (err) {
    const error = serializeError(err);
    await send({ type: 'done', attemptId: spec.attemptId, state: 'failed', counters: runner?.snapshotCounters() ?? {}, error });
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<void> {
  const raw = process.env.MINIMR_TASK_CONFIG;
  if (!raw || !process.send) {
    process.stderr.write('minimr task process: start it through a worker (needs MINIMR_TASK_CONFIG and an IPC channel)\n');
    process.exit(2);
  }
  config = JSON.parse(raw) as TaskProcessConfig;
  fs = new FsClient({
    namenode: namenodeViaWorker(),
    client: { workerId: config.workerId, rack: config.rack },
    localStore: new LocalDiskBlockStore({ dir: config.blockDir, workerId: config.workerId }),
  });
  let started = false;
  process.on('message', (msg: TaskProcessRequest) => {
    if (msg?.type === 'fs-result') onFsResult(msg);
    if (msg?.type !== 'run' || started) return;
    started = true;
    void runAttempt(msg.spec, msg.modulePath).finally(() => process.exit(0));
  });
  // Nearly every attempt compresses or decompresses shuffle frames: load the codec before it starts.
  preloadLz4();
  void send({ type: 'ready' });
  process.on('disconnect', () => process.exit(0));
  await once(process, 'beforeExit');
}

void main();
