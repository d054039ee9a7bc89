/**
 * How a split's bytes become records. Two layers: a *chunk reader* owns a format's boundary rule and
 * hands out runs of whole records as raw bytes (slices of the blocks as read, copied only where a
 * record spans two reads), and a *record reader* cuts those chunks into the records `map` gets. A
 * whole-split map (`mapSplit`) reads the chunks themselves, so both paths see exactly the same
 * records: the rule lives in the chunk readers alone.
 */
import { MinimrError } from '../errors.js';
import { ReadBufferPool } from './block-store.js';
import type { InputSplit, RecordBatch, RecordBatchReader, RecordChunk, RecordChunkReader } from './types.js';

/**
 * Where a reader gets a file's bytes: the block store's FsClient, or another store's ranged reads
 * (stores/): `readRange` yields the bytes [start, end) (less at the file's end) in pieces.
 */
export interface RangeSource {
  readRange(path: string, start: number, end: number, buffers?: ReadBufferPool): AsyncIterable<Buffer>;
}

export interface BatchOptions {
  /** Most records per batch (default 4096). */
  readonly maxRecords?: number;
  /** A batch ends once it holds this many bytes (default 1 MiB). */
  readonly maxBytes?: number;
}

/** How a chunk reader may treat the chunks it hands out. */
export interface ChunkReaderOptions {
  /**
   * Each chunk's bytes are valid only until the next chunk is asked for: the reader then reads into
   * the same buffers again instead of fresh memory per read (see ReadBufferPool). Default false:
   * chunks are never reused, so they may be kept.
   */
  readonly reuseBuffers?: boolean;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const EMPTY = Buffer.alloc(0);

/** Pulls the file's bytes from the split start on, lazily, so only the blocks actually needed are fetched. */
class ByteSource {
  private readonly iterator: AsyncIterator<Buffer>;
  private exhausted = false;
  private readonly reuseBuffers: boolean;

  constructor(fs: RangeSource, path: string, start: number, end: number, options: ChunkReaderOptions) {
    this.reuseBuffers = options.reuseBuffers === true;
    this.iterator = fs
      .readRange(path, start, end, this.reuseBuffers ? new ReadBufferPool() : undefined)
      [Symbol.asyncIterator]();
  }

  /** Bytes of the current read that the reader holds past the next read: copied out when reads reuse their buffers. */
  keep(bytes: Buffer): Buffer {
    return this.reuseBuffers ? Buffer.from(bytes) : bytes;
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
 * reading into later blocks to finish the last one. So each line is read once, never cut. The last
 * line read is therefore the one that ends at the first newline at or after the split's end.
 */
class LineChunkReader implements RecordChunkReader {
  private readonly source: ByteSource;
  private readonly splitEnd: number;
  private chunk: Buffer = EMPTY;
  private chunkPos = 0;
  /** File offset of `chunk[chunkPos]`. */
  private position: number;
  /** Pieces of a line begun in earlier reads, and its file offset. */
  private partial: Buffer[] = [];
  private partialLength = 0;
  private partialStart = 0;
  private skippingFirstLine: boolean;
  /** Bytes consumed since the last chunk handed out. */
  private consumed = 0;
  private done = false;

  constructor(fs: RangeSource, split: InputSplit, options: ChunkReaderOptions) {
    this.source = new ByteSource(fs, split.path, split.start, split.fileLength, options);
    this.splitEnd = split.start + split.length;
    this.position = split.start;
    this.skippingFirstLine = split.start !== 0;
  }

  async next(): Promise<RecordChunk | null> {
    while (!this.done) {
      // Checked before reading on, so that a split never fetches a block it has no line of.
      if (!this.skippingFirstLine && this.partialLength === 0 && this.position > this.splitEnd) break;
      if (this.chunkPos >= this.chunk.length) {
        const chunk = await this.source.nextChunk();
        if (chunk === undefined) return this.endOfFile();
        this.chunk = chunk;
        this.chunkPos = 0;
        continue;
      }
      if (this.skippingFirstLine) {
        const newline = this.chunk.indexOf(NEWLINE, this.chunkPos);
        this.consume(newline < 0 ? this.chunk.length - this.chunkPos : newline + 1 - this.chunkPos);
        if (newline >= 0) this.skippingFirstLine = false;
        continue;
      }
      const out = this.partialLength > 0 ? this.finishPartialLine() : this.wholeLines();
      if (out !== undefined) return out;
    }
    await this.finish();
    return null;
  }

  async close(): Promise<void> {
    await this.finish();
  }

  /** The lines that end in the current read, up to the split's last line; the rest starts a partial line. */
  private wholeLines(): RecordChunk | undefined {
    const chunk = this.chunk;
    const from = this.chunkPos;
    const splitEndAt = this.splitEnd - this.position + from;
    let cut = -1;
    if (splitEndAt < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, splitEndAt);
      if (newline >= 0) cut = newline + 1;
    }
    if (cut < 0) cut = chunk.lastIndexOf(NEWLINE) + 1;
    if (cut <= from) {
      this.partialStart = this.position;
      this.keepPartial();
      return undefined;
    }
    return this.handOut(chunk.subarray(from, cut), this.position, cut - from);
  }

  private finishPartialLine(): RecordChunk | undefined {
    const newline = this.chunk.indexOf(NEWLINE, this.chunkPos);
    if (newline < 0) {
      this.keepPartial();
      return undefined;
    }
    const end = this.chunk.subarray(this.chunkPos, newline + 1);
    const line = Buffer.concat([...this.partial, end], this.partialLength + end.length);
    this.partial = [];
    this.partialLength = 0;
    return this.handOut(line, this.partialStart, end.length);
  }

  private keepPartial(): void {
    const rest = this.chunk.subarray(this.chunkPos);
    this.partial.push(this.source.keep(rest));
    this.partialLength += rest.length;
    this.consume(rest.length);
  }

  private consume(n: number): void {
    this.chunkPos += n;
    this.position += n;
    this.consumed += n;
  }

  private handOut(bytes: Buffer, offset: number, fromThisRead: number): RecordChunk {
    this.consume(fromThisRead);
    const bytesRead = this.consumed;
    this.consumed = 0;
    return { bytes, offset, bytesRead };
  }

  /** End of file: a last line without a newline is still a line. */
  private async endOfFile(): Promise<RecordChunk | null> {
    let last: RecordChunk | null = null;
    if (this.partialLength > 0 && !this.skippingFirstLine) {
      last = {
        bytes: Buffer.concat(this.partial, this.partialLength),
        offset: this.partialStart,
        bytesRead: this.consumed,
      };
    }
    await this.finish();
    return last;
  }

  private async finish(): Promise<void> {
    this.done = true;
    this.partial = [];
    this.partialLength = 0;
    await this.source.close();
  }
}

/**
 * Fixed-length records: the split owns the records whose offset (a multiple of the record length)
 * lies in [start, start + length), and reads past its end to complete the last one.
 */
class FixedRecordChunkReader implements RecordChunkReader {
  private readonly source: ByteSource;
  private readonly recordLength: number;
  private nextOffset: number;
  private readonly endOffset: number;
  private chunk: Buffer = EMPTY;
  private chunkPos = 0;
  private partial: Buffer[] = [];
  private partialLength = 0;
  private done = false;
  private readonly path: string;

  constructor(fs: RangeSource, split: InputSplit, recordLength: number, options: ChunkReaderOptions) {
    if (!Number.isInteger(recordLength) || recordLength <= 0) {
      throw new MinimrError('EBADJOB', `record length must be a positive integer, got ${recordLength}`, {
        path: split.path,
      });
    }
    if (split.fileLength % recordLength !== 0) {
      throw new MinimrError(
        'EBADJOB',
        `file length ${split.fileLength} is not a multiple of record length ${recordLength}`,
        {
          path: split.path,
          fileLength: split.fileLength,
          recordLength,
        },
      );
    }
    this.path = split.path;
    this.recordLength = recordLength;
    const firstIndex = Math.ceil(split.start / recordLength);
    const splitEnd = Math.min(split.start + split.length, split.fileLength);
    const endIndex = Math.max(firstIndex, Math.ceil(splitEnd / recordLength));
    this.nextOffset = firstIndex * recordLength;
    this.endOffset = endIndex * recordLength;
    this.source = new ByteSource(fs, split.path, this.nextOffset, this.endOffset, options);
  }

  async next(): Promise<RecordChunk | null> {
    const length = this.recordLength;
    while (!this.done && this.nextOffset < this.endOffset) {
      if (this.chunkPos >= this.chunk.length) {
        const chunk = await this.source.nextChunk();
        if (chunk === undefined) {
          throw new MinimrError(
            'EBADJOB',
            `${this.path} ended before offset ${this.endOffset}: it changed while being read`,
            { path: this.path },
          );
        }
        this.chunk = chunk;
        this.chunkPos = 0;
      }
      const available = this.chunk.length - this.chunkPos;
      const offset = this.nextOffset;
      if (this.partialLength === 0 && available >= length) {
        // The common case: whole records inside one read, handed out without copying.
        const bytes = Math.min(Math.floor(available / length), (this.endOffset - offset) / length) * length;
        const out = this.chunk.subarray(this.chunkPos, this.chunkPos + bytes);
        this.chunkPos += bytes;
        this.nextOffset += bytes;
        return { bytes: out, offset, bytesRead: bytes };
      }
      const take = Math.min(length - this.partialLength, available);
      this.partial.push(this.source.keep(this.chunk.subarray(this.chunkPos, this.chunkPos + take)));
      this.partialLength += take;
      this.chunkPos += take;
      if (this.partialLength === length) {
        const record = Buffer.concat(this.partial, length);
        this.partial = [];
        this.partialLength = 0;
        this.nextOffset += length;
        return { bytes: record, offset, bytesRead: length };
      }
    }
    await this.close();
    return null;
  }

  async close(): Promise<void> {
    this.done = true;
    this.partial = [];
    await this.source.close();
  }
}

/** Where a record that starts at `pos` of a chunk ends (separator included), and its value. */
interface RecordCutter<V> {
  end(bytes: Buffer, pos: number): number;
  value(bytes: Buffer, pos: number, end: number): V;
}

/** Cuts the chunks of a chunk reader into batches of records. */
class ChunkRecordReader<V> implements RecordBatchReader<V> {
  private chunk: RecordChunk | undefined;
  private pos = 0;
  private done = false;

  constructor(
    private readonly chunks: RecordChunkReader,
    private readonly cutter: RecordCutter<V>,
    private readonly maxRecords: number,
    private readonly maxBytes: number,
  ) {}

  async next(): Promise<RecordBatch<V> | null> {
    if (this.done) return null;
    const offsets: number[] = [];
    const values: V[] = [];
    let bytesRead = 0;
    const { cutter } = this;
    while (values.length < this.maxRecords && bytesRead < this.maxBytes) {
      const chunk = this.chunk;
      if (chunk === undefined || this.pos >= chunk.bytes.length) {
        const next = await this.chunks.next();
        if (next === null) {
          this.done = true;
          break;
        }
        this.chunk = next;
        this.pos = 0;
        // Bytes skipped before the chunk (a split's first partial line) count as read.
        bytesRead += next.bytesRead - next.bytes.length;
        continue;
      }
      const bytes = chunk.bytes;
      const pos = this.pos;
      const end = cutter.end(bytes, pos);
      offsets.push(chunk.offset + pos);
      values.push(cutter.value(bytes, pos, end));
      bytesRead += end - pos;
      this.pos = end;
    }
    if (values.length === 0 && this.done) return null;
    return { offsets, values, bytesRead };
  }

  async close(): Promise<void> {
    this.done = true;
    this.chunk = undefined;
    await this.chunks.close();
  }
}

const lineCutter: RecordCutter<string> = {
  end(bytes, pos) {
    const newline = bytes.indexOf(NEWLINE, pos);
    return newline < 0 ? bytes.length : newline + 1;
  },
  value: (bytes, pos, end) => decodeLine(bytes, pos, end > pos && bytes[end - 1] === NEWLINE ? end - 1 : end),
};

/** UTF-8 text of bytes [from, to) with one trailing `\r` dropped (CRLF files). */
function decodeLine(buf: Buffer, from: number, to: number): string {
  const end = to > from && buf[to - 1] === CARRIAGE_RETURN ? to - 1 : to;
  return buf.toString('utf8', from, end);
}

function fixedCutter(recordLength: number): RecordCutter<Buffer> {
  return {
    end: (_bytes, pos) => pos + recordLength,
    value: (bytes, pos, end) => bytes.subarray(pos, end),
  };
}

/** Whole lines of a split in chunks of raw bytes (Hadoop's LineRecordReader rule at block edges). */
export function openLineChunkReader(
  fs: RangeSource,
  split: InputSplit,
  options: ChunkReaderOptions = {},
): RecordChunkReader {
  return new LineChunkReader(fs, split, options);
}

/** Whole fixed-length records of a split in chunks of raw bytes (slices of the reads where possible). */
export function openFixedRecordChunkReader(
  fs: RangeSource,
  split: InputSplit,
  recordLength: number,
  options: ChunkReaderOptions = {},
): RecordChunkReader {
  return new FixedRecordChunkReader(fs, split, recordLength, options);
}

export function openLineReader(
  fs: RangeSource,
  split: InputSplit,
  options: BatchOptions = {},
): RecordBatchReader<string> {
  return new ChunkRecordReader(
    openLineChunkReader(fs, split),
    lineCutter,
    options.maxRecords ?? 4096,
    options.maxBytes ?? 1 << 20,
  );
}

/** Records are slices of the read buffers (not copies): keep them as long as needed, they are never reused. */
export function openFixedRecordReader(
  fs: RangeSource,
  split: InputSplit,
  recordLength: number,
  options: BatchOptions = {},
): RecordBatchReader<Buffer> {
  const maxBytes = options.maxBytes ?? 1 << 20;
  const maxRecords = options.maxRecords ?? Math.max(1, Math.min(8192, Math.floor(maxBytes / recordLength)));
  return new ChunkRecordReader(
    openFixedRecordChunkReader(fs, split, recordLength),
    fixedCutter(recordLength),
    maxRecords,
    Number.POSITIVE_INFINITY,
  );
}
