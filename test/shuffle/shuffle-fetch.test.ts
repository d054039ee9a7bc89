import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { lz4Codec } from '../../src/shuffle/codec.js';
import { createShuffleCounters } from '../../src/shuffle/counters.js';
import { fetchMapOutputs } from '../../src/shuffle/fetcher.js';
import { decodeSegment } from '../../src/shuffle/frames.js';
import { groupByKey, mergeSortedRuns } from '../../src/shuffle/merger.js';
import { mapOutputPaths } from '../../src/shuffle/paths.js';
import { SegmentReader } from '../../src/shuffle/record-format.js';
import {
  SHUFFLE_HASH_HEADER,
  SHUFFLE_REPLY_HEADER,
  shuffleReplyHash,
  shuffleRequestHash,
} from '../../src/shuffle/shuffle-secret.js';
import type { MapOutputLocation } from '../../src/shuffle/types.js';
import { isMinimrError, type MinimrError } from '../../src/errors.js';
import { parseIndex, withTempDir } from './support.js';
import {
  assertFetchFailure,
  flipByte,
  JOB,
  SECRET,
  referenceInput,
  startWorker,
  stopWorker,
  writeMapOutput,
  writeMaps as writeMapsWith,
  type Worker,
} from './map-outputs.js';

/** `numMaps` map outputs of 200-1000 records, alternating between the workers. */
function writeMaps(workers: Worker[], numMaps: number, numReduces: number, seed: number) {
  return writeMapsWith(workers, {
    sizes: Array.from({ length: numMaps }, (_, m) => 200 + ((m * 337 + seed * 101) % 800)),
    numReduces,
    seed,
  });
}

/** A request as JOB's reducers send it: hashed with JOB's shuffle secret. */
function get(
  port: number,
  path: string,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const headers = { [SHUFFLE_HASH_HEADER]: shuffleRequestHash(SECRET, path.split('?')[0]!) };
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('fetcher gets every map output for each reduce: remote over HTTP, local from disk', async () => {
  await withTempDir(async (tmp) => {
    const a = await startWorker('wA', join(tmp, 'a'), 15);
    const b = await startWorker('wB', join(tmp, 'b'), 15);
    try {
      const numReduces = 3;
      const { mapRecords, locations } = await writeMaps([a, b], 7, numReduces, 1);
      // Shuffled location order: results still come back in map order.
      const shuffled = [...locations].reverse();
      let localBytes = 0;
      let remoteBytes = 0;
      for (let r = 0; r < numReduces; r++) {
        const counters = createShuffleCounters();
        const segments = await fetchMapOutputs({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: r,
          locations: shuffled,
          concurrency: 2,
          local: { workerId: 'wA', rootDir: a.rootDir },
          counters,
        });
        assert.deepEqual(
          segments.map((s) => s.mapIndex),
          [0, 1, 2, 3, 4, 5, 6],
        );
        for (const s of segments) {
          const loc = locations[s.mapIndex]!;
          assert.equal(s.attemptId, loc.attemptId);
          assert.equal(s.local, loc.workerId === 'wA');
          // Bytes equal the segment as stored on the map's disk (read independently).
          const owner = loc.workerId === 'wA' ? a : b;
          const paths = mapOutputPaths(owner.rootDir, JOB, loc.attemptId);
          const entry = parseIndex(await readFile(paths.indexFile))[r]!;
          const data = await readFile(paths.dataFile);
          assert.deepEqual(s.data, data.subarray(entry.offset, entry.offset + entry.length));
          assert.equal(s.records, entry.records);
          assert.equal(s.records, mapRecords[s.mapIndex]!.filter((x) => x.partition === r).length);
          if (s.local) localBytes += s.data.length;
          else remoteBytes += s.data.length;
        }
        assert.equal(
          counters.shuffleBytesLocal + counters.shuffleBytesRemote,
          segments.reduce((n, s) => n + s.data.length, 0),
        );
        assert.ok(counters.shuffleBytesLocal > 0 && counters.shuffleBytesRemote > 0);
        // The reduce input (merge of all segments) equals the reference: this partition's records of
        // all maps, sorted by key, equal keys in map order then emission order.
        const readers = (): SegmentReader[] =>
          segments.map((s) => new SegmentReader(decodeSegment(s.data, { name: `map ${s.mapIndex}` })));
        const merged = [...mergeSortedRuns(readers())].map(([k, v]) => `${k.toString('hex')}:${v.toString('hex')}`);
        const expected = referenceInput(mapRecords, r);
        assert.deepEqual(merged, expected);
        const groups = [...groupByKey(mergeSortedRuns(readers()))].length;
        assert.equal(groups, new Set(expected.map((e) => e.split(':')[0])).size);
      }
      assert.ok(localBytes > 0 && remoteBytes > 0);
      assert.equal(a.requests.length, 0, 'local map outputs are not fetched over HTTP');
      assert.equal(b.requests.length, 3 * 3, 'three remote maps x three reduces');
      assert.ok(b.maxInFlight <= 2, `at most 2 fetches in flight, saw ${b.maxInFlight}`);
      assert.equal(b.maxInFlight, 2, 'concurrency is used');
    } finally {
      await stopWorker(a);
      await stopWorker(b);
    }
  });
});

test('handler: headers, 404 JSON for missing output, 400 for bad partitions, false for other URLs', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('w', join(tmp, 'w'));
    try {
      const { locations, entries } = await writeMaps([w], 1, 2, 2);
      const paths = mapOutputPaths(w.rootDir, JOB, locations[0]!.attemptId);
      const entry = parseIndex(await readFile(paths.indexFile))[1]!;
      const ok = await get(w.port, `/shuffle/${JOB}/${locations[0]!.attemptId}/1`);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['x-minimr-records'], String(entry.records));
      assert.equal(ok.headers['x-minimr-length'], String(entry.length));
      assert.equal(
        ok.headers['x-minimr-runs'],
        `${entry.length}:${entries[0]![1]!.rawLength}:${entry.records}:${entry.crc32}`,
      );
      assert.equal(ok.headers['x-minimr-raw-length'], String(entries[0]![1]!.rawLength));
      assert.ok(entries[0]![1]!.rawLength > entry.length, 'served as stored: compressed frames');
      assert.equal(ok.body.length, entry.length);

      const missing = await get(w.port, `/shuffle/${JOB}/attempt_nope/0`);
      assert.equal(missing.status, 404);
      const body = JSON.parse(missing.body.toString()) as {
        code: string;
        message: string;
        details: Record<string, unknown>;
      };
      assert.equal(body.code, 'EFETCH');
      assert.equal(typeof body.message, 'string');
      assert.equal(body.details.attemptId, 'attempt_nope');

      assert.equal((await get(w.port, `/shuffle/${JOB}/${locations[0]!.attemptId}/2`)).status, 400);
      assert.equal((await get(w.port, `/shuffle/${JOB}/${locations[0]!.attemptId}/-1`)).status, 400);
      assert.equal((await get(w.port, `/shuffle/${JOB}/${locations[0]!.attemptId}/0`, 'POST')).status, 405);
      const other = await get(w.port, '/blocks/whatever');
      assert.equal(other.status, 404);
      assert.equal(other.body.toString(), 'not a shuffle url', 'non-shuffle URLs are left to the next handler');
    } finally {
      await stopWorker(w);
    }
  });
});

test('hostile URLs get 400 and never reach a file, even one planted where traversal would lead', async () => {
  await withTempDir(async (tmp) => {
    const rootDir = join(tmp, 'root');
    const w = await startWorker('w', rootDir);
    try {
      // A valid map output at <tmp>/a, i.e. what jobId ".." + attemptId "a" would resolve to from rootDir.
      await writeMapOutput(
        join(tmp, 'a'),
        [{ partition: 0, key: Buffer.from('secret'), value: Buffer.from('data') }],
        1,
      );
      for (const path of [
        '/shuffle/../../etc/passwd/0',
        '/shuffle/../a/0',
        '/shuffle/%2e%2e/a/0',
        '/shuffle/..%2Fa/x/0',
        '/shuffle/job/../0',
        '/shuffle/job/a/0/extra',
        '/shuffle/job/a/',
        '/shuffle/job/a/1e3',
        '/shuffle/',
      ]) {
        const res = await get(w.port, path);
        assert.equal(res.status, 400, path);
        assert.equal((JSON.parse(res.body.toString()) as { code: string }).code, 'EBADPATH', path);
        assert.ok(!res.body.includes('secret'), path);
      }
    } finally {
      await stopWorker(w);
    }
  });
});

test('a corrupted segment byte on disk fails with EFETCH after the retries (remote and local)', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wR', join(tmp, 'r'));
    try {
      const { locations } = await writeMaps([w], 4, 2, 3);
      const bad = locations[2]!;
      const paths = mapOutputPaths(w.rootDir, JOB, bad.attemptId);
      const entry = parseIndex(await readFile(paths.indexFile))[1]!;
      assert.ok(entry.length > 10);
      await flipByte(paths.dataFile, entry.offset + Math.floor(entry.length / 2));
      const badUrl = `/shuffle/${JOB}/${bad.attemptId}/1`;

      const started = Date.now();
      await assert.rejects(
        fetchMapOutputs({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: 1,
          locations,
          concurrency: 2,
          retries: 2,
          backoffMs: 20,
        }),
        (err) => assertFetchFailure(err, bad, 1),
      );
      assert.equal(w.requests.filter((u) => u === badUrl).length, 3, 'first try + 2 retries');
      assert.ok(Date.now() - started >= 20 + 40, 'backoff doubles between retries');

      // The other partition of the same map is intact.
      const ok = await fetchMapOutputs({ jobId: JOB, shuffleSecret: SECRET, reduceIndex: 0, locations, retries: 0 });
      assert.equal(ok.length, 4);

      // Same corruption read through the local short-circuit.
      await assert.rejects(
        fetchMapOutputs({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: 1,
          locations,
          retries: 1,
          backoffMs: 1,
          local: { workerId: 'wR', rootDir: w.rootDir },
        }),
        (err) => assertFetchFailure(err, bad, 1),
      );
    } finally {
      await stopWorker(w);
    }
  });
});

test('a missing map output fails with EFETCH at once (remote 404 and local), naming the map', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wM', join(tmp, 'm'));
    try {
      const { locations } = await writeMaps([w], 3, 2, 4);
      const gone = locations[1]!;
      await rm(mapOutputPaths(w.rootDir, JOB, gone.attemptId).dir, { recursive: true });
      await assert.rejects(
        fetchMapOutputs({ jobId: JOB, shuffleSecret: SECRET, reduceIndex: 0, locations, retries: 3, backoffMs: 1000 }),
        (err) => assertFetchFailure(err, gone, 0) && (err as MinimrError).details.status === 404,
      );
      assert.equal(w.requests.filter((u) => u.includes(gone.attemptId)).length, 1, 'a 404 is not retried');
      await assert.rejects(
        fetchMapOutputs({
          jobId: JOB,
          shuffleSecret: SECRET,
          reduceIndex: 0,
          locations,
          backoffMs: 1000,
          local: { workerId: 'wM', rootDir: w.rootDir },
        }),
        (err) => assertFetchFailure(err, gone, 0),
      );
    } finally {
      await stopWorker(w);
    }
  });
});

test(
  'a segment of two runs: each run checked against its own crc32; ' +
    'headers whose runs are malformed or do not add up are refused',
  async () => {
    await withTempDir(async (tmp) => {
      // A real two-run map output, served by a worker that knows the secret but may lie in its headers.
      const dir = join(tmp, 'm');
      const records = Array.from({ length: 400 }, (_, i) => ({
        partition: 0,
        key: Buffer.from(`k${(i * 7919) % 400}`),
        value: Buffer.from(`v${i}`),
      }));
      const [written] = await writeMapOutput(dir, records, 1, lz4Codec, 512, 2);
      const [run0, run1] = written!.runs;
      const body = (await readFile(join(dir, 'file.out'))).subarray(run0!.offset, run1!.offset + run1!.length);
      const honest = `${run0!.length}:${run0!.rawLength}:${run0!.records}:${run0!.crc32},${run1!.length}:${run1!.rawLength}:${run1!.records}:${run1!.crc32}`;
      let runsHeader: string | undefined = honest;
      let payload = body;
      const server = createServer((req, res) => {
        const given = req.headers[SHUFFLE_HASH_HEADER];
        const headers: Record<string, string | number> = {
          'content-length': payload.length,
          'x-minimr-length': written!.length,
          'x-minimr-records': written!.records,
          'x-minimr-raw-length': written!.rawLength,
          [SHUFFLE_REPLY_HEADER]: shuffleReplyHash(SECRET, typeof given === 'string' ? given : ''),
        };
        if (runsHeader !== undefined) headers['x-minimr-runs'] = runsHeader;
        res.writeHead(200, headers).end(payload);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const loc: MapOutputLocation = {
        mapIndex: 0,
        attemptId: 'attempt_m0_0',
        workerId: 'w',
        host: '127.0.0.1',
        dataPort: (server.address() as { port: number }).port,
      };
      const fetch = () =>
        fetchMapOutputs({ jobId: JOB, shuffleSecret: SECRET, reduceIndex: 0, locations: [loc], retries: 0 });
      try {
        const [segment] = await fetch();
        assert.deepEqual(
          segment!.runs,
          [run0, run1].map(({ length, rawLength, records, crc32 }) => ({ length, rawLength, records, crc32 })),
        );
        assert.ok(segment!.data.equals(body));
        const refused = async (why: RegExp): Promise<void> => {
          await assert.rejects(fetch(), (err) => assertFetchFailure(err, loc, 0) && why.test((err as Error).message));
        };
        // The second run's bytes altered (its crc32 no longer matches), the first intact.
        payload = Buffer.from(body);
        payload[run0!.length + 20] ^= 1;
        await refused(/crc32 mismatch .*\(run 2 of 2\)/);
        payload = body;
        for (const bad of [
          undefined,
          'garbage',
          `${honest},${honest.split(',')[0]}`,
          `${run0!.length}:1:2:${2 ** 32}`,
          '-1:0:0:0',
        ]) {
          runsHeader = bad;
          await refused(/lacks the segment headers/);
        }
        runsHeader = `${run0!.length + 1}:${run0!.rawLength}:${run0!.records}:${run0!.crc32},${run1!.length}:${run1!.rawLength}:${run1!.records}:${run1!.crc32}`;
        await refused(/do not add up/);
        // Runs that add up but cut the bytes in the wrong place: the first run's crc32 fails.
        runsHeader = `${run0!.length + 16}:${run0!.rawLength}:${run0!.records}:${run0!.crc32},${run1!.length - 16}:${run1!.rawLength}:${run1!.records}:${run1!.crc32}`;
        await refused(/crc32 mismatch .*\(run 1 of 2\)/);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });
  },
);

test('an unreachable worker fails with EFETCH after the retries', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wU', join(tmp, 'u'));
    const { locations } = await writeMaps([w], 1, 1, 5);
    await stopWorker(w); // nothing listens on the port any more
    await assert.rejects(
      fetchMapOutputs({ jobId: JOB, shuffleSecret: SECRET, reduceIndex: 0, locations, retries: 2, backoffMs: 5 }),
      (err) => assertFetchFailure(err, locations[0]!, 0) && (err as MinimrError).details.tries === 3,
    );
  });
});

test('the caller can cancel a fetch (EKILLED)', async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('wK', join(tmp, 'k'), 500);
    try {
      const { locations } = await writeMaps([w], 2, 1, 6);
      const ac = new AbortController();
      const pending = fetchMapOutputs({
        jobId: JOB,
        shuffleSecret: SECRET,
        reduceIndex: 0,
        locations,
        signal: ac.signal,
      });
      setTimeout(() => ac.abort(), 50);
      await assert.rejects(pending, (e: unknown) => isMinimrError(e, 'EKILLED'));
    } finally {
      await stopWorker(w);
    }
  });
});
