import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  createShuffleCounters,
  hashPartition,
  mapOutputPaths,
  removeAttemptMapOutput,
  removeJobMapOutputs,
  type BytesCombiner,
  type MapOutputInfo,
} from '../../src/shuffle/index.js';
import { isMinimrError } from '../../src/errors.js';
import { MapOutputBuffer, MIN_MAP_BUFFER_BYTES } from '../../src/shuffle/map-output-buffer.js';
import { readOutput } from './map-support.js';
import { hex, randomBytes, referenceSort, rng, u32, u32SummingFold, withTempDir, type Rec } from './support.js';

/** Reads a finished output back with the independent parsers (map-support.ts) and checks its framing. */
async function readBack(
  info: MapOutputInfo,
  numPartitions: number,
  compare?: (a: Buffer, b: Buffer) => number,
): Promise<Array<Array<[Buffer, Buffer]>>> {
  const back = await readOutput(info.dataFile, info.indexFile, numPartitions, compare);
  assert.deepEqual(
    back.entries,
    info.partitions.map((runs) => runs.map((r) => ({ ...r }))),
  );
  return back.partitions.map((seg) =>
    seg.map((r) => {
      const [k, v] = r.split(':');
      return [Buffer.from(k!, 'hex'), Buffer.from(v!, 'hex')] as [Buffer, Buffer];
    }),
  );
}

function perPartition(sorted: readonly Rec[], numPartitions: number): string[][] {
  const out: string[][] = Array.from({ length: numPartitions }, () => []);
  for (const r of sorted) out[r.partition]!.push(`${r.key.toString('hex')}:${r.value.toString('hex')}`);
  return out;
}

test('output equals the reference: per partition, sorted by bytes, equal keys in emission order', async () => {
  await withTempDir(async (root) => {
    const rand = rng(42);
    const numPartitions = 5;
    const counters = createShuffleCounters();
    const { dir } = mapOutputPaths(root, 'job1', 'm_0_0');
    const buffer = new MapOutputBuffer({ dir, numPartitions, counters });
    const records: Rec[] = [];
    let bytes = 0;
    // Many duplicate keys (small alphabet, short keys) and enough data to grow the buffers many times.
    for (let i = 0; i < 20000; i++) {
      const key = randomBytes(rand, 3, 4);
      const value = Buffer.concat([u32(i), randomBytes(rand, 20)]);
      const partition = hashPartition(key, numPartitions);
      records.push({ partition, key: Buffer.from(key), value: Buffer.from(value) });
      bytes += key.length + value.length;
      buffer.collect(partition, key, value);
      // Callers reuse their buffers: the map output must have copied the bytes.
      key.fill(0xff);
      value.fill(0xff);
    }
    const info = await buffer.finish();
    assert.equal(info.dataFile, mapOutputPaths(root, 'job1', 'm_0_0').dataFile);
    assert.equal(info.indexFile, mapOutputPaths(root, 'job1', 'm_0_0').indexFile);
    const got = (await readBack(info, numPartitions)).map((seg) => hex(seg));
    assert.deepEqual(got, perPartition(referenceSort(records), numPartitions));
    assert.equal(counters.mapOutputRecords, 20000);
    assert.equal(counters.mapOutputBytes, bytes);
    assert.equal(counters.spilledRecords, 20000);
    assert.equal(counters.spills, 1);
    assert.deepEqual((await readdir(dir)).sort(), ['file.out', 'file.out.index'], 'no temp files left');
    assert.throws(
      () => buffer.collect(0, Buffer.from('a'), Buffer.from('b')),
      (e: unknown) => isMinimrError(e, 'EINTERNAL'),
    );
  });
});

test('a custom comparator decides the order (reverse bytes)', async () => {
  await withTempDir(async (root) => {
    const rand = rng(3);
    const reverse = (a: Buffer, b: Buffer): number => Buffer.compare(b, a);
    const buffer = new MapOutputBuffer({ dir: join(root, 'out'), numPartitions: 3, compare: reverse });
    const records: Rec[] = [];
    for (let i = 0; i < 3000; i++) {
      const r = { partition: Math.floor(rand() * 3), key: randomBytes(rand, 4, 8), value: u32(i) };
      records.push(r);
      buffer.collect(r.partition, r.key, r.value);
    }
    const got = (await readBack(await buffer.finish(), 3, reverse)).map((seg) => hex(seg));
    assert.deepEqual(got, perPartition(referenceSort(records, reverse), 3));
  });
});

test('empty output, empty keys and values, and records bigger than the write chunk', async () => {
  await withTempDir(async (root) => {
    const empty = new MapOutputBuffer({ dir: join(root, 'empty'), numPartitions: 4 });
    const info = await empty.finish();
    assert.equal((await stat(info.dataFile)).size, 0);
    assert.deepEqual(
      (await readBack(info, 4)).map((s) => s.length),
      [0, 0, 0, 0],
    );

    const big = new MapOutputBuffer({ dir: join(root, 'big'), numPartitions: 2 });
    const records: Rec[] = [
      { partition: 1, key: Buffer.alloc(0), value: Buffer.alloc(0) },
      { partition: 1, key: Buffer.from('z'), value: Buffer.alloc(3 << 20, 7) },
      { partition: 0, key: Buffer.from('b'), value: Buffer.alloc(1 << 20, 1) },
      { partition: 0, key: Buffer.from('a'), value: Buffer.from('small') },
      { partition: 1, key: Buffer.from('m'), value: Buffer.alloc(0) },
    ];
    for (const r of records) big.collect(r.partition, r.key, r.value);
    const got = (await readBack(await big.finish(), 2)).map((seg) => hex(seg));
    assert.deepEqual(got, perPartition(referenceSort(records), 2));
  });
});

test('combiner sums WordCount counts per partition and key', async () => {
  await withTempDir(async (root) => {
    const rand = rng(11);
    const vocabulary = Array.from({ length: 300 }, (_, i) => `w${(i * 7919) % 1000}`);
    const numPartitions = 4;
    const counters = createShuffleCounters();
    const sum: BytesCombiner = (key, values, emit) => {
      let total = 0;
      for (const v of values) total += v.readUInt32BE(0);
      emit(key, u32(total));
    };
    const buffer = new MapOutputBuffer({ dir: join(root, 'wc'), numPartitions, combiner: sum, counters });
    const expected = new Map<string, number>();
    const n = 50000;
    for (let i = 0; i < n; i++) {
      const word = vocabulary[Math.floor(rand() * rand() * vocabulary.length)]!; // skewed, like text
      const count = 1 + Math.floor(rand() * 3);
      expected.set(word, (expected.get(word) ?? 0) + count);
      const key = Buffer.from(word);
      buffer.collect(hashPartition(key, numPartitions), key, u32(count));
    }
    const segments = await readBack(await buffer.finish(), numPartitions);
    const got = new Map<string, number>();
    segments.forEach((seg, p) => {
      const keys = seg.map(([k]) => k);
      const sorted = [...keys].sort(Buffer.compare);
      assert.deepEqual(keys, sorted, 'sorted within the partition');
      for (const [k, v] of seg) {
        const word = k.toString();
        assert.equal(got.has(word), false, `one record per word after combining (${word})`);
        assert.equal(hashPartition(k, numPartitions), p);
        got.set(word, v.readUInt32BE(0));
      }
    });
    assert.deepEqual(new Map([...got].sort()), new Map([...expected].sort()));
    assert.equal(counters.combineInputRecords, n);
    assert.equal(counters.combineOutputRecords, expected.size);
    assert.equal(counters.spilledRecords, expected.size);
    assert.equal(counters.mapOutputRecords, n);
  });
});

test("a combiner's fold combines the final merge of uncombined spills, records read in place", async () => {
  await withTempDir(async (root) => {
    const rand = rng(12);
    const vocabulary = Array.from({ length: 5000 }, (_, i) => `word-${(i * 7919) % 100000}`);
    const numPartitions = 3;
    const counters = createShuffleCounters();
    const { combiner, groups } = u32SummingFold(0, 4);
    // As behind the map-side hash table: spills as they are, combined in the final merge only.
    const buffer = new MapOutputBuffer({
      dir: join(root, 'fold'),
      numPartitions,
      combiner,
      combineSpills: false,
      bufferBytes: MIN_MAP_BUFFER_BYTES,
      counters,
    });
    const expected = new Map<string, number>();
    const n = 120000;
    for (let i = 0; i < n; i++) {
      const word = vocabulary[Math.floor(rand() * rand() * vocabulary.length)]!;
      const count = 1 + Math.floor(rand() * 3);
      expected.set(word, (expected.get(word) ?? 0) + count);
      const key = Buffer.from(word);
      buffer.collect(hashPartition(key, numPartitions), key, u32(count));
    }
    const segments = await readBack(await buffer.finish(), numPartitions);
    assert.ok(counters.spilledRecords > counters.combineOutputRecords, 'several spills');
    assert.ok(groups() > 0 && groups() <= counters.combineOutputRecords, 'the fold ran');
    const got = new Map<string, number>();
    segments.forEach((seg, p) => {
      const keys = seg.map(([k]) => k);
      assert.deepEqual(keys, [...keys].sort(Buffer.compare), 'sorted within the partition');
      for (const [k, v] of seg) {
        assert.equal(got.has(k.toString()), false, `one record per word (${k.toString()})`);
        assert.equal(hashPartition(k, numPartitions), p);
        got.set(k.toString(), v.readUInt32BE(0));
      }
    });
    assert.deepEqual(new Map([...got].sort()), new Map([...expected].sort()));
  });
});

test('a combiner that changes the key is refused, and no output is left', async () => {
  await withTempDir(async (root) => {
    const dir = join(root, 'bad');
    const buffer = new MapOutputBuffer({
      dir,
      numPartitions: 1,
      combiner: (key, _values, emit) => emit(Buffer.concat([key, Buffer.from('!')]), Buffer.alloc(0)),
    });
    buffer.collect(0, Buffer.from('k'), Buffer.from('v'));
    await assert.rejects(buffer.finish(), (e: unknown) => isMinimrError(e, 'EBADJOB'));
    await assert.rejects(readdir(dir), { code: 'ENOENT' }, 'nothing left, not even the directory');
  });
});

test('illegal partitions are refused with ETASK', () => {
  const buffer = new MapOutputBuffer({ dir: '/nonexistent', numPartitions: 2 });
  for (const p of [-1, 2, 0.5, NaN]) {
    assert.throws(
      () => buffer.collect(p, Buffer.from('k'), Buffer.from('v')),
      (e: unknown) => isMinimrError(e, 'ETASK'),
    );
  }
  assert.throws(
    () => new MapOutputBuffer({ dir: '/x', numPartitions: 0 }),
    (e: unknown) => isMinimrError(e, 'EBADJOB'),
  );
});

test('abort removes the output, before and after finish; remove helpers clean up', async () => {
  await withTempDir(async (root) => {
    const a = mapOutputPaths(root, 'job2', 'a0');
    const buffer = new MapOutputBuffer({ dir: a.dir, numPartitions: 2 });
    buffer.collect(1, Buffer.from('k'), Buffer.from('v'));
    await buffer.finish();
    await stat(a.indexFile);
    await buffer.abort();
    await assert.rejects(stat(a.dir), { code: 'ENOENT' });

    const unfinished = new MapOutputBuffer({ dir: a.dir, numPartitions: 2 });
    unfinished.collect(0, Buffer.from('k'), Buffer.from('v'));
    await unfinished.abort();
    await assert.rejects(unfinished.finish(), (e: unknown) => isMinimrError(e, 'EINTERNAL'));
    await assert.rejects(stat(a.dir), { code: 'ENOENT' });

    // Abort while finish is running: finish settles, nothing is left.
    const racing = new MapOutputBuffer({ dir: a.dir, numPartitions: 2 });
    for (let i = 0; i < 1000; i++) racing.collect(i % 2, u32(i), Buffer.alloc(2000));
    const finishing = racing.finish();
    await racing.abort();
    await finishing.catch(() => undefined);
    await assert.rejects(stat(a.dir), { code: 'ENOENT' });

    for (const attempt of ['x0', 'x1']) {
      const b = new MapOutputBuffer({ dir: mapOutputPaths(root, 'job3', attempt).dir, numPartitions: 1 });
      b.collect(0, Buffer.from('k'), Buffer.from('v'));
      await b.finish();
    }
    await removeAttemptMapOutput(root, 'job3', 'x0');
    assert.deepEqual(await readdir(join(root, 'job3')), ['x1']);
    await removeAttemptMapOutput(root, 'job3', 'x1');
    await assert.rejects(stat(join(root, 'job3')), { code: 'ENOENT' }, 'job dir goes with its last attempt');
    const c = new MapOutputBuffer({ dir: mapOutputPaths(root, 'job4', 'y').dir, numPartitions: 1 });
    await c.finish();
    await removeJobMapOutputs(root, 'job4');
    await assert.rejects(stat(join(root, 'job4')), { code: 'ENOENT' });
    await removeJobMapOutputs(root, 'job4'); // missing is fine
  });
});

test('byte order holds for keys that differ only in zero bytes, length, or past a long shared prefix', async () => {
  await withTempDir(async (root) => {
    const long = Buffer.alloc(100, 0x41);
    const keys = [
      Buffer.from('ab'),
      Buffer.from('ab\0'),
      Buffer.from('ab\0\0\0\0\0\0'),
      Buffer.from('ab\0\0\0\0\0\0\x01'),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
      Buffer.alloc(0),
      Buffer.from([0]),
      Buffer.concat([long, Buffer.from([1])]),
      Buffer.concat([long, Buffer.from([0])]),
      long,
      Buffer.concat([long.subarray(0, 70), Buffer.from([0x40])]),
    ];
    const rand = rng(8);
    const records: Rec[] = [];
    const buffer = new MapOutputBuffer({ dir: join(root, 'edge'), numPartitions: 1 });
    for (let i = 0; i < 400; i++) {
      const r = { partition: 0, key: keys[Math.floor(rand() * keys.length)]!, value: u32(i) };
      records.push(r);
      buffer.collect(0, r.key, r.value);
    }
    const got = (await readBack(await buffer.finish(), 1)).map((seg) => hex(seg));
    assert.deepEqual(got, perPartition(referenceSort(records), 1));
  });
});

test(
  'byte order within a small sort bucket: keys sharing their ' +
    'first 4 bytes, differing at bytes 4 and 5, in length, or past ' +
    'byte 6',
  async () => {
    await withTempDir(async (root) => {
      const keys = [
        'abcd',
        'abcd\0',
        'abcd\x01',
        'abcd\x01\0',
        'abcd\x01\x02',
        'abcd\x01\x02\0',
        'abcd\x01\x02\x03',
        'abcd\x01\x02\x02\xff',
        'abcd\xff',
        'abcd\xff\xff\x01',
        'abcd\0\xff',
      ].map((k) => Buffer.from(k, 'latin1'));
      const rand = rng(12);
      for (let round = 0; round < 20; round++) {
        // At most 30 records share the top key bits: one bucket, sorted in small arrays.
        const records: Rec[] = [];
        const buffer = new MapOutputBuffer({ dir: join(root, `small-${round}`), numPartitions: 1 });
        for (let i = 0; i < 30; i++) {
          const r = { partition: 0, key: keys[Math.floor(rand() * keys.length)]!, value: u32(i) };
          records.push(r);
          buffer.collect(0, r.key, r.value);
        }
        const got = (await readBack(await buffer.finish(), 1)).map((seg) => hex(seg));
        assert.deepEqual(got, perPartition(referenceSort(records), 1), `round ${round}`);
      }
    });
  },
);

test('byte order with skewed and uniform keys at partition counts from 1 to past the MSD limit', async () => {
  // The sort buckets records by (partition, top key bits); partition counts change how many key bits
  // that is (16 at 1 partition, 1 at 32768), and more than 32768 partitions take another path.
  // Skewed keys (most share their first 2..7 bytes) make large buckets with prefix and length ties.
  await withTempDir(async (root) => {
    for (const numPartitions of [1, 2, 3, 300, 32768, 40000]) {
      const rand = rng(numPartitions);
      const shared = [
        Buffer.from('th'),
        Buffer.from('the'),
        Buffer.from('thesis'),
        Buffer.from('thesis-'),
        Buffer.alloc(0),
      ];
      const records: Rec[] = [];
      const buffer = new MapOutputBuffer({ dir: join(root, `p${numPartitions}`), numPartitions });
      for (let i = 0; i < 6000; i++) {
        const key =
          rand() < 0.7
            ? Buffer.concat([shared[Math.floor(rand() * shared.length)]!, randomBytes(rand, 3, 3)])
            : randomBytes(rand, 12);
        const partition =
          numPartitions > 1000
            ? Math.floor(rand() * 8) * Math.floor(numPartitions / 8)
            : Math.floor(rand() * numPartitions);
        const r = { partition, key, value: u32(i) };
        records.push(r);
        buffer.collect(partition, key, r.value);
      }
      const info = await buffer.finish();
      const back = await readOutput(info.dataFile, info.indexFile, numPartitions);
      assert.deepEqual(
        back.partitions,
        perPartition(referenceSort(records), numPartitions),
        `${numPartitions} partitions`,
      );
    }
  });
});

test('collectRange: fixed-width records taken from input chunks give the reference output, across spills', async () => {
  // As a chunk ('chunk'), or each record as its own Buffer over the chunk's memory, as a record reader
  // hands them out, in chunks that start at odd offsets of larger, alternating memories ('records').
  for (const mode of ['chunk', 'records'] as const) await collectRangeCase(mode);
});

async function collectRangeCase(mode: 'chunk' | 'records'): Promise<void> {
  const memories = [Buffer.alloc(100 * 100 + 4099), Buffer.alloc(100 * 100 + 4099)];
  await withTempDir(async (root) => {
    const rand = rng(7);
    const numPartitions = 3;
    const counters = createShuffleCounters();
    const { dir } = mapOutputPaths(root, 'job1', 'm_0_0');
    // 64 KiB of buffer for ~400 KiB of records: several spills and a merge.
    const buffer = new MapOutputBuffer({ dir, numPartitions, bufferBytes: 64 << 10, counters });
    const RECORD = 100;
    const KEY = 10;
    const records: Rec[] = [];
    for (let c = 0; c < 40; c++) {
      const chunk =
        mode === 'chunk'
          ? Buffer.alloc(RECORD * 100)
          : memories[c % 2]!.subarray(3 + (c % 4) * 1021, 3 + (c % 4) * 1021 + RECORD * 100);
      for (let i = 0; i < chunk.length; i++) chunk[i] = Math.floor(rand() * 256);
      // Duplicate keys: every 7th record repeats the chunk's first key.
      for (let at = 7 * RECORD; at < chunk.length; at += 7 * RECORD) chunk.copy(chunk, at, 0, KEY);
      for (let at = 0; at < chunk.length; at += RECORD) {
        const key = chunk.subarray(at, at + KEY);
        const partition = key[0]! % numPartitions;
        records.push({ partition, key: Buffer.from(key), value: Buffer.from(chunk.subarray(at + KEY, at + RECORD)) });
        if (mode === 'chunk') buffer.collectRange(partition, chunk, at, at + KEY, at + RECORD);
        else buffer.collectRange(partition, chunk.subarray(at, at + RECORD), 0, KEY, RECORD);
      }
      // The input reader does not reuse chunks, but the bytes must have been copied all the same.
      chunk.fill(0xee);
    }
    const info = await buffer.finish();
    assert.ok(counters.spills > 2, `spilled ${counters.spills} times`);
    assert.equal(counters.mapOutputRecords, records.length);
    assert.equal(counters.mapOutputBytes, records.length * RECORD);
    const back = await readBack(info, numPartitions);
    assert.deepEqual(
      back.map((seg) => seg.map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`)),
      perPartition(referenceSort(records), numPartitions),
      mode,
    );
  });
}

test('byte order for generations from 1 record to past 65536, where the sort uses fewer key bits the fewer records it has', async () => {
  // A generation of n records is bucketed on about log2(n) top key bits (16 at most): each size
  // below crosses into another bucket width. Keys share prefixes so buckets hold ties.
  await withTempDir(async (root) => {
    for (const numPartitions of [1, 2, 5, 300]) {
      for (const n of [1, 2, 3, 7, 91, 130, 1000, 5000, 70000]) {
        const rand = rng(n * 7 + numPartitions);
        const stems = [Buffer.from('a'), Buffer.from('ab'), Buffer.from('abcdef'), Buffer.from('zz')];
        const records: Rec[] = [];
        const buffer = new MapOutputBuffer({ dir: join(root, `n${n}-p${numPartitions}`), numPartitions });
        for (let i = 0; i < n; i++) {
          const key =
            rand() < 0.5
              ? Buffer.concat([stems[Math.floor(rand() * stems.length)]!, randomBytes(rand, 2, 3)])
              : randomBytes(rand, 9);
          const r = { partition: Math.floor(rand() * numPartitions), key, value: u32(i) };
          records.push(r);
          buffer.collect(r.partition, key, r.value);
        }
        const info = await buffer.finish();
        const back = await readOutput(info.dataFile, info.indexFile, numPartitions);
        assert.deepEqual(
          back.partitions,
          perPartition(referenceSort(records), numPartitions),
          `${n} records, ${numPartitions} partitions`,
        );
      }
    }
  });
});
