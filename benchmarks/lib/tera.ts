/**
 * TeraSort inputs written locally with the TeraGen app's own row generator (so the bytes are what
 * `teragen` would write for the same row count), plus the GNU sort peer's view of the same records.
 *
 * GNU sort needs lines and TeraGen records are binary (the key is 10 random bytes, which may hold
 * newlines; byte 10 is always 0x00), so the peer sorts a text file with one 100-byte line per
 * record, in the same order as the records:
 *
 *   chars  0..19   the 10-byte key as 20 lowercase hex digits (hex preserves byte order, so
 *                  `LC_ALL=C sort` orders the lines exactly as TeraSort orders the keys)
 *   chars 20..51   the record's row number (bytes 12..43 of the record, already ASCII hex)
 *   chars 52..98   the first 47 filler characters (bytes 48..94, ASCII hex)
 *   char  99       newline
 *
 * Same record count and the same total bytes as the binary input. The first 52 characters (key and
 * row number) identify a record, so the two sorted outputs can be compared record by record.
 */
import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { generateRow } from '../../apps/teragen.js';
import { recordHash } from '../../apps/teravalidate.js';

export const RECORD = 100;
/** Bytes of a record's projection (hex key + row number) that both sorted outputs are compared on. */
export const PROJECTION = 52;

const HEX = Buffer.from('0123456789abcdef', 'latin1');

export interface TeraInputs {
  rows: number;
  recordsPath: string;
  linesPath: string;
  /** What TeraValidate reports for these records in any order: 16 hex digits. */
  checksum: string;
}

/** Writes the 20 hex digits of `rec`'s key and its 32-digit row number at `out[at..at+52)`. */
export function projectRecord(rec: Buffer, recAt: number, out: Buffer, at: number): void {
  for (let i = 0; i < 10; i++) {
    const b = rec[recAt + i]!;
    out[at + 2 * i] = HEX[b >>> 4]!;
    out[at + 2 * i + 1] = HEX[b & 0xf]!;
  }
  rec.copy(out, at + 20, recAt + 12, recAt + 44);
}

export async function writeTeraInputs(recordsPath: string, linesPath: string, rows: number): Promise<TeraInputs> {
  const PER_CHUNK = 10_000;
  const recs = Buffer.allocUnsafe(PER_CHUNK * RECORD);
  const lines = Buffer.allocUnsafe(PER_CHUNK * RECORD);
  const rf = await open(recordsPath, 'w');
  const lf = await open(linesPath, 'w');
  let sumHi = 0;
  let sumLo = 0;
  try {
    for (let row = 0; row < rows; row += PER_CHUNK) {
      const n = Math.min(PER_CHUNK, rows - row);
      for (let i = 0; i < n; i++) {
        const at = i * RECORD;
        generateRow(row + i, recs, at);
        projectRecord(recs, at, lines, at);
        recs.copy(lines, at + PROJECTION, at + 48, at + 95);
        lines[at + 99] = 0x0a;
        const [hi, lo] = recordHash(recs.subarray(at, at + RECORD));
        sumLo += lo;
        sumHi += hi;
        if (sumLo >= 0x1_0000_0000) {
          sumLo -= 0x1_0000_0000;
          sumHi += 1;
        }
        sumHi >>>= 0;
      }
      await rf.write(recs, 0, n * RECORD);
      await lf.write(lines, 0, n * RECORD);
    }
  } finally {
    await rf.close();
    await lf.close();
  }
  const checksum = sumHi.toString(16).padStart(8, '0') + sumLo.toString(16).padStart(8, '0');
  return { rows, recordsPath, linesPath, checksum };
}

/** Regroups a byte stream into buffers of whole `size`-byte records; throws on a partial tail. */
export async function* wholeRecords(source: AsyncIterable<Buffer>, size: number): AsyncIterable<Buffer> {
  let carry: Buffer | undefined;
  for await (const chunk0 of source) {
    const chunk = carry ? Buffer.concat([carry, chunk0]) : chunk0;
    const whole = chunk.length - (chunk.length % size);
    if (whole > 0) yield chunk.subarray(0, whole);
    carry = whole < chunk.length ? Buffer.from(chunk.subarray(whole)) : undefined;
  }
  if (carry) throw new Error(`stream ends with a partial ${size}-byte record (${carry.length} bytes)`);
}

/** Digest of a sorted sequence: SHA-256 over the projections of its records, in order. */
export class SequenceDigest {
  records = 0;
  private readonly hash: Hash = createHash('sha256');

  /** `chunk` holds whole binary records. */
  addRecords(chunk: Buffer): void {
    const n = chunk.length / RECORD;
    const out = Buffer.allocUnsafe(n * PROJECTION);
    for (let i = 0; i < n; i++) projectRecord(chunk, i * RECORD, out, i * PROJECTION);
    this.hash.update(out);
    this.records += n;
  }

  /** `chunk` holds whole 100-byte peer lines. */
  addLines(chunk: Buffer): void {
    const n = chunk.length / RECORD;
    const out = Buffer.allocUnsafe(n * PROJECTION);
    for (let i = 0; i < n; i++) {
      if (chunk[i * RECORD + 99] !== 0x0a) throw new Error(`line ${this.records + i} is not 100 bytes`);
      chunk.copy(out, i * PROJECTION, i * RECORD, i * RECORD + PROJECTION);
    }
    this.hash.update(out);
    this.records += n;
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
