import { crc32 } from 'node:zlib';
import { MinimrError } from '../errors.js';

/** Each block carries one CRC-32 per chunk so a ranged read verifies only what it returns. */
export const CHECKSUM_CHUNK_SIZE = 64 * 1024;

export interface BlockWriteResult {
  readonly length: number;
  readonly crc32: number;
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
  /** Stores (or replaces) a block; readers never see it half-written. */
  write(blockId: string, source: AsyncIterable<Buffer> | Buffer): Promise<BlockWriteResult>;
  /** Bytes [start, end) of the block (clamped to its length), verified chunk by chunk. ENOENT when absent. */
  read(blockId: string, start?: number, end?: number): AsyncIterable<Buffer>;
  has(blockId: string): Promise<boolean>;
  /** Every stored block id: the datanode's block report. */
  list(): Promise<string[]>;
  /** True when the block existed. */
  delete(blockId: string): Promise<boolean>;
  /** ENOENT when absent. */
  stat(blockId: string): Promise<BlockStat>;
}

const BLOCK_ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

/** Block ids become file names and URL segments: only a safe alphabet, so none can name another path. */
export function validateBlockId(blockId: unknown): string {
  if (typeof blockId !== 'string' || !BLOCK_ID_PATTERN.test(blockId)) {
    throw new MinimrError('EBADPATH', `invalid block id: ${JSON.stringify(String(blockId)).slice(0, 80)}`, { blockId: String(blockId).slice(0, 200) });
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

  update(data: Buffer): void {
    this.blockCrc = crc32(data, this.blockCrc);
    this.total += data.length;
    let offset = 0;
    while (offset < data.length) {
      const take = Math.min(CHECKSUM_CHUNK_SIZE - this.chunkFill, data.length - offset);
      this.chunkCrc = crc32(data.subarray(offset, offset + take), this.chunkCrc);
      this.chunkFill += take;
      offset += take;
      if (this.chunkFill === CHECKSUM_CHUNK_SIZE) {
        this.chunkCrcs.push(this.chunkCrc);
        this.chunkCrc = 0;
        this.chunkFill = 0;
      }
    }
  }

  finish(): { length: number; crc32: number; chunkCrcs: number[] } {
    if (this.chunkFill > 0) {
      this.chunkCrcs.push(this.chunkCrc);
      this.chunkCrc = 0;
      this.chunkFill = 0;
    }
    return { length: this.total, crc32: this.blockCrc >>> 0, chunkCrcs: this.chunkCrcs };
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
  return new MinimrError('ECHECKSUM', `checksum mismatch in block ${blockId} (chunk ${chunkIndex}) on worker ${workerId}`, {
    blockId,
    workerId,
    chunk: chunkIndex,
  });
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

/** Checks `data`, which starts at chunk `firstChunk` and is chunk-aligned (the last chunk may be short). */
export function verifyChunks(data: Buffer, firstChunk: number, chunkCrcs: readonly number[], blockId: string, workerId: string): void {
  for (let offset = 0, chunk = firstChunk; offset < data.length; offset += CHECKSUM_CHUNK_SIZE, chunk++) {
    const expected = chunkCrcs[chunk];
    if (expected === undefined || crc32(data.subarray(offset, offset + CHECKSUM_CHUNK_SIZE)) !== expected) {
      throw checksumError(blockId, workerId, chunk);
    }
  }
}
