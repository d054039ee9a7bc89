import type { SerializedOutputFormat } from './protocol.js';

/** Where formatted output bytes go (an FsClient file writer). */
export interface ByteSink {
  write(chunk: Buffer): Promise<void>;
  close(): Promise<unknown>;
  abort(): Promise<void>;
}

const FLUSH_BYTES = 4 * 1024 * 1024;

function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return Buffer.from(typeof value === 'string' ? value : String(value));
}

/**
 * Formats emitted pairs for the job's output format and hands them to the sink in large chunks.
 * `emit` is synchronous so user code stays simple; the task loop awaits `flushIfFull()` between
 * calls, which keeps memory bounded without making every emit async.
 *
 * text: `key<sep>value\n`; a null/undefined key or value is left out with its separator, as Hadoop's
 * TextOutputFormat does for NullWritable. records: key bytes then value bytes.
 */
export class OutputWriter {
  private readonly parts: Array<string | Buffer> = [];
  private pendingBytes = 0;
  records = 0;
  bytes = 0;

  constructor(
    private readonly format: SerializedOutputFormat,
    private readonly sink: ByteSink,
  ) {}

  emit(key: unknown, value: unknown): void {
    this.records++;
    if (this.format.kind === 'records') {
      if (key !== null && key !== undefined) this.push(toBuffer(key));
      if (value !== null && value !== undefined) this.push(toBuffer(value));
      return;
    }
    const hasKey = key !== null && key !== undefined;
    const hasValue = value !== null && value !== undefined;
    if (hasKey) this.push(Buffer.isBuffer(key) ? key : String(key));
    if (hasKey && hasValue) this.push(this.format.separator);
    if (hasValue) this.push(Buffer.isBuffer(value) ? value : String(value));
    this.push('\n');
  }

  private push(part: string | Buffer): void {
    this.parts.push(part);
    // Strings are counted by length: exact for ASCII, an underestimate otherwise, good enough for flushing.
    this.pendingBytes += part.length;
  }

  get needsFlush(): boolean {
    return this.pendingBytes >= FLUSH_BYTES;
  }

  async flushIfFull(): Promise<void> {
    if (this.needsFlush) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const buffers: Buffer[] = [];
    let run: string[] = [];
    for (const part of this.parts) {
      if (typeof part === 'string') run.push(part);
      else {
        if (run.length > 0) {
          buffers.push(Buffer.from(run.join('')));
          run = [];
        }
        buffers.push(part);
      }
    }
    if (run.length > 0) buffers.push(Buffer.from(run.join('')));
    this.parts.length = 0;
    this.pendingBytes = 0;
    const chunk = buffers.length === 1 ? buffers[0]! : Buffer.concat(buffers);
    this.bytes += chunk.length;
    await this.sink.write(chunk);
  }

  async close(): Promise<void> {
    await this.flush();
    await this.sink.close();
  }

  async abort(): Promise<void> {
    this.parts.length = 0;
    await this.sink.abort();
  }
}

