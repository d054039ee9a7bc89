import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JobClient } from '../../src/runtime/index.js';
import { appModule, fixtureModule, makeText, parseCounts, readOutput, referenceWordCount, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * Task processes are kept warm between attempts of the same job module, but never after a failed
 * attempt or one that left something running, and module-level state stays per attempt. One worker
 * with one map slot, so that the maps of a job run one after another on the same worker.
 */
describe('task processes: reused when clean, never after a failure or a leak', () => {
  let t: TestCluster;
  let client: JobClient;
  const text = makeText(600_000, 31);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  const run = async (mode: string) => {
    const status = await client.run(fixtureModule('process-marks'), { input: ['/in/text.txt'], output: `/out/marks-${mode}`, params: { mode }, overwrite: true });
    assert.equal(status.state, 'succeeded');
    assert.equal(parseCounts((await readOutput(t.fs, `/out/marks-${mode}`)).toString()).get('lines'), lines, 'every line counted once');
    return status;
  };

  it('a clean successful attempt\'s process runs the next attempt of the module, with fresh module-level state', async () => {
    const status = await run('clean');
    assert.ok(status.mapsTotal >= 8);
    assert.ok((status.counters['user.reused-clean'] ?? 0) >= 1, `some maps ran in a process a previous map used: ${JSON.stringify(status.counters)}`);
    assert.ok((status.counters.WARM_LAUNCH ?? 0) >= 1);
    assert.equal(status.counters['user.fresh-module'], status.mapsTotal, 'every attempt saw its own module-level state');
  });

  it('a failed attempt\'s process never runs another attempt', async () => {
    const status = await run('fail-first');
    assert.equal(status.failedAttempts, status.mapsTotal, 'the first attempt of every map failed');
    assert.equal(status.counters['user.reused-failed'] ?? 0, 0);
  });

  it('a process whose attempt left a timer running is not reused', async () => {
    const status = await run('timer');
    assert.equal(status.counters['user.reused-leaky'] ?? 0, 0);
  });

  it('a worker keeps a job module by its content: a later job of the same module does not fetch it again', async () => {
    for (const n of [1, 2]) {
      const status = await client.run(appModule('wordcount'), { input: ['/in/text.txt'], output: `/out/wc-${n}`, reducers: 1 });
      const want = referenceWordCount(text);
      const got = parseCounts((await readOutput(t.fs, `/out/wc-${n}`)).toString());
      assert.equal(got.size, want.size);
      if (n === 2) assert.equal(status.counters.MODULE_WAIT_MS ?? 0, 0, 'no attempt of the second job waited for its module');
    }
    const modules = (await readdir(join(t.dir, 'worker-0', 'jobs', 'modules'))).filter((f) => f.endsWith('.mjs'));
    assert.equal(modules.length, 2, `one file per module (process-marks, wordcount): ${modules.join(', ')}`);
  });
});
