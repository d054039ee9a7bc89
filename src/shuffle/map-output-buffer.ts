/**
 * MapOutputBuffer: the map side of the shuffle, a memory-bounded external merge sort.
 *
 * A map task's output can be many times the memory it is given. Records are collected into one
 * buffer of a fixed size (`bufferBytes`, Hadoop's io.sort.mb); when it is mostly full its contents
 * are sorted by (partition, key) and written to a *spill* file, and the buffer is reused; at the end
 * the spills are merged, partition by partition, into the one data file + index that reducers fetch.
 * With enough memory there is one spill and it simply becomes the output.
 *
 * Buffer layout. `bufferBytes` is allocated once, at construction, as one ArrayBuffer seen both as
 * bytes (record data) and as u32 words (record metadata): the budget bounds data and metadata
 * together, and collecting a record allocates nothing (no per-record JS object, no Buffer). The
 * arena is a ring. Each *generation* (the records collected between two spills) grows from an
 * equator in both directions: key+value bytes upwards, one 32-byte metadata entry per record
 * downwards (partition, key offset, key length, value length, a 6-byte key prefix, two scratch words
 * the sort uses; layout in sort.ts). Positions are kept as unbounded numbers and taken modulo the
 * ring's size only to address memory, so "does it fit" is plain interval arithmetic: every live
 * generation lies inside one window of `bufferBytes`. A record's bytes never straddle the ring's end
 * (the tail is skipped and charged as waste); metadata entries are aligned so they never do either.
 * This is Hadoop's kvbuffer/kvmeta with its equator, with wider entries so that the sort needs no
 * memory of its own: 32 bytes of metadata per record (Hadoop: 16) buy an O(n) radix sort.
 *
 * Spill trigger and what overlaps with the map. When the collecting generation's bytes (data,
 * metadata, waste) pass `spillPercent` of the buffer and no spill is running, `collect` sorts the
 * generation (synchronously: it is CPU work on this thread whatever we do) and starts writing it in
 * the background: frames are packed from the sorted order, compressed (with `spillCodec`, none by
 * default; see the Merge passes note) on libuv's thread pool and
 * written in 1 MiB batches (spill-writer.ts). Meanwhile a new generation starts in the free rest of
 * the ring, its equator placed so that data and metadata fill that gap in the proportion of the
 * average record seen so far (as Hadoop does), and `collect` goes on filling it. When the spill is
 * written its region is freed and the new generation can grow over it. At most one background
 * spill runs at a time. The task's map loop checks `mustWait` after each map() call and awaits
 * `waitForRoom()` when the free rest is nearly used up, i.e. the map blocks only when it outruns the
 * disk. If a single map() call emits more than fits while a spill is running, `collect` cannot wait
 * (it is synchronous), so it falls back to spilling the collecting generation synchronously
 * (compression and writes on this thread); a record that still does not fit (e.g. one larger than
 * the whole buffer) is written as a spill of its own, straight from the caller's Buffers, after the
 * generation before it so that spill order stays collection order. The budget therefore holds
 * exactly: bytes held in the arena never exceed `bufferBytes` (`peakBufferBytes` reports the
 * maximum). Outside it, bounded and independent of the output size: the frames being compressed
 * (4 x 256 KiB raw plus their compressed copies), one 1 MiB write batch, a 256 KiB sort histogram,
 * and per spill the segment statistics (a few numbers per partition).
 *
 * Sort. Byte order (the default) is a stable LSD radix sort on (partition, first 6 key bytes,
 * min(key length, 7)); only keys longer than 6 bytes with equal first 6 bytes go to a comparison
 * sort on the full key. TeraSort's random 10-byte keys almost never tie; WordCount's short words are
 * mostly decided by the prefix and their length. A job comparator sorts each partition with a
 * stable merge sort. Equal keys keep collection order in every case, so the output does not depend
 * on the buffer size.
 *
 * Merge passes. With nothing spilled yet, `finish` spills what is left, renames that one spill to
 * the data file and writes only the index. Otherwise the last generation is sorted and joins the
 * final merge straight from the buffer (packed into frames as the merge reads it), as a run after
 * the spills: it is not written and read back, which for a 64 MB TeraSort split with a 64 MiB
 * buffer (two generations, since records and their metadata exceed the buffer) saves writing,
 * compressing, reading and decompressing about 40% of the data once. (It still counts as a spill
 * in `spills`. Not with a combiner at spills, whose output the merge could not reproduce, nor when
 * the runs exceed `mergeFactor`: then the last generation is spilled first, as before.) The
 * buffer is held until that merge ends, so the task's memory stays at its collecting peak, within
 * the budget. Spill files and intermediate merged runs are only read back by this map, once, soon
 * and mostly from the page cache, so they are stored with `spillCodec` (default none): on TeraGen
 * rows LZ4 both ways cost more CPU than writing 2.6x the bytes; the map output keeps `codec` (a
 * lone spill written as a spill is merged alone to get it). Each partition's segments of all runs
 * are k-way merged
 * (a `CursorMerge` over one `FileFrameFeed` per run: one frame per open run in memory, decompressed
 * into a buffer the run reuses from frame to frame; records are copied in their encoded form, see
 * run-cursor.ts, so the merge makes no garbage per record or per frame read) into the data
 * file, the combiner applied again when there were at least `minSpillsForCombine` spills. More spills
 * than `mergeFactor` first go through intermediate merges of consecutive spills (stable order),
 * written to disk, the first round merging only as many as needed to leave `mergeFactor` runs (each
 * round is counted in `mergePasses`). Files are written to temp names and renamed; every file lives
 * under `dir`, and a failure or `abort` removes all of them.
 *
 * Two runs. A map whose output took exactly two generations (one spill, the last generation in the
 * buffer) does not merge them: the last generation is sorted and written after the spill in the
 * spill's own file, which becomes the data file, and the index lists two runs per partition
 * (index-file.ts). The reduces merge them with the other maps' runs, which they do anyway, one
 * more run per such map. That saves the merge pass: reading the spill back, comparing, and
 * copying and compressing the whole output again; on TeraSort's 64 MB splits with a 64 MiB buffer
 * it was about 40% of a map's CPU. For this the first spill is written with the output's codec,
 * since it may become the output's first run (later spills keep `spillCodec`). Not when the merge
 * would run the combiner (a combiner with minSpillsForCombine <= 2), nor with maxOutputRuns 1
 * (the job's shuffle.map.outputRuns): then the two are merged as below. A map of three or more
 * generations merges as before.
 *
 * Why the penalty is nearly a step function of memory. With enough memory for the whole output there
 * is no merge at all: the map output is written once. (Two generations, published as two runs, are
 * written once too.) As soon as it does not fit, all but the last
 * generation is written twice (spills, then the merged file) and read once more, and that cost is
 * nearly the same whether the output is 1.5x or 8x the buffer: the spill count grows but each spill
 * is written once and the final merge is one sequential pass over all of them. Only when spills exceed `mergeFactor`
 * does another step come (part of the data is written a third time), and with mergeFactor 10 that is
 * ten buffers' worth, so for mappers the penalty is essentially one extra merge pass: a step.
 * (Reducers differ: their spilled bytes grow with the shortfall, a sawtooth; see merge-manager.ts.)
 */
import { mkdirSync } from 'node:fs';
import { readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import { compareBytes, effectiveComparator } from './bytes-compare.js';
import { lz4Codec, noneCodec, type BlockCodec } from './codec.js';
import type { FrameSource, SegmentStats } from './frames.js';
import { collectGarbageNow, lendToGcPace, noteTransientBytes } from './gc-pacer.js';
import { runsEnd, tempPathFor, writeIndexFile } from './index-file.js';
import { applyCombiner } from './merger.js';
import { mapOutputFilesIn } from './paths.js';
import {
  copyMerged,
  cursorRecords,
  CursorMerge,
  FileFrameFeed,
  foldMerged,
  packedFeed,
  RecordCursor,
} from './run-cursor.js';
import type { KeyValue } from './record-format.js';
import {
  META_BYTES,
  META_WORDS,
  prefixHi,
  prefixLo,
  sortSpill,
  W_KEY,
  W_KLEN,
  W_PART,
  W_PFX_HI,
  W_PFX_LO,
  W_VLEN,
  type SortResult,
} from './sort.js';
import {
  copyViaViews,
  FramePacker,
  openSpillFile,
  recordsInto,
  VIEW_COPY_MAX,
  writeFramedFile,
  writeFramedFileSync,
  type FramedFileStats,
  type OpenSpillFile,
  type SegmentSource,
  type SpillFile,
} from './spill-writer.js';
import {
  MAX_MAP_OUTPUT_RUNS,
  type BytesCombiner,
  type KeyComparator,
  type MapOutputCollector,
  type MapOutputInfo,
  type PartitionIndexEntry,
  type ShuffleCounters,
} from './types.js';
import { phaseTrace } from '../util/index.js';

export interface MapOutputBufferOptions {
  /** The attempt's output directory, normally `mapOutputPaths(root, jobId, attemptId).dir`. All files go here. */
  readonly dir: string;
  readonly numPartitions: number;
  /** Memory for records, data and metadata together (default 64 MiB, at least 64 KiB). */
  readonly bufferBytes?: number;
  /** Fraction of the buffer at which a spill starts (default 0.8). */
  readonly spillPercent?: number;
  /** Key order; defaults to byte order (Buffer.compare). */
  readonly compare?: KeyComparator;
  readonly combiner?: BytesCombiner;
  readonly counters?: ShuffleCounters;
  /** Codec of the map output (default lz4). */
  readonly codec?: BlockCodec;
  /**
   * Codec of the files only this map reads back: spills and intermediate merged runs (default none).
   * They are written once and read once, soon, mostly from the page cache: on TeraGen rows (LZ4 to
   * 38%) compressing and decompressing them cost more CPU than writing 2.6x the bytes to the page
   * cache (benchmarks/map-merge.js; see the commit that made it the default).
   */
  readonly spillCodec?: BlockCodec;
  /** Most runs merged at once (default 10). */
  readonly mergeFactor?: number;
  /** The combiner runs again in the final merge when there were at least this many spills (default 3). */
  readonly minSpillsForCombine?: number;
  /**
   * Most sorted runs per partition in the output (1 or 2, the default): with 2, an output that took
   * two generations of the buffer is published as two runs, without a merge (see Two runs, above).
   */
  readonly maxOutputRuns?: number;
  /**
   * Whether the combiner runs at each spill (default true). A map whose records come through a
   * combining hash table turns it off: each flush of the table holds every key once, so a spill
   * would decode and re-encode records with nothing to combine; the final merge still combines.
   */
  readonly combineSpills?: boolean;
  /** Put into error details. */
  readonly ids?: { readonly jobId: string; readonly attemptId: string };
  /** Test seam: how spill, merge and output files are opened. */
  readonly openFile?: OpenSpillFile;
  /**
   * Where the arena comes from and goes back to when no merge follows; default: allocated here and
   * left to the GC. A reused task process keeps one for its next map (a 64 MiB allocation per
   * attempt made V8 collect every time). Its contents do not matter: every byte is written before
   * it is read.
   */
  readonly arenas?: ArenaPool;
}

/** Arenas (memory of a buffer's size) kept for reuse. */
export interface ArenaPool {
  /** An arena of exactly `bytes`, if one is kept. */
  take(bytes: number): ArrayBuffer | undefined;
  give(arena: ArrayBuffer): void;
}

const DEFAULT_MAP_BUFFER_BYTES = 64 << 20;
export const MIN_MAP_BUFFER_BYTES = 64 << 10;
const MAX_MAP_BUFFER_BYTES = 0xffffffff - META_BYTES;

type State = 'collecting' | 'finishing' | 'finished' | 'failed' | 'aborted';

/** A generation of records: data [e, d), metadata [m, e) on the unbounded line. */
interface Generation {
  readonly e: number;
  readonly d: number;
  readonly m: number;
  readonly n: number;
  readonly bytes: number;
}

interface InFlightSpill {
  readonly m: number;
  readonly d: number;
  readonly bytes: number;
  done: Promise<void>;
}

interface Run {
  readonly path: string;
  readonly segments: readonly SegmentStats[];
  /** The codec its frames were written with. */
  readonly codec: BlockCodec;
}

/** The sorted last generation as a run of the final merge: its records packed as they are read. */
interface MemoryRun {
  readonly source: SegmentSource;
  readonly packer: FramePacker;
}

export class MapOutputBuffer implements MapOutputCollector {
  private readonly dir: string;
  private readonly numPartitions: number;
  private readonly size: number;
  private readonly threshold: number;
  private readonly lowWater: number;
  private readonly compare: KeyComparator;
  private readonly byteOrder: boolean;
  private readonly combiner: BytesCombiner | undefined;
  private readonly counters: ShuffleCounters | undefined;
  private readonly codec: BlockCodec;
  private readonly spillCodec: BlockCodec;
  private readonly mergeFactor: number;
  private readonly minSpillsForCombine: number;
  private readonly combineSpills: boolean;
  private readonly keepsTwoRuns: boolean;
  private readonly details: Readonly<Record<string, string>>;
  private readonly openFile: OpenSpillFile;
  private readonly arenas: ArenaPool | undefined;
  /** The arena's memory, until it is released. */
  private arena: ArrayBuffer | undefined;

  private data: Buffer;
  /** The arena as a DataView, for the packer's word copies. */
  private dataView: DataView;
  private meta: Uint32Array;
  private hist = new Uint32Array(65536);
  private lastSource: ArrayBufferLike | undefined;
  private lastSourceView: DataView = new DataView(new ArrayBuffer(0));

  // The collecting generation.
  private e = 0;
  private d = 0;
  private m = 0;
  private n = 0;
  private curBytes = 0;
  private inflight: InFlightSpill | undefined;
  private peak = 0;
  private collected = 0;
  private collectedBytes = 0;

  private readonly runs: Array<Run | undefined> = [];
  private nextSpill = 0;
  private readonly files = new Set<string>();
  private dirMade = false;
  private state: State = 'collecting';
  private failure: Error | undefined;
  private cleanup: Promise<void> | undefined;
  private finishing: Promise<MapOutputInfo> | undefined;

  constructor(options: MapOutputBufferOptions) {
    const details: Record<string, string> = { dir: options.dir };
    if (options.ids) {
      details.jobId = options.ids.jobId;
      details.attemptId = options.ids.attemptId;
    }
    this.details = details;
    if (!Number.isInteger(options.numPartitions) || options.numPartitions < 1) {
      throw new MinimrError('EBADJOB', `numPartitions must be a positive integer, got ${options.numPartitions}`, {
        ...details,
        numPartitions: options.numPartitions,
      });
    }
    const bufferBytes = options.bufferBytes ?? DEFAULT_MAP_BUFFER_BYTES;
    if (!Number.isFinite(bufferBytes) || bufferBytes < MIN_MAP_BUFFER_BYTES || bufferBytes > MAX_MAP_BUFFER_BYTES) {
      throw new MinimrError(
        'EBADJOB',
        `map sort buffer of ${bufferBytes} bytes is out of range (${MIN_MAP_BUFFER_BYTES} .. ${MAX_MAP_BUFFER_BYTES})`,
        { ...details, bufferBytes },
      );
    }
    const spillPercent = options.spillPercent ?? 0.8;
    if (!(spillPercent > 0 && spillPercent <= 1)) {
      throw new MinimrError('EBADJOB', `spillPercent must be in (0, 1], got ${spillPercent}`, {
        ...details,
        spillPercent,
      });
    }
    const mergeFactor = options.mergeFactor ?? 10;
    if (!Number.isInteger(mergeFactor) || mergeFactor < 2) {
      throw new MinimrError('EBADJOB', `mergeFactor must be an integer >= 2, got ${mergeFactor}`, {
        ...details,
        mergeFactor,
      });
    }
    const maxOutputRuns = options.maxOutputRuns ?? MAX_MAP_OUTPUT_RUNS;
    if (!Number.isInteger(maxOutputRuns) || maxOutputRuns < 1 || maxOutputRuns > MAX_MAP_OUTPUT_RUNS) {
      throw new MinimrError(
        'EBADJOB',
        `maxOutputRuns must be an integer from 1 to ${MAX_MAP_OUTPUT_RUNS}, got ${maxOutputRuns}`,
        { ...details, maxOutputRuns },
      );
    }
    this.dir = options.dir;
    this.numPartitions = options.numPartitions;
    this.size = Math.floor(bufferBytes / META_BYTES) * META_BYTES;
    this.threshold = Math.max(META_BYTES, Math.floor(this.size * spillPercent));
    this.lowWater = Math.min(this.size >> 4, 256 << 10);
    this.compare = effectiveComparator(options.compare);
    this.byteOrder = this.compare === compareBytes;
    this.combiner = options.combiner;
    this.counters = options.counters;
    this.codec = options.codec ?? lz4Codec;
    this.spillCodec = options.spillCodec ?? noneCodec;
    this.mergeFactor = mergeFactor;
    this.minSpillsForCombine = options.minSpillsForCombine ?? 3;
    this.combineSpills = options.combineSpills ?? true;
    // Two runs stand for the merge of two spills only when that merge would not combine.
    this.keepsTwoRuns = maxOutputRuns >= 2 && !(this.combiner !== undefined && this.minSpillsForCombine <= 2);
    this.openFile = options.openFile ?? openSpillFile;
    this.arenas = options.arenas;
    const arena = this.arenas?.take(this.size) ?? new ArrayBuffer(this.size);
    this.arena = arena;
    this.data = Buffer.from(arena);
    this.dataView = new DataView(arena);
    this.meta = new Uint32Array(arena);
  }

  /** Records collected so far. */
  get records(): number {
    return this.collected;
  }

  /** Bytes of the buffer in use now (collecting generation plus the one being spilled). */
  get bufferedBytes(): number {
    return this.curBytes + (this.inflight?.bytes ?? 0);
  }

  /** Most bytes of the buffer ever in use (never more than the budget). */
  get peakBufferBytes(): number {
    return this.peak;
  }

  /** Spills written so far. */
  get spillCount(): number {
    return this.runs.filter((r) => r !== undefined).length;
  }

  /** True when the map should `await waitForRoom()` before its next map() call. */
  get mustWait(): boolean {
    return this.mustWaitFor(0);
  }

  /**
   * True when the map should `await waitForRoom()` before it emits about `bytes` more of records
   * (a whole input chunk's, say): a spill is being written and the free rest of the buffer could
   * not take them, so `collect` would have to spill synchronously.
   */
  mustWaitFor(bytes: number): boolean {
    if (this.failure) return true;
    const a = this.inflight;
    if (!a) return false;
    const avg = this.collected > 0 ? Math.max(1, this.collectedBytes / this.collected) : 64;
    const dataRoom = a.m + this.size - this.d;
    const metaRoom = this.m - a.d;
    const records = Math.min(dataRoom / avg, metaRoom / META_BYTES);
    return records * (avg + META_BYTES) < this.lowWater + bytes * (1 + META_BYTES / avg);
  }

  /** Resolves once the spill being written (if any) is done; rejects with the failure of the output. */
  async waitForRoom(): Promise<void> {
    for (;;) {
      if (this.failure) {
        await this.cleanup;
        throw this.failure;
      }
      const a = this.inflight;
      if (!a) return;
      await a.done;
      if (!this.mustWait && !this.failure) return;
    }
  }

  collect(partition: number, key: Buffer, value: Buffer): void {
    this.collectFrom(partition, key, 0, key.length, value, 0, value.length);
  }

  /**
   * Collects the record whose key is `src[keyStart, keyEnd)` and value `src[keyEnd, valueEnd)`, as
   * `collect` does, without a Buffer per record: fixed-width input records go from their input
   * chunk straight into the arena. The caller has checked the range. `srcIsGarbage` false: `src` is
   * memory its owner reuses (an input chunk read with reuseBuffers), not garbage for the GC pacer.
   */
  collectRange(
    partition: number,
    src: Buffer,
    keyStart: number,
    keyEnd: number,
    valueEnd: number,
    srcIsGarbage = true,
  ): void {
    this.collectFrom(partition, src, keyStart, keyEnd - keyStart, src, keyEnd, valueEnd - keyEnd, srcIsGarbage);
  }

  private collectFrom(
    partition: number,
    keySrc: Buffer,
    keyStart: number,
    kl: number,
    valueSrc: Buffer,
    valueStart: number,
    vl: number,
    srcIsGarbage = true,
  ): void {
    if (this.failure) throw this.failure;
    if (this.state !== 'collecting') {
      throw new MinimrError('EINTERNAL', `collect() after the map output was ${this.state}`, this.details);
    }
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.numPartitions) {
      throw new MinimrError(
        'ETASK',
        `illegal partition ${partition} (job has ${this.numPartitions} reduce partitions)`,
        {
          ...this.details,
          partition,
          numPartitions: this.numPartitions,
        },
      );
    }
    const len = kl + vl;
    this.collected++;
    this.collectedBytes += len;
    // What a map emits is copied out of buffers (input chunks, encoded keys and values) that die
    // right after, unseen by V8's GC heuristics (see gc-pacer.ts); unless they are reused.
    if (srcIsGarbage) noteTransientBytes(len);
    if (this.counters) {
      this.counters.mapOutputRecords++;
      this.counters.mapOutputBytes += len;
    }
    try {
      if (this.tryPlace(partition, keySrc, keyStart, kl, valueSrc, valueStart, vl)) {
        if (this.inflight === undefined && this.curBytes >= this.threshold) this.startAsyncSpill();
      } else {
        this.collectSlow(
          partition,
          keySrc.subarray(keyStart, keyStart + kl),
          valueSrc.subarray(valueStart, valueStart + vl),
        );
      }
    } catch (err) {
      this.fail(err);
      throw this.failure;
    }
  }

  finish(): Promise<MapOutputInfo> {
    if (this.failure) return this.failed();
    if (this.state !== 'collecting') {
      return Promise.reject(
        new MinimrError('EINTERNAL', `finish() after the map output was ${this.state}`, this.details),
      );
    }
    this.state = 'finishing';
    this.finishing = this.writeOutput().then(
      (info) => {
        this.state = 'finished';
        return info;
      },
      (err: unknown) => {
        this.fail(err);
        return this.failed();
      },
    );
    return this.finishing;
  }

  async abort(): Promise<void> {
    if (this.state === 'aborted') {
      await this.cleanup;
      return;
    }
    this.state = 'aborted';
    if (this.inflight) await this.inflight.done;
    if (this.finishing) await this.finishing.catch(() => undefined);
    await this.cleanup;
    this.release();
    this.cleanup = this.removeAll();
    await this.cleanup;
  }

  // ------------------------------------------------------------------ collecting

  /** Puts the record into the collecting generation if it fits; false otherwise. */
  private tryPlace(
    partition: number,
    keySrc: Buffer,
    keyStart: number,
    kl: number,
    valueSrc: Buffer,
    valueStart: number,
    vl: number,
  ): boolean {
    const S = this.size;
    const len = kl + vl;
    let p = this.d;
    if (len > 0) {
      const off = p % S;
      if (off + len > S) p += S - off;
    }
    const m = this.m - META_BYTES;
    const a = this.inflight;
    if (a) {
      if (p + len > a.m + S || m < a.d) return false;
    } else if (p + len - m > S) {
      return false;
    }
    const data = this.data;
    const at = p % S;
    if (keySrc === valueSrc && valueStart === keyStart + kl && len <= VIEW_COPY_MAX) {
      // One record of an input chunk: word copies (a native copy per record costs more).
      copyViaViews(this.dataView, at, this.viewOfSource(keySrc), keySrc.byteOffset + keyStart, len);
    } else {
      if (kl < 32) for (let i = 0; i < kl; i++) data[at + i] = keySrc[keyStart + i]!;
      else keySrc.copy(data, at, keyStart, keyStart + kl);
      if (vl < 32) for (let i = 0; i < vl; i++) data[at + kl + i] = valueSrc[valueStart + i]!;
      else valueSrc.copy(data, at + kl, valueStart, valueStart + vl);
    }
    const w = (((m % S) + S) % S) >>> 2;
    const meta = this.meta;
    meta[w + W_PART] = partition;
    meta[w + W_KEY] = at;
    meta[w + W_KLEN] = kl;
    meta[w + W_VLEN] = vl;
    if (this.byteOrder) {
      meta[w + W_PFX_HI] = prefixHi(keySrc, keyStart, kl);
      meta[w + W_PFX_LO] = prefixLo(keySrc, keyStart, kl);
    }
    this.curBytes += p + len - this.d + META_BYTES;
    this.d = p + len;
    this.m = m;
    this.n++;
    const used = this.curBytes + (a ? a.bytes : 0);
    if (used > this.peak) this.peak = used;
    return true;
  }

  /**
   * A DataView of the whole memory under `src` (positions in it are src.byteOffset + i), made once per
   * ArrayBuffer: a record reader hands out each record as its own Buffer over the input chunk's
   * memory, and a view per Buffer was a DataView per record (TeraSort: 671k per 64 MB map).
   */
  private viewOfSource(src: Buffer): DataView {
    const memory = src.buffer;
    if (memory !== this.lastSource) {
      this.lastSource = memory;
      this.lastSourceView = new DataView(memory);
    }
    return this.lastSourceView;
  }

  /** The record did not fit: spill what is collected, or write the record as a spill of its own. */
  private collectSlow(partition: number, key: Buffer, value: Buffer): void {
    if (this.n > 0) {
      if (this.inflight === undefined) this.startAsyncSpill();
      else this.spillSync();
      if (this.tryPlace(partition, key, 0, key.length, value, 0, value.length)) return;
    }
    const index = this.nextSpill++;
    // biome-ignore lint/correctness/useYield: a SegmentSource is a generator; this one adds its one record
    const source: SegmentSource = function* (p: number, packer: FramePacker) {
      if (p === partition) packer.add(key, value);
    };
    const path = this.spillPath(index);
    this.runs[index] = {
      path,
      segments: this.writeSync(path, source, true, this.spillCodec).segments,
      codec: this.spillCodec,
    };
  }

  /** Detaches the collecting generation and starts a new one in the free part of the ring. */
  private detach(): Generation {
    const gen: Generation = { e: this.e, d: this.d, m: this.m, n: this.n, bytes: this.curBytes };
    this.n = 0;
    this.curBytes = 0;
    return gen;
  }

  /** Places the (empty) collecting generation's equator in the gap left by the spill in flight. */
  private placeEquator(): void {
    const a = this.inflight;
    const align = (x: number): number => Math.ceil(x / META_BYTES) * META_BYTES;
    if (!a) {
      this.e = this.d = this.m = align(this.d);
      return;
    }
    const gap = a.m + this.size - a.d;
    const avg = this.collected > 0 ? this.collectedBytes / this.collected : 64;
    const metaShare = Math.floor((gap * META_BYTES) / (META_BYTES + avg));
    this.e = this.d = this.m = align(a.d + metaShare);
  }

  private sort(gen: Generation): SortResult {
    const base = (((gen.e % this.size) + this.size) % this.size) >>> 2;
    return sortSpill({
      meta: this.meta,
      data: this.data,
      base,
      n: gen.n,
      numPartitions: this.numPartitions,
      compare: this.byteOrder ? undefined : this.compare,
      hist: this.hist,
    });
  }

  /** Partition p's records of a sorted generation, combined if the job has a combiner. */
  private spillSource(gen: Generation, sorted: SortResult): SegmentSource {
    const ring = this.meta.length;
    const base = (((gen.e % this.size) + this.size) % this.size) >>> 2;
    const slot = (i: number): number => {
      const x = base - META_WORDS * (i + 1);
      return x < 0 ? x + ring : x;
    };
    const { permWord, starts } = sorted;
    const meta = this.meta;
    const data = this.data;
    const dataView = this.dataView;
    const combiner = this.combineSpills ? this.combiner : undefined;
    const view = function* (p: number): IterableIterator<KeyValue> {
      for (let j = starts[p]!; j < starts[p + 1]!; j++) {
        const s = slot(meta[slot(j) + permWord]!);
        const k = meta[s + W_KEY]!;
        const kEnd = k + meta[s + W_KLEN]!;
        yield [data.subarray(k, kEnd), data.subarray(kEnd, kEnd + meta[s + W_VLEN]!)];
      }
    };
    if (combiner) {
      const { compare, counters } = this;
      return (p, packer) => recordsInto(applyCombiner(view(p), combiner, compare, counters), packer);
    }
    return function* (p: number, packer: FramePacker) {
      for (let j = starts[p]!; j < starts[p + 1]!; j++) {
        const s = slot(meta[slot(j) + permWord]!);
        packer.addContiguous(data, dataView, meta[s + W_KEY]!, meta[s + W_KLEN]!, meta[s + W_VLEN]!);
        if (packer.frameReady) yield;
      }
    };
  }

  /**
   * The first spill may become the output's first run (two runs, or a lone spill): it is written
   * with the output's codec when that can happen. Later ones are only read back by this map.
   */
  private codecOfSpill(index: number): BlockCodec {
    return index === 0 && this.keepsTwoRuns ? this.codec : this.spillCodec;
  }

  /** `codec`: as codecOfSpill, unless this spill is known to become the output. */
  private startAsyncSpill(codec?: BlockCodec): void {
    const gen = this.detach();
    const index = this.nextSpill++;
    codec ??= this.codecOfSpill(index);
    phaseTrace('b-sort', { n: gen.n });
    const sorted = this.sort(gen);
    phaseTrace('b-sorted');
    const path = this.spillPath(index);
    const spill: InFlightSpill = { m: gen.m, d: gen.d, bytes: gen.bytes, done: Promise.resolve() };
    this.inflight = spill;
    this.placeEquator();
    spill.done = this.writeAsync(path, this.spillSource(gen, sorted), true, codec).then(
      (stats) => {
        this.runs[index] = { path, segments: stats.segments, codec };
        phaseTrace('b-spill-written');
        this.inflight = undefined;
        if (this.state === 'collecting' && this.curBytes >= this.threshold) {
          try {
            this.startAsyncSpill();
          } catch (err) {
            this.fail(err);
          }
        }
      },
      (err: unknown) => {
        this.inflight = undefined;
        this.fail(err);
      },
    );
  }

  /** Spills the collecting generation before returning (a spill is already in flight). */
  private spillSync(): void {
    const gen = this.detach();
    const index = this.nextSpill++;
    const sorted = this.sort(gen);
    const path = this.spillPath(index);
    const codec = this.codecOfSpill(index);
    this.runs[index] = {
      path,
      segments: this.writeSync(path, this.spillSource(gen, sorted), true, codec).segments,
      codec,
    };
    this.placeEquator();
  }

  // ------------------------------------------------------------------ files

  private spillPath(index: number): string {
    return join(this.dir, `spill-${index}.out`);
  }

  private open(path: string, existing = false): SpillFile {
    if (!this.dirMade) {
      mkdirSync(this.dir, { recursive: true });
      this.dirMade = true;
    }
    this.files.add(path);
    return this.openFile(path, existing);
  }

  private readonly check = (): void => {
    if (this.state === 'aborted')
      throw new MinimrError('EKILLED', 'map output aborted while being written', this.details);
  };

  private count(stats: FramedFileStats, spill: boolean): void {
    const c = this.counters;
    if (!c) return;
    if (spill) c.spills++;
    c.spilledRecords += stats.records;
    c.spilledBytes += stats.bytes;
    if (this.peak > c.peakBufferBytes) c.peakBufferBytes = this.peak;
  }

  /** `startOffset`: append to the existing file `path`, whose first `startOffset` bytes stay as they are. */
  private async writeAsync(
    path: string,
    source: SegmentSource,
    spill: boolean,
    codec: BlockCodec,
    startOffset?: number,
  ): Promise<FramedFileStats> {
    let file: SpillFile | undefined;
    try {
      file = this.open(path, startOffset !== undefined);
      const stats = await writeFramedFile(file, source, {
        codec,
        numSegments: this.numPartitions,
        check: this.check,
        startOffset,
      });
      await file.close();
      this.count(stats, spill);
      return stats;
    } catch (err) {
      await file?.close().catch(() => undefined);
      throw this.ioError(err, path);
    }
  }

  private writeSync(path: string, source: SegmentSource, spill: boolean, codec: BlockCodec): FramedFileStats {
    let file: SpillFile | undefined;
    try {
      file = this.open(path);
      const stats = writeFramedFileSync(file, source, { codec, numSegments: this.numPartitions, check: this.check });
      file.closeSync();
      this.count(stats, spill);
      return stats;
    } catch (err) {
      try {
        file?.closeSync();
      } catch {
        // already failing
      }
      throw this.ioError(err, path);
    }
  }

  private ioError(err: unknown, file: string): Error {
    if (err instanceof MinimrError) return err;
    const code = (err as NodeJS.ErrnoException)?.code;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      const who = this.details.jobId ? ` (job ${this.details.jobId}, attempt ${this.details.attemptId})` : '';
      return new MinimrError(
        'EDISKFULL',
        `no space left on device while writing map output file ${file}${who}`,
        { ...this.details, file },
        { cause: err },
      );
    }
    return new MinimrError(
      'EINTERNAL',
      `cannot write map output file ${file}: ${(err as Error)?.message ?? String(err)}`,
      {
        ...this.details,
        file,
        errno: code,
      },
      { cause: err },
    );
  }

  private fail(err: unknown): void {
    if (this.failure) return;
    this.failure = err instanceof Error ? err : new MinimrError('EINTERNAL', String(err), this.details);
    if (this.state !== 'aborted') this.state = 'failed';
    const prev = this.cleanup ?? Promise.resolve();
    // Wait for a spill still writing, so that no file appears after the cleanup.
    const inflight = this.inflight?.done ?? Promise.resolve();
    this.cleanup = Promise.all([prev, inflight]).then(() => this.removeAll());
  }

  private async failed(): Promise<never> {
    await this.cleanup;
    throw this.failure!;
  }

  private release(mergeFollows = true): void {
    if (!mergeFollows && this.arena) this.arenas?.give(this.arena);
    this.arena = undefined;
    // The view of the last input it copied from holds that input's memory (a whole block's read).
    this.lastSource = undefined;
    this.lastSourceView = new DataView(new ArrayBuffer(0));
    this.data = Buffer.alloc(0);
    this.dataView = new DataView(new ArrayBuffer(0));
    this.meta = new Uint32Array(0);
    this.hist = new Uint32Array(0);
    // The arena is the task's largest allocation: give it back now, not at some later GC, so the
    // final merge does not run on top of it (task processes run with --expose-gc). With one spill
    // nothing follows: the full GC (~10 ms of CPU) is left to the next collection.
    if (mergeFollows) collectGarbageNow();
  }

  /** Removes every file this output created (spills, merged runs, temp files, the output), then the dir if empty. */
  private async removeAll(): Promise<void> {
    const paths = mapOutputFilesIn(this.dir);
    const files = [...this.files];
    this.files.clear();
    await Promise.all(files.map((f) => rm(f, { force: true })));
    // A finished output from before (abort after finish), and leftovers of this attempt.
    let names: string[] = [];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    await Promise.all(
      names
        .map((name) => join(this.dir, name))
        .filter(
          (f) =>
            f === paths.dataFile ||
            f === paths.indexFile ||
            f.startsWith(`${paths.dataFile}.tmp-`) ||
            f.startsWith(`${paths.indexFile}.tmp-`) ||
            /\/(spill|merge)-\d+\.out$/.test(f),
        )
        .map((f) => rm(f, { force: true })),
    );
    await rmdir(this.dir).catch(() => undefined);
  }

  // ------------------------------------------------------------------ finish

  private stopIfAborted(): void {
    this.check();
    if (this.failure) throw this.failure;
  }

  private async writeOutput(): Promise<MapOutputInfo> {
    phaseTrace('b-finish');
    if (this.inflight) await this.inflight.done;
    phaseTrace('b-merge-start');
    this.stopIfAborted();
    const paths = mapOutputFilesIn(this.dir);
    let runs: ReadonlyArray<readonly SegmentStats[]>;
    if (this.n > 0 && this.runs.length === 1 && this.keepsTwoRuns && this.runs[0]!.codec === this.codec) {
      runs = await this.appendSecondRun(paths.dataFile);
      this.release(false);
    } else if (this.n > 0 && this.runs.length > 0 && this.mayMergeFromMemory()) {
      runs = [await this.mergeWithSortBuffer(paths.dataFile)];
      this.release(false);
    } else {
      runs = [await this.spillAndMerge(paths.dataFile)];
    }
    phaseTrace('b-merged');
    this.stopIfAborted();
    const partitions: PartitionIndexEntry[][] = [];
    for (let p = 0; p < this.numPartitions; p++) {
      partitions.push(
        runs.map(({ [p]: s }) => ({
          offset: s!.offset,
          length: s!.length,
          rawLength: s!.rawLength,
          records: s!.records,
          crc32: s!.crc32,
        })),
      );
    }
    await writeIndexFile(paths.indexFile, partitions, this.codec.id);
    this.files.add(paths.indexFile);
    this.stopIfAborted();
    return { dataFile: paths.dataFile, indexFile: paths.indexFile, partitions };
  }

  /**
   * The output as two runs: the one spill, written with the output's codec, and the last generation,
   * sorted and written after it into the same file, which becomes the data file. Nothing is read back.
   */
  private async appendSecondRun(dataFile: string): Promise<ReadonlyArray<readonly SegmentStats[]>> {
    const first = this.runs[0]!;
    const gen = this.detach();
    const sorted = this.sort(gen);
    const second = await this.writeAsync(
      first.path,
      this.spillSource(gen, sorted),
      true,
      this.codec,
      runsEnd(first.segments),
    );
    await rename(first.path, dataFile);
    this.files.delete(first.path);
    this.files.add(dataFile);
    return [first.segments, second.segments];
  }

  /**
   * Whether the last generation can join the final merge from the buffer: its records must be what
   * its spill would have held (no combiner at spills), and the spills on disk plus it must fit one
   * merge (more go through intermediate merges of spill files, as before).
   */
  private mayMergeFromMemory(): boolean {
    const combinesAtSpill = this.combiner !== undefined && this.combineSpills;
    return !combinesAtSpill && this.runs.length + 1 <= this.mergeFactor;
  }

  /** Sorts the last generation and merges it, from the buffer, with the spills into `dataFile`. */
  private async mergeWithSortBuffer(dataFile: string): Promise<readonly SegmentStats[]> {
    const gen = this.detach();
    const sorted = this.sort(gen);
    // Counted as a spill (a generation sorted and flushed) though it never reaches the disk: SPILLS
    // keeps meaning how many times the buffer filled, which the elasticity profile and YARN-ME's
    // accounting read.
    if (this.counters) {
      this.counters.spills++;
      if (this.peak > this.counters.peakBufferBytes) this.counters.peakBufferBytes = this.peak;
    }
    const inMemory: MemoryRun = { source: this.spillSource(gen, sorted), packer: new FramePacker() };
    const runs = this.runs as Run[];
    return this.mergeAll(runs, dataFile, runs.length + 1, inMemory);
  }

  /** Spills what is left, then renames a single spill to the output or merges the spills. */
  private async spillAndMerge(dataFile: string): Promise<readonly SegmentStats[]> {
    if (this.n > 0) {
      // With nothing spilled before, this spill is the output.
      this.startAsyncSpill(this.runs.length === 0 ? this.codec : this.spillCodec);
      await this.inflight!.done;
    }
    this.stopIfAborted();
    this.release(this.runs.length > 1);
    if (this.counters && this.peak > this.counters.peakBufferBytes) this.counters.peakBufferBytes = this.peak;

    const runs = this.runs as Run[];
    const spills = runs.length;
    let segments: readonly SegmentStats[];
    if (spills === 1 && runs[0]!.codec === this.codec) {
      // One spill: it already is the output. (One written as a spill, because the map ended right
      // after it, is merged alone below to take the output's codec.)
      await rename(runs[0]!.path, dataFile);
      this.files.delete(runs[0]!.path);
      this.files.add(dataFile);
      segments = runs[0]!.segments;
    } else {
      // The merge runs well below the map's peak (the sort buffer was freed above): its garbage may
      // pile up by the buffer's size (up to the pacer's cap) longer between paced GCs (gc-pacer.ts).
      const returnLoan = lendToGcPace(this.size);
      try {
        segments = await this.mergeAll(runs, dataFile, spills);
      } finally {
        returnLoan();
      }
    }
    return segments;
  }

  /**
   * Merges the spills (and the buffer's last generation, `inMemory`, as the last run) into the data
   * file, intermediate rounds first when the spills exceed mergeFactor.
   */
  private async mergeAll(
    spilled: readonly Run[],
    dataFile: string,
    spills: number,
    inMemory?: MemoryRun,
  ): Promise<readonly SegmentStats[]> {
    let runs = spilled as Run[];
    let merged = 0;
    while (runs.length > this.mergeFactor) {
      // One round: merge consecutive runs, only as many as needed to leave mergeFactor runs.
      let toReduce = runs.length - this.mergeFactor;
      const next: Run[] = [];
      let i = 0;
      while (i < runs.length) {
        const g = Math.min(this.mergeFactor, toReduce + 1, runs.length - i);
        if (g < 2) {
          next.push(runs[i++]!);
          continue;
        }
        next.push(
          await this.mergeRuns(runs.slice(i, i + g), join(this.dir, `merge-${merged++}.out`), false, this.spillCodec),
        );
        i += g;
        toReduce -= g - 1;
      }
      runs = next;
      if (this.counters) this.counters.mergePasses++;
    }
    const tmp = tempPathFor(dataFile);
    const combine = this.combiner !== undefined && spills >= this.minSpillsForCombine;
    const out = await this.mergeRuns(runs, tmp, combine, this.codec, inMemory);
    await rename(tmp, dataFile);
    this.files.delete(tmp);
    this.files.add(dataFile);
    return out.segments;
  }

  /**
   * K-way merges `runs` (in order: stable), then `inMemory` after them, into one file of one segment
   * per partition written with `codec`; removes the input files.
   */
  private async mergeRuns(
    runs: readonly Run[],
    path: string,
    combine: boolean,
    codec: BlockCodec,
    inMemory?: MemoryRun,
  ): Promise<Run> {
    this.stopIfAborted();
    const { compare, combiner, counters, details } = this;
    // reuseFrames: a merge that copies every record before the next reuses its runs' frame buffers.
    const cursorsOf = (p: number, reuseFrames: boolean): RecordCursor[] => {
      const cursors = runs.map((r, order) => {
        const seg = r.segments[p]!;
        const src: FrameSource = { name: r.path, details };
        return new RecordCursor(new FileFrameFeed(r.path, seg.offset, seg.length, src, reuseFrames), 0, order, r.path);
      });
      if (inMemory)
        cursors.push(
          new RecordCursor(packedFeed(inMemory.source, p, inMemory.packer, reuseFrames), 0, runs.length, 'sort buffer'),
        );
      return cursors;
    };
    const fold = combine && compare === compareBytes ? combiner?.fold : undefined;
    const source: SegmentSource = fold
      ? // A key with a single record here has nothing to combine with (nor had it at its spill).
        (p, packer) =>
          foldMerged(new CursorMerge(cursorsOf(p, true), compare), fold(), packer, {
            tagged: false,
            passSingleRecords: true,
            counters,
          })
      : combine && combiner
        ? // As above.
          (p, packer) =>
            recordsInto(
              applyCombiner(
                cursorRecords(new CursorMerge(cursorsOf(p, false), compare)),
                combiner,
                compare,
                counters,
                true,
              ),
              packer,
            )
        : (p, packer) => copyMerged(new CursorMerge(cursorsOf(p, true), compare), packer);
    const stats = await this.writeAsync(path, source, false, codec);
    for (const r of runs) {
      await rm(r.path, { force: true });
      this.files.delete(r.path);
    }
    return { path, segments: stats.segments, codec };
  }
}
