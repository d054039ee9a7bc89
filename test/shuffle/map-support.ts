/**
 * Independent readers for the map side's files (written from the format descriptions in
 * src/shuffle/index-file.ts and src/shuffle/frames.ts, not with their code): index v2, frames
 * (crc32 from zlib, LZ4 from lz4-napi directly), and the WordCount / TeraSort record generators.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';
import { parseIndexV2, parseSegment, type IndexEntryV2 } from './support.js';
export { parseIndexV2, type IndexEntryV2 } from './support.js';

const lz4 = createRequire(import.meta.url)('lz4-napi') as { uncompressSync(b: Buffer): Buffer };



/** Raw record bytes of a segment of frames: u32 raw | u32 stored | u32 crc | u8 codec | 3 zero bytes. */
export function unframe(seg: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos < seg.length) {
    const rawLen = seg.readUInt32LE(pos);
    const storedLen = seg.readUInt32LE(pos + 4);
    const sum = seg.readUInt32LE(pos + 8);
    const codec = seg[pos + 12];
    const stored = seg.subarray(pos + 16, pos + 16 + storedLen);
    assert.equal(stored.length, storedLen, 'frame inside the segment');
    assert.equal(crc32(stored), sum, 'frame checksum');
    const raw = codec === 0 ? stored : lz4.uncompressSync(stored);
    assert.equal(raw.length, rawLen);
    parts.push(raw);
    pos += 16 + storedLen;
  }
  return Buffer.concat(parts);
}

export interface ReadBack {
  /** Per partition: records as "keyhex:valuehex". */
  readonly partitions: string[][];
  readonly entries: IndexEntryV2[];
  readonly dataBytes: number;
}

/** Reads a finished map output with the independent parsers and checks index against data. */
export async function readOutput(dataFile: string, indexFile: string, numPartitions: number): Promise<ReadBack> {
  const data = await readFile(dataFile);
  const { version, codec, entries } = parseIndexV2(await readFile(indexFile));
  assert.equal(version, 2);
  assert.ok(codec === 0 || codec === 1);
  assert.equal(entries.length, numPartitions);
  let expected = 0;
  const partitions: string[][] = [];
  for (const e of entries) {
    assert.equal(e.offset, expected, 'segments are contiguous');
    const seg = data.subarray(e.offset, e.offset + e.length);
    assert.equal(crc32(seg), e.crc32, 'segment crc32');
    const raw = unframe(seg);
    assert.equal(raw.length, e.rawLength, 'rawLength');
    const records = parseSegment(raw);
    assert.equal(records.length, e.records);
    partitions.push(records.map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`));
    expected += e.length;
  }
  assert.equal(data.length, expected);
  return { partitions, entries, dataBytes: data.length };
}
