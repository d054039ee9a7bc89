import type { JsonValue } from './json.js';

/** Lines of text: key = byte offset of the line in the file, value = the line without its newline. */
export interface TextInputFormat {
  readonly kind: 'text';
}

/** Fixed-length binary records (TeraSort: 100 bytes): key = byte offset, value = the record. */
export interface FixedRecordInputFormat {
  readonly kind: 'fixed';
  readonly recordLength: number;
}

/**
 * No input files: `splits(params)` runs in the submitting client and returns one JSON value per map
 * task; the map is called once per split with (split index, split value). TeraGen and Pi use it.
 */
export interface GeneratedInputFormat {
  readonly kind: 'generated';
  readonly splits: (params: Readonly<Record<string, JsonValue>>) => JsonValue[];
}

export type InputFormat = TextInputFormat | FixedRecordInputFormat | GeneratedInputFormat;

/** Record types each input format hands to `map`. */
export type InputKey<F extends InputFormat> = F extends GeneratedInputFormat ? number : number;
export type InputValue<F extends InputFormat> = F extends TextInputFormat
  ? string
  : F extends FixedRecordInputFormat
    ? Buffer
    : F extends GeneratedInputFormat
      ? JsonValue
      : never;

/** A run of whole input records as raw bytes, as a whole-split map (`mapSplit`) reads them. */
export interface InputChunk {
  /**
   * Whole records in file order, never one cut between chunks however long. Text: whole lines, each
   * with its `\n` (a CRLF line with its `\r\n`); only a file's last line may lack its `\n`. The
   * lines are exactly those `map` would get, by Hadoop's LineRecordReader rule at block edges.
   * Fixed-length records: a whole number of records. Usually a slice of a block as read (about
   * 1 MiB; fixed-length records of a map with a sort buffer at most an eighth of that buffer, each
   * piece handed over once the buffer has room for it, so that a map emitting what it reads never
   * makes the buffer spill synchronously): it is never reused, so it may be kept, unless the chunks
   * were asked for with `reuseBuffers` (then it is valid only until the next chunk is asked for).
   */
  readonly bytes: Buffer;
  /** File offset of `bytes[0]`: the key `map` would get for the chunk's first record. */
  readonly offset: number;
}

export interface ChunkOptions {
  /**
   * The map is done with each chunk's bytes when it asks for the next chunk (it keeps no slice of
   * them: `emit` and `emitKeyBytes` copy what they are given): the reader may then read into the
   * same memory again, instead of a fresh buffer per read. What the map emits with
   * `emitRecordBytes` from such chunks is then not garbage, and is not counted as such when the task
   * paces its full GCs. Default false.
   */
  readonly reuseBuffers?: boolean;
}

/**
 * A map task's whole split, for `mapSplit`. Read it one way, once: `chunks()` (text and
 * fixed-length input) or `records()` (any input).
 */
export interface SplitInput<F extends InputFormat> {
  /** The split's records as chunks of raw bytes. Generated input has no bytes: use `records()`. */
  chunks(options?: ChunkOptions): AsyncIterable<InputChunk>;
  /** The split's records one by one, `[key, value]` as `map` gets them. */
  records(): AsyncIterable<readonly [number, InputValue<F>]>;
}

export function textInput(): TextInputFormat {
  return { kind: 'text' };
}

export function fixedRecordInput(recordLength: number): FixedRecordInputFormat {
  if (!Number.isInteger(recordLength) || recordLength <= 0) {
    throw new TypeError(`fixedRecordInput: record length must be a positive integer, got ${recordLength}`);
  }
  return { kind: 'fixed', recordLength };
}

export function generatedInput(
  splits: (params: Readonly<Record<string, JsonValue>>) => JsonValue[],
): GeneratedInputFormat {
  return { kind: 'generated', splits };
}

/**
 * `text`: one line per output pair, `key<TAB>value` (Hadoop's TextOutputFormat); a Buffer is written
 * raw, anything else with String(). `records`: key bytes then value bytes, nothing between (TeraSort).
 */
export type OutputFormat = { readonly kind: 'text'; readonly separator: string } | { readonly kind: 'records' };

export function textOutput(separator = '\t'): OutputFormat {
  return { kind: 'text', separator };
}

export function recordOutput(): OutputFormat {
  return { kind: 'records' };
}
