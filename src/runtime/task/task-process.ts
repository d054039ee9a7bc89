/**
 * Entry point of a task process. The worker forks one of these ahead of time, so that a launch only
 * costs a message; user code runs here, never in the worker, so a CPU-bound map cannot delay the
 * worker's heartbeats, and a kill is a plain SIGKILL.
 *
 * Reuse. A process runs attempts of one job module only (the worker picks it by the module's
 * content hash), one at a time, and each attempt imports the module afresh, so module-level state
 * is the attempt's. After a failed attempt the process exits. After a successful one it stays for
 * the next attempt only if the attempt left it as it was before any user code ran (`fitForReuse`):
 * no timer, socket or file left open, no new global or process listener, RSS within 8 MiB of
 * where it started once collected, fewer than MAX_ATTEMPTS_PER_PROCESS attempts (each leaves its
 * module instance behind). A warm process has its code compiled and the LZ4 addon loaded: a tiny
 * attempt costs a few ms instead of the ~100 ms of CPU a fresh process spends on its first run.
 */
import { once } from 'node:events';
import { realpathSync, writeFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyJobDefinition, Codec, MapContext, ReduceContext, TaskContext } from '../../api/index.js';
import { codecs, defineJob, sumValues, textInput, textOutput } from '../../api/index.js';
import { MinimrError, serializeError } from '../../errors.js';
import {
  HashCombiner,
  MapOutputBuffer,
  MIN_MAP_BUFFER_BYTES,
  MapOutputDirectory,
  codecByName,
  createShuffleCounters,
  mapOutputPaths,
  ReduceShuffle,
  reduceWorkDir,
  groupByKey,
  hashPartition,
  collectGarbageNow,
  compareByteRanges,
  noteTransientBytes,
  runTotals,
  type ArenaPool,
  type BytesCombiner,
  type KeyComparator,
  type KeyValue,
  type MergedInput,
} from '../../shuffle/index.js';
import { partitionOfKey } from '../../skew/index.js';
import { FsClient, openExternalStore, type PendingPart, trustClusterAuthority } from '../../storage/index.js';
import { CpuThrottle } from './cpu-throttle.js';
import { openTaskInput, TaskSplitInput, type SplitPacing } from './input.js';
import { importJobModule } from './job-loader.js';
import { userStackOf } from './user-stack.js';
import { LinkedLocalReplicas } from './local-replicas.js';
import { type ByteSink, OutputWriter } from './output-writer.js';
import { fitWithoutGc, memoryFitForReuse, type Headroom } from './process-reuse.js';
import {
  Dispatcher,
  IpcLink,
  TASK_TO_WORKER,
  WORKER_TO_TASK,
  namenodeOverLink,
  stubOf,
  type AttemptSpec,
  type Caller,
  type Counters,
  type LostMapOutput,
  type MapOutputAnnouncement,
  type MapOutputSummary,
  type Stub,
  type TaskToWorker,
} from '../wire/task-link.js';
import type { TaskProcessConfig } from './task-config.js';
import { attemptShuffleOf, TASK_OVERHEAD_MB } from '../wire/types.js';
import { peakRssBytes, phaseTrace } from '../../util/index.js';
import { summingCombiner } from './sum-combiner.js';

const PROGRESS_INTERVAL_MS = 300;
/** A map's combining table this large is collected as soon as it is released (a full GC: a few ms on a task's heap). */
const RELEASED_TABLE_GC_BYTES = 8 << 20;
/** The smallest piece of fixed-length records a mapSplit gets (SplitPacing.chunkBytes), however small the buffer. */
const RECORD_PIECE_MIN_BYTES = 16 * 1024;
/** Below this share of the map buffer, a job's combiner runs at spills only (no hash table). */
const MIN_HASH_COMBINE_BYTES = 64 * 1024;
/** A key not decoded (yet): the partitioner decodes it only for a job's own `partition`. */
const NO_KEY = Symbol('no key');

/** Where a map's `emit`, `emitKeyBytes` and `emitRecordBytes` go; `end` passes on (and frees) a hash table. */
interface MapSink {
  emit(key: unknown, value: unknown): void;
  emitKeyBytes(keyBytes: Uint8Array, start: number, end: number, value: unknown, keyHash?: number): void;
  emitRecordBytes(bytes: Uint8Array, keyStart: number, keyEnd: number, valueEnd: number): void;
  end?(): void;
}

/** `start`, once [start, end) is checked to be a range of `bytes`. */
function checkedRange(
  bytes: Uint8Array,
  start: number,
  end: number,
  what = 'emitKeyBytes:',
  of = 'the key bytes given',
): number {
  if (
    !(bytes instanceof Uint8Array) ||
    !Number.isInteger(start) ||
    !Number.isInteger(end) ||
    start < 0 ||
    start > end ||
    end > bytes.length
  ) {
    const length = bytes instanceof Uint8Array ? `${bytes.length} bytes` : `a ${typeof bytes}, not bytes`;
    throw new MinimrError('ETASK', `${what} [${start}, ${end}) is not a range of ${of} (${length})`);
  }
  return start;
}

/** emitKeyBytes' `keyHash`, once checked to be absent or a 32-bit integer (signed or not). */
function checkedKeyHash(keyHash: number | undefined): number | undefined {
  if (keyHash === undefined || (keyHash | 0) === keyHash || keyHash >>> 0 === keyHash) return keyHash;
  throw new MinimrError(
    'ETASK',
    `emitKeyBytes: keyHash ${typeof keyHash === 'number' ? keyHash : `a ${typeof keyHash}`} is not a 32-bit integer ` +
      "(leave it out, or pass the key bytes' keyHash from 'minimr')",
  );
}

/**
 * `bytes` as a Buffer, once [keyStart, keyEnd) and [keyEnd, valueEnd) are checked to be ranges of it
 * (emitRecordBytes).
 */
function checkedRecord(bytes: Uint8Array, keyStart: number, keyEnd: number, valueEnd: number): Buffer {
  checkedRange(bytes, keyStart, keyEnd, 'emitRecordBytes: key', 'the bytes given');
  checkedRange(bytes, keyEnd, valueEnd, 'emitRecordBytes: value', 'the bytes given');
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** The worker, over this process's IPC channel (the task link); set in main(). */
let worker!: Stub<TaskToWorker>;
let workerLink!: IpcLink<NodeJS.Process>;

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

/**
 * Where a reduce attempt's map outputs are: those its spec lists, then those its worker tells of
 * (a reduce launched before the last map, slow start), kept until the shuffle starts, then handed
 * to its directory as they come.
 */
class MapOutputInbox {
  private readonly queued: Array<{ available: readonly MapOutputAnnouncement[]; lost: readonly LostMapOutput[] }> = [];
  private directory: MapOutputDirectory | undefined;
  /** Each map output's records in this reduce's partitions, as announced (for progress). */
  private readonly recordsByMap = new Map<number, number>();

  constructor(
    readonly attemptId: string,
    initial: readonly MapOutputAnnouncement[],
  ) {
    for (const m of initial) this.recordsByMap.set(m.mapIndex, m.records);
  }

  receive(available: readonly MapOutputAnnouncement[], lost: readonly LostMapOutput[]): void {
    for (const m of available) this.recordsByMap.set(m.mapIndex, m.records);
    if (this.directory) this.apply(this.directory, available, lost);
    else this.queued.push({ available, lost });
  }

  attach(directory: MapOutputDirectory): void {
    this.directory = directory;
    for (const c of this.queued.splice(0)) this.apply(directory, c.available, c.lost);
  }

  /** Reduce input records the maps wrote for this reduce's partitions, as far as announced. */
  records(): number {
    let n = 0;
    for (const r of this.recordsByMap.values()) n += r;
    return n;
  }

  private apply(
    directory: MapOutputDirectory,
    available: readonly MapOutputAnnouncement[],
    lost: readonly LostMapOutput[],
  ): void {
    for (const m of lost) directory.lose(m.mapIndex, m.attemptId);
    for (const m of available) directory.add(m);
  }
}

/**
 * The sort buffer memory of this process's last map, kept for its next (a reused process):
 * allocating 64 MiB per attempt made V8 start a full collection every time (~10 ms of a tiny map).
 */
class SpareArena implements ArenaPool {
  private arena: ArrayBuffer | undefined;

  take(bytes: number): ArrayBuffer | undefined {
    const a = this.arena;
    if (a?.byteLength !== bytes) return undefined;
    this.arena = undefined;
    return a;
  }

  give(arena: ArrayBuffer): void {
    this.arena = arena;
  }

  drop(): void {
    this.arena = undefined;
  }
}

const spareArena = new SpareArena();
/**
 * A map that used more of its buffer than this leaves no arena behind: the pages it wrote would stay
 * resident, and the process would no longer pass `fitForReuse`'s RSS check.
 */
const KEEP_ARENA_MAX_USED_BYTES = 1 << 20;

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
  /** Its part of an output in another store, once written (storePartSink). */
  outputPart: PendingPart | undefined;
  /** The map's combining hash table, when it has one. */
  private hashTable: HashCombiner | undefined;

  constructor(
    private readonly spec: AttemptSpec,
    private readonly job: AnyJobDefinition,
    private readonly fs: FsClient,
    private readonly config: TaskProcessConfig,
    /** Reduces: the map outputs as the worker tells of them. */
    private readonly mapOutputs: MapOutputInbox,
  ) {
    this.keyCodec = (job.mapKey ?? codecs.text) as Codec<unknown>;
    this.valueCodec = (job.mapValue ?? codecs.msgpack()) as Codec<unknown>;
    this.compare = job.compareKeys ?? Buffer.compare;
    this.throttle = new CpuThrottle(config.cpuThrottle ?? 1, config.cpuThrottleBasis ?? 'working');
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
        // Counters cross the wire as finite numbers: a bad one is the job's error, at its own call.
        if (typeof delta !== 'number' || !Number.isFinite(delta)) {
          throw new MinimrError(
            'EBADJOB',
            `ctx.count(${JSON.stringify(name)}, delta): delta must be a finite number, got ${String(delta)}`,
          );
        }
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
      SHUFFLE_BYTES_IN_PLACE: s.shuffleBytesInPlace,
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
    const target = this.spec.outputStore;
    if (target) return new OutputWriter(this.spec.outputFormat, await this.storePartSink(target));
    const replication = this.spec.outputReplication;
    const sink = await this.fs.createWriter(this.spec.outputTempPath, {
      overwrite: true,
      ...(replication !== undefined && replication !== null ? { replication } : {}),
    });
    return new OutputWriter(this.spec.outputFormat, sink);
  }

  /**
   * The attempt's part of an output in another store, through its committer: staged where no reader
   * looks, and described once closed (`outputPart`) for the done report, which the JobTracker
   * journals and commits with the job.
   */
  private async storePartSink(target: NonNullable<AttemptSpec['outputStore']>): Promise<ByteSink> {
    const { store, location } = await openExternalStore(target.uri, target.settings);
    const committer = store.outputCommitter(location.uri, this.spec.jobId);
    const part = await committer.createPart(this.spec.attemptId, posix.basename(this.spec.outputTempPath));
    return {
      write: (chunk) => part.write(chunk),
      garbageBytes: 0,
      close: async () => {
        this.outputPart = await part.close();
      },
      abort: () => part.abort(),
    };
  }

  private combiner(): BytesCombiner | undefined {
    const combine = this.job.combine;
    if (!combine) return undefined;
    const { keyCodec, valueCodec } = this;
    // The API's own sum: added as decoded, no key or array per group (sum-combiner.ts).
    if (combine === sumValues) return summingCombiner(keyCodec, valueCodec);
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
          maxOutputRuns: spec.shuffle.mapOutputRuns,
          codec: codecByName(spec.shuffle.codec),
          compare: this.compare,
          combiner: this.combiner(),
          combineSpills: table === 0,
          counters: this.shuffle,
          ids: { jobId: spec.jobId, attemptId: spec.attemptId },
          arenas: spareArena,
        });
    // A mapSplit's input, once it exists: whether its chunks' memory is reused.
    let splitInput: TaskSplitInput | undefined;
    const sink = output
      ? this.mapOnlySink(output)
      : this.mapOutputSink(collector!, table!, () => splitInput?.reusesBuffers !== true);
    const split =
      spec.input.kind === 'file'
        ? { path: spec.input.path, start: spec.input.start, length: spec.input.length }
        : undefined;
    const ctx: MapContext<unknown, unknown> = {
      ...this.baseContext(),
      mapIndex: spec.index,
      split,
      emit: sink.emit,
      emitKeyBytes: sink.emitKeyBytes,
      emitRecordBytes: sink.emitRecordBytes,
    };
    // The buffer cannot take `bytes` more while a spill is being written: let it finish rather than spill
    // synchronously.
    const roomFor = async (bytes: number): Promise<void> => {
      if (collector?.mustWaitFor(bytes)) await collector.waitForRoom();
    };
    const pacing: SplitPacing = {
      // After a spill starts, the free rest of the buffer is 1 - spillPercent of it (a fifth by
      // default): an eighth of the buffer in records, with their metadata, fits in it.
      chunkBytes: collector
        ? Math.max(RECORD_PIECE_MIN_BYTES, Math.floor((spec.shuffle.mapBufferBytes - table!) / 8))
        : undefined,
      roomFor,
      due: () => output?.needsFlush === true || collector?.mustWait === true,
      pause: async (bytesRead, totalBytes) => {
        this.progress = this.mapProgress(bytesRead, totalBytes);
        this.reportIfDue();
        if (output?.needsFlush) await flushOutput(output);
        await roomFor(0);
        if (this.throttle.due()) await this.throttle.pace();
      },
    };
    let bytesRead = 0;
    try {
      if (job.mapSplit) {
        const input = (splitInput = new TaskSplitInput(this.fs, spec.input, spec.inputFormat, spec.index, pacing));
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
      sink.end?.();
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
    let info: Awaited<ReturnType<NonNullable<typeof collector>['finish']>>;
    phaseTrace('t-input-done', { attempt: spec.attemptId });
    try {
      info = await collector!.finish();
    } catch (err) {
      await collector!.abort();
      throw err;
    }
    // Pages the map wrote stay resident with a kept arena: keep it only when they are few.
    if (this.shuffle.peakBufferBytes > KEEP_ARENA_MAX_USED_BYTES) spareArena.drop();
    const partitions = info.partitions.map(runTotals);
    this.add(
      'MAP_OUTPUT_RAW_BYTES',
      partitions.reduce((sum, p) => sum + p.rawLength, 0),
    );
    return {
      partitionBytes: partitions.map((p) => p.length),
      partitionRecords: partitions.map((p) => p.records),
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
            // A throttled (slow) worker's map slows record by record, as a slow machine's would: paced only
            // between batches its progress would leap and stall, and speculation would misjudge its time left.
            if (this.throttle.due()) await this.throttle.pace();
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
    const { keyCodec, valueCodec } = this;
    return {
      emit: (key, value) => output.emit(key, value),
      emitKeyBytes: (bytes, start, end, value, keyHash) => {
        const from = checkedRange(bytes, start, end);
        checkedKeyHash(keyHash);
        output.emit(keyCodec.decode(Buffer.from(bytes.buffer, bytes.byteOffset + from, end - from)), value);
      },
      emitRecordBytes: (bytes, keyStart, keyEnd, valueEnd) => {
        const b = checkedRecord(bytes, keyStart, keyEnd, valueEnd);
        output.emit(keyCodec.decode(b.subarray(keyStart, keyEnd)), valueCodec.decode(b.subarray(keyEnd, valueEnd)));
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
   * or first into the combining hash table (`tableBytes` > 0). `inputIsGarbage`: whether the bytes
   * emitRecordBytes is given die after it (not an input chunk read with reuseBuffers).
   */
  private mapOutputSink(collector: MapOutputBuffer, tableBytes: number, inputIsGarbage: () => boolean): MapSink {
    const { spec, job, keyCodec, valueCodec } = this;
    const partitions = spec.mapPartitions ?? spec.reducers;
    const seed = spec.partitionSeed;
    const partition = job.partition;
    const base = this.baseContext();
    const checked = (p: number): number => {
      if (!Number.isInteger(p) || p < 0 || p >= partitions) {
        throw new MinimrError('ETASK', `partition() returned ${p} for a job with ${partitions} partitions`, {
          taskId: spec.taskId,
        });
      }
      return p;
    };
    // A 'cms' job partitions with the chosen sketch row's hash; otherwise the job's or the default.
    const partitionOf = (k: Buffer, key: unknown): number =>
      seed !== undefined
        ? partitionOfKey(k, partitions, seed)
        : partition
          ? checked(partition.call(job, key === NO_KEY ? keyCodec.decode(k) : key, partitions, base))
          : hashPartition(k, partitions);
    if (tableBytes > 0) {
      const combine = job.combine!;
      let combineCtx: { emit: (key: unknown, value: unknown) => void } | undefined;
      const table = new HashCombiner({
        budgetBytes: tableBytes,
        keyCodec,
        valueCodec,
        combine: (key, values, emit) => combine.call(job, key, values, (combineCtx ??= { emit })),
        partitionOf: (k) => partitionOf(k, NO_KEY),
        collect: (p, k, v) => collector.collect(p, k, v),
        counters: this.shuffle,
        // The job's `sumValues` is the API's own (the job imports the module this process does).
        sumsNumbers: combine === sumValues,
      });
      this.hashTable = table;
      return {
        emit: (key, value) => table.add(key, value),
        emitKeyBytes: (bytes, start, end, value, keyHash) =>
          table.addBytes(bytes, checkedRange(bytes, start, end), end, value, checkedKeyHash(keyHash)),
        emitRecordBytes: (bytes, keyStart, keyEnd, valueEnd) => {
          const b = checkedRecord(bytes, keyStart, keyEnd, valueEnd);
          table.addBytes(b, keyStart, keyEnd, valueCodec.decode(b.subarray(keyEnd, valueEnd)));
        },
        // The map's end: its final merge runs without the table's arrays (most of its budget with many keys).
        end: () => {
          table.release();
          if (table.peakBytes >= RELEASED_TABLE_GC_BYTES) collectGarbageNow();
        },
      };
    }
    return {
      emit: (key, value) => {
        const k = keyCodec.encode(key);
        collector.collect(partitionOf(k, key), k, valueCodec.encode(value));
      },
      // The key hash only spares a table reading the bytes: with no table it has no use.
      emitKeyBytes: (bytes, start, end, value, keyHash) => {
        checkedKeyHash(keyHash);
        const k = Buffer.from(bytes.buffer, bytes.byteOffset + checkedRange(bytes, start, end), end - start);
        collector.collect(partitionOf(k, NO_KEY), k, valueCodec.encode(value));
      },
      // The key gets a view only for the partitioner; the record's bytes go to the sort buffer as they are.
      emitRecordBytes: (bytes, keyStart, keyEnd, valueEnd) => {
        const b = checkedRecord(bytes, keyStart, keyEnd, valueEnd);
        collector.collectRange(
          partitionOf(b.subarray(keyStart, keyEnd), NO_KEY),
          b,
          keyStart,
          keyEnd,
          valueEnd,
          inputIsGarbage(),
        );
      },
    };
  }

  private mapProgress(bytesRead: number, totalBytes: number): number {
    return totalBytes > 0 ? Math.min(0.99, bytesRead / totalBytes) : 0.5;
  }

  async runReduce(): Promise<void> {
    const { spec } = this;
    const partitions = spec.reducePartitions ?? [spec.index];
    const directory = new MapOutputDirectory({ mapsTotal: spec.mapsTotal, partitions, locations: spec.mapOutputs });
    this.mapOutputs.attach(directory);
    const segments = Math.max(1, spec.mapsTotal * partitions.length);
    let fetched = 0;
    const started = performance.now();
    const shuffle = new ReduceShuffle({
      jobId: spec.jobId,
      shuffleSecret: spec.shuffleSecret,
      reduceIndex: spec.index,
      partitions,
      directory,
      // The copy phase is the first third of a reduce's progress, as in Hadoop.
      onFetched: () => {
        this.progress = ++fetched / segments / 3;
      },
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
      phaseTrace('t-shuffled', { attempt: spec.attemptId });
      this.add('SHUFFLE_MS', Math.round(performance.now() - started));
      this.add('SHUFFLE_EARLY_SEGMENTS', directory.earlySegments);
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

  private async reduceFrom(records: MergedInput): Promise<void> {
    const { spec, job } = this;
    this.progress = 1 / 3;
    const output = await this.openOutput();
    const ctx = { ...this.baseContext(), reduceIndex: spec.index, emit: (k: unknown, v: unknown) => output.emit(k, v) };
    try {
      const expected = Math.max(1, this.mapOutputs.records());
      // The default reduce (every value under its key) of bytes in byte order writes each merged
      // record's bytes as they are: what emit(key, value) would write, with no Buffer or group per
      // record (TeraSort's reduce spent more on those than on merging).
      const copies =
        !job.reduce && !job.compareKeys && this.keyCodec.name === 'bytes' && this.valueCodec.name === 'bytes';
      this.shuffle.reduceInputGroups = job.reducePartition
        ? await this.reducePartition(records, output, ctx, expected)
        : copies
          ? await this.copyRecords(records, output, expected)
          : await this.reduceGroups(records, output, ctx, expected);
      if (job.cleanupReduce) await job.cleanupReduce(ctx);
      await this.throttle.pace();
    } catch (err) {
      await output.abort().catch(() => undefined);
      throw err;
    }
    phaseTrace('t-reduced', { attempt: spec.attemptId });
    await output.close();
    phaseTrace('t-closed', { attempt: spec.attemptId });
    this.add('REDUCE_OUTPUT_RECORDS', output.records);
    this.add('OUTPUT_BYTES', output.bytes);
  }

  /** The progress of a reduce that has read `records` of about `expected` input records. */
  private async reduceProgress(records: number, expected: number): Promise<void> {
    this.progress = 1 / 3 + (2 / 3) * Math.min(0.99, records / expected);
    this.reportIfDue();
    if (this.throttle.due()) await this.throttle.pace();
  }

  /** Calls the job's reduce (or emits every value) per key group; returns the number of groups. */
  private async reduceGroups(
    records: Iterable<KeyValue>,
    output: OutputWriter,
    ctx: ReduceContext<unknown, unknown>,
    expected: number,
  ): Promise<number> {
    const { job, keyCodec, valueCodec } = this;
    // The shuffle counts reduce input records itself; grouping only adds the group count.
    const grouping = createShuffleCounters();
    const reduce = job.reduce;
    let groups = 0;
    for (const group of groupByKey(this.countingBytes(records), this.compare, grouping)) {
      if ((++groups & 63) === 0) await this.reduceProgress(grouping.reduceInputRecords, expected);
      const key = keyCodec.decode(group.key);
      if (reduce) {
        const r = reduce.call(job, key, decodeAll(group.values, valueCodec), ctx);
        if (r instanceof Promise) await r;
      } else {
        for (const v of group.values) output.emit(key, valueCodec.decode(v));
      }
      if (output.needsFlush) await flushOutput(output);
    }
    return grouping.reduceInputGroups;
  }

  /** Hands the job's `reducePartition` every key group in one pass; returns the number of groups. */
  private async reducePartition(
    records: Iterable<KeyValue>,
    output: OutputWriter,
    ctx: ReduceContext<unknown, unknown>,
    expected: number,
  ): Promise<number> {
    const { job, keyCodec, valueCodec } = this;
    const grouping = createShuffleCounters();
    const compare = this.compare;
    const counting = this.countingBytes(records);
    // Output is flushed as it fills, in the background and one flush at a time: a reducePartition may
    // emit between groups or after the last one (a streaming reducer writes when its process does).
    let flushing: Promise<void> | undefined;
    let flushError: unknown;
    const flushFull = (): Promise<void> | undefined => {
      if (!flushing && output.needsFlush) {
        flushing = (async () => {
          while (output.needsFlush) await flushOutput(output);
        })()
          .catch((err: unknown) => {
            flushError ??= err;
          })
          .finally(() => {
            flushing = undefined;
          });
      }
      return flushing;
    };
    const emitting: ReduceContext<unknown, unknown> = {
      ...ctx,
      emit: (k, v) => {
        if (flushError !== undefined) throw flushError;
        output.emit(k, v);
        void flushFull();
      },
    };
    // Between groups, progress is reported and a flush waited for, as reduceGroups does every group.
    const progress = (records: number) => this.reduceProgress(records, expected);
    async function* groups() {
      let n = 0;
      for (const group of groupByKey(counting, compare, grouping)) {
        if ((++n & 63) === 0) await progress(grouping.reduceInputRecords);
        yield { key: keyCodec.decode(group.key), values: decodeAll(group.values, valueCodec) };
        await flushFull();
      }
    }
    try {
      await job.reducePartition!.call(job, groups(), emitting);
    } finally {
      await flushing;
    }
    if (flushError !== undefined) throw flushError;
    return grouping.reduceInputGroups;
  }

  /**
   * The default reduce over bytes keys and values in byte order, record by record in place; returns the number of
   * groups.
   */
  private async copyRecords(input: MergedInput, output: OutputWriter, expected: number): Promise<number> {
    let groups = 0;
    let records = 0;
    let lastKey: Buffer | undefined;
    let lastStart = 0;
    let lastEnd = 0;
    for (let r = input.nextRecord(); r !== undefined; r = input.nextRecord()) {
      const { buf, keyStart, keyEnd } = r;
      // A merge never reuses a frame it handed out a record of, so the last key's bytes are still there.
      if (lastKey === undefined || compareByteRanges(lastKey, lastStart, lastEnd, buf, keyStart, keyEnd) !== 0)
        groups++;
      lastKey = buf;
      lastStart = keyStart;
      lastEnd = keyEnd;
      this.reduceInputBytes += keyEnd - keyStart + r.end - r.valueStart;
      output.emitRange(buf, keyStart, keyEnd, r.valueStart, r.end, r.view);
      if ((++records & 1023) === 0) await this.reduceProgress(records, expected);
      if (output.needsFlush) await flushOutput(output);
    }
    return groups;
  }
}

/**
 * Hands full output chunks to the file writer. The copies the writer leaves to the GC (pieces a
 * block's end cuts shorter than half a MiB; before b977a81 every copy for a remote replica, a MiB of
 * garbage per MiB of output, which V8 let pile up) go to the shuffle's GC pacer like its own
 * buffers do (a reduce of 512 MiB peaked ~20 MiB higher without).
 */
async function flushOutput(output: OutputWriter): Promise<void> {
  const before = output.garbageBytes;
  await output.flush();
  noteTransientBytes(output.garbageBytes - before);
}

/**
 * What job code threw, for the attempt's error. A read or write outside the job's sandbox is Node's
 * ERR_ACCESS_DENIED ("Access to this API has been restricted"), which names neither the code nor
 * what was refused: both are said.
 */
function describeThrown(err: unknown): string {
  const e = err as (Error & { code?: unknown; permission?: unknown; resource?: unknown }) | undefined;
  if (e?.code !== 'ERR_ACCESS_DENIED') return e?.message ?? String(err);
  const what = [e.permission, e.resource].filter((x) => typeof x === 'string' && x !== '').join(' ');
  return (
    `ERR_ACCESS_DENIED: ${e.message}${what ? ` (${what})` : ''}: task processes may read and write ` +
    "only their job's sandbox (docs/security.md)"
  );
}

let config: TaskProcessConfig | undefined;
/** The NameNode, reached through the worker that forked this process (its `fs-*` rows). */
function namenodeViaWorker() {
  return namenodeOverLink(() => workerLink);
}

/** The running attempt's map outputs (reduces), for the worker's `map-outputs` messages. */
let inbox: MapOutputInbox | undefined;

/** Makes VmHWM this attempt's own from here on (Linux; elsewhere the peak is the process's). */
function resetPeakRss(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not Linux, or not allowed: PEAK_RSS_BYTES is then the process's peak
  }
}

/** Runs one attempt and reports it, `mapOutputs` its inbox (`inbox`); resolves whether it succeeded. */
async function runAttempt(spec: AttemptSpec, modulePath: string, mapOutputs: MapOutputInbox): Promise<boolean> {
  const cfg = config!;
  phaseTrace('t-run', { attempt: spec.attemptId });
  resetPeakRss();
  const startRss = process.memoryUsage.rss();
  // Per attempt: its byte counters are the attempt's.
  // Local replicas are read from links the worker makes (the task may not read its block directory);
  // every replica is written over HTTP, the local one to the worker's data port.
  const fs = new FsClient({
    namenode: namenodeViaWorker(),
    client: { workerId: cfg.workerId, rack: cfg.rack },
    localReplicas: new LinkedLocalReplicas(cfg.workerId, (blockId, token) =>
      worker['link-block']({ attemptId: spec.attemptId, blockId, token }),
    ),
  });
  let runner: AttemptRunner | undefined;
  let lastReport = 0;
  const report = () => {
    if (!runner) return;
    lastReport = Date.now();
    void worker.progress({ attemptId: spec.attemptId, progress: runner.progress, counters: runner.snapshotCounters() });
  };
  const timer = setInterval(report, PROGRESS_INTERVAL_MS);
  try {
    const loadStarted = performance.now();
    // Imported afresh for each attempt: module-level state is the attempt's, in a reused process too.
    const job = await importJobModule(modulePath, spec.jobName, spec.attemptId);
    const moduleLoadMs = performance.now() - loadStarted;
    runner = new AttemptRunner(spec, job, fs, cfg, mapOutputs);
    runner.counters.MODULE_LOAD_MS = Math.round(moduleLoadMs);
    runner.reportIfDue = () => {
      if (Date.now() - lastReport >= PROGRESS_INTERVAL_MS) report();
    };
    let mapOutput: MapOutputSummary | undefined;
    phaseTrace('t-loaded', { attempt: spec.attemptId });
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    try {
      if (spec.kind === 'map') mapOutput = await runner.runMap();
      else await runner.runReduce();
      // Time inside the task, launch excluded: what the elasticity profiler models.
      runner.counters.TASK_MS = Math.round(performance.now() - started);
      const cpu = process.cpuUsage(cpuStarted);
      runner.counters.TASK_CPU_MS = Math.round((cpu.user + cpu.system) / 1000);
      runner.counters.PEAK_RSS_BYTES = peakRssBytes();
      const buffer = Math.min(spec.shuffle.mapBufferBytes, spec.shuffle.reduceBufferBytes);
      lastAttemptMemory = {
        lastStartRss: startRss,
        lastPeakRss: runner.counters.PEAK_RSS_BYTES,
        boundBytes: buffer + TASK_OVERHEAD_MB * 1024 * 1024,
      };
    } catch (err) {
      if (err instanceof MinimrError) throw err;
      const where = spec.kind === 'map' ? 'map' : 'reduce';
      // The user's own frames, at their files and lines (user-stack.ts): what status, attempts and logs show.
      const user = userStackOf(err, modulePath);
      throw new MinimrError(
        'ETASK',
        `${where} of ${spec.taskId} threw: ${describeThrown(err)}${user ? ` (at ${user.at})` : ''}`,
        {
          jobId: spec.jobId,
          taskId: spec.taskId,
          attemptId: spec.attemptId,
          ...(user ? { at: user.at, stack: user.stack } : {}),
        },
      );
    }
    runner.progress = 1;
    phaseTrace('t-done', { attempt: spec.attemptId });
    clearInterval(timer);
    await worker.done({
      attemptId: spec.attemptId,
      state: 'succeeded',
      counters: runner.snapshotCounters(),
      mapOutput,
      ...(runner.outputPart ? { outputPart: runner.outputPart } : {}),
    });
    return true;
  } catch (err) {
    const error = serializeError(err);
    clearInterval(timer);
    await worker.done({
      attemptId: spec.attemptId,
      state: 'failed',
      counters: runner?.snapshotCounters() ?? {},
      error,
    });
    return false;
  } finally {
    clearInterval(timer);
    inbox = undefined;
  }
}

/** The last attempt's memory, which `fitForReuse` weighs a process's growth against (process-reuse.ts). */
let lastAttemptMemory: Headroom | undefined;

/** Attempts one process runs at most: each leaves its job module instance behind (ES modules are never unloaded). */
const MAX_ATTEMPTS_PER_PROCESS = 100;
/** What this process looked like before it ran any user code, to tell whether an attempt left anything behind. */
interface CleanState {
  readonly globals: ReadonlySet<string>;
  readonly resources: ReadonlyMap<string, number>;
  readonly processListeners: number;
  readonly rssBytes: number;
  /** RSS after the first attempt, once it was fit for reuse (see `memoryFitForReuse`). */
  warmRssBytes?: number;
}

/**
 * Handles and timers alive now, by kind. Requests in flight (an fs call not awaited, a close, an
 * immediate) end by themselves and hold nothing: not counted.
 */
function countResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) {
    if (/(Req|ReqWrap|ReqCallback|ReqPromise|Immediate)$/.test(r)) continue;
    counts.set(r, (counts.get(r) ?? 0) + 1);
  }
  return counts;
}

function processListenerCount(): number {
  return process.eventNames().reduce((n, name) => n + process.listenerCount(name), 0);
}

function cleanState(): CleanState {
  collectGarbageNow();
  return {
    globals: new Set(Reflect.ownKeys(globalThis).map(String)),
    resources: countResources(),
    processListeners: processListenerCount(),
    rssBytes: process.memoryUsage.rss(),
  };
}

/**
 * Whether a process whose attempt succeeded may run another attempt of the same job module: the
 * attempt left no timer, socket or file open, no new global, no process listener, and no memory
 * beyond a little growth. Anything else and the process exits: the next attempt gets a fresh one.
 */
async function fitForReuse(clean: CleanState, attemptsRun: number): Promise<boolean> {
  if (attemptsRun >= MAX_ATTEMPTS_PER_PROCESS) return false;
  // Handles closed by the attempt's last awaits go away on the next turns of the loop.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  if (Reflect.ownKeys(globalThis).some((k) => !clean.globals.has(String(k)))) return false;
  for (const [resource, n] of countResources()) if (n > (clean.resources.get(resource) ?? 0)) return false;
  if (processListenerCount() > clean.processListeners) return false;
  // A full GC costs ms of CPU (a map has just had one): only when RSS looks too grown, or to take the warm state.
  if (fitWithoutGc(process.memoryUsage.rss(), clean.rssBytes, clean.warmRssBytes, lastAttemptMemory)) return true;
  collectGarbageNow();
  const rss = process.memoryUsage.rss();
  const fit = memoryFitForReuse(rss, clean.rssBytes, clean.warmRssBytes, lastAttemptMemory);
  if (process.env.MINIMR_PHASE_TRACE) {
    // What the RSS is made of, for why a process was refused.
    const m = process.memoryUsage();
    const mb = (bytes: number) => Math.round(bytes / 2 ** 10) / 2 ** 10;
    phaseTrace('t-reuse', {
      fit,
      rssMb: mb(rss),
      cleanMb: mb(clean.rssBytes),
      warmMb: mb(clean.warmRssBytes ?? 0),
      heapTotalMb: mb(m.heapTotal),
      externalMb: mb(m.external),
      arrayBuffersMb: mb(m.arrayBuffers),
    });
  }
  if (!fit) return false;
  clean.warmRssBytes ??= rss;
  return true;
}

/** The rehearsal's input: enough keys and repeats to take every step of a small map. */
const REHEARSAL_TEXT = Array.from(
  { length: 64 },
  (_, i) => `rehearsal word${i % 29} w${i % 7} the map and the reduce ${i}\n`,
).join('');

/**
 * A WordCount-shaped job of the engine's own, which a spare rehearses: text input read in chunks,
 * words emitted as bytes (and some as strings), the combining table, sort, spill, shuffle, reduce
 * and text output.
 */
const REHEARSAL_JOB: AnyJobDefinition = defineJob({
  name: 'rehearsal',
  input: textInput(),
  output: textOutput(),
  mapKey: codecs.text,
  mapValue: codecs.varuint,
  async mapSplit(input, ctx) {
    for await (const { bytes } of input.chunks({ reuseBuffers: true })) {
      let start = 0;
      for (let i = 0; i <= bytes.length; i++) {
        if (i < bytes.length && bytes[i] !== 0x20 && bytes[i] !== 0x0a) continue;
        if (i > start) {
          if (i % 5 === 0) ctx.emit(Buffer.from(bytes.subarray(start, i)).toString('utf8'), 1);
          else ctx.emitKeyBytes(bytes, start, i, 1);
        }
        start = i + 1;
      }
    }
  },
  combine: sumValues,
  reduce: sumValues,
});

/**
 * A spare process's rehearsal (config.rehearse): before any job adopts it, it runs a map and a
 * reduce of REHEARSAL_JOB through the same AttemptRunner, in a directory of its work directory
 * that it removes after, and compiles the checks of what its worker will send it. V8 compiles a
 * function at its first call and learns its shapes over the next ones: a job's first attempt in a
 * fresh process paid that for the whole engine (input, sort, spill, merge, shuffle, output), and
 * 4 ms for the `run` message's check (docs/performance-notes.md, "Spare task processes rehearse").
 * Nothing of it touches the cluster: input and output are file:// (never committed), and the
 * reduce reads the map's output from this directory.
 */
async function rehearse(): Promise<void> {
  const cfg = config!;
  const dir = join(process.cwd(), 'rehearsal');
  const inputFile = join(dir, 'input.txt');
  await mkdir(dir, { recursive: true });
  await writeFile(inputFile, REHEARSAL_TEXT);
  const length = Buffer.byteLength(REHEARSAL_TEXT);
  const jobId = 'job_rehearsal_0001';
  const base = {
    jobId,
    jobName: REHEARSAL_JOB.name,
    shuffleSecret: 'rehearsal',
    moduleHash: '00000000',
    input: {
      kind: 'file' as const,
      path: pathToFileURL(inputFile).href,
      start: 0,
      length,
      fileLength: length,
      store: {},
    },
    inputFormat: { kind: 'text' as const },
    outputFormat: { kind: 'text' as const, separator: '\t' },
    outputStore: { uri: pathToFileURL(join(dir, 'output')).href, settings: {} },
    reducers: 1,
    params: {},
    shared: {},
    mapsTotal: 1,
    memoryMb: 1024,
    idealMemoryMb: 1024,
    elastic: false,
    // A job's defaults: the sort buffer's arena it leaves is the size a default job's first map takes.
    shuffle: attemptShuffleOf(undefined),
    jobToken: 'rehearsal',
    index: 0,
  } satisfies Partial<AttemptSpec>;
  const mapAttempt = 'attempt_rehearsal_0001_m_000000_0';
  const reduceAttempt = 'attempt_rehearsal_0001_r_000000_0';
  const runnerConfig: TaskProcessConfig = { ...cfg, shuffleRoot: join(dir, 'shuffle'), cpuThrottle: 1 };
  // Never called: input and output are file://.
  const fs = new FsClient({ namenode: namenodeViaWorker(), client: { workerId: cfg.workerId, rack: cfg.rack } });
  try {
    const mapSpec: AttemptSpec = {
      ...base,
      taskId: 'task_rehearsal_0001_m_000000',
      attemptId: mapAttempt,
      kind: 'map',
      outputTempPath: '/rehearsal/part-m-00000',
      mapOutputs: [],
    };
    const map = new AttemptRunner(mapSpec, REHEARSAL_JOB, fs, runnerConfig, new MapOutputInbox(mapAttempt, []));
    const summary = await map.runMap();
    const mapOutputs = [
      {
        mapIndex: 0,
        attemptId: mapAttempt,
        workerId: cfg.workerId,
        host: '127.0.0.1',
        dataPort: 0,
        records: summary?.partitionRecords[0] ?? 0,
      },
    ];
    const reduceSpec: AttemptSpec = {
      ...base,
      taskId: 'task_rehearsal_0001_r_000000',
      attemptId: reduceAttempt,
      kind: 'reduce',
      outputTempPath: '/rehearsal/part-r-00000',
      mapOutputs,
    };
    const reduce = new AttemptRunner(
      reduceSpec,
      REHEARSAL_JOB,
      fs,
      runnerConfig,
      new MapOutputInbox(reduceAttempt, mapOutputs),
    );
    await reduce.runReduce();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  for (const operation of Object.values(WORKER_TO_TASK)) operation.validator.compile();
}

/** Loads what every attempt needs (the LZ4 addon, the codecs' code) before the first launch, not during it. */
function warmUp(): void {
  // Opened on first use: open them now, so a job that logs leaves no handle the clean state lacks.
  for (const stream of [process.stdout, process.stderr]) if (!stream.writable) break;
  const codec = codecByName('lz4');
  const sample = Buffer.alloc(4096, 7);
  codec.decompress(codec.compress(sample), sample.length);
}

/** The addons a task process may load, by their path below a node_modules directory: the LZ4 codec's and msgpackr's. */
const TASK_ADDON_PACKAGES = /^(?:@[^/]+\/)?(?:lz4-napi|msgpackr-extract)[^/]*\//;

/**
 * Native addons are outside Node's permission model (an addon's code does what it likes), and the
 * worker must allow them for the LZ4 codec's and msgpackr's. Any other (one a job wrote into its work
 * directory, or another package's) is refused: every addon load goes through process.dlopen, which
 * is replaced for good by one that loads only those packages' files from the runtime's node_modules
 * directories (`addonRoots`, which the task may not write).
 */
function guardAddons(addonRoots: readonly string[]): void {
  if (process.permission === undefined) return;
  const dlopen = process.dlopen;
  const guarded = (module: object, filename: string, flags?: number): void => {
    let real: string | undefined;
    try {
      real = realpathSync(filename);
    } catch {
      // refused below
    }
    const allowed =
      real !== undefined &&
      addonRoots.some(
        (root) => real.startsWith(`${root}${sep}`) && TASK_ADDON_PACKAGES.test(real.slice(root.length + 1)),
      );
    if (!allowed)
      throw Object.assign(
        new Error('Access to this API has been restricted: task processes load no other native addon'),
        {
          code: 'ERR_ACCESS_DENIED',
          permission: 'Addons',
          resource: String(filename),
        },
      );
    // dlopen refuses an undefined mode: pass it only when given.
    if (flags === undefined) dlopen.call(process, module, filename);
    else dlopen.call(process, module, filename, flags);
  };
  Object.defineProperty(process, 'dlopen', { value: guarded, writable: false, configurable: false, enumerable: true });
}

async function main(): Promise<void> {
  const raw = process.env.MINIMR_TASK_CONFIG;
  if (!raw || !process.send) {
    process.stderr.write(
      'minimr task process: start it through a worker (needs MINIMR_TASK_CONFIG and an IPC channel)\n',
    );
    process.exit(2);
  }
  config = JSON.parse(raw) as TaskProcessConfig;
  guardAddons(config.addonRoots ?? []);
  // A TLS cluster's data ports are HTTPS, checked against the cluster authority only.
  if (config.clusterAuthority !== undefined) trustClusterAuthority(config.clusterAuthority);
  warmUp();
  /** Taken once the process is set up (its IPC channel and listeners in place), before it runs any user code. */
  let clean: CleanState | undefined;
  let busy = false;
  let attemptsRun = 0;
  let rehearsal: Promise<void> | undefined;
  const run = (spec: AttemptSpec, modulePath: string): void => {
    if (busy) return;
    busy = true;
    // Now, not after the rehearsal: the worker sends a reduce the map outputs it has heard of since
    // its spec right after `run`, and they are this attempt's even while it waits.
    const mapOutputs = new MapOutputInbox(spec.attemptId, spec.kind === 'reduce' ? spec.mapOutputs : []);
    inbox = mapOutputs;
    void (async () => {
      await rehearsal;
      const state = (clean ??= cleanState());
      return runAttempt(spec, modulePath, mapOutputs).then(async (succeeded) => {
        // A failed attempt's process is never reused; a succeeded one only when it is as it was.
        if (!succeeded || !(await fitForReuse(state, ++attemptsRun))) process.exit(0);
        busy = false;
        await worker.idle({});
      });
    })().catch(() => process.exit(0));
  };
  const fromWorker: Caller = { user: '', roles: new Set(['worker-process']) };
  const commands = new Dispatcher<NodeJS.Process>('a task process', () => fromWorker).serve(WORKER_TO_TASK, {
    run: ({ spec, modulePath }) => run(spec, modulePath),
    'map-outputs': ({ attemptId, available, lost }) => {
      if (attemptId === inbox?.attemptId) inbox.receive(available, lost);
    },
  });
  const link = new IpcLink(process, commands, process, (err) =>
    process.stderr.write(`minimr task process: frame from the worker refused: ${err.code}: ${err.message}\n`),
  );
  workerLink = link;
  worker = stubOf(TASK_TO_WORKER, () => link);
  process.on('disconnect', () => process.exit(0));
  const exiting = once(process, 'beforeExit');
  if (config.rehearse) {
    // Started before `ready`: a `run` that comes as soon as the worker hears it waits for it.
    const started = performance.now();
    rehearsal = rehearse().then(
      () => phaseTrace('t-rehearsed', { ms: Math.round(performance.now() - started) }),
      (err: unknown) => {
        process.stderr.write(`minimr task process: rehearsal failed: ${describeThrown(err)}\n`);
      },
    );
  }
  await worker.ready({});
  await rehearsal;
  clean ??= cleanState();
  await exiting;
}

void main();
