import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { varintSize, writeVarint } from './record-format.js';
import type { PartitionIndexEntry } from './types.js';

/**
 * Writes consecutive segments (record format of record-format.ts) to one file through a fixed chunk,
 * computing each segment's crc32 and record count for the IndexFile as it goes. The chunk is flushed
 * at every segment end so a chunk never straddles two segments' checksums. The external-sort issue
 * reuses it for spill files (and puts the LZ4 block codec between the chunk and the file).
 */
export class SegmentFileWriter {
  private readonly fh: FileHandle;
  private readonly chunk: Buffer;
  private used = 0;
  private filePos = 0;
  private segStart = 0;
  private segCrc = 0;
  private segRecords = 0;

  constructor(fh: FileHandle, chunkSize = 1 << 20) {
    this.fh = fh;
    this.chunk = Buffer.allocUnsafe(chunkSize);
  }

  /** Bytes written to the file plus bytes still in the chunk. */
  get position(): number {
    return this.filePos + this.used;
  }

  beginSegment(): void {
    this.segStart = this.position;
    this.segCrc = 0;
    this.segRecords = 0;
  }

  /** Appends without I/O when the chunk has room; false means call `append` (async) instead. */
  tryAppend(key: Buffer, value: Buffer): boolean {
    const size = varintSize(key.length) + varintSize(value.length) + key.length + value.length;
    if (this.used + size > this.chunk.length) return false;
    let pos = writeVarint(this.chunk, this.used, key.length);
    pos = writeVarint(this.chunk, pos, value.length);
    pos += key.copy(this.chunk, pos);
    pos += value.copy(this.chunk, pos);
    this.used = pos;
    this.segRecords++;
    return true;
  }

  async append(key: Buffer, value: Buffer): Promise<void> {
    if (this.tryAppend(key, value)) return;
    await this.flush();
    if (this.tryAppend(key, value)) return;
    // A record larger than the chunk goes straight to the file.
    const head = Buffer.allocUnsafe(varintSize(key.length) + varintSize(value.length));
    writeVarint(head, writeVarint(head, 0, key.length), value.length);
    for (const part of [head, key, value]) await this.writeOut(part);
    this.segRecords++;
  }

  async endSegment(): Promise<PartitionIndexEntry> {
    await this.flush();
    return { offset: this.segStart, length: this.filePos - this.segStart, records: this.segRecords, crc32: this.segCrc };
  }

  private async flush(): Promise<void> {
    if (this.used === 0) return;
    const n = this.used;
    this.used = 0;
    await this.writeOut(this.chunk.subarray(0, n));
  }

  private async writeOut(bytes: Buffer): Promise<void> {
    this.segCrc = crc32(bytes, this.segCrc);
    let off = 0;
    while (off < bytes.length) {
      const { bytesWritten } = await this.fh.write(bytes, off, bytes.length - off, this.filePos);
      off += bytesWritten;
      this.filePos += bytesWritten;
    }
  }
}
