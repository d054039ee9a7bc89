/**
 * Independent readers for the map side's files (written from the format descriptions in
 * src/shuffle/index-file.ts and src/shuffle/frames.ts, not with their code): index v3, frames
 * (crc32 from zlib, LZ4 from lz4-napi directly), and the WordCount / TeraSort record generators.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { crc32 } from 'node:zlib';
import { parseIndexV3, parseSegment, type IndexEntry } from './support.js';
export { parseIndexV3, type IndexEntry } from './support.js';

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
  /**
   * Per partition: records as "keyhex:valuehex", as a reducer sees them: the runs merged by key
   * (`compare`), equal keys in run order.
   */
  readonly partitions: string[][];
  /** Per partition, its runs' records as stored. */
  readonly runs: string[][][];
  /** Per partition, its runs' index entries. */
  readonly entries: IndexEntry[][];
  readonly dataBytes: number;
}

/**
 * Reads a finished map output with the independent parsers and checks index against data: every run
 * checksummed and sorted by `compare` (byte order by default), runs laid out one after the other
 * (all partitions' first runs, then all second runs).
 */
export async function readOutput(
  dataFile: string,
  indexFile: string,
  numPartitions: number,
  compare: (a: Buffer, b: Buffer) => number = Buffer.compare,
): Promise<ReadBack> {
  const data = await readFile(dataFile);
  const { version, codec, runs: runCount, entries } = parseIndexV3(await readFile(indexFile));
  assert.equal(version, 3);
  assert.ok(codec === 0 || codec === 1);
  assert.ok(runCount === 1 || runCount === 2);
  assert.equal(entries.length, numPartitions);
  let expected = 0;
  const runs: string[][][] = entries.map(() => []);
  const partitions: string[][] = [];
  for (let r = 0; r < runCount; r++) {
    for (const [p, partition] of entries.entries()) {
      const e = partition[r]!;
      assert.equal(e.offset, expected, 'segments are contiguous');
      const seg = data.subarray(e.offset, e.offset + e.length);
      assert.equal(crc32(seg), e.crc32, 'segment crc32');
      const raw = unframe(seg);
      assert.equal(raw.length, e.rawLength, 'rawLength');
      const records = parseSegment(raw);
      assert.equal(records.length, e.records);
      for (let i = 1; i < records.length; i++)
        assert.ok(compare(records[i - 1]![0], records[i]![0]) <= 0, `run ${r} of partition ${p} is sorted`);
      runs[p]!.push(records.map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`));
      expected += e.length;
    }
  }
  assert.equal(data.length, expected);
  for (const partitionRuns of runs) {
    const tagged = partitionRuns.flatMap((records) =>
      records.map((text) => ({ key: Buffer.from(text.slice(0, text.indexOf(':')), 'hex'), text })),
    );
    // Array.prototype.sort is stable: equal keys keep run order.
    partitions.push(tagged.sort((a, b) => compare(a.key, b.key)).map((r) => r.text));
  }
  return { partitions, runs, entries, dataBytes: data.length };
}
