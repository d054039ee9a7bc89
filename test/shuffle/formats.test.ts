import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { crc32 } from 'node:zlib';
import {
  decodeIndex,
  encodeIndex,
  encodeSegment,
  hashPartition,
  mapOutputPaths,
  murmur3_32,
  readIndexFile,
  SegmentReader,
} from '../../src/shuffle/index.js';
import { isMinimrError } from '../../src/errors.js';
import { buildSegment, hex, parseIndex, parseSegment, randomBytes, rng, withTempDir } from './support.js';

test('murmur3_32 matches published MurmurHash3 x86_32 vectors', () => {
  // Vectors from the reference implementation (seed 0 unless given).
  assert.equal(murmur3_32(Buffer.alloc(0)), 0);
  assert.equal(murmur3_32(Buffer.alloc(0), 1), 0x514e28b7);
  assert.equal(murmur3_32(Buffer.from('hello')), 0x248bfa47);
  assert.equal(murmur3_32(Buffer.from('The quick brown fox jumps over the lazy dog')), 0x2e4ff723);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43, 0x65, 0x87])), 0xf55b516b);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43, 0x65])), 0x7e4a8634);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43])), 0xa0f7b07a);
  assert.equal(murmur3_32(Buffer.from([0x21])), 0x72661cf4);
});

test('hashPartition is in range, spreads keys, and is the same in another process', () => {
  const keys = Array.from({ length: 2000 }, (_, i) => Buffer.from(`key-${i}`));
  const counts = new Array<number>(7).fill(0);
  const mine = keys.map((k) => hashPartition(k, 7));
  for (const p of mine) {
    assert.ok(Number.isInteger(p) && p >= 0 && p < 7);
    counts[p]!++;
  }
  for (const c of counts) assert.ok(c > 2000 / 7 / 2, `skewed partition counts ${counts.join(',')}`);
  const modUrl = pathToFileURL(join(fileURLToPath(new URL('.', import.meta.url)), '../../src/shuffle/partitioner.js')).href;
  const script = `import { hashPartition } from ${JSON.stringify(modUrl)};
    const out = []; for (let i = 0; i < 2000; i++) out.push(hashPartition(Buffer.from('key-' + i), 7));
    process.stdout.write(JSON.stringify(out));`;
  const other = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as number[];
  assert.deepEqual(other, mine);
  assert.throws(() => hashPartition(Buffer.from('x'), 0), (e: unknown) => isMinimrError(e, 'EBADJOB'));
});

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
  assert.throws(() => [...new SegmentReader(seg.subarray(0, seg.length - 1))], (e: unknown) => isMinimrError(e, 'EPROTOCOL'));
  assert.throws(() => [...new SegmentReader(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))], (e: unknown) => isMinimrError(e, 'EPROTOCOL'));
});

test('index encode/decode round trip, checksum detects any flipped byte', () => {
  const entries = [
    { offset: 0, length: 10, records: 2, crc32: 0xdeadbeef },
    { offset: 10, length: 0, records: 0, crc32: 0 },
    { offset: 10, length: 2 ** 40, records: 12345678901, crc32: 1 },
  ];
  const buf = encodeIndex(entries);
  assert.deepEqual(decodeIndex(buf).partitions, entries);
  assert.deepEqual(parseIndex(buf), entries);
  assert.equal(buf.readUInt32LE(buf.length - 4), crc32(buf.subarray(0, buf.length - 4)));
  for (let i = 0; i < buf.length; i++) {
    const bad = Buffer.from(buf);
    bad[i] ^= 0x10;
    assert.throws(() => decodeIndex(bad), (e: unknown) => isMinimrError(e, 'ECHECKSUM'), `byte ${i}`);
  }
  assert.throws(() => decodeIndex(buf.subarray(0, buf.length - 1)), (e: unknown) => isMinimrError(e, 'ECHECKSUM'));
});

test('readIndexFile verifies the file on disk', async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, 'idx');
    await writeFile(file, encodeIndex([{ offset: 0, length: 3, records: 1, crc32: 5 }]));
    assert.equal((await readIndexFile(file)).partitions.length, 1);
    const bytes = await readFile(file);
    bytes[13] ^= 1;
    await writeFile(file, bytes);
    await assert.rejects(readIndexFile(file), (e: unknown) => isMinimrError(e, 'ECHECKSUM'));
  });
});

test('mapOutputPaths accepts only [A-Za-z0-9_-] ids', () => {
  const p = mapOutputPaths('/root', 'job_1', 'attempt-0_m_3');
  assert.equal(p.dir, '/root/job_1/attempt-0_m_3');
  assert.ok(p.dataFile.startsWith(p.dir + '/') && p.indexFile.startsWith(p.dir + '/'));
  for (const bad of ['..', '.', '', 'a/b', 'a\\b', 'a b', 'é', 'x'.repeat(129), '%2e']) {
    assert.throws(() => mapOutputPaths('/root', bad, 'a'), (e: unknown) => isMinimrError(e, 'EBADPATH'), bad);
    assert.throws(() => mapOutputPaths('/root', 'j', bad), (e: unknown) => isMinimrError(e, 'EBADPATH'), bad);
  }
});
