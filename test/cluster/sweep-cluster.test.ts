import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runSweep, runSweepOnCluster, type SweepResult, type SweepSpec } from '../../src/experiments/index.js';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * `minimr sweep --cluster` (issue 38): the same sweep as a map-only job on a real local cluster,
 * each map simulating a slice of the units, writes the results a sweep on this machine's threads
 * writes, line for line but the wall times.
 */
describe('a sweep as a minimr job', () => {
  let t: TestCluster;
  let dir: string;
  const spec: SweepSpec = { workloads: ['improved-fair'], seeds: [1, 2, 3], policies: ['fifo', 'fair'] };

  before(async () => {
    t = await startTestCluster({ workers: 2 });
    dir = await mkdtemp(join(tmpdir(), 'minimr-sweep-cluster-'));
  });
  after(async () => {
    await t?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function linesOf(file: string): Promise<string[]> {
    return (await readFile(file, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const { wallS: _wall, ...rest } = JSON.parse(l) as SweepResult;
        return JSON.stringify(rest);
      })
      .sort(); // threads append in the order units finish
  }

  it('runs the units in 3 maps and writes what the threads write', async () => {
    const local = join(dir, 'local.jsonl');
    await runSweep(spec, { out: local, threads: 2 });
    const remote = join(dir, 'cluster.jsonl');
    const run = await runSweepOnCluster(spec, { out: remote, client: t.cluster.client, maps: 3 });
    assert.equal(run.ran, 6);
    const status = await t.cluster.client.status(run.jobId!);
    assert.equal(status.state, 'succeeded');
    assert.equal(status.mapsTotal, 3);
    assert.deepEqual(await linesOf(remote), await linesOf(local));
    // Its job's output is gone; run again, nothing is left to do.
    assert.deepEqual(
      (await t.fs.list('/')).map((f) => f.path).filter((p) => p.includes('sweep')),
      [],
    );
    assert.equal((await runSweepOnCluster(spec, { out: remote, client: t.cluster.client, maps: 3 })).ran, 0);
  });
});
