import type { ChunkOptions, InputChunk, InputFormat, SplitInput } from '../../api/index.js';
import type { JsonValue } from '../../api/json.js';
import { MinimrError } from '../../errors.js';
import {
  openFixedRecordChunkReader,
  openFixedRecordReader,
  openLineChunkReader,
  openLineReader,
  type FsClient,
  isExternalUri,
  openExternalStore,
  type InputSplit,
  type RangeSource,
  type RecordBatchReader,
  type RecordChunkReader,
} from '../../storage/index.js';
import { countNewlines } from './newline-count.js';
import type { SerializedInputFormat, TaskInput } from '../wire/index.js';

export interface RecordBatch {
  offsets: number[];
  values: Array<string | Buffer | JsonValue>;
  bytesRead: number;
}

export interface TaskRecordReader {
  next(): Promise<RecordBatch | null>;
  close(): Promise<void>;
  /** Input bytes this reader will cover, for progress. */
  readonly totalBytes: number;
}

function splitOf(input: Extract<TaskInput, { kind: 'file' }>): InputSplit {
  return {
    path: input.path,
    start: input.start,
    length: input.length,
    fileLength: input.fileLength,
    preferredWorkers: [],
    preferredRacks: [],
  };
}

/**
 * Where a split's bytes come from: the block store, or the store its URI names (opened with the job's
 * store settings, each read pinned to the version listed when the job was planned).
 */
function sourceOf(fs: FsClient, input: Extract<TaskInput, { kind: 'file' }>): RangeSource {
  if (!isExternalUri(input.path)) return fs;
  return {
    async *readRange(path, start, end) {
      const { store } = await openExternalStore(input.path, input.store ?? {});
      yield* store.readRange(path, start, end, input.version);
    },
  };
}

/** Opens the records of one task's input according to the job's input format. */
export function openTaskInput(
  fs: FsClient,
  input: TaskInput,
  format: SerializedInputFormat,
  mapIndex: number,
): TaskRecordReader {
  if (input.kind === 'file') {
    const split = splitOf(input);
    let reader: RecordBatchReader<string> | RecordBatchReader<Buffer>;
    const source = sourceOf(fs, input);
    if (format.kind === 'fixed') reader = openFixedRecordReader(source, split, format.recordLength);
    else reader = openLineReader(source, split);
    return {
      totalBytes: input.length,
      next: () => reader.next() as Promise<RecordBatch | null>,
      close: () => reader.close(),
    };
  }
  // Generated input: one record per split, keyed by the split's index.
  let done = false;
  const value = input.kind === 'generated' ? input.value : null;
  return {
    totalBytes: 0,
    async next() {
      if (done) return null;
      done = true;
      return { offsets: [mapIndex], values: [value], bytesRead: 0 };
    },
    async close() {},
  };
}

/** What the attempt does between chunks (and records) of a whole-split map. */
export interface SplitPacing {
  /** Whether `pause` should run now, after a record of `records()` (cheap: checked per record). */
  due(): boolean;
  /** Reports progress, waits for the sort buffer's room, flushes output, throttles. */
  pause(bytesRead: number, totalBytes: number): Promise<void>;
  /**
   * Most bytes of fixed-length records a chunk hands the map at once: about what the sort buffer
   * can still take once a spill has started (none: chunks as read).
   */
  readonly chunkBytes?: number;
  /** Waits, while a spill is being written, until the sort buffer can take about `bytes` more of map output. */
  roomFor?(bytes: number): Promise<void>;
}

const NO_PACING: SplitPacing = { due: () => false, pause: async () => undefined };
const NEWLINE = 0x0a;

/**
 * A map task's split for `mapSplit`: chunks of whole records from the storage's chunk readers (so
 * the records are those `map` would get), or the records themselves from the record readers. It
 * counts what was read (MAP_INPUT_RECORDS and _BYTES) and lets the attempt pace itself between
 * chunks. `maxRecords` stops it early (the client's sample of a split).
 */
export class TaskSplitInput implements SplitInput<InputFormat> {
  bytesRead = 0;
  recordsRead = 0;
  /**
   * The chunks are read into the same memory over and over (`reuseBuffers`): what is emitted from them is not garbage.
   */
  reusesBuffers = false;
  readonly totalBytes: number;
  private reading: 'chunks' | 'records' | undefined;
  private closeReader: (() => Promise<void>) | undefined;

  constructor(
    private readonly fs: FsClient,
    private readonly input: TaskInput,
    private readonly format: SerializedInputFormat,
    private readonly mapIndex: number,
    private readonly pacing: SplitPacing = NO_PACING,
    private readonly maxRecords = Number.POSITIVE_INFINITY,
  ) {
    this.totalBytes = input.kind === 'file' ? input.length : 0;
  }

  chunks(options: ChunkOptions = {}): AsyncIterable<InputChunk> {
    this.start('chunks');
    const { input, format } = this;
    if (input.kind !== 'file' || format.kind === 'generated') {
      throw new MinimrError(
        'EBADJOB',
        'generated input has no bytes: a mapSplit of generated input reads input.records()',
      );
    }
    const split = splitOf(input);
    const readerOptions = { reuseBuffers: options.reuseBuffers === true };
    this.reusesBuffers = readerOptions.reuseBuffers;
    const reader =
      format.kind === 'fixed'
        ? openFixedRecordChunkReader(sourceOf(this.fs, input), split, format.recordLength, readerOptions)
        : openLineChunkReader(sourceOf(this.fs, input), split, readerOptions);
    this.closeReader = () => reader.close();
    return this.chunksOf(reader, format.kind === 'fixed' ? format.recordLength : 0);
  }

  records(): AsyncIterable<readonly [number, never]> {
    this.start('records');
    const reader = openTaskInput(this.fs, this.input, this.format, this.mapIndex);
    this.closeReader = () => reader.close();
    return this.recordsOf(reader);
  }

  /** Closes the reader when the map did not read to the end. */
  async close(): Promise<void> {
    await this.closeReader?.();
  }

  private start(how: 'chunks' | 'records'): void {
    if (this.reading !== undefined) {
      throw new MinimrError('EBADJOB', `a mapSplit reads its input once: input.${how}() after input.${this.reading}()`);
    }
    this.reading = how;
  }

  /** `recordLength` 0: lines. */
  private async *chunksOf(reader: RecordChunkReader, recordLength: number): AsyncIterable<InputChunk> {
    try {
      for (
        let chunk = await reader.next();
        chunk !== null && this.recordsRead < this.maxRecords;
        chunk = await reader.next()
      ) {
        let bytes = chunk.bytes;
        let records = recordLength > 0 ? bytes.length / recordLength : countLines(bytes);
        if (this.recordsRead + records > this.maxRecords) {
          records = this.maxRecords - this.recordsRead;
          bytes = bytes.subarray(0, recordLength > 0 ? records * recordLength : endOfLine(bytes, records));
        }
        this.recordsRead += records;
        this.bytesRead += chunk.bytesRead - chunk.bytes.length + bytes.length;
        // Fixed-length records come in pieces the sort buffer can take while a spill is written, and
        // each waits for that room first: a map that emits every record it reads (TeraSort) then
        // never makes collect spill synchronously, as it would if a whole chunk met a full buffer.
        const { chunkBytes, roomFor } = this.pacing;
        if (recordLength > 0 && chunkBytes !== undefined && roomFor !== undefined) {
          const step = Math.max(1, Math.floor(chunkBytes / recordLength)) * recordLength;
          for (let at = 0; at < bytes.length; at += step) {
            const piece = bytes.length <= step ? bytes : bytes.subarray(at, at + step);
            await roomFor(piece.length);
            yield { bytes: piece, offset: chunk.offset + at };
          }
        } else {
          yield { bytes, offset: chunk.offset };
        }
        await this.pacing.pause(this.bytesRead, this.totalBytes);
      }
    } finally {
      await reader.close();
    }
  }

  private async *recordsOf(reader: {
    next(): Promise<RecordBatch | null>;
    close(): Promise<void>;
  }): AsyncIterable<readonly [number, never]> {
    const pacing = this.pacing;
    try {
      for (let batch = await reader.next(); batch !== null; batch = await reader.next()) {
        const { offsets, values } = batch;
        for (let i = 0; i < values.length; i++) {
          if (this.recordsRead >= this.maxRecords) return;
          this.recordsRead++;
          yield [offsets[i]!, values[i] as never];
          if ((i & 63) === 63 || pacing.due())
            await pacing.pause(this.bytesRead + (batch.bytesRead * i) / values.length, this.totalBytes);
        }
        this.bytesRead += batch.bytesRead;
        await pacing.pause(this.bytesRead, this.totalBytes);
      }
    } finally {
      await reader.close();
    }
  }
}

/** Lines in a chunk of whole lines: its newlines, plus a file's last line without one. */
function countLines(bytes: Buffer): number {
  const n = countNewlines(bytes);
  return bytes.length > 0 && bytes[bytes.length - 1] !== NEWLINE ? n + 1 : n;
}

/** Bytes of the first `lines` lines of a chunk. */
function endOfLine(bytes: Buffer, lines: number): number {
  let end = 0;
  for (let i = 0; i < lines; i++) {
    const newline = bytes.indexOf(NEWLINE, end);
    if (newline < 0) return bytes.length;
    end = newline + 1;
  }
  return end;
}
