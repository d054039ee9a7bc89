import type { JsonValue } from '../api/json.js';
import { openFixedRecordReader, openLineReader, type FsClient, type RecordBatchReader } from '../storage/index.js';
import type { SerializedInputFormat, TaskInput } from './protocol.js';

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

/** Opens the records of one task's input according to the job's input format. */
export function openTaskInput(fs: FsClient, input: TaskInput, format: SerializedInputFormat, mapIndex: number): TaskRecordReader {
  if (input.kind === 'file') {
    const split = { ...input, preferredWorkers: [], preferredRacks: [] };
    let reader: RecordBatchReader<string> | RecordBatchReader<Buffer>;
    if (format.kind === 'fixed') reader = openFixedRecordReader(fs, split, format.recordLength);
    else reader = openLineReader(fs, split);
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
