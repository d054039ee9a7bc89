import { MinimrError } from '../errors.js';
import type { FsClient } from './fs-client.js';
import type { InputSplit, RecordBatch, RecordBatchReader } from './types.js';

export interface BatchOptions {
  /** Most records per batch (default 4096). */
  readonly maxRecords?: number;
  /** A batch ends once it holds this many bytes (default 1 MiB). */
  readonly maxBytes?: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/** Pulls the file's bytes from the split start on, lazily, so only the blocks actually needed are fetched. */
class ByteSource {
  private readonly iterator: AsyncIterator<Buffer>;
  private exhausted = false;

  constructor(source: AsyncIterable<Buffer>) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  async nextChunk(): Promise<Buffer | undefined> {
    if (this.exhausted) return undefined;
    const step = await this.iterator.next();
    if (step.done) {
      this.exhausted = true;
      return undefined;
    }
    return step.value;
  }

  async close(): Promise<void> {
    if (this.exhausted) return;
    this.exhausted = true;
    await this.iterator.return?.();
  }
}

/**
 * Hadoop's LineRecordReader rules: a split not starting at 0 skips through its first newline (that
 * line belongs to the split before), and a split reads every line starting at or before its end,
 * reading into later blocks to finish the last one. So each line is read once, never cut.
 */
class LineReader implements RecordBatchReader<string> {
  private readonly source: ByteSource;
  private readonly splitEnd: number;
  private readonly maxRecords: number;
  private readonly maxBytes: number;
  private chunk: Buffer = Buffer.alloc(0);
  private chunkPos = 0;
  /** Bytes of the current line seen in earlier chunks. */
  private partial: Buffer[] = [];
  private partialLength = 0;
  private position: number;
  private lineStart: number;
  private skippingFirstLine: boolean;
  private done = false;

  constructor(fs: FsClient, split: InputSplit, options: BatchOptions) {
    this.source = new ByteSource(fs.readRange(split.path, split.start, split.fileLength));
    this.splitEnd = split.start + split.length;
    this.maxRecords = options.maxRecords ?? 4096;
    this.maxBytes = options.maxBytes ?? 1 << 20;
    this.position = split.start;
    this.lineStart = split.start;
    this.skippingFirstLine = split.start !== 0;
  }

  async next(): Promise<RecordBatch<string> | null> {
    if (this.done) return null;
    const offsets: number[] = [];
    const values: string[] = [];
    let bytesRead = 0;
    while (values.length < this.maxRecords && bytesRead < this.maxBytes) {
      if (!this.skippingFirstLine && this.lineStart > this.splitEnd) {
        await this.finish();
        break;
      }
      if (this.chunkPos >= this.chunk.length) {
        const chunk = await this.source.nextChunk();
        if (chunk === undefined) {
          // End of file: a last line without a newline is still a line.
          if (this.partialLength > 0 && !this.skippingFirstLine) {
            offsets.push(this.lineStart);
            values.push(decodeLine(Buffer.concat(this.partial, this.partialLength), 0, this.partialLength));
          }
          await this.finish();
          break;
        }
        this.chunk = chunk;
        this.chunkPos = 0;
        continue;
      }
      const newline = this.chunk.indexOf(NEWLINE, this.chunkPos);
      if (newline < 0) {
        const rest = this.chunk.subarray(this.chunkPos);
        this.partial.push(rest);
        this.partialLength += rest.length;
        this.position += rest.length;
        bytesRead += rest.length;
        this.chunkPos = this.chunk.length;
        continue;
      }
      const consumed = newline + 1 - this.chunkPos;
      this.position += consumed;
      bytesRead += consumed;
      if (!this.skippingFirstLine) {
        offsets.push(this.lineStart);
        if (this.partialLength === 0) {
          values.push(decodeLine(this.chunk, this.chunkPos, newline));
        } else {
          const line = Buffer.concat([...this.partial, this.chunk.subarray(this.chunkPos, newline)]);
          values.push(decodeLine(line, 0, line.length));
        }
      }
      this.skippingFirstLine = false;
      this.partial = [];
      this.partialLength = 0;
      this.chunkPos = newline + 1;
      this.lineStart = this.position;
    }
    if (values.length === 0 && this.done) return null;
    return { offsets, values, bytesRead };
  }

  async close(): Promise<void> {
    await this.finish();
  }

  private async finish(): Promise<void> {
    this.done = true;
    this.partial = [];
    await this.source.close();
  }
}

/** UTF-8 text of bytes [from, to) with one trailing `\r` dropped (CRLF files). */
function decodeLine(buf: Buffer, from: number, to: number): string {
  const end = to > from && buf[to - 1] === CARRIAGE_RETURN ? to - 1 : to;
  return buf.toString('utf8', from, end);
}

/**
 * Fixed-length records: the split owns the records whose offset (a multiple of the record length)
 * lies in [start, start + length), and reads past its end to complete the last one.
 */
class FixedRecordReader implements RecordBatchReader<Buffer> {
  private readonly source: ByteSource;
  private readonly recordLength: number;
  private readonly maxRecords: number;
  private nextOffset: number;
  private readonly endOffset: number;
  private chunk: Buffer = Buffer.alloc(0);
  private chunkPos = 0;
  private partial: Buffer[] = [];
  private partialLength = 0;
  private done = false;
  private readonly path: string;

  constructor(fs: FsClient, split: InputSplit, recordLength: number, options: BatchOptions) {
    if (!Number.isInteger(recordLength) || recordLength <= 0) {
      throw new MinimrError('EBADJOB', `record length must be a positive integer, got ${recordLength}`, { path: split.path });
    }
    if (split.fileLength % recordLength !== 0) {
      throw new MinimrError('EBADJOB', `file length ${split.fileLength} is not a multiple of record length ${recordLength}`, {
        path: split.path,
        fileLength: split.fileLength,
        recordLength,
      });
    }
    this.path = split.path;
    this.recordLength = recordLength;
    const firstIndex = Math.ceil(split.start / recordLength);
    const splitEnd = Math.min(split.start + split.length, split.fileLength);
    const endIndex = Math.max(firstIndex, Math.ceil(splitEnd / recordLength));
    this.nextOffset = firstIndex * recordLength;
    this.endOffset = endIndex * recordLength;
    this.maxRecords = options.maxRecords ?? Math.max(1, Math.min(8192, Math.floor((options.maxBytes ?? 1 << 20) / recordLength)));
    this.source = new ByteSource(fs.readRange(split.path, this.nextOffset, this.endOffset));
  }

  async next(): Promise<RecordBatch<Buffer> | null> {
    if (this.done) return null;
    const offsets: number[] = [];
    const values: Buffer[] = [];
    let bytesRead = 0;
    while (values.length < this.maxRecords && this.nextOffset < this.endOffset) {
      if (this.chunkPos >= this.chunk.length) {
        const chunk = await this.source.nextChunk();
        if (chunk === undefined) {
          throw new MinimrError('EBADJOB', `${this.path} ended before offset ${this.endOffset}: it changed while being read`, { path: this.path });
        }
        this.chunk = chunk;
        this.chunkPos = 0;
      }
      const missing = this.recordLength - this.partialLength;
      const available = this.chunk.length - this.chunkPos;
      if (this.partialLength === 0 && available >= this.recordLength) {
        // The common case: whole records inside one chunk, handed out without copying.
        const whole = Math.min(Math.floor(available / this.recordLength), this.maxRecords - values.length, (this.endOffset - this.nextOffset) / this.recordLength);
        for (let i = 0; i < whole; i++) {
          offsets.push(this.nextOffset);
          values.push(this.chunk.subarray(this.chunkPos, this.chunkPos + this.recordLength));
          this.chunkPos += this.recordLength;
          this.nextOffset += this.recordLength;
        }
        bytesRead += whole * this.recordLength;
        continue;
      }
      const take = Math.min(missing, available);
      this.partial.push(this.chunk.subarray(this.chunkPos, this.chunkPos + take));
      this.partialLength += take;
      this.chunkPos += take;
      if (this.partialLength === this.recordLength) {
        offsets.push(this.nextOffset);
        values.push(Buffer.concat(this.partial, this.recordLength));
        this.nextOffset += this.recordLength;
        bytesRead += this.recordLength;
        this.partial = [];
        this.partialLength = 0;
      }
    }
    if (this.nextOffset >= this.endOffset) await this.finish();
    return values.length === 0 ? null : { offsets, values, bytesRead };
  }

  async close(): Promise<void> {
    await this.finish();
  }

  private async finish(): Promise<void> {
    this.done = true;
    await this.source.close();
  }
}

export function openLineReader(fs: FsClient, split: InputSplit, options: BatchOptions = {}): RecordBatchReader<string> {
  return new LineReader(fs, split, options);
}

/** Records are slices of the read buffers (not copies): keep them as long as needed, they are never reused. */
export function openFixedRecordReader(fs: FsClient, split: InputSplit, recordLength: number, options: BatchOptions = {}): RecordBatchReader<Buffer> {
  return new FixedRecordReader(fs, split, recordLength, options);
}
