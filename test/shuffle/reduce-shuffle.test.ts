import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { isMinimrError, type MinimrError } from '../../src/errors.js';
import { createShuffleCounters } from '../../src/shuffle/counters.js';
import { mapOutputPaths, reduceWorkDir } from '../../src/shuffle/paths.js';
import { ReduceShuffle, type ReduceShuffleOptions } from '../../src/shuffle/reduce-shuffle.js';
import { MERGE_READ_BYTES_PER_RUN } from '../../src/shuffle/merge-manager.js';
import type { BytesCombiner, MapOutputLocation, ShuffleCounters } from '../../src/shuffle/types.js';
import {
  assertFetchFailure,
  flipByte,
  JOB,
  SECRET,
  referenceInput,
  startWorker,
  stopWorker,
  twoWorkers,
  writeMaps,
} from './map-outputs.js';
import { lz4Codec } from '../../src/shuffle/codec.js';
import { FramedFileWriter } from '../../src/shuffle/frames.js';
import { encodeIndex } from '../../src/shuffle/index-file.js';
import { mkdir, open, stat, writeFile } from 'node:fs/promises';
import { randomBytes, rng, u32, u32SummingFold, withTempDir } from './support.js';

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true })).map(String);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

interface Outcome {
  out: string[];
  counters: ShuffleCounters;
  filesDuringRun: string[];
}

/** `inPlace`: read the merged input record by record in place (nextRecord) rather than as [key, value] views. */
async function shuffle(
  options: Omit<ReduceShuffleOptions, 'jobId' | 'shuffleSecret'>,
  inPlace = false,
): Promise<Outcome> {
  const counters = createShuffleCounters();
  const rs = new ReduceShuffle({ jobId: JOB, shuffleSecret: SECRET, counters, ...options });
  try {
    const records = await rs.run();
    const filesDuringRun = await filesUnder(options.workDir);
    const out: string[] = [];
    if (inPlace) {
      for (let r = records.nextRecord(); r !== undefined; r = records.nextRecord()) {
        out.push(`${r.buf.toString('hex', r.keyStart, r.keyEnd)}:${r.buf.toString('hex', r.valueStart, r.end)}`);
      }
    } else {
      for (const [k, v] of records) out.push(`${k.toString('hex')}:${v.toString('hex')}`);
    }
    return { out, counters, filesDuringRun };
  } finally {
    await rs.close();
    assert.deepEqual(await filesUnder(options.workDir), [], 'close() leaves no files under workDir');
    await rs.close(); // twice is fine
  }
}

// Maps of very different sizes: the big ones' segments exceed maxSingleShuffleFraction of small budgets.
const SIZES = [40, 900, 120, 15, 2500, 300, 0, 700, 60, 1800, 5, 400];

for (const runs of [1, 2] as const)
  test(
    `reduce input is byte-identical to the reference for every ` +
      `budget: in memory, to disk, merged, multi-pass (map outputs ` +
      `of ${runs} run${runs > 1 ? 's' : ''})`,
    async () => {
      await withTempDir(async (tmp) => {
        const [a, b] = await twoWorkers(tmp);
        try {
          const numReduces = 2;
          const { mapRecords, locations, entries } = await writeMaps([a, b], {
            sizes: SIZES,
            numReduces,
            seed: 7,
            runs,
          });
          for (let r = 0; r < numReduces; r++) {
            const expected = referenceInput(mapRecords, r);
            const rawTotal = entries.reduce((n, e) => n + e[r]!.rawLength, 0);
            const storedTotal = entries.reduce((n, e) => n + e[r]!.length, 0);
            const biggest = Math.max(...entries.map((e) => e[r]!.rawLength));
            assert.ok(rawTotal > 50_000, `enough data (${rawTotal})`);
            const cases: Array<{
              name: string;
              opts: Partial<ReduceShuffleOptions>;
              check: (c: ShuffleCounters) => void;
            }> = [
              {
                name: 'all in memory',
                opts: { bufferBytes: rawTotal * 10 },
                check: (c) => {
                  assert.equal(c.spilledBytes, 0);
                  assert.equal(c.spilledRecords, 0);
                  assert.equal(c.mergePasses, 0);
                  assert.ok(c.peakBufferBytes >= rawTotal * 0.5, 'segments were held in memory');
                },
              },
              {
                name: 'all in memory, mergeFactor 2: in-memory segments count as one run',
                opts: { bufferBytes: rawTotal * 10, mergeFactor: 2 },
                check: (c) => assert.equal(c.spilledBytes + c.mergePasses, 0),
              },
              {
                name: 'big segments straight to disk',
                opts: { bufferBytes: rawTotal * 2, maxSingleShuffleFraction: (biggest * 0.6) / (rawTotal * 2) },
                check: (c) => {
                  assert.ok(c.spilledBytes > 0, 'some segments on disk');
                  assert.equal(c.mergePasses, 0);
                },
              },
              {
                name: 'in-memory merges',
                opts: {
                  bufferBytes: Math.ceil(rawTotal / 3),
                  mergeFactor: 100,
                  maxSingleShuffleFraction: 1,
                  mergeThreshold: 0.5,
                },
                check: (c) => {
                  assert.ok(
                    c.spilledRecords > 0 && c.spilledRecords < expected.length * 2,
                    `spilled ${c.spilledRecords}`,
                  );
                  assert.equal(c.mergePasses, 0);
                },
              },
              {
                name: 'small budget, default fractions',
                opts: { bufferBytes: Math.ceil(rawTotal / 4) },
                check: (c) => assert.ok(c.spilledBytes > 0),
              },
              {
                name: 'multi-pass, mergeFactor 2',
                opts: { bufferBytes: Math.ceil(rawTotal / 5), mergeFactor: 2 },
                check: (c) => {
                  assert.ok(c.mergePasses >= 2, `merge passes ${c.mergePasses}`);
                  assert.ok(c.spilledRecords > expected.length, 'records re-written by the passes');
                },
              },
              {
                name: 'mergeFactor 3, budget barely above the largest segment',
                opts: { bufferBytes: biggest + 1, mergeFactor: 3, maxSingleShuffleFraction: 1, mergeThreshold: 0.9 },
                check: (c) => assert.ok(c.spilledBytes > 0),
              },
            ];
            for (const [i, { name, opts, check }] of cases.entries()) {
              const workDir = reduceWorkDir(join(tmp, 'reduce'), JOB, `attempt_r${r}_${i}`);
              // Every other case reads the merged input in place (the default reduce of bytes does): the same records.
              const { out, counters } = await shuffle(
                {
                  reduceIndex: r,
                  locations: [...locations].reverse(),
                  local: { workerId: 'wA', rootDir: a.rootDir },
                  workDir,
                  concurrency: 3,
                  bufferBytes: 1,
                  ...opts,
                },
                i % 2 === 1,
              );
              assert.equal(out.length, expected.length, `${name}: record count`);
              assert.deepEqual(out, expected, `${name}: reduce input equals the reference`);
              assert.ok(
                counters.peakBufferBytes <= opts.bufferBytes!,
                `${name}: peak ${counters.peakBufferBytes} <= budget ${opts.bufferBytes}`,
              );
              assert.equal(counters.reduceInputRecords, expected.length, `${name}: reduceInputRecords`);
              assert.equal(
                counters.shuffleBytesLocal + counters.shuffleBytesRemote,
                storedTotal,
                `${name}: shuffle bytes are the stored bytes`,
              );
              assert.ok(counters.shuffleBytesLocal > 0 && counters.shuffleBytesRemote > 0, `${name}: local and remote`);
              check(counters);
            }
          }
          assert.equal(a.requests.length, 0, 'local map outputs are not fetched over HTTP');
        } finally {
          await stopWorker(a);
          await stopWorker(b);
        }
      });
    },
  );

test(
  "a local map's segment that goes to disk is read in place from " +
    "the map's file: no copy in the work dir, only remote segments " +
    'spilled',
  async () => {
    await withTempDir(async (tmp) => {
      const [a, b] = await twoWorkers(tmp);
      try {
        // Two runs per map output: each run is read in place at its own offset.
        const { mapRecords, locations, entries } = await writeMaps([a, b], {
          sizes: SIZES,
          numReduces: 2,
          seed: 19,
          runs: 2,
        });
        const r = 1;
        const rawTotal = entries.reduce((n, e) => n + e[r]!.rawLength, 0);
        const onB = locations.filter((l) => l.workerId === 'wB');
        const remoteStored = onB.reduce((n, l) => n + entries[l.mapIndex]![r]!.length, 0);
        const remoteRuns = onB.reduce(
          (n, l) => n + entries[l.mapIndex]![r]!.runs.filter((run) => run.length > 0).length,
          0,
        );
        const localFiles = locations
          .filter((l) => l.workerId === 'wA')
          .map((l) => mapOutputPaths(a.rootDir, JOB, l.attemptId).dataFile);
        const sizesBefore = await Promise.all(localFiles.map(async (f) => (await stat(f)).size));
        // Every segment above one byte goes to disk; mergeFactor 2 makes merge passes over in-place runs too.
        for (const mergeFactor of [100, 2]) {
          const workDir = reduceWorkDir(join(tmp, 'reduce'), JOB, `attempt_r_inplace_${mergeFactor}`);
          const { out, counters, filesDuringRun } = await shuffle({
            reduceIndex: r,
            locations,
            local: { workerId: 'wA', rootDir: a.rootDir },
            workDir,
            bufferBytes: rawTotal,
            maxSingleShuffleFraction: 1 / rawTotal,
            mergeFactor,
          });
          assert.deepEqual(
            out,
            referenceInput(mapRecords, r),
            `mergeFactor ${mergeFactor}: reduce input equals the reference`,
          );
          if (mergeFactor === 100) {
            assert.equal(counters.spilledBytes, remoteStored, 'only the remote segments were written to disk');
            assert.equal(
              filesDuringRun.length,
              remoteRuns,
              `one file per remote run, none for the local ones: ${filesDuringRun.join(', ')}`,
            );
            assert.equal(
              counters.shuffleBytesInPlace,
              counters.shuffleBytesLocal,
              'every local segment was read in place',
            );
          } else {
            assert.ok(counters.mergePasses > 0, 'merge passes read the in-place runs');
          }
          assert.ok(counters.shuffleBytesLocal > 0);
        }
        // The map's files are its own: still there, as they were, for other reduces and retries.
        assert.deepEqual(await Promise.all(localFiles.map(async (f) => (await stat(f)).size)), sizesBefore);
      } finally {
        await stopWorker(a);
        await stopWorker(b);
      }
    });
  },
);

test('at most `concurrency` fetches in flight, also while fetches wait for memory', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wC', join(tmp, 'c'), 20);
    try {
      const { mapRecords, locations, entries } = await writeMaps([w], {
        sizes: [300, 250, 400, 350, 200, 300, 280, 330, 310, 290],
        numReduces: 1,
        seed: 11,
      });
      const rawTotal = entries.reduce((n, e) => n + e[0]!.rawLength, 0);
      for (const concurrency of [1, 3]) {
        w.maxInFlight = 0;
        const { out, counters } = await shuffle({
          reduceIndex: 0,
          locations,
          workDir: join(tmp, `work${concurrency}`),
          bufferBytes: Math.ceil(rawTotal / 3),
          concurrency,
        });
        assert.deepEqual(out, referenceInput(mapRecords, 0));
        assert.ok(counters.spilledBytes > 0, 'the budget was small enough to make fetches wait and merge');
        assert.equal(w.maxInFlight, concurrency, `concurrency ${concurrency}: saw ${w.maxInFlight} requests in flight`);
      }
    } finally {
      await stopWorker(w);
    }
  });
});

test(
  'a fetch that can never fit beside the committed segments makes ' + 'them merge instead of waiting forever',
  async () => {
    await withTempDir(async (tmp) => {
      const w = await startWorker('wD', join(tmp, 'd'));
      try {
        const { mapRecords, locations, entries } = await writeMaps([w], {
          sizes: [500, 500, 500, 500, 500, 500],
          numReduces: 1,
          seed: 12,
        });
        const biggest = Math.max(...entries.map((e) => e[0]!.rawLength));
        // Threshold never reached by committed segments, and a segment may take most of the buffer.
        const { out, counters } = await shuffle({
          reduceIndex: 0,
          locations,
          workDir: join(tmp, 'work'),
          bufferBytes: Math.ceil(biggest * 1.5),
          maxSingleShuffleFraction: 1,
          mergeThreshold: 1,
          concurrency: 1,
        });
        assert.deepEqual(out, referenceInput(mapRecords, 0));
        assert.ok(counters.spilledRecords > 0);
      } finally {
        await stopWorker(w);
      }
    });
  },
);

for (const runs of [1, 2] as const)
  test(
    `a corrupted segment byte fails with EFETCH naming the map ` +
      `after the retries (memory and disk paths, remote and ` +
      `local; ${runs} ` +
      `run${runs > 1 ? 's, the second one corrupt' : ''})`,
    async () => {
      await withTempDir(async (tmp) => {
        const w = await startWorker('wR', join(tmp, 'r'));
        try {
          const { locations, entries } = await writeMaps([w], {
            sizes: [200, 2000, 300, 250],
            numReduces: 2,
            seed: 3,
            runs,
          });
          const rawTotal = entries.reduce((n, e) => n + e[1]!.rawLength, 0);
          for (const [bad, bufferBytes] of [
            [locations[2]!, rawTotal * 4], // a small segment: decompressed into memory
            [locations[1]!, Math.ceil(rawTotal / 3)], // the big one: streamed to disk
          ] as const) {
            const paths = mapOutputPaths(w.rootDir, JOB, bad.attemptId);
            const entry = entries[bad.mapIndex]![1]!.runs.at(-1)!;
            const at = entry.offset + Math.floor(entry.length / 2);
            await flipByte(paths.dataFile, at);
            const badUrl = `/shuffle/${JOB}/${bad.attemptId}/1`;
            const before = w.requests.filter((u) => u === badUrl).length;
            for (const local of [undefined, { workerId: 'wR', rootDir: w.rootDir }]) {
              const workDir = join(tmp, `work-${bad.mapIndex}-${local ? 'local' : 'remote'}`);
              const rs = new ReduceShuffle({
                jobId: JOB,
                shuffleSecret: SECRET,
                reduceIndex: 1,
                locations,
                local,
                workDir,
                bufferBytes,
                concurrency: 2,
                retries: 2,
                backoffMs: 10,
              });
              const started = Date.now();
              await assert.rejects(rs.run(), (err) => assertFetchFailure(err, bad, 1));
              assert.ok(Date.now() - started >= 10 + 20, 'backoff doubles between retries');
              await rs.close();
              assert.deepEqual(await filesUnder(workDir), [], 'no files left after the failure');
            }
            assert.equal(w.requests.filter((u) => u === badUrl).length - before, 3, 'first try + 2 retries over HTTP');
            await flipByte(paths.dataFile, at); // repaired
          }
          // The other partition of the same maps is intact.
          const rs = new ReduceShuffle({
            jobId: JOB,
            shuffleSecret: SECRET,
            reduceIndex: 0,
            locations,
            workDir: join(tmp, 'ok'),
            bufferBytes: 1 << 20,
            retries: 0,
          });
          assert.ok([...(await rs.run())].length > 0);
          await rs.close();
        } finally {
          await stopWorker(w);
        }
      });
    },
  );

test('a missing map output fails with EFETCH at once (remote 404 and local), and close() cleans up', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wM', join(tmp, 'm'));
    try {
      const { locations, entries } = await writeMaps([w], {
        sizes: [800, 900, 700, 1000, 600],
        numReduces: 1,
        seed: 4,
      });
      const rawTotal = entries.reduce((n, e) => n + e[0]!.rawLength, 0);
      const gone = locations[3]!;
      await rm(mapOutputPaths(w.rootDir, JOB, gone.attemptId).dir, { recursive: true });
      for (const local of [undefined, { workerId: 'wM', rootDir: w.rootDir }]) {
        const workDir = join(tmp, `work-${local ? 'local' : 'remote'}`);
        // A small budget, so that runs are on disk when the failure comes.
        const rs = new ReduceShuffle({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: 0,
          locations,
          local,
          workDir,
          bufferBytes: Math.ceil(rawTotal / 5),
          concurrency: 1,
          retries: 3,
          backoffMs: 1000,
        });
        await assert.rejects(
          rs.run(),
          (err) =>
            assertFetchFailure(err, gone, 0) && (local !== undefined || (err as MinimrError).details.status === 404),
        );
        await rs.close();
        await rs.close();
        assert.deepEqual(await filesUnder(workDir), []);
      }
      assert.equal(w.requests.filter((u) => u.includes(gone.attemptId)).length, 1, 'a 404 is not retried');
    } finally {
      await stopWorker(w);
    }
  });
});

test('close() during a run stops it (EKILLED) and removes its files; a cancelled signal does too', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wK', join(tmp, 'k'), 100);
    try {
      const { locations, entries } = await writeMaps([w], {
        sizes: [800, 900, 700, 1000, 600, 500],
        numReduces: 1,
        seed: 5,
      });
      const rawTotal = entries.reduce((n, e) => n + e[0]!.rawLength, 0);
      const workDir = join(tmp, 'work');
      const rs = new ReduceShuffle({
        jobId: JOB,
        shuffleSecret: SECRET,
        reduceIndex: 0,
        locations,
        workDir,
        bufferBytes: Math.ceil(rawTotal / 5),
        concurrency: 2,
      });
      const pending = rs.run();
      await new Promise((resolve) => setTimeout(resolve, 250));
      await rs.close();
      await assert.rejects(pending, (e: unknown) => isMinimrError(e, 'EKILLED'));
      assert.deepEqual(await filesUnder(workDir), []);

      const ac = new AbortController();
      const rs2 = new ReduceShuffle({
        jobId: JOB,
        shuffleSecret: SECRET,
        reduceIndex: 0,
        locations,
        workDir,
        bufferBytes: rawTotal,
        signal: ac.signal,
      });
      const pending2 = rs2.run();
      setTimeout(() => ac.abort(), 50);
      await assert.rejects(pending2, (e: unknown) => isMinimrError(e, 'EKILLED'));
      await rs2.close();
      assert.deepEqual(await filesUnder(workDir), []);
    } finally {
      await stopWorker(w);
    }
  });
});

/**
 * Six maps' u32(map) u32(i) values shuffled to one reduce with half the input's memory (so merges
 * run in memory) through `combiner`, which sums the second word; checks the sums per key against
 * the maps' records and the keys' order; returns the counters.
 */
async function checkSummingShuffle(workerName: string, combiner: BytesCombiner): Promise<ShuffleCounters> {
  return withTempDir(async (tmp) => {
    const w = await startWorker(workerName, join(tmp, 'w'));
    try {
      const { mapRecords, locations, entries } = await writeMaps([w], {
        sizes: [600, 700, 800, 900, 650, 750],
        numReduces: 1,
        seed: 9,
        keyLen: 2,
        valueLen: 0,
      });
      const rawTotal = entries.reduce((n, e) => n + e[0]!.rawLength, 0);
      const { out, counters } = await shuffle({
        reduceIndex: 0,
        locations,
        workDir: join(tmp, 'work'),
        bufferBytes: Math.ceil(rawTotal / 2),
        maxSingleShuffleFraction: 1,
        combiner,
      });
      assert.ok(counters.combineInputRecords > counters.combineOutputRecords, 'records were combined');
      const got = new Map<string, number>();
      for (const line of out) {
        const [k, v] = line.split(':') as [string, string];
        got.set(k, ((got.get(k) ?? 0) + Buffer.from(v, 'hex').readUInt32BE(4)) % 2 ** 32);
      }
      const want = new Map<string, number>();
      for (const rec of mapRecords.flat()) {
        const k = rec.key.toString('hex');
        want.set(k, ((want.get(k) ?? 0) + rec.value.readUInt32BE(4)) % 2 ** 32);
      }
      assert.deepEqual([...got].sort(), [...want].sort());
      const keys = out.map((l) => l.split(':')[0]!);
      assert.deepEqual(
        keys,
        [...keys].sort((x, y) => Buffer.compare(Buffer.from(x, 'hex'), Buffer.from(y, 'hex'))),
        'still sorted',
      );
      return counters;
    } finally {
      await stopWorker(w);
    }
  });
}

test('a combiner runs on in-memory merges: sums per key equal the reference', async () => {
  let calls = 0;
  const counters = await checkSummingShuffle('wW', (key, values, emit) => {
    calls++;
    let sum = 0;
    for (const v of values) sum += v.readUInt32BE(4);
    const out = Buffer.alloc(8);
    out.writeUInt32BE(sum % 2 ** 32, 4);
    emit(key, out);
  });
  assert.ok(calls > 0 && counters.combineOutputRecords === calls, 'the combiner ran, once per group');
});

test("a combiner's fold runs on in-memory merges in its place: sums per key equal the reference", async () => {
  const { combiner, groups } = u32SummingFold(4, 8);
  const counters = await checkSummingShuffle('wF', combiner);
  assert.ok(groups() > 0 && counters.combineOutputRecords === groups(), 'the fold ran, once per group');
});

test('a custom comparator (reverse byte order) is used by every merge', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wO', join(tmp, 'o'));
    try {
      const reverse = (x: Buffer, y: Buffer): number => Buffer.compare(y, x);
      const rand = rng(21);
      const locations: MapOutputLocation[] = [];
      const all: Array<{ key: Buffer; value: Buffer; m: number }> = [];
      for (let m = 0; m < 6; m++) {
        const attemptId = `attempt_rev${m}`;
        const recs = Array.from({ length: 400 }, (_, i) => ({
          partition: 0,
          key: randomBytes(rand, 3, 4),
          value: u32(m * 1000 + i),
        }));
        recs.sort((x, y) => reverse(x.key, y.key));
        for (const r of recs) all.push({ key: r.key, value: r.value, m });
        await writeSortedMapOutput(mapOutputPaths(w.rootDir, JOB, attemptId).dir, recs);
        locations.push({ mapIndex: m, attemptId, workerId: w.workerId, host: '127.0.0.1', dataPort: w.port });
      }
      const expected = all
        .sort((x, y) => reverse(x.key, y.key))
        .map((x) => `${x.key.toString('hex')}:${x.value.toString('hex')}`);
      const { out } = await shuffle({
        reduceIndex: 0,
        locations,
        workDir: join(tmp, 'work'),
        bufferBytes: 4000,
        mergeFactor: 2,
        compare: reverse,
      });
      assert.deepEqual(out, expected);
    } finally {
      await stopWorker(w);
    }
  });
});

/** A one-partition map output of records already in the order wanted (here: reverse byte order). */
async function writeSortedMapOutput(dir: string, recs: ReadonlyArray<{ key: Buffer; value: Buffer }>): Promise<void> {
  await mkdir(dir, { recursive: true });
  const fh = await open(join(dir, 'file.out'), 'w');
  const writer = new FramedFileWriter(fh, lz4Codec, 1 << 16, 512);
  writer.beginSegment();
  for (const r of recs) await writer.append(r.key, r.value);
  const entry = await writer.endSegment();
  await writer.finish();
  await fh.close();
  await writeFile(join(dir, 'file.out.index'), encodeIndex([[entry]], lz4Codec.id));
}

test('the merged runs on disk are compressed frames (spilledBytes below the raw bytes written)', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wZ', join(tmp, 'z'));
    try {
      const { mapRecords, locations, entries } = await writeMaps([w], {
        sizes: [1000, 1000, 1000, 1000],
        numReduces: 1,
        seed: 13,
        valueLen: 200,
      });
      const rawTotal = entries.reduce((n, e) => n + e[0]!.rawLength, 0);
      const { out, counters, filesDuringRun } = await shuffle({
        reduceIndex: 0,
        locations,
        workDir: join(tmp, 'work'),
        bufferBytes: Math.ceil(rawTotal / 3),
      });
      assert.deepEqual(out, referenceInput(mapRecords, 0));
      assert.ok(filesDuringRun.length > 0, 'runs were on disk while the stream was read');
      assert.ok(
        counters.spilledBytes > 0 && counters.spilledBytes < rawTotal,
        `spilled ${counters.spilledBytes} of ${rawTotal} raw`,
      );
    } finally {
      await stopWorker(w);
    }
  });
});

test(
  'the final merge reads every on-disk run at once when the ' +
    'budget holds their read buffers; a smaller budget merges in ' +
    'passes of mergeFactor',
  async () => {
    await withTempDir(async (tmp) => {
      const w = await startWorker('wW', join(tmp, 'w'));
      try {
        const maps = 16;
        const { mapRecords, locations } = await writeMaps([w], {
          sizes: Array.from({ length: maps }, (_, m) => 150 + 37 * m),
          numReduces: 1,
          seed: 21,
        });
        const expected = referenceInput(mapRecords, 0);
        const total = expected.length;
        const mergeFactor = 4;
        // Fewest passes of fan-in f that bring n runs down to f: each pass removes at most f - 1 runs.
        const passesFor = (n: number, f: number) => Math.max(0, Math.ceil((n - f) / (f - 1)));
        const cases = [
          { name: 'budget holds all 16 runs', bufferBytes: maps * MERGE_READ_BYTES_PER_RUN, width: maps },
          { name: 'budget holds 10 runs', bufferBytes: 10 * MERGE_READ_BYTES_PER_RUN + 1000, width: 10 },
          { name: 'budget holds 1 run: mergeFactor', bufferBytes: MERGE_READ_BYTES_PER_RUN, width: mergeFactor },
        ];
        for (const [i, c] of cases.entries()) {
          // Every segment above a byte of the budget: all 16 go straight to disk.
          const { out, counters } = await shuffle(
            {
              reduceIndex: 0,
              locations,
              workDir: join(tmp, `work${i}`),
              bufferBytes: c.bufferBytes,
              mergeFactor,
              maxSingleShuffleFraction: 1 / c.bufferBytes,
            },
            i % 2 === 1,
          );
          assert.deepEqual(out, expected, `${c.name}: reduce input equals the reference`);
          const passes = passesFor(maps, c.width);
          assert.equal(counters.mergePasses, passes, `${c.name}: ${passes} passes of at most ${c.width} runs`);
          if (passes === 0)
            assert.equal(counters.spilledRecords, total, `${c.name}: each record written once, as fetched`);
          else assert.ok(counters.spilledRecords > total, `${c.name}: the passes re-wrote records`);
        }
      } finally {
        await stopWorker(w);
      }
    });
  },
);
