import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import {
  createShuffleCounters,
  hashPartition,
  lz4Codec,
  type BytesCombiner,
  type ShuffleCounters,
} from '../../src/shuffle/index.js';
import { MapOutputBuffer, type MapOutputBufferOptions } from '../../src/shuffle/map-output-buffer.js';
import type { OpenSpillFile } from '../../src/shuffle/spill-writer.js';
import { openSpillFile } from '../../src/shuffle/spill-writer.js';
import { readOutput, type ReadBack } from './map-support.js';
import { rng, u32, withTempDir } from './support.js';

type Emit = [partition: number, key: Buffer, value: Buffer];
const IDS = { jobId: 'job_7', attemptId: 'attempt_7_m_3_0' };

function teraRecords(n: number, partitions: number, seed: number): Emit[] {
  const rand = rng(seed);
  const out: Emit[] = [];
  for (let i = 0; i < n; i++) {
    const key = Buffer.alloc(10);
    for (let j = 0; j < 10; j++) key[j] = Math.floor(rand() * 256);
    if (i % 97 === 5 && out.length > 0) out[out.length - 1]![1].copy(key); // some duplicate keys
    const value = Buffer.alloc(90, 0x41 + (i % 26));
    value.writeUInt32BE(i, 0);
    out.push([Math.floor(((key[0]! * 256 + key[1]!) * partitions) / 65536), key, value]);
  }
  return out;
}

function wordRecords(n: number, partitions: number, seed: number): Emit[] {
  const rand = rng(seed);
  const vocabulary = Array.from({ length: 2000 }, (_, i) =>
    i % 7 === 0 ? `international${i}` : `w${(i * 7919) % 5000}`,
  );
  const out: Emit[] = [];
  for (let i = 0; i < n; i++) {
    const key = Buffer.from(vocabulary[Math.floor(rand() * rand() * vocabulary.length)]!);
    out.push([hashPartition(key, partitions), key, u32(1 + (i % 3))]);
  }
  return out;
}

const sum: BytesCombiner = (key, values, emit) => {
  let total = 0;
  for (const v of values) total += v.readUInt32BE(0);
  emit(key, u32(total));
};

/** Reference: stable Array.sort by (partition, Buffer.compare). */
function teraReference(records: Emit[], partitions: number): string[][] {
  const sorted = records
    .map((r, i) => ({ r, i }))
    .sort((a, b) => a.r[0] - b.r[0] || Buffer.compare(a.r[1], b.r[1]) || a.i - b.i);
  const out: string[][] = Array.from({ length: partitions }, () => []);
  for (const { r } of sorted) out[r[0]]!.push(`${r[1].toString('hex')}:${r[2].toString('hex')}`);
  return out;
}

/** Reference: a Map of sums, then sorted keys per partition. */
function wordReference(records: Emit[], partitions: number): string[][] {
  const sums = new Map<string, number>();
  for (const [, k, v] of records)
    sums.set(k.toString('latin1'), (sums.get(k.toString('latin1')) ?? 0) + v.readUInt32BE(0));
  const keys = [...sums.keys()].map((k) => Buffer.from(k, 'latin1')).sort(Buffer.compare);
  const out: string[][] = Array.from({ length: partitions }, () => []);
  for (const k of keys)
    out[hashPartition(k, partitions)]!.push(
      `${k.toString('hex')}:${u32(sums.get(k.toString('latin1'))!).toString('hex')}`,
    );
  return out;
}

/** Feeds records as a map loop would: a few per map() call, awaiting room when asked to. */
async function run(
  dir: string,
  records: Emit[],
  options: Partial<MapOutputBufferOptions> & { numPartitions: number },
): Promise<{ back: ReadBack; counters: ShuffleCounters; buffer: MapOutputBuffer }> {
  const counters = createShuffleCounters();
  const buffer = new MapOutputBuffer({ dir, counters, ids: IDS, ...options });
  for (let i = 0; i < records.length; i++) {
    const [p, k, v] = records[i]!;
    buffer.collect(p, Buffer.from(k), Buffer.from(v));
    if (i % 7 === 6 && buffer.mustWait) await buffer.waitForRoom();
  }
  const info = await buffer.finish();
  const back = await readOutput(info.dataFile, info.indexFile, options.numPartitions, options.compare);
  assert.deepEqual((await readdir(dir)).sort(), ['file.out', 'file.out.index'], 'only the output is left');
  assert.ok(counters.peakBufferBytes > 0);
  assert.ok(
    counters.peakBufferBytes <= (options.bufferBytes ?? 64 << 20),
    `peak ${counters.peakBufferBytes} within the budget`,
  );
  return { back, counters, buffer };
}

function dataSize(records: Emit[]): number {
  return records.reduce((s, [, k, v]) => s + k.length + v.length, 0);
}

test('TeraSort-like records: same output with no spill, 1/8 and 1/64 of the data as buffer', async () => {
  await withTempDir(async (root) => {
    const P = 4;
    const records = teraRecords(50_000, P, 1);
    const size = dataSize(records);
    const reference = teraReference(records, P);
    let first: string[][] | undefined;
    for (const [name, bufferBytes] of [
      ['big', 4 * size],
      ['eighth', Math.floor(size / 8)],
      ['sixtyfourth', Math.floor(size / 64)],
    ] as const) {
      const { back, counters } = await run(join(root, name), records, { numPartitions: P, bufferBytes });
      assert.deepEqual(back.partitions, reference, name);
      if (first) assert.deepEqual(back.partitions, first);
      first ??= back.partitions;
      const n = records.length;
      assert.equal(counters.mapOutputRecords, n);
      assert.equal(counters.mapOutputBytes, size);
      assert.equal(
        back.entries.flat().reduce((s, e) => s + e.records, 0),
        n,
      );
      if (name === 'big') {
        assert.equal(counters.spills, 1);
        assert.equal(counters.spilledRecords, n);
        assert.equal(counters.spilledBytes, back.dataBytes);
        assert.equal(counters.mergePasses, 0);
      } else {
        assert.ok(counters.spills > 1, `${name}: ${counters.spills} spills`);
        if (counters.spills <= 10) {
          // The last generation went from the buffer into the final merge: written once, not twice.
          assert.ok(
            counters.spilledRecords > n && counters.spilledRecords < 2 * n,
            `${name}: ${counters.spilledRecords} records written`,
          );
        } else {
          assert.ok(counters.spilledRecords >= 2 * n);
        }
        assert.ok(counters.spilledBytes > back.dataBytes);
        assert.equal(
          counters.mergePasses > 0,
          counters.spills > 10,
          `${name}: ${counters.spills} spills, ${counters.mergePasses} passes`,
        );
      }
    }
  });
});

/** Records with keys of 0..40 bytes and values of 0..3000, none in partition 2, and two larger than the buffer. */
function mixedRecords(n: number, partitions: number, seed: number, bufferBytes: number): Emit[] {
  const rand = rng(seed);
  const out: Emit[] = [];
  for (let i = 0; i < n; i++) {
    const key = Buffer.alloc(Math.floor(rand() * rand() * 41));
    // short alphabet: many shared prefixes and equal keys
    for (let j = 0; j < key.length; j++) key[j] = Math.floor(rand() * 4);
    const value = Buffer.alloc(Math.floor(rand() * rand() * rand() * 3001), i & 0xff);
    let p = Math.floor(rand() * partitions);
    if (p === 2) p = 0;
    out.push([p, key, value]);
  }
  out.splice(Math.floor(n / 3), 0, [1, Buffer.from('huge-1'), Buffer.alloc(bufferBytes + 100, 1)]);
  out.splice(Math.floor((2 * n) / 3), 0, [3, Buffer.alloc(bufferBytes, 0x01), Buffer.alloc(10, 2)]);
  return out;
}

test(
  'the last generation joins the final merge from the buffer: ' + 'only earlier spills are written, same output',
  async () => {
    await withTempDir(async (root) => {
      const P = 4;
      const bufferBytes = 256 << 10;
      const records = mixedRecords(3000, P, 11, bufferBytes);
      const opened: string[] = [];
      const recordingOpen: OpenSpillFile = (path) => {
        opened.push(path);
        return openSpillFile(path);
      };
      const { back, counters } = await run(join(root, 'mem'), records, {
        numPartitions: P,
        bufferBytes,
        openFile: recordingOpen,
      });
      const reference = teraReference(records, P);
      assert.deepEqual(back.partitions, reference);
      assert.deepEqual(back.partitions[2], [], 'an empty partition stays empty');
      const spillFiles = opened.filter((f) => /\/spill-\d+\.out$/.test(f));
      const others = opened.filter((f) => !spillFiles.includes(f));
      assert.ok(counters.spills >= 4 && counters.spills <= 10, `${counters.spills} spills`);
      assert.equal(spillFiles.length, counters.spills - 1, 'every generation but the last was written as a spill');
      assert.equal(others.length, 1, `one merged output: ${others.join(', ')}`);
      assert.equal(counters.mergePasses, 0);
      assert.ok(counters.spilledRecords > records.length && counters.spilledRecords < 2 * records.length);

      // The same records through the old path (more spills than the merge factor allows in one merge) agree.
      const viaDisk = await run(join(root, 'disk'), records, { numPartitions: P, bufferBytes, mergeFactor: 2 });
      assert.deepEqual(viaDisk.back.partitions, reference);
      assert.ok(viaDisk.counters.mergePasses > 0);
    });
  },
);

/** Opens files normally and keeps a copy of every byte written to each, by path. */
function recordingWrites(): { open: OpenSpillFile; bytesOf: Map<string, Buffer> } {
  const bytesOf = new Map<string, Buffer>();
  const keep = (path: string, data: Buffer, pos: number): void => {
    const had = bytesOf.get(path) ?? Buffer.alloc(0);
    const grown = Buffer.alloc(Math.max(had.length, pos + data.length));
    had.copy(grown);
    data.copy(grown, pos);
    bytesOf.set(path, grown);
  };
  const open: OpenSpillFile = (path, existing) => {
    const file = openSpillFile(path, existing);
    return {
      async write(data, pos) {
        keep(path, data, pos);
        await file.write(data, pos);
      },
      writeSync(data, pos) {
        keep(path, data, pos);
        file.writeSync(data, pos);
      },
      close: () => file.close(),
      closeSync: () => file.closeSync(),
    };
  };
  return { open, bytesOf };
}

/** The codec byte of every frame of a framed file (header: u32 raw, u32 stored, u32 crc, u8 codec, 3 zero bytes). */
function frameCodecs(file: Buffer): Set<number> {
  const codecs = new Set<number>();
  for (let pos = 0; pos < file.length; pos += 16 + file.readUInt32LE(pos + 4)) codecs.add(file[pos + 12]!);
  return codecs;
}

test(
  'spills are stored uncompressed and the merged output with LZ4; ' +
    'the first spill too when it may become part of the output',
  async () => {
    await withTempDir(async (root) => {
      const records = teraRecords(6000, 2, 12); // values of one repeated letter: LZ4 pays
      const { open, bytesOf } = recordingWrites();
      const { back, counters } = await run(join(root, 'z'), records, {
        numPartitions: 2,
        bufferBytes: 256 << 10,
        openFile: open,
        maxOutputRuns: 1,
      });
      assert.deepEqual(back.partitions, teraReference(records, 2));
      assert.ok(counters.spills > 2);
      const spills = [...bytesOf.keys()].filter((f) => /\/spill-\d+\.out$/.test(f));
      const outputs = [...bytesOf.keys()].filter((f) => !spills.includes(f));
      assert.ok(spills.length > 0 && outputs.length === 1, [...bytesOf.keys()].join(', '));
      for (const f of spills) assert.deepEqual(frameCodecs(bytesOf.get(f)!), new Set([0]), f);
      assert.deepEqual(frameCodecs(bytesOf.get(outputs[0]!)!), new Set([1]));
      // With two runs allowed (the default), the first spill could have been the output's first run.
      const twoRuns = recordingWrites();
      const same = await run(join(root, 'w'), records, {
        numPartitions: 2,
        bufferBytes: 256 << 10,
        openFile: twoRuns.open,
      });
      assert.deepEqual(same.back.partitions, back.partitions);
      assert.equal(same.back.runs[0]!.length, 1, 'more than two generations are merged');
      for (const [f, bytes] of twoRuns.bytesOf)
        assert.deepEqual(
          frameCodecs(bytes),
          new Set([f.endsWith('/spill-0.out') || !/\/spill-\d+\.out$/.test(f) ? 1 : 0]),
          f,
        );
      // A job's output codec is kept for spills when asked for.
      const lz4Spills = recordingWrites();
      const again = await run(join(root, 'y'), records, {
        numPartitions: 2,
        bufferBytes: 256 << 10,
        openFile: lz4Spills.open,
        spillCodec: lz4Codec,
      });
      assert.deepEqual(again.back.partitions, back.partitions);
      for (const [f, bytes] of lz4Spills.bytesOf) assert.deepEqual(frameCodecs(bytes), new Set([1]), f);
    });
  },
);

test(
  'a map that ends right after a spill started gets an LZ4 ' +
    'output: its first spill renamed, or re-encoded when that spill ' +
    'was uncompressed',
  async () => {
    await withTempDir(async (root) => {
      // 100-byte records take 132 bytes of a 64 KiB buffer each: the 398th passes the 80% mark and
      // starts a spill of everything, so nothing is left in the buffer at finish.
      const records = teraRecords(398, 2, 13);
      const { open, bytesOf } = recordingWrites();
      const { back, counters } = await run(join(root, 'x'), records, {
        numPartitions: 2,
        bufferBytes: 64 << 10,
        openFile: open,
        maxOutputRuns: 1,
      });
      assert.deepEqual(back.partitions, teraReference(records, 2));
      assert.equal(counters.spills, 1);
      const spills = [...bytesOf.keys()].filter((f) => /\/spill-\d+\.out$/.test(f));
      assert.equal(spills.length, 1, 'the spill was written');
      assert.deepEqual(frameCodecs(bytesOf.get(spills[0]!)!), new Set([0]));
      const output = [...bytesOf.keys()].find((f) => !spills.includes(f))!;
      assert.deepEqual(frameCodecs(bytesOf.get(output)!), new Set([1]), 'the output was re-encoded with LZ4');
      // Two runs allowed: the first spill took LZ4 and is the output, written once.
      const twoRuns = recordingWrites();
      const again = await run(join(root, 'y'), records, {
        numPartitions: 2,
        bufferBytes: 64 << 10,
        openFile: twoRuns.open,
      });
      assert.deepEqual(again.back.partitions, back.partitions);
      assert.deepEqual(
        [...twoRuns.bytesOf.keys()].map((f) => f.slice(f.lastIndexOf('/') + 1)),
        ['spill-0.out'],
      );
      assert.deepEqual(frameCodecs(twoRuns.bytesOf.get([...twoRuns.bytesOf.keys()][0]!)!), new Set([1]));
      assert.equal(again.counters.spilledBytes, again.back.dataBytes);
    });
  },
);

test(
  'an output of two generations is published as two sorted runs, ' +
    'written once and never read back; equal keys keep emission ' +
    'order',
  async () => {
    await withTempDir(async (root) => {
      // Keys from a small alphabet (many equal keys across the two generations), values numbered.
      const rand = rng(21);
      const records: Emit[] = [];
      for (let i = 0; i < 700; i++) {
        const k = Buffer.from([0x61 + Math.floor(rand() * 4), 0x61 + Math.floor(rand() * 4)]);
        const v = Buffer.alloc(90, 0x61 + (i % 26));
        u32(i).copy(v);
        records.push([hashPartition(k, 3), k, v]);
      }
      // Reference: stable sort by key within each partition (emission order for equal keys).
      const reference: string[][] = [[], [], []];
      const sorted = records
        .map(([p, k, v], i) => ({ p, k, v, i }))
        .sort((a, b) => Buffer.compare(a.k, b.k) || a.i - b.i);
      for (const r of sorted) reference[r.p]!.push(`${r.k.toString('hex')}:${r.v.toString('hex')}`);
      const { open, bytesOf } = recordingWrites();
      // 700 records of 92 bytes + 32 of metadata: two generations of an 64 KiB buffer.
      const { back, counters } = await run(join(root, 'two'), records, {
        numPartitions: 3,
        bufferBytes: 64 << 10,
        openFile: open,
      });
      assert.equal(counters.spills, 2);
      assert.equal(back.entries[0]!.length, 2, 'two runs per partition');
      assert.deepEqual(back.partitions, reference);
      assert.ok(
        back.runs.every((runs) => runs[0]!.length > 0 && runs[1]!.length > 0),
        'both runs hold records of every partition',
      );
      // Written once: the first spill, then the second run after it in the same file, nothing else.
      assert.deepEqual(
        [...bytesOf.keys()].map((f) => f.slice(f.lastIndexOf('/') + 1)),
        ['spill-0.out'],
      );
      assert.equal(counters.spilledRecords, records.length);
      assert.equal(counters.spilledBytes, back.dataBytes);
      assert.equal(counters.mergePasses, 0);
      // One run asked for: the same records, merged into one run, more bytes written.
      const one = await run(join(root, 'one'), records, { numPartitions: 3, bufferBytes: 64 << 10, maxOutputRuns: 1 });
      assert.equal(one.back.entries[0]!.length, 1);
      assert.deepEqual(one.back.partitions, reference);
      assert.ok(one.counters.spilledBytes > one.back.dataBytes);
      // A combiner that the merge of two spills would run again means a merge.
      const combined = await run(join(root, 'combined'), records, {
        numPartitions: 3,
        bufferBytes: 64 << 10,
        combiner: (k, vs, emit) => {
          for (const v of vs) emit(k, v);
        },
        minSpillsForCombine: 2,
      });
      assert.equal(combined.back.entries[0]!.length, 1);
      assert.throws(
        () => new MapOutputBuffer({ dir: join(root, 'bad'), numPartitions: 1, maxOutputRuns: 3 }),
        (e: unknown) => isMinimrError(e, 'EBADJOB') && /maxOutputRuns/.test((e as Error).message),
      );
      // The disk fills while the second run is appended: EDISKFULL, and no file is left.
      const firstRunBytes = back.entries.reduce((n, runs) => n + runs[0]!.length, 0);
      const dir = join(root, 'full');
      let error: unknown;
      try {
        await run(dir, records, {
          numPartitions: 3,
          bufferBytes: 64 << 10,
          openFile: diskFullAfter(firstRunBytes + 100, () => true),
        });
      } catch (err) {
        error = err;
      }
      assert.ok(isMinimrError(error, 'EDISKFULL') && String(error.details.file).endsWith('spill-0.out'), String(error));
      await assert.rejects(readdir(dir), { code: 'ENOENT' }, 'all files removed');
    });
  },
);

test('WordCount-like records with a summing combiner: same output for every budget, equal to a Map', async () => {
  await withTempDir(async (root) => {
    const P = 3;
    const records = wordRecords(400_000, P, 2);
    const size = dataSize(records);
    const reference = wordReference(records, P);
    for (const [name, bufferBytes] of [
      ['big', 64 << 20],
      ['eighth', Math.floor(size / 8)],
      ['sixtyfourth', Math.max(64 << 10, Math.floor(size / 64))],
    ] as const) {
      const { back, counters } = await run(join(root, name), records, { numPartitions: P, bufferBytes, combiner: sum });
      assert.deepEqual(back.partitions, reference, name);
      const out = reference.reduce((s, p) => s + p.length, 0);
      assert.equal(counters.mapOutputRecords, records.length);
      assert.ok(counters.combineInputRecords >= records.length);
      assert.ok(counters.combineOutputRecords >= out);
      if (name !== 'big') assert.ok(counters.spills >= 3, `${name}: ${counters.spills} spills`);
    }
  });
});

test('mergeFactor 2 with many spills: intermediate passes, same output', async () => {
  await withTempDir(async (root) => {
    const P = 2;
    const records = teraRecords(6000, P, 3);
    const { back, counters } = await run(root + '/m', records, {
      numPartitions: P,
      bufferBytes: 64 << 10,
      mergeFactor: 2,
    });
    assert.deepEqual(back.partitions, teraReference(records, P));
    assert.ok(counters.spills > 8, `${counters.spills} spills`);
    assert.ok(counters.mergePasses >= Math.ceil(Math.log2(counters.spills)) - 1, `${counters.mergePasses} passes`);
    assert.ok(counters.spilledRecords > 2 * records.length);
  });
});

test('a custom comparator with spills (reverse order)', async () => {
  await withTempDir(async (root) => {
    const reverse = (a: Buffer, b: Buffer): number => Buffer.compare(b, a);
    const records = teraRecords(5000, 2, 9);
    const { back } = await run(root + '/r', records, { numPartitions: 2, bufferBytes: 64 << 10, compare: reverse });
    const sorted = records
      .map((r, i) => ({ r, i }))
      .sort((a, b) => a.r[0] - b.r[0] || reverse(a.r[1], b.r[1]) || a.i - b.i);
    const expected: string[][] = [[], []];
    for (const { r } of sorted) expected[r[0]]!.push(`${r[1].toString('hex')}:${r[2].toString('hex')}`);
    assert.deepEqual(back.partitions, expected);
  });
});

test('a record larger than the whole buffer becomes a spill of its own', async () => {
  await withTempDir(async (root) => {
    const records = teraRecords(2000, 2, 4);
    records.splice(700, 0, [1, Buffer.from('bigkey'), Buffer.alloc(300 << 10, 7)]);
    records.splice(1500, 0, [0, Buffer.from('bigger'), Buffer.alloc(200 << 10, 9)]);
    const { back, counters } = await run(root + '/b', records, { numPartitions: 2, bufferBytes: 64 << 10 });
    assert.deepEqual(back.partitions, teraReference(records, 2));
    assert.ok(counters.spills >= 4);
    assert.ok(counters.peakBufferBytes <= 64 << 10);
  });
});

test('one map() call emitting more than the free buffer while a spill runs (synchronous fallback)', async () => {
  await withTempDir(async (root) => {
    const records = teraRecords(20_000, 3, 5);
    const counters = createShuffleCounters();
    const buffer = new MapOutputBuffer({ dir: root + '/s', numPartitions: 3, bufferBytes: 64 << 10, counters });
    for (const [p, k, v] of records) buffer.collect(p, k, v); // never waits
    const info = await buffer.finish();
    const back = await readOutput(info.dataFile, info.indexFile, 3);
    assert.deepEqual(back.partitions, teraReference(records, 3));
    assert.ok(counters.peakBufferBytes <= 64 << 10);
  });
});

test(
  'a map emitting a chunk of records at a time that waits when ' +
    'mustWaitFor(chunk) says so never spills synchronously; one that ' +
    'asks mustWait does',
  async () => {
    await withTempDir(async (root) => {
      const records = teraRecords(30_000, 3, 6);
      const CHUNK = 1000; // records emitted between two checks: 100 KB of data, as a piece of input
      const emitChunks = async (dir: string, mustWaitBefore: (buffer: MapOutputBuffer) => boolean): Promise<number> => {
        let syncWrites = 0;
        const counting: OpenSpillFile = (path, existing) => {
          const file = openSpillFile(path, existing);
          return {
            ...file,
            writeSync: (data, position) => {
              syncWrites++;
              return file.writeSync(data, position);
            },
          };
        };
        const counters = createShuffleCounters();
        const buffer = new MapOutputBuffer({
          dir,
          numPartitions: 3,
          bufferBytes: 1 << 20,
          counters,
          ids: IDS,
          openFile: counting,
        });
        for (let i = 0; i < records.length; i += CHUNK) {
          if (mustWaitBefore(buffer)) await buffer.waitForRoom();
          for (const [p, k, v] of records.slice(i, i + CHUNK)) buffer.collect(p, k, v);
        }
        const info = await buffer.finish();
        assert.deepEqual((await readOutput(info.dataFile, info.indexFile, 3)).partitions, teraReference(records, 3));
        assert.ok(counters.spills > 3, `the map spilled several times (${counters.spills})`);
        return syncWrites;
      };
      assert.equal(await emitChunks(join(root, 'for'), (b) => b.mustWaitFor(CHUNK * 100)), 0, 'no synchronous spill');
      assert.ok(
        (await emitChunks(join(root, 'plain'), (b) => b.mustWait)) > 0,
        'checking for one record only, a chunk overflows the buffer while a spill runs',
      );
    });
  },
);

test('a budget below 64 KiB is refused with EBADJOB', () => {
  assert.throws(
    () => new MapOutputBuffer({ dir: '/x', numPartitions: 1, bufferBytes: (64 << 10) - 1 }),
    (e: unknown) => isMinimrError(e, 'EBADJOB'),
  );
  assert.throws(
    () => new MapOutputBuffer({ dir: '/x', numPartitions: 1, bufferBytes: 64 << 10, mergeFactor: 1 }),
    (e: unknown) => isMinimrError(e, 'EBADJOB'),
  );
});

test('a corrupt spill fails the final merge with ECHECKSUM naming the spill file and the ids', async () => {
  await withTempDir(async (root) => {
    const dir = join(root, 'c');
    const buffer = new MapOutputBuffer({ dir, numPartitions: 2, bufferBytes: 64 << 10, ids: IDS });
    const records = teraRecords(3000, 2, 6);
    for (const [p, k, v] of records) {
      buffer.collect(p, k, v);
      if (buffer.mustWait) await buffer.waitForRoom();
    }
    await buffer.waitForRoom();
    const spill = join(dir, 'spill-0.out');
    const bytes = await readFile(spill);
    bytes[Math.floor(bytes.length / 2)] ^= 0x5a;
    await writeFile(spill, bytes);
    await assert.rejects(buffer.finish(), (e: unknown) => {
      assert.ok(isMinimrError(e, 'ECHECKSUM'), String(e));
      assert.ok(e.message.includes(spill), e.message);
      assert.equal(e.details.jobId, IDS.jobId);
      assert.equal(e.details.attemptId, IDS.attemptId);
      return true;
    });
    await assert.rejects(readdir(dir), { code: 'ENOENT' }, 'all files removed');
  });
});

/** Opens files normally but fails writes with ENOSPC once `limit` bytes were written to files matching `which`. */
function diskFullAfter(limit: number, which: (path: string) => boolean): OpenSpillFile {
  let written = 0;
  const enospc = (): Error =>
    Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 });
  return (path, existing) => {
    const file = openSpillFile(path, existing);
    const charge = (n: number): void => {
      if (!which(path)) return;
      written += n;
      if (written > limit) throw enospc();
    };
    return {
      async write(data, pos) {
        charge(data.length);
        await file.write(data, pos);
      },
      writeSync(data, pos) {
        charge(data.length);
        file.writeSync(data, pos);
      },
      close: () => file.close(),
      closeSync: () => file.closeSync(),
    };
  };
}

for (const [phase, which] of [
  ['spilling', (p: string) => p.includes('spill-')],
  ['merging', (p: string) => !p.includes('spill-')],
] as const) {
  test(`ENOSPC while ${phase}: EDISKFULL naming the file and ids, no file left`, async () => {
    await withTempDir(async (root) => {
      const dir = join(root, 'full');
      const buffer = new MapOutputBuffer({
        dir,
        numPartitions: 2,
        bufferBytes: 64 << 10,
        ids: IDS,
        mergeFactor: 3,
        openFile: diskFullAfter(150 << 10, which),
      });
      let error: unknown;
      try {
        for (const [p, k, v] of teraRecords(10_000, 2, 7)) {
          buffer.collect(p, k, v);
          if (buffer.mustWait) await buffer.waitForRoom();
        }
        await buffer.finish();
      } catch (err) {
        error = err;
      }
      assert.ok(isMinimrError(error, 'EDISKFULL'), String(error));
      assert.match(error.message, /no space left/);
      assert.ok(error.message.includes(IDS.jobId) && error.message.includes(IDS.attemptId), error.message);
      assert.ok(String(error.details.file).startsWith(dir));
      await assert.rejects(buffer.finish(), (e: unknown) => isMinimrError(e, 'EDISKFULL'));
      await assert.rejects(readdir(dir), { code: 'ENOENT' }, 'all files removed');
    });
  });
}

test('abort while spills are running, and while finish merges, leaves no files', async () => {
  await withTempDir(async (root) => {
    const records = teraRecords(8000, 2, 8);
    const a = new MapOutputBuffer({ dir: join(root, 'a'), numPartitions: 2, bufferBytes: 64 << 10 });
    for (const [p, k, v] of records) a.collect(p, k, v);
    assert.ok((await readdir(join(root, 'a'))).length > 0);
    await a.abort();
    await assert.rejects(readdir(join(root, 'a')), { code: 'ENOENT' });
    assert.throws(() => a.collect(0, Buffer.from('k'), Buffer.from('v')));

    // Merging spill files only (mergeFactor 2), and spills with the buffer's last generation (default).
    for (const [name, mergeFactor, count] of [
      ['b', 2, 8000],
      ['c', 10, 3000],
    ] as const) {
      const b = new MapOutputBuffer({ dir: join(root, name), numPartitions: 2, bufferBytes: 64 << 10, mergeFactor });
      for (const [p, k, v] of records.slice(0, count)) b.collect(p, k, v);
      const finishing = b.finish();
      await new Promise((r) => setImmediate(r));
      await b.abort();
      await finishing.catch(() => undefined);
      await assert.rejects(readdir(join(root, name)), { code: 'ENOENT' });
    }
  });
});
