import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { MinimrError } from '../errors.js';
import { CODEC_LZ4_ID, CODEC_NONE_ID } from './codec.js';
import { MAX_MAP_OUTPUT_RUNS, type PartitionIndexEntry, type SegmentRun } from './types.js';

/**
 * The IndexFile of one map output (version 3), little-endian:
 *   magic "MRIX" | u16 version (3) | u16 codec id | u32 numPartitions | u32 runs
 *   numPartitions x runs x (u64 offset | u64 length | u64 rawLength | u64 records | u32 crc32)
 *   u32 crc32 of everything before it
 * The data file is a sequence of segments of frames (frames.ts), one per partition and sorted run:
 * every partition has `runs` of them (1 to MAX_MAP_OUTPUT_RUNS; its entries are consecutive, in run
 * order). `length` is a run's stored bytes (frame headers included), `rawLength` its records' bytes
 * once decompressed (what a reducer needs to hold it in memory), `crc32` the checksum of its stored
 * bytes. The codec id is the codec the writer used (each frame still names its own, since an
 * incompressible frame is stored raw). Readers refuse a version or a codec they do not know
 * (ECHECKSUM) rather than serve garbage. No fsync: map outputs are disposable (a lost one is re-run)
 * and a torn file fails its checksum. (Version 2 had no run count: one run per partition.)
 */

const MAGIC = 0x5849524d; // "MRIX" read as u32 LE
const INDEX_VERSION = 3;
const CODEC_NONE = CODEC_NONE_ID;
const KNOWN_CODECS = new Set([CODEC_NONE_ID, CODEC_LZ4_ID]);
const HEADER_SIZE = 16;
const ENTRY_SIZE = 36;
const TRAILER_SIZE = 4;

export interface IndexFileContents {
  readonly codec: number;
  /** Per partition, its runs in order (all partitions have as many). */
  readonly partitions: readonly (readonly PartitionIndexEntry[])[];
}

export function encodeIndex(partitions: readonly (readonly PartitionIndexEntry[])[], codec = CODEC_NONE): Buffer {
  if (!KNOWN_CODECS.has(codec)) throw new MinimrError('EINTERNAL', `encodeIndex: unknown codec id ${codec}`);
  const runs = partitions[0]?.length ?? 1;
  if (runs < 1 || runs > MAX_MAP_OUTPUT_RUNS || partitions.some((p) => p.length !== runs)) {
    throw new MinimrError(
      'EINTERNAL',
      `encodeIndex: every partition needs the same number of runs, 1 to ${MAX_MAP_OUTPUT_RUNS}`,
    );
  }
  const buf = Buffer.alloc(HEADER_SIZE + partitions.length * runs * ENTRY_SIZE + TRAILER_SIZE);
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt16LE(INDEX_VERSION, 4);
  buf.writeUInt16LE(codec, 6);
  buf.writeUInt32LE(partitions.length, 8);
  buf.writeUInt32LE(runs, 12);
  let pos = HEADER_SIZE;
  for (const p of partitions) {
    for (const r of p) {
      buf.writeBigUInt64LE(BigInt(r.offset), pos);
      buf.writeBigUInt64LE(BigInt(r.length), pos + 8);
      buf.writeBigUInt64LE(BigInt(r.rawLength), pos + 16);
      buf.writeBigUInt64LE(BigInt(r.records), pos + 24);
      buf.writeUInt32LE(r.crc32 >>> 0, pos + 32);
      pos += ENTRY_SIZE;
    }
  }
  buf.writeUInt32LE(crc32(buf.subarray(0, pos)), pos);
  return buf;
}

function corrupt(file: string, why: string): MinimrError {
  return new MinimrError('ECHECKSUM', `map output index ${file} is corrupt: ${why}`, { file });
}

function readU64(buf: Buffer, pos: number, file: string): number {
  const v = buf.readBigUInt64LE(pos);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt(file, `value out of range at byte ${pos}`);
  return Number(v);
}

/** Parses and verifies an index; `file` only names it in errors. */
export function decodeIndex(buf: Buffer, file = '<buffer>'): IndexFileContents {
  if (buf.length < HEADER_SIZE + TRAILER_SIZE) throw corrupt(file, `too short (${buf.length} bytes)`);
  if (buf.readUInt32LE(0) !== MAGIC) throw corrupt(file, 'bad magic');
  const body = buf.length - TRAILER_SIZE;
  if (crc32(buf.subarray(0, body)) !== buf.readUInt32LE(body)) throw corrupt(file, 'checksum mismatch');
  const version = buf.readUInt16LE(4);
  if (version !== INDEX_VERSION)
    throw corrupt(file, `unknown version ${version} (this minimr reads version ${INDEX_VERSION})`);
  const codec = buf.readUInt16LE(6);
  if (!KNOWN_CODECS.has(codec)) throw corrupt(file, `unknown codec id ${codec}`);
  const n = buf.readUInt32LE(8);
  const runs = buf.readUInt32LE(12);
  if (runs < 1 || runs > MAX_MAP_OUTPUT_RUNS)
    throw corrupt(file, `${runs} runs per partition (1 to ${MAX_MAP_OUTPUT_RUNS})`);
  if (HEADER_SIZE + n * runs * ENTRY_SIZE !== body)
    throw corrupt(file, `length does not match ${n} partitions of ${runs} runs`);
  const partitions: PartitionIndexEntry[][] = [];
  let pos = HEADER_SIZE;
  for (let i = 0; i < n; i++) {
    const entries: PartitionIndexEntry[] = [];
    for (let r = 0; r < runs; r++) {
      entries.push({
        offset: readU64(buf, pos, file),
        length: readU64(buf, pos + 8, file),
        rawLength: readU64(buf, pos + 16, file),
        records: readU64(buf, pos + 24, file),
        crc32: buf.readUInt32LE(pos + 32),
      });
      pos += ENTRY_SIZE;
    }
    partitions.push(entries);
  }
  return { codec, partitions };
}

/** One partition's stored bytes, raw bytes and records, over its runs. */
export function runTotals(runs: readonly SegmentRun[]): { length: number; rawLength: number; records: number } {
  let length = 0;
  let rawLength = 0;
  let records = 0;
  for (const r of runs) {
    length += r.length;
    rawLength += r.rawLength;
    records += r.records;
  }
  return { length, rawLength, records };
}

/** Where the last of a partition's runs ends in the data file: a shorter file lacks some of them. */
export function runsEnd(runs: readonly PartitionIndexEntry[]): number {
  return runs.reduce((end, r) => Math.max(end, r.offset + r.length), 0);
}

/**
 * A partition's runs as stored, read from the open data file in pieces of at most `chunkBytes`,
 * one run after the other. A file that ends inside a run throws. With `reuse`, every piece is read
 * into the same memory: a piece is valid only until the next one is asked for.
 */
export async function* readRuns(
  fh: FileHandle,
  runs: readonly PartitionIndexEntry[],
  chunkBytes: number,
  reuse = false,
): AsyncGenerator<Buffer> {
  // No bigger than the runs: most segments of a job with many reduces are far smaller than a chunk.
  const reused = reuse ? Buffer.allocUnsafe(Math.min(chunkBytes, runTotals(runs).length)) : undefined;
  for (const run of runs) {
    for (let pos = 0; pos < run.length; ) {
      const want = Math.min(chunkBytes, run.length - pos);
      const buf = reused ? reused.subarray(0, want) : Buffer.allocUnsafe(want);
      const { bytesRead } = await fh.read(buf, 0, buf.length, run.offset + pos);
      if (bytesRead === 0) throw new Error(`map output data file ends at byte ${run.offset + pos}, inside a segment`);
      pos += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
  }
}

/** Reads and verifies an index file. A missing file surfaces as the fs error (code ENOENT). */
export async function readIndexFile(file: string): Promise<IndexFileContents> {
  return decodeIndex(await readFile(file), file);
}

/** Temp + rename: a reader sees either no index or a complete one, never a half-written one. */
export async function writeIndexFile(
  file: string,
  partitions: readonly (readonly PartitionIndexEntry[])[],
  codec = CODEC_NONE,
): Promise<void> {
  await writeFileAtomically(file, encodeIndex(partitions, codec));
}

export function tempPathFor(file: string): string {
  return `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
}

async function writeFileAtomically(file: string, data: Buffer): Promise<void> {
  const tmp = tempPathFor(file);
  try {
    await writeFile(tmp, data);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
