import { MinimrError } from '../errors.js';

/**
 * The record format of a segment: `[varint keyLen][varint valueLen][key][value]` repeated, varints
 * unsigned LEB128. Lengths first so a reader can slice key and value without copying; no per-record
 * checksum because the whole segment carries a crc32 in the index.
 */

export type KeyValue = [key: Buffer, value: Buffer];

/** Largest length a varint may carry: lengths live in Uint32 arrays and Buffers stay below 4 GiB. */
const MAX_VARINT = 0xffffffff;

export function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Writes `n` at `offset`, returns the offset after it. */
export function writeVarint(buf: Buffer, offset: number, n: number): number {
  while (n >= 0x80) {
    buf[offset++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[offset++] = n;
  return offset;
}

function malformed(why: string, offset: number): MinimrError {
  return new MinimrError('EPROTOCOL', `malformed shuffle segment: ${why} at byte ${offset}`, { offset });
}

/** Reads a varint; returns value and next offset packed in a reused pair to avoid allocation. */
function readVarint(buf: Buffer, offset: number, out: { value: number; next: number }): void {
  let result = 0;
  let mul = 1;
  const start = offset;
  for (;;) {
    if (offset >= buf.length) throw malformed('truncated varint', start);
    const b = buf[offset++]!;
    result += (b & 0x7f) * mul;
    if ((b & 0x80) === 0) break;
    mul *= 128;
    if (offset - start >= 5) throw malformed('varint too long', start);
  }
  if (result > MAX_VARINT) throw malformed('length out of range', start);
  out.value = result;
  out.next = offset;
}

/**
 * Parses one segment held in memory. Yields key/value as views into the segment (no copies), so they
 * stay valid as long as the segment Buffer does.
 */
export class SegmentReader implements Iterable<KeyValue> {
  readonly data: Buffer;

  constructor(data: Buffer) {
    this.data = data;
  }

  *[Symbol.iterator](): Iterator<KeyValue> {
    const buf = this.data;
    const v = { value: 0, next: 0 };
    let pos = 0;
    while (pos < buf.length) {
      readVarint(buf, pos, v);
      const keyLen = v.value;
      readVarint(buf, v.next, v);
      const valueLen = v.value;
      const keyStart = v.next;
      const valueStart = keyStart + keyLen;
      const end = valueStart + valueLen;
      if (end > buf.length) throw malformed('record runs past the end of the segment', pos);
      pos = end;
      yield [buf.subarray(keyStart, valueStart), buf.subarray(valueStart, end)];
    }
  }

  /** Counts records without materializing them (checks a segment against its index entry). */
  countRecords(): number {
    let n = 0;
    const buf = this.data;
    const v = { value: 0, next: 0 };
    let pos = 0;
    while (pos < buf.length) {
      readVarint(buf, pos, v);
      const keyLen = v.value;
      readVarint(buf, v.next, v);
      pos = v.next + keyLen + v.value;
      if (pos > buf.length) throw malformed('record runs past the end of the segment', pos);
      n++;
    }
    return n;
  }
}

/** Encodes records into a single Buffer (tests and small in-memory segments). */
export function encodeSegment(records: Iterable<KeyValue>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of records) {
    const head = Buffer.allocUnsafe(varintSize(key.length) + varintSize(value.length));
    writeVarint(head, writeVarint(head, 0, key.length), value.length);
    parts.push(head, key, value);
  }
  return Buffer.concat(parts);
}
