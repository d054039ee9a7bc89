import { copyViaViews, VIEW_COPY_MAX } from '../../shuffle/index.js';
import type { SerializedOutputFormat } from '../wire/index.js';

/** Where formatted output bytes go (an FsClient file writer, which copies what it is given). */
export interface ByteSink {
  write(chunk: Buffer): Promise<void>;
  /** Bytes of its copies left to the garbage collector (FileWriter.garbageBytes). */
  readonly garbageBytes: number;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

const CHUNK_BYTES = 1024 * 1024;

function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return Buffer.from(typeof value === 'string' ? value : String(value));
}

/**
 * Formats emitted pairs for the job's output format into 1 MiB chunks that go to the sink.
 * `emit` is synchronous so user code stays simple; the task loop awaits `flush()` when
 * `needsFlush` says a chunk is full. Emitted keys and values are copied at once, never kept: a
 * task that emits millions of small Buffers holds no reference to any of them, and a chunk is
 * reused once the sink (which copies) has taken it.
 *
 * text: `key<sep>value\n`; a null/undefined key or value is left out with its separator, as Hadoop's
 * TextOutputFormat does for NullWritable. records: key bytes then value bytes.
 */
export class OutputWriter {
  private chunk: Buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  private view: DataView | undefined;
  private used = 0;
  /** Full chunks waiting for `flush` (more than one only when a single call emitted a lot). */
  private readonly full: Buffer[] = [];
  /** Chunks the sink is done with, for reuse. */
  private readonly spare: Buffer[] = [];
  private readonly separator: Buffer;
  records = 0;
  bytes = 0;

  constructor(
    private readonly format: SerializedOutputFormat,
    private readonly sink: ByteSink,
  ) {
    this.separator = Buffer.from(format.kind === 'text' ? format.separator : '');
  }

  emit(key: unknown, value: unknown): void {
    this.records++;
    const hasKey = key !== null && key !== undefined;
    const hasValue = value !== null && value !== undefined;
    if (this.format.kind === 'records') {
      if (hasKey) this.put(toBuffer(key));
      if (hasValue) this.put(toBuffer(value));
      return;
    }
    if (hasKey) this.put(Buffer.isBuffer(key) ? key : String(key));
    if (hasKey && hasValue) this.put(this.separator);
    if (hasValue) this.put(Buffer.isBuffer(value) ? value : String(value));
    this.putNewline();
  }

  /**
   * `emit(key, value)` for a key and value that are Buffers (bytes codecs) given as byte ranges of
   * `src`: key [keyStart, keyEnd), value [valueStart, valueEnd). Writes the same bytes without a
   * Buffer per record (a reduce copying merged records to its output).
   */
  emitRange(
    src: Buffer,
    keyStart: number,
    keyEnd: number,
    valueStart: number,
    valueEnd: number,
    srcView?: DataView,
  ): void {
    this.records++;
    if (this.format.kind === 'records' && valueStart === keyEnd) {
      this.putRange(src, keyStart, valueEnd, srcView);
      return;
    }
    this.putRange(src, keyStart, keyEnd, srcView);
    if (this.format.kind === 'records') {
      this.putRange(src, valueStart, valueEnd, srcView);
      return;
    }
    this.put(this.separator);
    this.putRange(src, valueStart, valueEnd, srcView);
    this.putNewline();
  }

  /** `srcView`: a DataView of `src`'s bytes (src.byteOffset at 0), when the caller has one. */
  private putRange(src: Buffer, start: number, end: number, srcView: DataView | undefined): void {
    const n = end - start;
    this.room(n);
    const chunk = this.chunk;
    const at = this.used;
    // A native copy costs a call and a view per record (TeraSort's reduce: about a tenth of its CPU
    // in them); short ranges are cheaper four bytes at a time, or byte by byte without a view.
    if (srcView !== undefined && n <= VIEW_COPY_MAX) copyViaViews(this.view ?? this.newView(), at, srcView, start, n);
    else if (n < 32) for (let i = 0; i < n; i++) chunk[at + i] = src[start + i]!;
    else src.copy(chunk, at, start, end);
    this.used = at + n;
  }

  /** A DataView of the current chunk, made on first use per chunk (`room` drops it with the chunk). */
  private newView(): DataView {
    this.view = new DataView(this.chunk.buffer, this.chunk.byteOffset, this.chunk.byteLength);
    return this.view;
  }

  private room(bytes: number): void {
    if (this.used + bytes <= this.chunk.length) return;
    if (this.used > 0) this.full.push(this.chunk.subarray(0, this.used));
    this.chunk =
      (bytes <= CHUNK_BYTES ? this.spare.pop() : undefined) ?? Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
    this.view = undefined;
    this.used = 0;
  }

  private put(part: string | Buffer): void {
    if (typeof part === 'string') {
      // UTF-8 needs at most 3 bytes per UTF-16 unit: measure exactly only when that might not fit.
      if (this.used + part.length * 3 > this.chunk.length) this.room(Buffer.byteLength(part));
      this.used += this.chunk.write(part, this.used);
      return;
    }
    this.room(part.length);
    this.used += part.copy(this.chunk, this.used);
  }

  private putNewline(): void {
    this.room(1);
    this.chunk[this.used++] = 0x0a;
  }

  /** What the sink's copies of the output so far left to the garbage collector. */
  get garbageBytes(): number {
    return this.sink.garbageBytes;
  }

  get needsFlush(): boolean {
    return this.full.length > 0;
  }

  /** Hands the full chunks (and, with `all`, the partial one) to the sink. */
  async flush(all = false): Promise<void> {
    for (const chunk of this.full.splice(0)) await this.send(chunk);
    if (all && this.used > 0) {
      await this.send(this.chunk.subarray(0, this.used));
      this.used = 0;
    }
  }

  private async send(chunk: Buffer): Promise<void> {
    this.bytes += chunk.length;
    await this.sink.write(chunk);
    // The sink has copied it: the chunk's memory takes the next records (a reduce writing 512 MiB
    // allocated 512 chunks that lived until some full GC).
    const whole = chunk.buffer;
    if (
      whole !== this.chunk.buffer &&
      whole.byteLength === CHUNK_BYTES &&
      chunk.byteOffset === 0 &&
      this.spare.length < 2
    ) {
      this.spare.push(Buffer.from(whole, 0, CHUNK_BYTES));
    }
  }

  async close(): Promise<void> {
    await this.flush(true);
    await this.sink.close();
  }

  async abort(): Promise<void> {
    this.full.length = 0;
    this.used = 0;
    await this.sink.abort();
  }
}
