import { crc32 } from 'node:zlib';
import { MinimrError } from '../errors.js';

/** Each block carries one CRC-32 per chunk so a ranged read verifies only what it returns. */
export const CHECKSUM_CHUNK_SIZE = 64 * 1024;

export interface BlockWriteResult {
  readonly length: number;
  readonly crc32: number;
}

/**
 * A piece of a block as a store read it, with the CRC-32 of its bytes when they are whole checksum
 * chunks (`undefined` for a piece cut inside a chunk). That CRC is combined from the chunk checksums
 * the bytes were just verified against, so it is exactly the bytes' CRC: a reader checking a whole
 * block against the NameNode's crc32 need not hash the bytes a second time.
 */
export interface VerifiedPiece {
  readonly bytes: Buffer;
  readonly crc32: number | undefined;
}

export interface StoredReplica {
  readonly blockId: string;
  readonly length: number;
}

export interface BlockStat {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
}

/**
 * A datanode's storage. Every backend passes test/storage/block-store-suite.ts: a block is either
 * wholly there or absent, and reads verify checksums (ECHECKSUM {blockId, workerId}).
 */
export interface BlockStore {
  readonly workerId: string;
  /**
   * Stores (or replaces) a block; readers never see it half-written. The store is done with a
   * chunk of `source` when it asks for the next one (or when the write settles): the writer
   * reuses that memory then.
   */
  write(blockId: string, source: AsyncIterable<Buffer> | Buffer): Promise<BlockWriteResult>;
  /** Bytes [start, end) of the block (clamped to its length), verified chunk by chunk. ENOENT when absent. */
  read(blockId: string, start?: number, end?: number): AsyncIterable<Buffer>;
  /**
   * As `read`, each piece with its CRC-32 when it is whole chunks. With `buffers`, a store that
   * reads into memory of its own (a disk) reads into buffers of that pool and takes each back once
   * the reader asks for the next piece: a piece is then valid only until then.
   */
  readPieces(blockId: string, start?: number, end?: number, buffers?: ReadBufferPool): AsyncIterable<VerifiedPiece>;
  has(blockId: string): Promise<boolean>;
  /** Every stored block id. */
  list(): Promise<string[]>;
  /** Every stored block with its length: the datanode's block report. */
  report(): Promise<StoredReplica[]>;
  /** True when the block existed. */
  delete(blockId: string): Promise<boolean>;
  /** ENOENT when absent. */
  stat(blockId: string): Promise<BlockStat>;
}

/**
 * Read buffers handed back for reuse by a reader that is done with a piece before it asks for the
 * next one. A fresh 1 MiB Buffer per read costs about as much as the read from the page cache: it
 * is a fresh mmap (task processes hold glibc's mmap threshold at 512 KiB), so every page of it
 * faults and is zeroed by the kernel (reading 1 GB: ~0.1 s into one reused buffer, ~0.2-0.26 s
 * into fresh ones), and a map's RSS grows with the dead ones until a GC. A reader
 * with one read ahead circulates two buffers; the pool keeps at most `maxKept`, so what it holds
 * is bounded whatever its readers do (one that stops early just leaves its buffers to the GC).
 */
export class ReadBufferPool {
  private readonly kept: Buffer[] = [];

  constructor(private readonly maxKept = 4) {}

  /** A buffer of at least `bytes` bytes, whose contents are garbage; give back all of it, not a slice. */
  take(bytes: number): Buffer {
    const i = this.kept.findIndex((b) => b.length >= bytes);
    return i >= 0 ? this.kept.splice(i, 1)[0]! : Buffer.allocUnsafe(bytes);
  }

  /** `buffer` (as `take` returned it) is no longer read by anyone. */
  give(buffer: Buffer): void {
    if (this.kept.length < this.maxKept && !this.kept.includes(buffer)) this.kept.push(buffer);
  }
}

const BLOCK_ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

/** Block ids become file names and URL segments: only a safe alphabet, so none can name another path. */
export function validateBlockId(blockId: unknown): string {
  if (typeof blockId !== 'string' || !BLOCK_ID_PATTERN.test(blockId)) {
    throw new MinimrError('EBADPATH', `invalid block id: ${JSON.stringify(String(blockId)).slice(0, 80)}`, {
      blockId: String(blockId).slice(0, 200),
    });
  }
  return blockId;
}

/** Computes per-chunk CRCs and the whole-block CRC while data streams through, without holding it. */
export class ChunkChecksummer {
  readonly chunkCrcs: number[] = [];
  private blockCrc = 0;
  private chunkCrc = 0;
  private chunkFill = 0;
  private total = 0;

  // One pass over the bytes: the block's CRC is the chunks' CRCs combined as each chunk ends (a
  // second crc32 pass over every byte written was a tenth of a 512 MiB reduce's CPU).
  update(data: Buffer): void {
    this.total += data.length;
    let offset = 0;
    while (offset < data.length) {
      const take = Math.min(CHECKSUM_CHUNK_SIZE - this.chunkFill, data.length - offset);
      this.chunkCrc = crc32(data.subarray(offset, offset + take), this.chunkCrc);
      this.chunkFill += take;
      offset += take;
      if (this.chunkFill === CHECKSUM_CHUNK_SIZE) this.endChunk();
    }
  }

  finish(): { length: number; crc32: number; chunkCrcs: number[] } {
    if (this.chunkFill > 0) this.endChunk();
    return { length: this.total, crc32: this.blockCrc >>> 0, chunkCrcs: this.chunkCrcs };
  }

  private endChunk(): void {
    this.chunkCrcs.push(this.chunkCrc >>> 0);
    this.blockCrc = crc32Combine(this.blockCrc, this.chunkCrc, this.chunkFill);
    this.chunkCrc = 0;
    this.chunkFill = 0;
  }
}

/** Turns optional, possibly out-of-range bounds into a valid [start, end) inside the block. */
export function clampRange(length: number, start = 0, end = length): { start: number; end: number } {
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < 0) {
    throw new MinimrError('EPROTOCOL', `invalid byte range [${start}, ${end})`, { start, end });
  }
  const clampedEnd = Math.min(end, length);
  return { start: Math.min(start, clampedEnd), end: clampedEnd };
}

export function checksumError(blockId: string, workerId: string, chunkIndex: number): MinimrError {
  return new MinimrError(
    'ECHECKSUM',
    `checksum mismatch in block ${blockId} (chunk ${chunkIndex}) on worker ${workerId}`,
    {
      blockId,
      workerId,
      chunk: chunkIndex,
    },
  );
}

export function missingBlockError(blockId: string, workerId: string): MinimrError {
  return new MinimrError('ENOENT', `block ${blockId} not found on worker ${workerId}`, { blockId, workerId });
}

export async function* toAsyncChunks(source: AsyncIterable<Buffer> | Buffer): AsyncIterable<Buffer> {
  if (Buffer.isBuffer(source)) {
    yield source;
    return;
  }
  for await (const chunk of source) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
}

/**
 * `source`'s bytes in pieces of `bytes` (the last may be shorter), copied into one buffer reused for
 * every piece: a piece is valid until the next one is asked for, as a BlockStore's `write` takes
 * them. An upload arrives in the socket's reads (64 KiB each, fresh memory every time); stored as
 * they come, each was a write of its own through the thread pool (figures: docs/performance-notes.md,
 * "A datanode's uploads").
 */
export async function* coalesced(source: AsyncIterable<Buffer>, bytes: number): AsyncIterable<Buffer> {
  let piece: Buffer | undefined;
  let fill = 0;
  for await (const chunk of source) {
    let offset = 0;
    while (offset < chunk.length) {
      piece ??= Buffer.allocUnsafe(bytes);
      const take = Math.min(chunk.length - offset, bytes - fill);
      chunk.copy(piece, fill, offset, offset + take);
      fill += take;
      offset += take;
      if (fill === bytes) {
        yield piece;
        fill = 0;
      }
    }
  }
  if (fill > 0) yield piece!.subarray(0, fill);
}

/**
 * Checks `data`, which starts at chunk `firstChunk` and is chunk-aligned (the last chunk may be
 * short), and returns its CRC-32, combined from the chunks' verified checksums.
 */
export function verifyChunks(
  data: Buffer,
  firstChunk: number,
  chunkCrcs: readonly number[],
  blockId: string,
  workerId: string,
): number {
  let crc = 0;
  for (let offset = 0, chunk = firstChunk; offset < data.length; offset += CHECKSUM_CHUNK_SIZE, chunk++) {
    const expected = chunkCrcs[chunk];
    const bytes = data.subarray(offset, offset + CHECKSUM_CHUNK_SIZE);
    if (expected === undefined || crc32(bytes) !== expected) throw checksumError(blockId, workerId, chunk);
    crc = crc32Combine(crc, expected, bytes.length);
  }
  return crc;
}

/**
 * The piece of a verified read `buf` (chunk-aligned, at block offset `position`, with CRC-32 `crc`)
 * that falls in `range`: its CRC is known only when the piece is all of `buf`.
 */
export function pieceInRange(
  buf: Buffer,
  position: number,
  crc: number,
  range: { start: number; end: number },
): VerifiedPiece {
  const from = Math.max(range.start - position, 0);
  const to = Math.min(range.end - position, buf.length);
  return {
    bytes: from === 0 && to === buf.length ? buf : buf.subarray(from, to),
    crc32: from === 0 && to === buf.length ? crc : undefined,
  };
}

/** A store's `read`, from its `readPieces`. */
export async function* bytesOf(pieces: AsyncIterable<VerifiedPiece>): AsyncIterable<Buffer> {
  for await (const piece of pieces) yield piece.bytes;
}

const CRC32_POLYNOMIAL = 0xedb88320;

/** a(x) * b(x) modulo the CRC-32 polynomial, bits reflected as in zlib's `multmodp`. */
function multiplyModP(a: number, b: number): number {
  if (a === 0) return 0;
  let product = 0;
  for (let bit = 0x80000000; ; ) {
    if ((a & bit) !== 0) {
      product ^= b;
      if ((a & (bit - 1)) === 0) break;
    }
    bit >>>= 1;
    b = b & 1 ? (b >>> 1) ^ CRC32_POLYNOMIAL : b >>> 1;
  }
  return product >>> 0;
}

/** x^(2^k) mod P for k = 0..31, as zlib's `x2n_table`. */
const X_TO_2_TO_THE = ((): number[] => {
  const table = [0x40000000]; // x^1 (bit 31 is x^0)
  for (let k = 1; k < 32; k++) table.push(multiplyModP(table[k - 1]!, table[k - 1]!));
  return table;
})();

const shiftCache = new Map<number, number>();

/**
 * x^(8 * length) mod P: what appending `length` bytes does to a CRC. The first 64 lengths asked for
 * are cached: chunk and read sizes recur; the shuffle's frame lengths vary, and cost a few microseconds each uncached.
 */
function shiftForBytes(length: number): number {
  let shift = shiftCache.get(length);
  if (shift === undefined) {
    shift = 0x80000000;
    for (let n = length, k = 3; n > 0; n = Math.floor(n / 2), k++)
      if (n % 2 === 1) shift = multiplyModP(X_TO_2_TO_THE[k & 31]!, shift);
    if (shiftCache.size < 64) shiftCache.set(length, shift);
  }
  return shift;
}

/** The CRC-32 of A followed by B, from CRC-32(A), CRC-32(B) and B's length (zlib's `crc32_combine`). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multiplyModP(shiftForBytes(lengthB), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}
