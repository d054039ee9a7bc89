import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { fetchMapOutputs } from '../../src/shuffle/fetcher.js';
import { newShuffleSecret, SHUFFLE_HASH_HEADER, shuffleRequestHash } from '../../src/shuffle/shuffle-secret.js';
import type { MapOutputLocation } from '../../src/shuffle/types.js';
import { withTempDir } from './support.js';
import { assertFetchFailure, JOB, SECRET, startWorker, stopWorker, writeMaps } from './map-outputs.js';

function get(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; code: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        let code = '';
        try {
          code = (JSON.parse(body.toString()) as { code?: string }).code ?? '';
        } catch {
          // segment bytes
        }
        resolve({ status: res.statusCode ?? 0, code, bytes: body.length });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test("a job's map output is served only to fetches hashed with that job's secret", async () => {
  await withTempDir(async (tmp) => {
    const w = await startWorker('w', join(tmp, 'w'));
    try {
      const { locations } = await writeMaps([w], { sizes: [300, 300], numReduces: 2, seed: 8 });
      const path = `/shuffle/${JOB}/${locations[0]!.attemptId}/1`;
      const ok = await get(w.port, path, { [SHUFFLE_HASH_HEADER]: shuffleRequestHash(SECRET, path) });
      assert.equal(ok.status, 200);
      assert.ok(ok.bytes > 0);
      const otherJobsSecret = newShuffleSecret();
      const refused: Array<[string, Record<string, string>]> = [
        ['no hash', {}],
        ['garbage', { [SHUFFLE_HASH_HEADER]: 'x' }],
        ["another job's secret", { [SHUFFLE_HASH_HEADER]: shuffleRequestHash(otherJobsSecret, path) }],
        [
          'the hash of another partition',
          { [SHUFFLE_HASH_HEADER]: shuffleRequestHash(SECRET, `/shuffle/${JOB}/${locations[0]!.attemptId}/0`) },
        ],
      ];
      for (const [what, headers] of refused) {
        const answer = await get(w.port, path, headers);
        assert.equal(answer.status, 403, what);
        assert.equal(answer.code, 'ETOKEN', what);
      }
      // A job this worker never ran is refused the same way, without saying whether output exists.
      const unknownPath = `/shuffle/job_other/${locations[0]!.attemptId}/1`;
      const unknown = await get(w.port, unknownPath, {
        [SHUFFLE_HASH_HEADER]: shuffleRequestHash(otherJobsSecret, unknownPath),
      });
      assert.equal(unknown.status, 403);

      // Another job's reducer, knowing only its own secret, cannot fetch: EFETCH naming the map.
      await assert.rejects(
        fetchMapOutputs({ jobId: JOB, shuffleSecret: otherJobsSecret, reduceIndex: 1, locations, retries: 0 }),
        (err) => assertFetchFailure(err, locations[0]!, 1),
      );
      const fetched = await fetchMapOutputs({
        jobId: JOB,
        shuffleSecret: SECRET,
        reduceIndex: 1,
        locations,
        retries: 0,
      });
      assert.equal(fetched.length, 2);
    } finally {
      await stopWorker(w);
    }
  });
});

test('a reducer does not take a segment from a server that cannot prove it knows the secret', async () => {
  // Answers every request with a well-formed empty segment, as a rogue worker would.
  const server = createServer((_req, res) => {
    res
      .writeHead(200, {
        'content-length': 0,
        'x-minimr-length': 0,
        'x-minimr-records': 0,
        'x-minimr-runs': '0:0:0:0',
        'x-minimr-raw-length': 0,
      })
      .end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const loc: MapOutputLocation = {
    mapIndex: 0,
    attemptId: 'attempt_m0_0',
    workerId: 'rogue',
    host: '127.0.0.1',
    dataPort: port,
  };
  try {
    await assert.rejects(
      fetchMapOutputs({ jobId: JOB, shuffleSecret: SECRET, reduceIndex: 0, locations: [loc], retries: 0 }),
      (err) => assertFetchFailure(err, loc, 0),
    );
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
