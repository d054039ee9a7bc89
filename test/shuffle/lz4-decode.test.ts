import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { decodeLz4Block } from '../../src/shuffle/codec.js';
import { FileFrameFeed, RecordCursor } from '../../src/shuffle/run-cursor.js';
import { buildSegment, frame, randomBytes, rng, withTempDir } from './support.js';

// The reference: the addon's own compressor; the expected output is always the original input.
const lz4 = createRequire(import.meta.url)('lz4-napi') as { compressSync(b: Buffer): Buffer };

function decoded(raw: Buffer): Buffer {
  const out = Buffer.alloc(raw.length, 0xa5);
  decodeLz4Block(lz4.compressSync(raw), out);
  return out;
}

test(
  'the JS LZ4 decoder restores what lz4-napi compressed: empty, ' +
    'tiny, incompressible, runs, short periods, long matches',
  () => {
    const rand = rng(5);
    const inputs: Buffer[] = [Buffer.alloc(0), Buffer.from('a'), Buffer.from('abcd'), Buffer.alloc(100_000)];
    for (const period of [1, 2, 3, 4, 5, 7, 16, 300]) {
      // Matches whose source overlaps the destination by fewer than 4 bytes (period < 4) and more.
      const unit = exactBytes(rand, period);
      const b = Buffer.alloc(70_000 + period);
      for (let i = 0; i < b.length; i++) b[i] = unit[i % period]!;
      inputs.push(b);
    }
    for (const size of [1, 15, 16, 19, 270, 65_536, 262_144, 1_000_003]) {
      inputs.push(exactBytes(rand, size));
    }
    // Mixed: literals of every length class (< 15, 15 + 255 extension bytes) between matches of every length class.
    const mixed: Buffer[] = [];
    for (let i = 0; i < 400; i++) {
      mixed.push(randomBytes(rand, Math.floor(rand() * 600)));
      const rep = exactBytes(rand, 8);
      mixed.push(Buffer.concat(Array.from({ length: Math.floor(rand() * 80) }, () => rep)));
    }
    inputs.push(Buffer.concat(mixed));
    // TeraSort-like records: random keys, repetitive fillers.
    const rows: Buffer[] = [];
    for (let i = 0; i < 5000; i++)
      rows.push(
        Buffer.concat([
          randomBytes(rand, 10),
          Buffer.from(`  ${String(i).padStart(30, '0')}  AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH\r\n`),
        ]),
      );
    inputs.push(Buffer.concat(rows));
    for (const input of inputs) assert.ok(decoded(input).equals(input), `input of ${input.length} bytes`);
  },
);

function exactBytes(rand: () => number, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = Math.floor(rand() * 256);
  return b;
}

test('a damaged LZ4 block is an ECHECKSUM error, never a hang or a short result', () => {
  const rand = rng(9);
  const raw = Buffer.concat(Array.from({ length: 200 }, () => randomBytes(rand, 40)));
  const good = lz4.compressSync(Buffer.concat([raw, raw]));
  const expectBad = (block: Buffer, rawLength: number): void => {
    assert.throws(
      () => decodeLz4Block(block, Buffer.alloc(rawLength)),
      (err: unknown) => isMinimrError(err) && err.code === 'ECHECKSUM',
    );
  };
  const rawLength = raw.length * 2;
  expectBad(good.subarray(0, good.length - 7), rawLength); // truncated
  expectBad(good, rawLength - 1); // header says fewer bytes
  expectBad(good, rawLength + 1); // header says more bytes
  expectBad(good.subarray(0, 3), rawLength);
  // A match reaching before the start of the output: first sequence is literals only, so point a
  // crafted block's first match far back.
  expectBad(Buffer.from([8, 0, 0, 0, 0x14, 0x61, 0xff, 0x00]), 8);
  // Every single-byte corruption either decodes to the right length or fails with ECHECKSUM.
  for (let i = 4; i < Math.min(good.length, 400); i++) {
    const bad = Buffer.from(good);
    bad[i] = bad[i]! ^ 0x5a;
    try {
      decodeLz4Block(bad, Buffer.alloc(rawLength));
    } catch (err) {
      assert.ok(isMinimrError(err) && err.code === 'ECHECKSUM', String(err));
    }
  }
});

test('a file feed that reuses its frame buffer reads the same records as one that does not', async () => {
  await withTempDir(async (dir) => {
    const rand = rng(21);
    const frames: Buffer[] = [];
    const records: Array<[Buffer, Buffer]> = [];
    for (let f = 0; f < 6; f++) {
      const recs: Array<[Buffer, Buffer]> = [];
      for (let i = 0; i < 50 + f * 30; i++) recs.push([randomBytes(rand, 12), randomBytes(rand, 40 + f * 20)]);
      records.push(...recs);
      const raw = buildSegment(recs);
      frames.push(frame(raw, f % 2 === 0));
    }
    const path = join(dir, 'run.out');
    const body = Buffer.concat(frames);
    await writeFile(path, body);
    for (const reuse of [false, true]) {
      const cursor = new RecordCursor(new FileFrameFeed(path, 0, body.length, { name: path }, reuse), 0, 0);
      const got: string[] = [];
      while (cursor.advance()) got.push(`${cursor.key().toString('hex')}:${cursor.value().toString('hex')}`);
      assert.deepEqual(
        got,
        records.map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`),
        `reuseFrames ${reuse}`,
      );
    }
  });
});
