import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import {
  decodeIndex,
  encodeIndex,
  encodeSegment,
  mapOutputPaths,
  readIndexFile,
  SegmentReader,
} from '../../src/shuffle/index.js';
import { isMinimrError } from '../../src/errors.js';
import { buildSegment, hex, parseIndex, parseSegment, randomBytes, rng, withTempDir } from './support.js';
import { parseIndexV3 } from './map-support.js';

test('segment encode/parse round trip agrees with an independent codec', () => {
  const rand = rng(7);
  const records: Array<[Buffer, Buffer]> = [];
  for (let i = 0; i < 500; i++) records.push([randomBytes(rand, 40), randomBytes(rand, 300)]);
  records.push([Buffer.alloc(0), Buffer.alloc(0)], [Buffer.alloc(200, 1), Buffer.alloc(70000, 2)]);
  const ours = encodeSegment(records);
  assert.deepEqual(ours, buildSegment(records));
  assert.deepEqual(hex(new SegmentReader(buildSegment(records))), hex(records));
  assert.equal(new SegmentReader(ours).countRecords(), records.length);
  assert.deepEqual(hex(parseSegment(ours)), hex(records));
});

test('a malformed segment is rejected with EPROTOCOL', () => {
  const seg = buildSegment([[Buffer.from('abc'), Buffer.from('defgh')]]);
  assert.throws(
    () => [...new SegmentReader(seg.subarray(0, seg.length - 1))],
    (e: unknown) => isMinimrError(e, 'EPROTOCOL'),
  );
  assert.throws(
    () => [...new SegmentReader(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))],
    (e: unknown) => isMinimrError(e, 'EPROTOCOL'),
  );
});

test('index v3 encode/decode round trip (runs, rawLength, codec id), checksum detects any flipped byte', () => {
  const entries = [
    { offset: 0, length: 10, rawLength: 25, records: 2, crc32: 0xdeadbeef },
    { offset: 10, length: 0, rawLength: 0, records: 0, crc32: 0 },
    { offset: 10, length: 2 ** 40, rawLength: 2 ** 42 + 3, records: 12345678901, crc32: 1 },
  ];
  const oneRun = entries.map((e) => [e]);
  const twoRuns = [
    [entries[0]!, entries[2]!],
    [entries[1]!, { ...entries[0]!, offset: 7 }],
  ];
  for (const codec of [0, 1]) {
    for (const partitions of [oneRun, twoRuns]) {
      const buf = encodeIndex(partitions, codec);
      assert.deepEqual(decodeIndex(buf), { codec, partitions });
      assert.deepEqual(parseIndexV3(buf), { version: 3, codec, runs: partitions[0]!.length, entries: partitions });
      assert.equal(buf.length, 16 + 36 * partitions.length * partitions[0]!.length + 4);
    }
    const buf = encodeIndex(oneRun, codec);
    assert.deepEqual(parseIndex(buf), entries);
    assert.equal(buf.readUInt32LE(buf.length - 4), crc32(buf.subarray(0, buf.length - 4)));
    for (let i = 0; i < buf.length; i++) {
      const bad = Buffer.from(buf);
      bad[i] ^= 0x10;
      assert.throws(
        () => decodeIndex(bad),
        (e: unknown) => isMinimrError(e, 'ECHECKSUM'),
        `byte ${i}`,
      );
    }
    assert.throws(
      () => decodeIndex(buf.subarray(0, buf.length - 1)),
      (e: unknown) => isMinimrError(e, 'ECHECKSUM'),
    );
  }
});

/** Rewrites a header field and fixes the trailer checksum, so only the field's check can refuse it. */
function withHeader(buf: Buffer, offset: number, value: number): Buffer {
  const out = Buffer.from(buf);
  out.writeUInt16LE(value, offset);
  out.writeUInt32LE(crc32(out.subarray(0, out.length - 4)), out.length - 4);
  return out;
}

test('index decode refuses unknown versions and codecs with ECHECKSUM naming the file', () => {
  const buf = encodeIndex([[{ offset: 0, length: 3, rawLength: 3, records: 1, crc32: 5 }]], 1);
  for (const version of [1, 2, 4, 0xffff]) {
    assert.throws(
      () => decodeIndex(withHeader(buf, 4, version), '/x/file.out.index'),
      (e: unknown) =>
        isMinimrError(e, 'ECHECKSUM') && /version/.test(e.message) && e.message.includes('/x/file.out.index'),
    );
  }
  for (const codec of [2, 7, 0xffff]) {
    assert.throws(
      () => decodeIndex(withHeader(buf, 6, codec), '/x/file.out.index'),
      (e: unknown) => isMinimrError(e, 'ECHECKSUM') && /codec/.test(e.message),
    );
  }
  for (const runs of [0, 3]) {
    const bad = Buffer.from(buf);
    bad.writeUInt32LE(runs, 12);
    bad.writeUInt32LE(crc32(bad.subarray(0, bad.length - 4)), bad.length - 4);
    assert.throws(
      () => decodeIndex(bad, '/x/file.out.index'),
      (e: unknown) => isMinimrError(e, 'ECHECKSUM') && new RegExp(`${runs} runs`).test(e.message),
    );
  }
  const entry = { offset: 0, length: 3, rawLength: 3, records: 1, crc32: 5 };
  for (const partitions of [[[entry], [entry, entry]], [[entry, entry, entry]], [[]]]) {
    assert.throws(
      () => encodeIndex(partitions),
      (e: unknown) => isMinimrError(e, 'EINTERNAL'),
    );
  }
  // A version 1 index (28-byte entries, no rawLength) as the first version wrote it.
  const v1 = Buffer.alloc(12 + 28 + 4);
  v1.write('MRIX', 0, 'latin1');
  v1.writeUInt16LE(1, 4);
  v1.writeUInt32LE(1, 8);
  v1.writeUInt32LE(crc32(v1.subarray(0, v1.length - 4)), v1.length - 4);
  assert.throws(
    () => decodeIndex(v1),
    (e: unknown) => isMinimrError(e, 'ECHECKSUM') && /version 1/.test(e.message),
  );
});

test('readIndexFile verifies the file on disk', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'idx');
    await writeFile(file, encodeIndex([[{ offset: 0, length: 3, rawLength: 9, records: 1, crc32: 5 }]]));
    assert.equal((await readIndexFile(file)).partitions.length, 1);
    const bytes = await readFile(file);
    bytes[13] ^= 1;
    await writeFile(file, bytes);
    await assert.rejects(
      readIndexFile(file),
      (e: unknown) => isMinimrError(e, 'ECHECKSUM') && e.message.includes(file),
    );
  });
});

test('mapOutputPaths accepts only [A-Za-z0-9_-] ids', () => {
  const p = mapOutputPaths('/root', 'job_1', 'attempt-0_m_3');
  assert.equal(p.dir, '/root/job_1/attempt-0_m_3');
  assert.ok(p.dataFile.startsWith(p.dir + '/') && p.indexFile.startsWith(p.dir + '/'));
  for (const bad of ['..', '.', '', 'a/b', 'a\\b', 'a b', 'é', 'x'.repeat(129), '%2e']) {
    assert.throws(
      () => mapOutputPaths('/root', bad, 'a'),
      (e: unknown) => isMinimrError(e, 'EBADPATH'),
      bad,
    );
    assert.throws(
      () => mapOutputPaths('/root', 'j', bad),
      (e: unknown) => isMinimrError(e, 'EBADPATH'),
      bad,
    );
  }
});
