import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { bufferFeed, CursorMerge, FileFrameFeed, RecordCursor, TAG_IN_VALUE } from '../../src/shuffle/run-cursor.js';
import { compareBytes } from '../../src/shuffle/bytes-compare.js';
import { buildSegment, frame, randomBytes, rng, varint, withTempDir } from './support.js';

type Rec = { key: Buffer; value: Buffer; tag: number };

function readAll(cursor: RecordCursor): Rec[] {
  const out: Rec[] = [];
  while (cursor.advance()) {
    assert.deepEqual(cursor.key(), cursor.buf.subarray(cursor.keyStart, cursor.keyEnd));
    out.push({ key: cursor.key(), value: cursor.value(), tag: cursor.tag });
  }
  return out;
}

test('a cursor reads records with multi-byte lengths, constant tags and tags inside values', () => {
  const rand = rng(3);
  const records: Rec[] = [];
  for (let i = 0; i < 300; i++) {
    const key = randomBytes(rand, i % 3 === 0 ? 300 : 12);
    const value = randomBytes(rand, i % 5 === 0 ? 20000 : 40);
    records.push({ key, value, tag: Math.floor(rand() * 70000) });
  }
  const plain = buildSegment(records.map((r) => [r.key, r.value]));
  const constant = readAll(new RecordCursor(bufferFeed(plain), 7, 0));
  assert.deepEqual(
    constant,
    records.map((r) => ({ ...r, tag: 7 })),
  );

  // Tagged: the value as stored is varint(tag) + value.
  const tagged = buildSegment(records.map((r) => [r.key, Buffer.concat([varint(r.tag), r.value])]));
  const cursor = new RecordCursor(bufferFeed(tagged), TAG_IN_VALUE, 0);
  const got: Rec[] = [];
  const encoded: Buffer[] = [];
  while (cursor.advance()) {
    got.push({ key: cursor.key(), value: cursor.value(), tag: cursor.tag });
    encoded.push(cursor.buf.subarray(cursor.start, cursor.end));
    assert.equal(cursor.tagStart, cursor.keyEnd);
    assert.ok(cursor.valueStart > cursor.tagStart);
  }
  assert.deepEqual(got, records);
  assert.deepEqual(Buffer.concat(encoded), tagged, 'encoded records span the whole segment');
  assert.equal(cursor.advance(), false, 'stays at the end');
});

test('a file feed reads compressed and stored frames; views handed out stay valid', async () => {
  await withTempDir(async (dir) => {
    const rand = rng(11);
    const records: Array<[Buffer, Buffer]> = [];
    const frames: Buffer[] = [];
    // Frames of growing size (the read buffer grows), alternately LZ4 and stored as they are.
    for (let f = 0; f < 12; f++) {
      const part: Array<[Buffer, Buffer]> = [];
      const n = 1 + f * f * 40;
      for (let i = 0; i < n; i++)
        part.push([randomBytes(rand, 10, 4), Buffer.from(`value ${f}/${i}`.repeat(1 + (i % 7)))]);
      records.push(...part);
      frames.push(frame(buildSegment(part), f % 2 === 0));
    }
    const prefix = Buffer.from('not part of the segment');
    const path = join(dir, 'run');
    const body = Buffer.concat(frames);
    await writeFile(path, Buffer.concat([prefix, body, prefix]));
    const cursor = new RecordCursor(new FileFrameFeed(path, prefix.length, body.length), 0, 0);
    const got = readAll(cursor);
    // Every view is compared only now, after all frames were read.
    assert.deepEqual(
      got.map((r) => [r.key.toString('hex'), r.value.toString()]),
      records.map(([k, v]) => [k.toString('hex'), v.toString()]),
    );

    // A flipped byte inside a frame: ECHECKSUM naming the file.
    const bad = Buffer.from(body);
    bad[frames[0]!.length + 40] ^= 0xff;
    await writeFile(path, bad);
    const broken = new RecordCursor(new FileFrameFeed(path, 0, bad.length), 0, 0);
    assert.throws(
      () => readAll(broken),
      (e: unknown) => isMinimrError(e, 'ECHECKSUM') && (e as Error).message.includes(path),
    );
  });
});

test('a record running past its frame is malformed (EPROTOCOL)', () => {
  const seg = buildSegment([[Buffer.from('key'), Buffer.from('value')]]);
  const cursor = new RecordCursor(bufferFeed(seg.subarray(0, seg.length - 1)), 0, 0);
  assert.throws(
    () => cursor.advance(),
    (e: unknown) => isMinimrError(e, 'EPROTOCOL'),
  );
  const badTag = buildSegment([[Buffer.from('key'), Buffer.from([0x80, 0x80])]]);
  assert.throws(
    () => new RecordCursor(bufferFeed(badTag), TAG_IN_VALUE, 0).advance(),
    (e: unknown) => isMinimrError(e, 'EPROTOCOL'),
  );
});

test('CursorMerge orders by key, then tag, then run order, as a stable sort of all records does', () => {
  for (const compare of [compareBytes, (a: Buffer, b: Buffer) => Buffer.compare(b, a)]) {
    for (let seed = 1; seed <= 15; seed++) {
      const rand = rng(seed);
      const runs: Rec[][] = [];
      for (let r = 0; r < 1 + (seed % 8); r++) {
        const tag = Math.floor(rand() * 3);
        const run: Rec[] = [];
        const n = Math.floor(rand() * 300);
        for (let i = 0; i < n; i++) run.push({ key: randomBytes(rand, 3, 3), value: Buffer.from(`${r}/${i}`), tag });
        run.sort((a, b) => compare(a.key, b.key));
        runs.push(run);
      }
      const reference = runs
        .flatMap((run, order) => run.map((rec) => ({ ...rec, order })))
        .sort((a, b) => compare(a.key, b.key) || a.tag - b.tag || a.order - b.order)
        .map((r) => `${r.key.toString('hex')}:${r.value}`);
      const merge = new CursorMerge(
        runs.map(
          (run, order) =>
            new RecordCursor(bufferFeed(buildSegment(run.map((r) => [r.key, r.value]))), run[0]?.tag ?? 0, order),
        ),
        compare,
      );
      const got: string[] = [];
      for (let c = merge.first(); c !== undefined; c = merge.next())
        got.push(`${c.key().toString('hex')}:${c.value()}`);
      merge.close();
      assert.deepEqual(got, reference, `seed ${seed}`);
    }
  }
  const none = new CursorMerge([], compareBytes);
  assert.equal(none.first(), undefined);
});
