/**
 * TeraGen: writes `rows` 100-byte records in Hadoop TeraGen's (GenSort's) layout:
 *
 *   bytes  0..9   key: 10 random bytes
 *   bytes 10..11  0x00 0x11
 *   bytes 12..43  the row number as 32 uppercase hex digits (a 128-bit number, zero-padded)
 *   bytes 44..47  0x88 0x99 0xAA 0xBB
 *   bytes 48..95  filler: 12 hex digits of the row's random number, each repeated 4 times
 *   bytes 96..99  0xCC 0xDD 0xEE 0xFF
 *
 *   --param rows=<total rows>   required
 *   --param maps=<map tasks>    required; map i writes a contiguous range of row numbers
 *
 * Map-only with record output, so part-m-i is the concatenation of map i's records. The random
 * bytes come from a hash of the row number alone (not Hadoop's 128-bit LCG, so the bytes differ
 * from Hadoop's), which makes the data reproducible and independent of `maps`: the same `rows`
 * always gives the same rows, however they are split.
 */
import { codecs, defineJob, generatedInput, recordOutput, type JsonValue } from 'minimr';

export const RECORD_LENGTH = 100;
export const KEY_LENGTH = 10;

type Params = Readonly<Record<string, JsonValue>>;

function intParam(params: Params, name: string, min: number): number {
  const v = params[name];
  if (v === undefined || v === null)
    throw new Error(`teragen: missing parameter \`${name}\` (give it with --param ${name}=...)`);
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new Error(`teragen: parameter \`${name}\` must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return n;
}

// A type alias rather than an interface so that it is assignable to JsonValue.
export type TeraGenSplit = { start: number; count: number };

/** Rows spread as evenly as possible: the first `rows % maps` splits get one extra row. */
export function teragenSplits(params: Params): TeraGenSplit[] {
  const rows = intParam(params, 'rows', 0);
  const maps = intParam(params, 'maps', 1);
  const base = Math.floor(rows / maps);
  const extra = rows % maps;
  const splits: TeraGenSplit[] = [];
  let start = 0;
  for (let i = 0; i < maps; i++) {
    const count = base + (i < extra ? 1 : 0);
    splits.push({ start, count });
    start += count;
  }
  return splits;
}

function parseSplit(value: JsonValue): TeraGenSplit {
  const v = value as { start?: unknown; count?: unknown } | null;
  if (v === null || typeof v !== 'object' || !Number.isSafeInteger(v.start) || !Number.isSafeInteger(v.count)) {
    throw new Error(`teragen: a split must be { start, count } with integers, got ${JSON.stringify(value)}`);
  }
  return { start: v.start as number, count: v.count as number };
}

/** Chris Wellons' lowbias32: a cheap 32-bit mixer whose outputs pass as independent uniform words. */
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

const HEX = Buffer.from('0123456789ABCDEF', 'latin1');

// Copying a template sets the constant bytes (markers and the always-zero high half of the row
// number) with one native call instead of 24 stores.
const TEMPLATE = (() => {
  const t = Buffer.alloc(RECORD_LENGTH);
  t[10] = 0x00;
  t[11] = 0x11;
  t.fill(0x30, 12, 44);
  t[44] = 0x88;
  t[45] = 0x99;
  t[46] = 0xaa;
  t[47] = 0xbb;
  t[96] = 0xcc;
  t[97] = 0xdd;
  t[98] = 0xee;
  t[99] = 0xff;
  return t;
})();

function writeHex32(buf: Buffer, at: number, word: number): void {
  for (let i = 7; i >= 0; i--) {
    buf[at + i] = HEX[word & 0xf]!;
    word >>>= 4;
  }
}

function fill4(buf: Buffer, at: number, byte: number): void {
  buf[at] = byte;
  buf[at + 1] = byte;
  buf[at + 2] = byte;
  buf[at + 3] = byte;
}

/** Writes row `row` (0 <= row < 2^53) into `buf` at `at`. */
export function generateRow(row: number, buf: Buffer, at = 0): void {
  TEMPLATE.copy(buf, at);
  const lo = row >>> 0;
  const hi = Math.floor(row / 0x1_0000_0000) >>> 0;
  // Four words = the 128 random bits GenSort takes from its generator; chained through a seed so
  // rows that differ in one bit of `lo` or `hi` share no words.
  const seed = mix32(mix32(lo ^ 0x9e3779b9) ^ hi);
  const w0 = mix32(seed ^ 0x85ebca6b);
  const w1 = mix32(seed ^ 0xc2b2ae35);
  const w2 = mix32(seed ^ 0x27d4eb2f);
  const w3 = mix32(seed ^ 0x165667b1);
  buf.writeUInt32BE(w0, at);
  buf.writeUInt32BE(w1, at + 4);
  buf[at + 8] = w2 >>> 24;
  buf[at + 9] = (w2 >>> 16) & 0xff;
  // Row number as hex: digits 0..15 stay '0' from the template (row < 2^53).
  writeHex32(buf, at + 28, hi);
  writeHex32(buf, at + 36, lo);
  // Filler = hex digits 20..31 of the 128-bit random number, i.e. the low 48 bits (w2's low half, w3).
  for (let i = 0; i < 4; i++) fill4(buf, at + 48 + i * 4, HEX[(w2 >>> (12 - i * 4)) & 0xf]!);
  for (let i = 0; i < 8; i++) fill4(buf, at + 64 + i * 4, HEX[(w3 >>> (28 - i * 4)) & 0xf]!);
}

export default defineJob({
  name: 'teragen',
  input: generatedInput(teragenSplits),
  output: recordOutput(),
  reducers: 0,
  mapKey: codecs.bytes,
  mapValue: codecs.bytes,
  map(_index, value, ctx) {
    const { start, count } = parseSplit(value);
    for (let row = start; row < start + count; row++) {
      // A fresh buffer per row because emitted buffers may be held by the collector; allocUnsafe
      // takes small buffers from Node's pool, so this is cheap.
      const rec = Buffer.allocUnsafe(RECORD_LENGTH);
      generateRow(row, rec);
      ctx.emit(rec.subarray(0, KEY_LENGTH), rec.subarray(KEY_LENGTH));
    }
  },
});
