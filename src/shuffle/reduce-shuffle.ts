import { mkdir, rmdir } from 'node:fs/promises';
import { MinimrError } from '../errors.js';
import { lz4Codec, type BlockCodec } from './codec.js';
import { createShuffleCounters } from './counters.js';
import { fetchAll, type SegmentHeader } from './fetcher.js';
import type { MapOutputDirectory } from './map-output-directory.js';
import { MergeManager } from './merge-manager.js';
import type {
  BytesCombiner,
  KeyComparator,
  LocalShuffleSource,
  MapOutputLocation,
  MergedInput,
  ShuffleCounters,
} from './types.js';

/**
 * ReduceShuffle: one reduce attempt's shuffle, Hadoop's Shuffle + Fetcher + MergeManagerImpl in one
 * object. `run()` fetches this partition of every map output (at most `concurrency` at a time; an
 * output announced later, for a reduce launched before the last map, as soon as it is) into a
 * memory budget of `bufferBytes` RAW bytes, spilling to `workDir` as needed, and returns the sorted
 * stream of all records; `close()` removes whatever it wrote.
 *
 * Design, in short (details in merge-manager.ts):
 *  - Memory is counted in decompressed bytes and reserved before a segment's first byte arrives, so
 *    the buffer never holds more than `bufferBytes` (a fetch that would overflow it waits until a merge
 *    frees memory). Segments are decompressed frame by frame as they arrive.
 *  - A segment bigger than maxSingleShuffleFraction * bufferBytes goes straight to disk, compressed as
 *    it came. When the segments in memory reach mergeThreshold * bufferBytes they are merged (combiner
 *    applied) into one sorted run on disk. More than 2 * width - 1 runs on disk (width: mergeFactor, or
 *    more when the budget holds read buffers for more): the mergeFactor smallest are merged in the
 *    background. At the end, merge passes bring the runs down to what the
 *    final merge reads at once (mergeFactor, or all of them when the budget holds a read buffer for
 *    each) and the rest is merged lazily into the reduce (synchronous, blocking reads of one frame per run).
 *  - The reducer's penalty is the disk traffic: spilledBytes(m) grows in steps of mergeThreshold * m as
 *    input/buffer grows, so as a function of memory it is a sawtooth, not a monotone curve.
 *  - Equal keys come out by map index, then emission order, whatever the budget.
 *
 * Counters: shuffleBytesLocal / shuffleBytesRemote (stored bytes fetched; shuffleBytesInPlace: the
 * local ones read where they lie instead of spilled), spilledRecords /
 * spilledBytes (every reduce-side disk write: segments shuffled to disk, in-memory merges, merge
 * passes), mergePasses (on-disk merges, background or final), peakBufferBytes, combineInput/Output
 * records (in-memory merges), reduceInputRecords (records the returned stream yields; so do not also
 * count them in groupByKey with the same counters object).
 */

export interface ReduceShuffleOptions {
  readonly jobId: string;
  readonly reduceIndex: number;
  /** The job's shuffle secret, from the attempt's spec. */
  readonly shuffleSecret: string;
  /**
   * The map output partitions to fetch from every map and merge into the one sorted stream (a key is
   * in exactly one partition, so the merge's key order is the same however they are grouped);
   * default [reduceIndex].
   */
  readonly partitions?: readonly number[];
  /** Every map output, when all are known at launch; or: */
  readonly locations?: readonly MapOutputLocation[];
  /**
   * The map outputs as the reduce learns them (a reduce launched before the last map: slow start).
   * Fetching starts with the outputs it knows and ends once it has every map's.
   */
  readonly directory?: MapOutputDirectory;
  /** This worker's own map outputs, read from disk instead of HTTP. */
  readonly local?: LocalShuffleSource;
  /** Directory for segments fetched to disk and merged runs (created if missing); see `reduceWorkDir`. */
  readonly workDir: string;
  /** Memory budget of the shuffle, in raw (decompressed) bytes. */
  readonly bufferBytes: number;
  /** Most runs merged at once (default 10). */
  readonly mergeFactor?: number;
  /** A segment above this fraction of the buffer goes to disk (default 0.25). */
  readonly maxSingleShuffleFraction?: number;
  /** In-memory segments are merged to disk when they reach this fraction of the buffer (default 0.66). */
  readonly mergeThreshold?: number;
  readonly compare?: KeyComparator;
  /** Applied when in-memory segments are merged to disk. */
  readonly combiner?: BytesCombiner;
  /** Codec of the runs written to disk (default LZ4). */
  readonly codec?: BlockCodec;
  readonly counters?: ShuffleCounters;
  /** Fetches in flight at once (default 5). */
  readonly concurrency?: number;
  /** Extra tries per map output after the first (default 3). */
  readonly retries?: number;
  /** Wait before the first retry, doubled for each next one (default 200 ms). */
  readonly backoffMs?: number;
  /** No byte for this long on a connection fails that try (default 30 s). */
  readonly timeoutMs?: number;
  /** Aborting rejects `run()` with EKILLED. */
  readonly signal?: AbortSignal;
  /** Called when a segment is fetched and verified, in completion order (progress). */
  readonly onFetched?: (loc: MapOutputLocation, header: SegmentHeader) => void;
}

export class ReduceShuffle {
  readonly counters: ShuffleCounters;
  private readonly options: ReduceShuffleOptions;
  private manager: MergeManager | undefined;
  private running: Promise<unknown> | undefined;
  private createdDir: string | undefined;
  private readonly stop = new AbortController();
  private closed = false;

  constructor(options: ReduceShuffleOptions) {
    this.options = options;
    this.counters = options.counters ?? createShuffleCounters();
  }

  /** Fetches everything, then returns the sorted merged stream (to be read once, synchronously). */
  run(): Promise<MergedInput> {
    if (this.running) return Promise.reject(new MinimrError('EINTERNAL', 'ReduceShuffle.run called twice'));
    if (this.closed) return Promise.reject(new MinimrError('EINTERNAL', 'ReduceShuffle.run after close'));
    const p = this.doRun();
    this.running = p.catch(() => undefined);
    return p;
  }

  private async doRun(): Promise<MergedInput> {
    const o = this.options;
    const { jobId, reduceIndex } = o;
    const manager = new MergeManager({
      workDir: o.workDir,
      bufferBytes: o.bufferBytes,
      mergeFactor: o.mergeFactor ?? 10,
      maxSingleShuffleFraction: o.maxSingleShuffleFraction ?? 0.25,
      mergeThreshold: o.mergeThreshold ?? 0.66,
      compare: o.compare,
      combiner: o.combiner,
      codec: o.codec ?? lz4Codec,
      counters: this.counters,
      details: { jobId, reduceIndex },
      onFailure: () => this.stop.abort(),
    });
    this.manager = manager;
    const onCallerAbort = (): void => {
      this.stop.abort();
      manager.fail(
        new MinimrError('EKILLED', `shuffle of reduce ${reduceIndex} of job ${jobId} was cancelled`, {
          jobId,
          reduceIndex,
        }),
      );
    };
    if (o.signal?.aborted) onCallerAbort();
    o.signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      this.createdDir = (await mkdir(o.workDir, { recursive: true })) ?? this.createdDir;
      await fetchAll({
        jobId,
        reduceIndex,
        shuffleSecret: o.shuffleSecret,
        partitions: o.partitions,
        locations: o.locations,
        directory: o.directory,
        local: o.local,
        counters: this.counters,
        concurrency: o.concurrency,
        retries: o.retries,
        backoffMs: o.backoffMs,
        timeoutMs: o.timeoutMs,
        signal: this.stop.signal,
        openSink: (loc, header, signal) => manager.openSink(loc, header, signal),
        onFetched: o.onFetched,
      });
      return await manager.finalMerge();
    } catch (err) {
      const reported = this.failureOf(manager, err);
      manager.fail(reported);
      await manager.settle();
      throw reported;
    } finally {
      o.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  private failureOf(manager: MergeManager, err: unknown): unknown {
    // A background merge's failure, close() or the caller's signal stopped the fetches: report that.
    return manager.failureReason ?? err;
  }

  /** Stops a run in progress and removes every file under workDir it wrote. Safe to call twice. */
  async close(): Promise<void> {
    const { jobId, reduceIndex } = this.options;
    const manager = this.manager;
    if (!this.closed) {
      this.closed = true;
      this.stop.abort();
      manager?.fail(
        new MinimrError('EKILLED', `shuffle of reduce ${reduceIndex} of job ${jobId} was closed`, {
          jobId,
          reduceIndex,
        }),
      );
    }
    if (this.running) await this.running;
    if (manager) {
      await manager.settle();
      await manager.removeFiles();
    }
    if (this.createdDir !== undefined) {
      // Only the directory this object made, and only when empty.
      await rmdir(this.options.workDir).catch(() => undefined);
    }
  }
}
