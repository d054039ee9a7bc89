import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { appModule, startTestCluster, type TestCluster } from '../helpers/cluster.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

const JOBS = 200;
const RETAINED = 10;
/** Each job's module carries this much padding, so a job kept in memory costs a measurable amount. */
const PADDING_BYTES = 512 * 1024;

describe('JobTracker memory over many jobs: ended jobs retire to the history', () => {
  let t: TestCluster;
  let modulePath: string;

  before(async () => {
    t = await startTestCluster({ workers: 2, retainedJobs: RETAINED });
    const scratch = join(t.dir, 'modules');
    await mkdir(scratch, { recursive: true });
    modulePath = join(scratch, 'padded-pi.js');
    const source = await readFile(appModule('pi'), 'utf8');
    await writeFile(modulePath, `${source}\n// ${'x'.repeat(PADDING_BYTES)}\n`);
  });
  after(async () => {
    await t?.stop();
  });

  it(
    `${JOBS} tiny jobs: heap growth stays bounded, only ${RETAINED} ` +
      `ended jobs stay in memory, every job answers job status`,
    async (ctx) => {
      const client = t.cluster.client;
      const ids: string[] = [];
      const runBatch = async (count: number) => {
        const batch = await Promise.all(
          Array.from({ length: count }, (_, i) =>
            client.run(modulePath, { output: `/out/pi-${ids.length + i}`, params: { maps: 1, samples: 1000 } }),
          ),
        );
        for (const s of batch) {
          assert.equal(s.state, 'succeeded');
          ids.push(s.jobId);
        }
      };
      // Warm up (code compiled, caches full, the retained set at its size), then measure.
      while (ids.length < 2 * RETAINED) await runBatch(4);
      const baseline = heapMb();
      while (ids.length < JOBS) await runBatch(Math.min(4, JOBS - ids.length));
      const grown = heapMb() - baseline;
      ctx.diagnostic(
        `heap ${baseline.toFixed(1)} MB after ${2 * RETAINED} jobs, ` +
          `grew ${grown.toFixed(1)} MB over the ` +
          `next ${JOBS - 2 * RETAINED}`,
      );
      // Kept in memory, the other 180 jobs' modules alone would be 90 MB.
      assert.ok(grown < 40, `heap grew ${grown.toFixed(1)} MB over ${JOBS - 2 * RETAINED} jobs`);
      assert.ok((await client.list()).length <= RETAINED, 'no more than the retained ended jobs in memory');
      const all = await client.list(true);
      assert.equal(all.filter((s) => ids.includes(s.jobId)).length, JOBS, 'every job in job list --all');
      const first = await client.status(ids[0]!);
      assert.equal(first.state, 'succeeded');
      assert.equal(first.jobId, ids[0]);
      assert.equal(first.mapsCompleted, 1);
    },
  );
});
