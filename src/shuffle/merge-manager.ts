import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import { collectGarbageNow } from './gc-pacer.js';
import { compareBytes, effectiveComparator } from './bytes-compare.js';
import type { BlockCodec } from './codec.js';
import type { SegmentHeader, SegmentSink } from './fetcher.js';
import { decodeFrameAt, DEFAULT_FRAME_RAW_BYTES, FRAME_HEADER_SIZE, type FrameSource } from './frames.js';
import { SegmentReader, type KeyValue } from './record-format.js';
import { bufferFeed, CursorMerge, FileFrameFeed, foldMerged, RecordCursor, TAG_IN_VALUE } from './run-cursor.js';
import {
  openSpillFile,
  writeFramedFile,
  type FramedFileStats,
  type FramePacker,
  type SegmentSource,
  type SpillFile,
} from './spill-writer.js';
import {
  MAX_MAP_OUTPUT_RUNS,
  type BytesCombiner,
  type KeyComparator,
  type MapOutputLocation,
  type MergedInput,
  type SegmentRun,
  type ShuffleCounters,
} from './types.js';

/**
 * MergeManager: the reduce side's memory-bounded external merge sort (Hadoop's MergeManagerImpl).
 *
 * Memory accounting. The budget `bufferBytes` counts RAW (decompressed) record bytes, the bytes the
 * merge really holds. A fetch that will go to memory reserves its segment's rawLength as soon as the
 * segment's size is known (before its first byte), so reserved + committed bytes never exceed the
 * budget: a fetch that would overflow it waits (backpressure, FIFO) until a merge frees memory. While
 * it streams, a segment holds its raw buffer plus one compressed frame; frames are decompressed as
 * they arrive, the stored bytes are never kept. `peakBufferBytes` is the largest reserved + committed.
 *
 * What goes to disk, and when.
 *  - A segment with rawLength > maxSingleShuffleFraction * bufferBytes is streamed straight to a file
 *    as it arrives, frames still compressed (one network chunk in memory at a time). Unless it is
 *    one of this worker's own map outputs: then it is read in place from the map's data file,
 *    once its bytes are checked (openInPlaceSink), and nothing is written.
 *  - When committed in-memory bytes reach mergeThreshold * bufferBytes, all committed in-memory
 *    segments are merged (through the combiner, if any) into one sorted on-disk run, and their memory
 *    is freed. The same happens earlier if a waiting fetch could otherwise never be served.
 *  - When on-disk runs exceed 2 * width - 1, the mergeFactor smallest are merged into one, in the
 *    background while fetches go on; width is what the final merge could read at once with the
 *    memory now in use (below): mergeFactor, or more when the budget has room.
 *  - Final merge: the in-memory segments count as one run (they merge in memory, no file; Hadoop's
 *    final merge treats them the same way), each on-disk run as one. It reads as many runs at once
 *    as the budget has room for (the final merge's width): mergeFactor, or more when the part of
 *    the budget the in-memory segments leave free holds MERGE_READ_BYTES_PER_RUN for each run (at
 *    most MAX_MERGE_WIDTH files open). While there are more runs than that, the smallest are merged
 *    into an intermediate on-disk run (Hadoop's pass sizing: the first pass takes just enough that
 *    every later pass is full); when a pass takes the in-memory group, all of its segments go to disk
 *    and their memory is freed. What is left is merged lazily and synchronously into the reduce: the
 *    in-memory segments still held + one frame per on-disk run. So an input that fits the buffer
 *    never touches the disk, however many maps there are, and segments that went to disk are read
 *    once more only, in one pass, whenever their read buffers fit the budget: as Spark merges all
 *    spill files in one pass, and as Hadoop users raise mapreduce.task.io.sort.factor. (TeraSort's
 *    1 GB, 16 maps, 2 reduces of 64 MB: every 32 MB segment goes to disk, or stays in its local
 *    map's file; with width 10 a pass re-wrote 7 of them, 224 MB, before the reduce read them all;
 *    16 runs need 12 MiB of the budget.)
 *    Memory stays bounded by the budget: the in-memory segments + the runs' read buffers, each run's
 *    counted as MERGE_READ_BYTES_PER_RUN; below mergeFactor runs' worth, mergeFactor still applies
 *    (its read buffers, a few MiB, beside the budget, as before).
 * Counters: the disk writes above (segments shuffled to disk, in-memory merges, on-disk merges) add to
 * spilledRecords / spilledBytes (stored bytes); each on-disk merge (background or final) is a merge pass.
 *
 * Why the reducer's penalty is a sawtooth of input/buffer. With input I and buffer B (all segments
 * small), every mergeThreshold*B of input is spilled once and the rest stays in memory for the final
 * merge: spilled(I) ~ floor(I / tB) * tB. As B shrinks below I/t, the spill jumps from 0 to about all of
 * I, then falls back towards I/2 as B shrinks to I/2t, jumps back to ~I, and so on: the spilled bytes
 * (and with them T(m) = T + spilledBytes(m)/diskRate) go up and down as memory shrinks, with extra
 * steps when the run count crosses mergeFactor and a merge pass re-writes data. Hence the scheduler's
 * rule: among allocations with the same predicted time, take the smallest.
 *
 * Order of equal keys. Every record carries a "tag", its map index and the run of the map's output
 * it came in (mapIndex * MAX_MAP_OUTPUT_RUNS + run; a map that kept two runs has its earlier records
 * in the first): constant for a fetched run, written as a varint before the value in the runs this
 * class writes. Merges break key ties by tag, then by run; one tag's records are always in one run,
 * in emission order. So equal keys come out in map order then emission order, whatever the budget
 * (or the maps' buffers) did: the reduce input is byte-identical across budgets (without a combiner;
 * a combiner sees different groups under different budgets).
 *
 * A fetched segment of two runs is two runs here from the start (two in-memory segments, or two
 * files), committed together once the whole segment is verified.
 */

/**
 * What one on-disk run costs a merge that reads it: its read buffer (a stored frame), the raw frame
 * decompressed from it, and the frame before, which the reduce may still hold views into until the
 * GC takes it (frames hold DEFAULT_FRAME_RAW_BYTES of records; lz4 stores them at most that plus a
 * little).
 */
export const MERGE_READ_BYTES_PER_RUN = 3 * DEFAULT_FRAME_RAW_BYTES;
/** Most runs the final merge reads at once however large the budget: each is an open file. */
const MAX_MERGE_WIDTH = 256;

export interface MergeManagerOptions {
  readonly workDir: string;
  readonly bufferBytes: number;
  readonly mergeFactor: number;
  readonly maxSingleShuffleFraction: number;
  readonly mergeThreshold: number;
  readonly compare?: KeyComparator;
  readonly combiner?: BytesCombiner;
  readonly codec: BlockCodec;
  readonly counters: ShuffleCounters;
  /** For error details. */
  readonly details?: Readonly<Record<string, string | number>>;
  /** Called once when a background merge fails, so the fetches can be stopped. */
  readonly onFailure?: (err: unknown) => void;
}

interface MemRun {
  readonly kind: 'mem';
  readonly id: number;
  readonly raw: Buffer;
  readonly rawLength: number;
  readonly records: number;
  /** Of every record: see Order of equal keys. */
  readonly tag: number;
}

interface DiskRun {
  readonly kind: 'disk';
  readonly id: number;
  readonly path: string;
  /**
   * Where the run starts in `path`: 0 in a file this class wrote, the run's offset in a local map output read in place.
   */
  readonly offset: number;
  /** Whether this class wrote `path` (and removes it once merged), or it is a local map's output, read in place. */
  readonly owned: boolean;
  /** Stored bytes. */
  readonly length: number;
  readonly rawLength: number;
  readonly records: number;
  /** A fetched run (untagged, all records have this tag), or undefined: a run this class wrote (tagged records). */
  readonly tag: number | undefined;
}

type Run = MemRun | DiskRun;

interface TaggedRecord {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly tag: number;
}

interface Waiter {
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class MergeManager {
  private readonly opts: MergeManagerOptions;
  private readonly compare: KeyComparator;
  private readonly counters: ShuffleCounters;
  private readonly maxSingleBytes: number;
  private readonly mergeAtBytes: number;
  private nextId = 0;
  /** Raw bytes reserved by fetches in flight + committed in-memory segments (+ those being merged). */
  private used = 0;
  private reservedInFlight = 0;
  private committedBytes = 0;
  private memRuns: MemRun[] = [];
  private diskRuns: DiskRun[] = [];
  private readonly waiters: Waiter[] = [];
  private memMerging = false;
  private diskMerging = false;
  private readonly active = new Set<Promise<void>>();
  /** Every file this manager created and has not removed yet. */
  private readonly files = new Set<string>();
  private failure: unknown;
  private finalized = false;

  constructor(options: MergeManagerOptions) {
    const { bufferBytes, mergeFactor, maxSingleShuffleFraction, mergeThreshold } = options;
    if (!(Number.isFinite(bufferBytes) && bufferBytes > 0)) throw badOption('bufferBytes', bufferBytes);
    if (!(Number.isInteger(mergeFactor) && mergeFactor >= 2)) throw badOption('mergeFactor', mergeFactor);
    if (!(maxSingleShuffleFraction > 0 && maxSingleShuffleFraction <= 1))
      throw badOption('maxSingleShuffleFraction', maxSingleShuffleFraction);
    if (!(mergeThreshold > 0 && mergeThreshold <= 1)) throw badOption('mergeThreshold', mergeThreshold);
    this.opts = options;
    this.compare = effectiveComparator(options.compare);
    this.counters = options.counters;
    this.maxSingleBytes = Math.floor(maxSingleShuffleFraction * bufferBytes);
    this.mergeAtBytes = mergeThreshold * bufferBytes;
  }

  /** Why the manager was stopped (a merge failed, or `fail` was called), if it was. */
  get failureReason(): unknown {
    return this.failure;
  }

  /** Raw bytes held now (reserved + committed). */
  get bufferedBytes(): number {
    return this.used;
  }

  /**
   * Where one fetched segment goes: a sink decompressing into memory (after waiting for room in the
   * budget) or one writing the stored bytes to a file of the work dir.
   */
  async openSink(loc: MapOutputLocation, header: SegmentHeader, signal?: AbortSignal): Promise<SegmentSink> {
    this.throwIfFailed();
    if (header.length === 0) {
      if (header.records !== 0 || header.rawLength !== 0)
        throw new MinimrError('ECHECKSUM', 'empty segment with records', {
          ...this.opts.details,
          mapIndex: loc.mapIndex,
        });
      return { write: () => undefined, finish: () => undefined, abort: () => undefined };
    }
    if (header.rawLength > this.maxSingleBytes) {
      const { file } = header;
      return file && file.runOffsets.length === header.runs.length
        ? this.openInPlaceSink(loc, header, file)
        : this.openDiskSink(loc, header);
    }
    await this.acquire(header.rawLength, signal);
    try {
      this.throwIfFailed();
    } catch (err) {
      this.release(header.rawLength, true);
      throw err;
    }
    return new InMemorySink(this, loc, header, {
      name: `map ${loc.mapIndex} (attempt ${loc.attemptId})`,
      details: { ...this.opts.details, mapIndex: loc.mapIndex, attemptId: loc.attemptId },
    });
  }

  /** Stops everything: waiting fetches are rejected, running merges give up at their next yield. */
  fail(err: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  /** Resolves once no merge is running (whatever they ended with). */
  async settle(): Promise<void> {
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  /**
   * After the last fetch: waits for the background merges, runs the final merge passes, and returns
   * the sorted stream of all records (synchronous: blocking reads, one frame per on-disk run).
   */
  async finalMerge(): Promise<MergedInput> {
    await this.settle();
    this.throwIfFailed();
    this.finalized = true;
    // The in-memory segments count as one run (as in Hadoop, they are merged in memory without any
    // file); each on-disk run counts as one. A pass that picks the in-memory group writes all of it.
    let groups: Run[][] = this.diskRuns.map((r) => [r]);
    if (this.memRuns.length > 0) groups.push(this.memRuns);
    this.memRuns = [];
    this.diskRuns = [];
    const size = (g: Run[]): number => g.reduce((n, r) => n + r.rawLength, 0);
    // No fetch is in flight: `used` is the in-memory segments, freed when a pass writes them.
    for (let pass = 1; groups.length > this.mergeWidth(); pass++) {
      this.throwIfFailed();
      const width = this.mergeWidth();
      // Hadoop's pass factor: the first pass merges just enough runs that every later pass is full.
      const mod = (groups.length - 1) % (width - 1);
      const take = pass > 1 || mod === 0 ? width : mod + 1;
      groups.sort((a, b) => size(a) - size(b) || a[0]!.id - b[0]!.id);
      const inputs = groups.slice(0, take).flat();
      const rest = groups.slice(take);
      const merged = await this.mergeToDisk(inputs, false);
      this.counters.mergePasses++;
      for (const r of inputs) if (r.kind === 'mem') this.freeMem(r.rawLength);
      await this.removeRuns(inputs);
      groups = [...rest, [merged]];
    }
    const finalRuns = groups.flat().sort((a, b) => a.id - b.id);
    return new MergedRecords(this.mergeOf(finalRuns), this.counters);
  }

  /**
   * How many runs the final merge reads at once: mergeFactor, or as many as the budget left beside
   * the memory in use (in-memory segments, and while fetching, reservations) holds read buffers for
   * (up to MAX_MERGE_WIDTH).
   */
  private mergeWidth(): number {
    const fit = Math.floor((this.opts.bufferBytes - this.used) / MERGE_READ_BYTES_PER_RUN);
    return Math.max(this.opts.mergeFactor, Math.min(fit, MAX_MERGE_WIDTH));
  }

  /** Removes every file this manager made. Safe to call more than once; call after `settle`. */
  async removeFiles(): Promise<void> {
    const files = [...this.files];
    this.files.clear();
    await Promise.all(files.map((f) => rm(f, { force: true })));
  }

  // ----- memory accounting -----

  private acquire(bytes: number, signal?: AbortSignal): Promise<void> {
    if (this.waiters.length === 0 && this.used + bytes <= this.opts.bufferBytes) {
      this.grant(bytes);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new MinimrError('EKILLED', 'shuffle stopped while waiting for memory', { ...this.opts.details }));
        this.pump();
      };
      const waiter: Waiter = {
        bytes,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.pump();
    });
  }

  private grant(bytes: number): void {
    this.used += bytes;
    this.reservedInFlight += bytes;
    if (this.used > this.counters.peakBufferBytes) this.counters.peakBufferBytes = this.used;
  }

  /** A reservation given back: the fetch try failed (or turned out to be committed: `inFlight` false). */
  release(bytes: number, inFlight: boolean): void {
    if (inFlight) this.reservedInFlight -= bytes;
    this.used -= bytes;
    this.pump();
  }

  private freeMem(bytes: number): void {
    this.used -= bytes;
    this.pump();
  }

  /** Hands memory to waiters in order, then starts the merges that are due. */
  private pump(): void {
    while (this.waiters.length > 0 && this.used + this.waiters[0]!.bytes <= this.opts.bufferBytes) {
      const w = this.waiters.shift()!;
      this.grant(w.bytes);
      w.resolve();
    }
    if (this.failure !== undefined || this.finalized) return;
    if (!this.memMerging && this.memRuns.length > 0) {
      const due = this.committedBytes >= this.mergeAtBytes;
      // Nothing else would ever free memory for the waiting fetch: merge what is there now.
      const stuck = this.waiters.length > 0 && this.reservedInFlight === 0;
      if (due || stuck) this.startMemMerge();
    }
    if (!this.diskMerging && this.diskRuns.length > 2 * this.mergeWidth() - 1) this.startDiskMerge();
  }

  /** An in-memory segment is complete and verified: its runs, in order. */
  commit(runs: ReadonlyArray<Omit<MemRun, 'id' | 'kind'>>): void {
    const bytes = runs.reduce((n, r) => n + r.rawLength, 0);
    this.reservedInFlight -= bytes;
    if (this.failure !== undefined) {
      this.used -= bytes;
      return;
    }
    for (const run of runs) if (run.records > 0) this.memRuns.push({ kind: 'mem', id: this.nextId++, ...run });
    this.committedBytes += bytes;
    this.pump();
  }

  // ----- disk -----

  newPath(prefix: string): string {
    const path = join(this.opts.workDir, `${prefix}-${this.nextId++}-${Math.random().toString(36).slice(2, 8)}`);
    this.files.add(path);
    return path;
  }

  /** One file per run of the segment, so that each run is merged, and its file removed, on its own. */
  private async openDiskSink(loc: MapOutputLocation, header: SegmentHeader): Promise<SegmentSink> {
    const files: Array<{
      readonly path: string;
      readonly fh: FileHandle;
      readonly run: SegmentRun;
      readonly tag: number;
    }> = [];
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      await Promise.all(files.map((f) => f.fh.close()));
    };
    const remove = async (): Promise<void> => {
      await close().catch(() => undefined);
      for (const f of files) this.files.delete(f.path);
      await Promise.all(files.map((f) => rm(f.path, { force: true })));
    };
    try {
      for (const [index, run] of header.runs.entries()) {
        if (run.length === 0) continue;
        const path = this.newPath(`map${loc.mapIndex}`);
        files.push({ path, fh: await open(path, 'wx'), run, tag: runTag(loc.mapIndex, index) });
      }
    } catch (err) {
      await remove();
      throw err;
    }
    let current = 0;
    let pos = 0;
    return {
      write: async (chunk) => {
        for (let off = 0; off < chunk.length; ) {
          const f = files[current];
          if (f === undefined)
            throw new MinimrError('ECHECKSUM', `segment of map ${loc.mapIndex} is longer than its runs`, {
              ...this.opts.details,
              mapIndex: loc.mapIndex,
            });
          const { bytesWritten } = await f.fh.write(chunk, off, Math.min(chunk.length - off, f.run.length - pos), pos);
          off += bytesWritten;
          pos += bytesWritten;
          if (pos === f.run.length) {
            current++;
            pos = 0;
          }
        }
      },
      finish: async () => {
        await close();
        this.counters.spilledRecords += header.records;
        this.counters.spilledBytes += header.length;
        if (this.failure !== undefined) return;
        for (const { path, run, tag } of files) {
          this.diskRuns.push({
            kind: 'disk',
            id: this.nextId++,
            path,
            offset: 0,
            owned: true,
            length: run.length,
            rawLength: run.rawLength,
            records: run.records,
            tag,
          });
        }
        this.pump();
      },
      abort: remove,
    };
  }

  /**
   * A local map output's segment that would go to disk stays where it is: the merges read its runs
   * from the map's data file, as Spark reads a node's own shuffle blocks, instead of this reduce
   * writing a copy into its work dir first (the same bytes written again, and as much page cache,
   * per local map). The fetcher has streamed the bytes through `write` and checked their CRCs by
   * `finish`. The file is the map's: never removed here (its worker removes the job's map outputs
   * when the job ends), and nothing is spilled.
   */
  private openInPlaceSink(
    loc: MapOutputLocation,
    header: SegmentHeader,
    file: { readonly path: string; readonly runOffsets: readonly number[] },
  ): SegmentSink {
    return {
      write: () => undefined,
      finish: () => {
        if (this.failure !== undefined) return;
        this.counters.shuffleBytesInPlace += header.length;
        for (const [index, run] of header.runs.entries()) {
          if (run.length === 0) continue;
          const offset = file.runOffsets[index]!;
          this.diskRuns.push({
            kind: 'disk',
            id: this.nextId++,
            path: file.path,
            offset,
            owned: false,
            length: run.length,
            rawLength: run.rawLength,
            records: run.records,
            tag: runTag(loc.mapIndex, index),
          });
        }
        this.pump();
      },
      abort: () => undefined,
    };
  }

  private async removeRuns(runs: readonly Run[]): Promise<void> {
    for (const r of runs) {
      if (r.kind !== 'disk' || !r.owned) continue;
      this.files.delete(r.path);
      await rm(r.path, { force: true });
    }
  }

  private track(work: Promise<void>): void {
    const p = work.catch((err: unknown) => {
      if (this.failure === undefined) {
        this.fail(err);
        this.opts.onFailure?.(err);
      }
    });
    this.active.add(p);
    void p.finally(() => this.active.delete(p));
  }

  private startMemMerge(): void {
    let inputs: readonly Run[] | undefined = this.memRuns;
    this.memRuns = [];
    const bytes = inputs.reduce((n, r) => n + r.rawLength, 0);
    this.committedBytes -= bytes;
    this.memMerging = true;
    this.track(
      (async () => {
        try {
          const run = await this.mergeToDisk(inputs!, true);
          if (this.failure === undefined) this.diskRuns.push(run);
        } finally {
          this.memMerging = false;
          // The merged segments' memory goes to waiting fetches now: collect it first, or the process
          // holds both until V8 gets to it (a Zipf WordCount reduce's ArrayBuffers reached 93 MiB
          // against its 64 MiB budget). One full GC per in-memory merge, a few ms each.
          inputs = undefined;
          collectGarbageNow();
          this.freeMem(bytes);
        }
      })(),
    );
  }

  private startDiskMerge(): void {
    const sorted = [...this.diskRuns].sort(bySize);
    const inputs = sorted.slice(0, this.opts.mergeFactor);
    this.diskRuns = sorted.slice(this.opts.mergeFactor);
    this.diskMerging = true;
    this.track(
      (async () => {
        try {
          const run = await this.mergeToDisk(inputs, false);
          this.counters.mergePasses++;
          await this.removeRuns(inputs);
          if (this.failure === undefined) this.diskRuns.push(run);
        } finally {
          this.diskMerging = false;
          this.pump();
        }
      })(),
    );
  }

  /**
   * Merges runs into one tagged on-disk run. Records are copied from the runs' frames in their
   * encoded form (a tag inserted where the input has none), frames compressed on libuv's thread
   * pool; the event loop gets a turn at least once per few frames, so fetches go on meanwhile.
   */
  private async mergeToDisk(inputs: readonly Run[], combine: boolean): Promise<DiskRun> {
    const ordered = [...inputs].sort((a, b) => a.id - b.id);
    const compare = this.compare;
    const combiner = combine ? this.opts.combiner : undefined;
    const fold = compare === compareBytes ? combiner?.fold : undefined;
    const source: SegmentSource = fold
      ? (_p, packer) =>
          foldMerged(this.mergeOf(ordered, true), fold(), packer, {
            tagged: true,
            passSingleRecords: false,
            counters: this.counters,
          })
      : combiner
        ? (_p, packer) =>
            taggedInto(combineTagged(taggedRecords(this.mergeOf(ordered)), combiner, compare, this.counters), packer)
        : (_p, packer) => mergeInto(this.mergeOf(ordered, true), packer);
    const path = this.newPath('run');
    let stats: FramedFileStats;
    let file: SpillFile | undefined;
    try {
      file = openSpillFile(path);
      stats = await writeFramedFile(file, source, {
        codec: this.opts.codec,
        numSegments: 1,
        check: () => this.throwIfFailed(),
      });
      await file.close();
    } catch (err) {
      await file?.close().catch(() => undefined);
      this.files.delete(path);
      await rm(path, { force: true });
      throw err;
    }
    const seg = stats.segments[0]!;
    this.counters.spilledRecords += seg.records;
    this.counters.spilledBytes += seg.length;
    return {
      kind: 'disk',
      id: this.nextId++,
      path,
      offset: 0,
      owned: true,
      length: seg.length,
      rawLength: seg.rawLength,
      records: seg.records,
      tag: undefined,
    };
  }

  /**
   * A merge of `runs` (in this order: it breaks ties after key and tag). `reuseFrames`: the consumer
   * copies each record before the next (mergeInto), so on-disk runs may reuse their frame buffers.
   */
  private mergeOf(runs: readonly Run[], reuseFrames = false): CursorMerge {
    return new CursorMerge(
      runs.map((run, order) => cursorOf(run, order, reuseFrames)),
      this.compare,
    );
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }
}

function badOption(name: string, value: unknown): MinimrError {
  return new MinimrError('EINTERNAL', `reduce shuffle option ${name} out of range: ${String(value)}`, { option: name });
}

function bySize(a: Run, b: Run): number {
  return a.rawLength - b.rawLength || a.id - b.id;
}

/**
 * Decompresses a segment's frames as they stream in, into one buffer of the segment's raw length
 * (reserved beforehand). Holds at most one frame's stored bytes besides.
 */
class InMemorySink implements SegmentSink {
  private readonly raw: Buffer;
  private rawPos = 0;
  private storedPos = 0;
  private readonly head = Buffer.allocUnsafe(FRAME_HEADER_SIZE);
  private headGot = 0;
  private frame: Buffer | undefined;
  /**
   * The memory frames are gathered in, reused from frame to frame: a frame is decoded and copied out before the next
   * begins.
   */
  private frameMemory: Buffer | undefined;
  private frameGot = 0;
  private done = false;

  constructor(
    private readonly manager: MergeManager,
    private readonly loc: MapOutputLocation,
    private readonly header: SegmentHeader,
    private readonly source: FrameSource,
  ) {
    this.raw = Buffer.allocUnsafe(header.rawLength);
  }

  write(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.frame === undefined) {
        const n = Math.min(FRAME_HEADER_SIZE - this.headGot, chunk.length - pos);
        chunk.copy(this.head, this.headGot, pos, pos + n);
        this.headGot += n;
        pos += n;
        if (this.headGot < FRAME_HEADER_SIZE) break;
        const rawLength = this.head.readUInt32LE(0);
        const storedLength = this.head.readUInt32LE(4);
        if (this.storedPos + FRAME_HEADER_SIZE + storedLength > this.header.length)
          throw this.corrupt('frame runs past the end of the segment');
        if (this.rawPos + rawLength > this.raw.length)
          throw this.corrupt("frames hold more than the segment's raw length");
        const frameLength = FRAME_HEADER_SIZE + storedLength;
        if (this.frameMemory === undefined || this.frameMemory.length < frameLength)
          this.frameMemory = Buffer.allocUnsafe(frameLength);
        this.frame = this.frameMemory.subarray(0, frameLength);
        this.head.copy(this.frame, 0);
        this.frameGot = FRAME_HEADER_SIZE;
      } else {
        const n = Math.min(this.frame.length - this.frameGot, chunk.length - pos);
        chunk.copy(this.frame, this.frameGot, pos, pos + n);
        this.frameGot += n;
        pos += n;
      }
      if (this.frame.length === this.frameGot) {
        const { raw } = decodeFrameAt(this.frame, 0, {
          ...this.source,
          details: { ...this.source.details, frameOffset: this.storedPos },
        });
        if (this.rawPos + raw.length > this.raw.length)
          throw this.corrupt("frames hold more than the segment's raw length");
        this.rawPos += raw.copy(this.raw, this.rawPos);
        this.storedPos += this.frame.length;
        this.frame = undefined;
        this.headGot = 0;
      }
    }
  }

  finish(): void {
    if (this.frame !== undefined || this.headGot !== 0) throw this.corrupt('segment ends inside a frame');
    if (this.rawPos !== this.raw.length)
      throw this.corrupt(`frames hold ${this.rawPos} raw bytes, the index says ${this.raw.length}`);
    // Each run's records are the raw bytes of its frames, which come one run after the other.
    const runs: Array<Omit<MemRun, 'id' | 'kind'>> = [];
    let at = 0;
    for (const [index, run] of this.header.runs.entries()) {
      const raw = this.raw.subarray(at, at + run.rawLength);
      at += run.rawLength;
      const records = new SegmentReader(raw).countRecords();
      if (records !== run.records)
        throw this.corrupt(`run ${index + 1} of the segment has ${records} records, the index says ${run.records}`);
      runs.push({ raw, rawLength: raw.length, records, tag: runTag(this.loc.mapIndex, index) });
    }
    this.done = true;
    this.manager.commit(runs);
  }

  abort(): void {
    if (this.done) return;
    this.done = true;
    this.manager.release(this.header.rawLength, true);
  }

  private corrupt(why: string): MinimrError {
    return new MinimrError('ECHECKSUM', `corrupt shuffle data from ${this.source.name}: ${why}`, {
      ...this.source.details,
    });
  }
}

/** A run's cursor: its tag is a fetched run's (runTag), or read from each record of a run this class wrote. */
function cursorOf(run: Run, order: number, reuseFrames: boolean): RecordCursor {
  if (run.kind === 'mem')
    return new RecordCursor(
      bufferFeed(run.raw),
      run.tag,
      order,
      `map ${Math.floor(run.tag / MAX_MAP_OUTPUT_RUNS)} (in memory)`,
    );
  const feed = new FileFrameFeed(run.path, run.offset, run.length, { name: run.path }, reuseFrames);
  return new RecordCursor(feed, run.tag ?? TAG_IN_VALUE, order, run.path);
}

/** The tag of run `run` of map `mapIndex`'s segment: see Order of equal keys. */
function runTag(mapIndex: number, run: number): number {
  return mapIndex * MAX_MAP_OUTPUT_RUNS + run;
}

/** Writes a merge into a packer as tagged records, yielding whenever a frame is ready. */
function* mergeInto(merge: CursorMerge, packer: FramePacker): Generator<void> {
  try {
    for (let c = merge.first(); c !== undefined; c = merge.next()) {
      // A record of a run this class wrote is already in tagged form.
      if (c.tagStart !== c.valueStart) packer.addEncoded(c.buf, c.view, c.start, c.end - c.start);
      else
        packer.addTagged(
          c.buf,
          c.keyStart,
          c.keyEnd - c.keyStart,
          c.tag,
          c.buf,
          c.valueStart,
          c.end - c.valueStart,
          c.view,
        );
      if (packer.frameReady) yield;
    }
  } finally {
    merge.close();
  }
}

function* taggedInto(records: Iterable<TaggedRecord>, packer: FramePacker): Generator<void> {
  for (const r of records) {
    packer.addTagged(r.key, 0, r.key.length, r.tag, r.value, 0, r.value.length);
    if (packer.frameReady) yield;
  }
}

/** A merge as tagged records with their own Buffers (for the combiner). */
function* taggedRecords(merge: CursorMerge): Generator<TaggedRecord> {
  try {
    for (let c = merge.first(); c !== undefined; c = merge.next()) yield { key: c.key(), value: c.value(), tag: c.tag };
  } finally {
    merge.close();
  }
}

/**
 * The final merge as the reduce reads it: [key, value] views, or each record in place
 * (`nextRecord`), counted in reduceInputRecords. A plain iterator (this runs once per reduce input
 * record), read once; `return` closes the runs' files.
 */
class MergedRecords implements Iterator<KeyValue>, MergedInput {
  private current: RecordCursor | undefined;
  private started = false;

  constructor(
    private readonly merge: CursorMerge,
    private readonly counters: ShuffleCounters,
  ) {}

  [Symbol.iterator](): Iterator<KeyValue> {
    return this;
  }

  nextRecord(): RecordCursor | undefined {
    let c: RecordCursor | undefined;
    try {
      if (!this.started) {
        this.started = true;
        c = this.merge.first();
      } else {
        c = this.current === undefined ? undefined : this.merge.next();
      }
    } catch (err) {
      this.merge.close();
      throw err;
    }
    this.current = c;
    if (c === undefined) {
      this.merge.close();
      return undefined;
    }
    this.counters.reduceInputRecords++;
    return c;
  }

  next(): IteratorResult<KeyValue> {
    const c = this.nextRecord();
    if (c === undefined) return { done: true, value: undefined };
    return { done: false, value: [c.buf.subarray(c.keyStart, c.keyEnd), c.buf.subarray(c.valueStart, c.end)] };
  }

  return(): IteratorResult<KeyValue> {
    this.current = undefined;
    this.merge.close();
    return { done: true, value: undefined };
  }
}

/** The combiner over a merged tagged stream; a group's output keeps the tag of its first record. */
function* combineTagged(
  records: Iterable<TaggedRecord>,
  combiner: BytesCombiner,
  compare: KeyComparator,
  counters: ShuffleCounters,
): Generator<TaggedRecord> {
  const it = records[Symbol.iterator]();
  let cur = it.next();
  while (!cur.done) {
    const { key, tag } = cur.value;
    const values: Iterable<Buffer> = {
      *[Symbol.iterator]() {
        while (!cur.done && compare(cur.value.key, key) === 0) {
          const value = cur.value.value;
          cur = it.next();
          counters.combineInputRecords++;
          yield value;
        }
      },
    };
    const emitted: TaggedRecord[] = [];
    combiner(key, values, (k, v) => {
      if (compare(k, key) !== 0) {
        throw new MinimrError(
          'ETASK',
          'combiner emitted a key different from its input key; a combiner must keep the key',
          {
            inputKey: key.toString('hex').slice(0, 64),
            emittedKey: k.toString('hex').slice(0, 64),
          },
        );
      }
      emitted.push({ key: k, value: v, tag });
    });
    while (!cur.done && compare(cur.value.key, key) === 0) {
      cur = it.next();
      counters.combineInputRecords++;
    }
    counters.combineOutputRecords += emitted.length;
    yield* emitted;
  }
}
