/**
 * MapOutputBuffer, first version: everything in memory, one sort, one write.
 *
 * Why serialized records + a typed-array index: a map task can emit tens of millions of records, and
 * one JS object (plus two Buffers) per record costs ~100+ bytes of heap each and hands the GC millions
 * of long-lived objects. Instead key and value bytes are appended to one large growing Buffer and each
 * record is five u32 slots (partition, keyOffset, keyLen, valueOffset, valueLen) in typed arrays; the
 * sort permutes a Uint32Array of record numbers. Memory is then ~20 bytes + payload per record, it is
 * measurable (`bufferedBytes`), and the layout is the one Hadoop's MapOutputBuffer (kvbuffer + kvmeta)
 * uses, which is what the next step needs.
 *
 * What the external-sort issue changes: `collect` gets a memory budget; when `bufferedBytes` crosses
 * the spill threshold the buffer sorts what it has (same sort), writes a spill file with the same
 * SegmentFileWriter (LZ4-compressed, codec field of the IndexFile), and starts over; `finish` then
 * k-way merges the spills per partition with `mergeSortedRuns` (combining again) into the final
 * data + index. The MapOutputCollector interface, file naming, file formats and the Merger stay.
 */
import { mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import { compareByteRanges, compareBytes, effectiveComparator } from './bytes-compare.js';
import { tempPathFor, writeIndexFile } from './index-file.js';
import { applyCombiner } from './merger.js';
import { mapOutputFilesIn } from './paths.js';
import type { KeyValue } from './record-format.js';
import { SegmentFileWriter } from './segment-writer.js';
import type {
  BytesCombiner,
  KeyComparator,
  MapOutputCollector,
  MapOutputInfo,
  PartitionIndexEntry,
  ShuffleCounters,
} from './types.js';

export interface InMemoryMapOutputBufferOptions {
  /** The attempt's output directory, normally `mapOutputPaths(root, jobId, attemptId).dir`. */
  readonly dir: string;
  readonly numPartitions: number;
  /** Key order; defaults to byte order (Buffer.compare). */
  readonly compare?: KeyComparator;
  readonly combiner?: BytesCombiner;
  readonly counters?: ShuffleCounters;
}

/** Offsets and lengths live in Uint32 slots, so the payload buffer stays below 4 GiB. */
const MAX_DATA_BYTES = 0xffffffff;
const INITIAL_DATA_BYTES = 64 * 1024;
const INITIAL_RECORDS = 1024;

type State = 'collecting' | 'finishing' | 'finished' | 'failed' | 'aborted';

export class InMemoryMapOutputBuffer implements MapOutputCollector {
  private readonly dir: string;
  private readonly numPartitions: number;
  private readonly compare: KeyComparator;
  private readonly combiner: BytesCombiner | undefined;
  private readonly counters: ShuffleCounters | undefined;

  private data = Buffer.allocUnsafe(INITIAL_DATA_BYTES);
  private dataUsed = 0;
  private partitionOf: Uint32Array = new Uint32Array(INITIAL_RECORDS);
  private keyOffset: Uint32Array = new Uint32Array(INITIAL_RECORDS);
  private keyLen: Uint32Array = new Uint32Array(INITIAL_RECORDS);
  private valueOffset: Uint32Array = new Uint32Array(INITIAL_RECORDS);
  private valueLen: Uint32Array = new Uint32Array(INITIAL_RECORDS);
  private count = 0;

  private state: State = 'collecting';
  private finishing: Promise<MapOutputInfo> | undefined;

  constructor(options: InMemoryMapOutputBufferOptions) {
    if (!Number.isInteger(options.numPartitions) || options.numPartitions < 1) {
      throw new MinimrError('EBADJOB', `numPartitions must be a positive integer, got ${options.numPartitions}`, {
        numPartitions: options.numPartitions,
      });
    }
    this.dir = options.dir;
    this.numPartitions = options.numPartitions;
    this.compare = effectiveComparator(options.compare);
    this.combiner = options.combiner;
    this.counters = options.counters;
  }

  /** Records collected so far. */
  get records(): number {
    return this.count;
  }

  /** Memory held for records (payload + index slots): what a spill threshold would watch. */
  get bufferedBytes(): number {
    return this.dataUsed + this.count * 20;
  }

  collect(partition: number, key: Buffer, value: Buffer): void {
    if (this.state !== 'collecting') {
      throw new MinimrError('EINTERNAL', `collect() after the map output was ${this.state}`, { dir: this.dir });
    }
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.numPartitions) {
      throw new MinimrError('ETASK', `illegal partition ${partition} (job has ${this.numPartitions} reduce partitions)`, {
        partition,
        numPartitions: this.numPartitions,
      });
    }
    const size = key.length + value.length;
    this.ensureData(size);
    this.ensureRecords();
    const i = this.count++;
    const at = this.dataUsed;
    key.copy(this.data, at);
    value.copy(this.data, at + key.length);
    this.dataUsed = at + size;
    this.partitionOf[i] = partition;
    this.keyOffset[i] = at;
    this.keyLen[i] = key.length;
    this.valueOffset[i] = at + key.length;
    this.valueLen[i] = value.length;
    if (this.counters) {
      this.counters.mapOutputRecords++;
      this.counters.mapOutputBytes += size;
    }
  }

  finish(): Promise<MapOutputInfo> {
    if (this.state !== 'collecting') {
      return Promise.reject(new MinimrError('EINTERNAL', `finish() after the map output was ${this.state}`, { dir: this.dir }));
    }
    this.state = 'finishing';
    this.finishing = this.writeOutput().then(
      (info) => {
        this.state = this.state === 'aborted' ? 'aborted' : 'finished';
        this.release();
        return info;
      },
      (err: unknown) => {
        if (this.state !== 'aborted') this.state = 'failed';
        this.release();
        throw err;
      },
    );
    return this.finishing;
  }

  async abort(): Promise<void> {
    const pending = this.finishing;
    this.state = 'aborted';
    if (pending) await pending.catch(() => undefined);
    this.release();
    await removeOutputFiles(this.dir);
  }

  private release(): void {
    this.data = Buffer.alloc(0);
    this.partitionOf = this.keyOffset = this.keyLen = this.valueOffset = this.valueLen = new Uint32Array(0);
    this.count = 0;
    this.dataUsed = 0;
  }

  private ensureData(extra: number): void {
    const need = this.dataUsed + extra;
    if (need <= this.data.length) return;
    if (need > MAX_DATA_BYTES) {
      throw new MinimrError('EINTERNAL', `map output exceeds the in-memory buffer limit of ${MAX_DATA_BYTES} bytes`, {
        dir: this.dir,
        bytes: need,
      });
    }
    let size = this.data.length * 2;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(Math.min(size, MAX_DATA_BYTES));
    this.data.copy(grown, 0, 0, this.dataUsed);
    this.data = grown;
  }

  private ensureRecords(): void {
    if (this.count < this.partitionOf.length) return;
    const grow = (a: Uint32Array): Uint32Array<ArrayBuffer> => {
      const b = new Uint32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.partitionOf = grow(this.partitionOf);
    this.keyOffset = grow(this.keyOffset);
    this.keyLen = grow(this.keyLen);
    this.valueOffset = grow(this.valueOffset);
    this.valueLen = grow(this.valueLen);
  }

  /**
   * Record numbers ordered by (partition, key), ties by collection order, so equal keys keep the
   * order in which the map emitted them (deterministic, independent of sort stability). Partitions
   * are separated first with a counting pass, so the comparison sort only ever compares keys of one
   * partition. Returns the order and where each partition's run starts (`starts[p]..starts[p + 1]`).
   */
  private sortedOrder(): { order: Uint32Array; starts: Uint32Array } {
    const n = this.count;
    const { data, partitionOf, keyOffset, keyLen } = this;
    const starts = new Uint32Array(this.numPartitions + 1);
    for (let i = 0; i < n; i++) starts[partitionOf[i]! + 1]!++;
    for (let p = 0; p < this.numPartitions; p++) starts[p + 1]! += starts[p]!;
    const fill = starts.slice(0, this.numPartitions);
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[fill[partitionOf[i]!]!++] = i;

    let compareRecords: (a: number, b: number) => number;
    if (this.compare === compareBytes) {
      // Byte order, Spark-style prefix sort: the first 6 key bytes as one exact double decide most
      // comparisons without touching the payload; equal prefixes fall back to the bytes.
      const prefix = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const off = keyOffset[i]!;
        const len = keyLen[i]!;
        let v = 0;
        for (let j = 0; j < 6; j++) v = v * 256 + (j < len ? data[off + j]! : 0);
        prefix[i] = v;
      }
      compareRecords = (a, b) => {
        const pa = prefix[a]!;
        const pb = prefix[b]!;
        if (pa !== pb) return pa < pb ? -1 : 1;
        const ao = keyOffset[a]!;
        const bo = keyOffset[b]!;
        const c = compareByteRanges(data, ao, ao + keyLen[a]!, data, bo, bo + keyLen[b]!);
        return c !== 0 ? c : a - b;
      };
    } else {
      const compare = this.compare;
      compareRecords = (a, b) => {
        const c = compare(
          data.subarray(keyOffset[a]!, keyOffset[a]! + keyLen[a]!),
          data.subarray(keyOffset[b]!, keyOffset[b]! + keyLen[b]!),
        );
        return c !== 0 ? c : a - b;
      };
    }
    for (let p = 0; p < this.numPartitions; p++) {
      if (starts[p + 1]! - starts[p]! > 1) order.subarray(starts[p]!, starts[p + 1]!).sort(compareRecords);
    }
    return { order, starts };
  }

  /** Views into the payload buffer for the sorted records order[from..to) (one partition). */
  private *recordsOf(order: Uint32Array, from: number, to: number): IterableIterator<KeyValue> {
    const { data, keyOffset, keyLen, valueOffset, valueLen } = this;
    for (let j = from; j < to; j++) {
      const i = order[j]!;
      yield [
        data.subarray(keyOffset[i]!, keyOffset[i]! + keyLen[i]!),
        data.subarray(valueOffset[i]!, valueOffset[i]! + valueLen[i]!),
      ];
    }
  }

  private async writeOutput(): Promise<MapOutputInfo> {
    const paths = mapOutputFilesIn(this.dir);
    const { order, starts } = this.sortedOrder();
    await mkdir(this.dir, { recursive: true });
    const tmpData = tempPathFor(paths.dataFile);
    const partitions: PartitionIndexEntry[] = [];
    let written = 0;
    try {
      const fh = await open(tmpData, 'w');
      try {
        const writer = new SegmentFileWriter(fh);
        for (let p = 0; p < this.numPartitions; p++) {
          const from = starts[p]!;
          const to = starts[p + 1]!;
          let records: Iterable<KeyValue> = this.recordsOf(order, from, to);
          if (this.combiner && to > from) records = applyCombiner(records, this.combiner, this.compare, this.counters);
          writer.beginSegment();
          for (const [key, value] of records) {
            if (!writer.tryAppend(key, value)) await writer.append(key, value);
            if (this.state === 'aborted') throw new MinimrError('EKILLED', 'map output aborted while being written', { dir: this.dir });
          }
          const entry = await writer.endSegment();
          written += entry.records;
          partitions.push(entry);
        }
      } finally {
        await fh.close();
      }
      // Data before index: a present index means a complete data file.
      await rename(tmpData, paths.dataFile);
      await writeIndexFile(paths.indexFile, partitions);
    } catch (err) {
      await rm(tmpData, { force: true });
      throw err;
    }
    if (this.counters) {
      // The single final write counts as one spill, as in Hadoop when the output fits in memory.
      this.counters.spilledRecords += written;
      this.counters.spills += 1;
    }
    return { dataFile: paths.dataFile, indexFile: paths.indexFile, partitions };
  }
}

/** Removes data, index and leftover temp files of an attempt directory, then the directory if empty. */
async function removeOutputFiles(dir: string): Promise<void> {
  const paths = mapOutputFilesIn(dir);
  let names: string[] = [];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const ours = new Set([paths.dataFile, paths.indexFile]);
  await Promise.all(
    names
      .map((name) => join(dir, name))
      .filter((file) => ours.has(file) || file.startsWith(`${paths.dataFile}.tmp-`) || file.startsWith(`${paths.indexFile}.tmp-`))
      .map((file) => rm(file, { force: true })),
  );
  await rmdir(dir).catch(() => undefined);
}
