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

export function textInput(): TextInputFormat {
  return { kind: 'text' };
}

export function fixedRecordInput(recordLength: number): FixedRecordInputFormat {
  if (!Number.isInteger(recordLength) || recordLength <= 0) {
    throw new TypeError(`fixedRecordInput: record length must be a positive integer, got ${recordLength}`);
  }
  return { kind: 'fixed', recordLength };
}

export function generatedInput(splits: (params: Readonly<Record<string, JsonValue>>) => JsonValue[]): GeneratedInputFormat {
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
