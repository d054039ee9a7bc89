/**
 * Test support for the shuffle tests: temp dirs, seeded random data and reference implementations
 * written independently of src/shuffle (own varint parser, plain Array.sort), so a test never checks
 * the code under test against itself.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';
import type { BytesCombiner, ValueFold } from '../../src/shuffle/types.js';

export type Rec = { partition: number; key: Buffer; value: Buffer };

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'minimr-shuffle-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export { seededRandom as rng } from '../../src/util/index.js';

export function randomBytes(rand: () => number, maxLen: number, alphabet = 256): Buffer {
  const len = Math.floor(rand() * (maxLen + 1));
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = Math.floor(rand() * alphabet);
  return b;
}

/**
 * Reference order: by partition, then Buffer.compare; Array.prototype.sort is stable, so equal keys keep input order.
 */
export function referenceSort(
  records: readonly Rec[],
  compare: (a: Buffer, b: Buffer) => number = Buffer.compare,
): Rec[] {
  return [...records].sort((a, b) => a.partition - b.partition || compare(a.key, b.key));
}

/** Independent parser of `[varint keyLen][varint valueLen][key][value]`*. */
export function parseSegment(buf: Buffer): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  let pos = 0;
  const varint = (): number => {
    let shift = 0;
    let n = 0;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const byte = buf[pos++]!;
      n += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (byte < 0x80) return n;
    }
  };
  while (pos < buf.length) {
    const kl = varint();
    const vl = varint();
    const key = buf.subarray(pos, pos + kl);
    const value = buf.subarray(pos + kl, pos + kl + vl);
    if (pos + kl + vl > buf.length) throw new Error('record past end');
    pos += kl + vl;
    out.push([Buffer.from(key), Buffer.from(value)]);
  }
  return out;
}

/** LEB128 varint, written independently of the code under test. */
export function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** Independent encoder for building test runs. */
export function buildSegment(records: ReadonlyArray<readonly [Buffer, Buffer]>): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of records) parts.push(varint(k.length), varint(v.length), k, v);
  return Buffer.concat(parts);
}

export interface IndexEntry {
  offset: number;
  length: number;
  rawLength: number;
  records: number;
  crc32: number;
}

/**
 * Independent index parser (format v3 documented in src/shuffle/index-file.ts), checking magic,
 * checksum and size: per partition, its runs' entries.
 */
export function parseIndexV3(buf: Buffer): { version: number; codec: number; runs: number; entries: IndexEntry[][] } {
  assert.equal(buf.toString('latin1', 0, 4), 'MRIX');
  assert.equal(buf.readUInt32LE(buf.length - 4), crc32(buf.subarray(0, buf.length - 4)));
  const n = buf.readUInt32LE(8);
  const runs = buf.readUInt32LE(12);
  const entries: IndexEntry[][] = [];
  for (let i = 0; i < n; i++) {
    const partition: IndexEntry[] = [];
    for (let r = 0; r < runs; r++) {
      const at = 16 + (i * runs + r) * 36;
      partition.push({
        offset: Number(buf.readBigUInt64LE(at)),
        length: Number(buf.readBigUInt64LE(at + 8)),
        rawLength: Number(buf.readBigUInt64LE(at + 16)),
        records: Number(buf.readBigUInt64LE(at + 24)),
        crc32: buf.readUInt32LE(at + 32),
      });
    }
    entries.push(partition);
  }
  assert.equal(buf.length, 16 + n * runs * 36 + 4);
  return { version: buf.readUInt16LE(4), codec: buf.readUInt16LE(6), runs, entries };
}

/** Per partition, the entry of its one run (an output of one run per partition). */
export function parseIndex(buf: Buffer): IndexEntry[] {
  const { entries } = parseIndexV3(buf);
  return entries.map((runs) => {
    assert.equal(runs.length, 1, 'one run per partition');
    return runs[0]!;
  });
}

export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
}

export function hex(records: Iterable<readonly [Buffer, Buffer]>): string[] {
  return [...records].map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`);
}

const lz4 = createRequire(import.meta.url)('lz4-napi') as { compressSync(b: Buffer): Buffer };

/** Independent frame writer: u32 raw | u32 stored | u32 crc32(stored) | u8 codec | 3 zero bytes, then stored. */
export function frame(raw: Buffer, compress: boolean): Buffer {
  const stored = compress ? lz4.compressSync(raw) : raw;
  const head = Buffer.alloc(16);
  head.writeUInt32LE(raw.length, 0);
  head.writeUInt32LE(stored.length, 4);
  head.writeUInt32LE(crc32(stored), 8);
  head[12] = compress ? 1 : 0;
  return Buffer.concat([head, stored]);
}

/**
 * A combiner that must never be called, whose fold sums the big-endian u32 at `at` bytes into each
 * value (mod 2^32) and writes it at the same place of a `width`-byte value (the rest zero); `groups`
 * counts the groups folded. For tests that the merges fold instead of calling the combiner.
 */
export function u32SummingFold(at: number, width: number): { combiner: BytesCombiner; groups: () => number } {
  let groups = 0;
  let sum = 0;
  const fold: ValueFold = {
    out: Buffer.alloc(width),
    first(buf, _keyStart, _keyEnd, valueStart) {
      groups++;
      sum = buf.readUInt32BE(valueStart + at);
    },
    add(buf, _keyStart, _keyEnd, valueStart) {
      sum = (sum + buf.readUInt32BE(valueStart + at)) % 2 ** 32;
    },
    finish() {
      fold.out.writeUInt32BE(sum, at);
      return width;
    },
  };
  const combiner: BytesCombiner = Object.assign(
    () => {
      throw new Error('the merges run the fold, not the combiner, in byte order');
    },
    { fold: () => fold },
  );
  return { combiner, groups: () => groups };
}
