import { bytesOf, ChunkChecksummer, CHECKSUM_CHUNK_SIZE, clampRange, missingBlockError, pieceInRange, toAsyncChunks, validateBlockId, verifyChunks } from './block-store.js';
import type { BlockStat, BlockStore, BlockWriteResult, VerifiedPiece } from './block-store.js';

interface StoredBlock {
  readonly data: Buffer;
  readonly crc32: number;
  readonly chunkCrcs: readonly number[];
}

const READ_SLICE = 16 * CHECKSUM_CHUNK_SIZE;

/** For tests and single-process runs; keeps the same checksum discipline as the disk store. */
export class InMemoryBlockStore implements BlockStore {
  private readonly blocks = new Map<string, StoredBlock>();

  constructor(readonly workerId: string) {}

  async write(blockId: string, source: AsyncIterable<Buffer> | Buffer): Promise<BlockWriteResult> {
    validateBlockId(blockId);
    const summer = new ChunkChecksummer();
    const parts: Buffer[] = [];
    for await (const chunk of toAsyncChunks(source)) {
      summer.update(chunk);
      // Copy: the caller may reuse its buffer after the write resolves.
      parts.push(Buffer.from(chunk));
    }
    const { length, crc32, chunkCrcs } = summer.finish();
    this.blocks.set(blockId, { data: Buffer.concat(parts, length), crc32, chunkCrcs });
    return { length, crc32 };
  }

  read(blockId: string, start?: number, end?: number): AsyncIterable<Buffer> {
    return bytesOf(this.readPieces(blockId, start, end));
  }

  async *readPieces(blockId: string, start?: number, end?: number): AsyncIterable<VerifiedPiece> {
    validateBlockId(blockId);
    const block = this.blocks.get(blockId);
    if (!block) throw missingBlockError(blockId, this.workerId);
    const range = clampRange(block.data.length, start, end);
    let position = Math.floor(range.start / CHECKSUM_CHUNK_SIZE) * CHECKSUM_CHUNK_SIZE;
    const alignedEnd = Math.min(block.data.length, Math.ceil(range.end / CHECKSUM_CHUNK_SIZE) * CHECKSUM_CHUNK_SIZE);
    while (position < range.end) {
      const slice = block.data.subarray(position, Math.min(position + READ_SLICE, alignedEnd));
      const crc = verifyChunks(slice, position / CHECKSUM_CHUNK_SIZE, block.chunkCrcs, blockId, this.workerId);
      // A copy: a reader may keep or change what it is given, the stored block must stay as it is.
      const piece = pieceInRange(slice, position, crc, range);
      yield { bytes: Buffer.from(piece.bytes), crc32: piece.crc32 };
      position += slice.length;
    }
  }

  async has(blockId: string): Promise<boolean> {
    return this.blocks.has(validateBlockId(blockId));
  }

  async list(): Promise<string[]> {
    return [...this.blocks.keys()].sort();
  }

  async delete(blockId: string): Promise<boolean> {
    return this.blocks.delete(validateBlockId(blockId));
  }

  async stat(blockId: string): Promise<BlockStat> {
    const block = this.blocks.get(validateBlockId(blockId));
    if (!block) throw missingBlockError(blockId, this.workerId);
    return { blockId, length: block.data.length, crc32: block.crc32 };
  }

  /** The stored bytes themselves (not a copy), so fault-injection tests can corrupt a replica. */
  rawBlock(blockId: string): Buffer | undefined {
    return this.blocks.get(blockId)?.data;
  }
}
