import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPolicy } from '../../src/scheduler/index.js';
import { appModule, makeText, readOutput, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * Tyrex's migrations are work-conserving on the real engine: a job moved from P_1 to P_2 halfway
 * through its maps keeps every completed map output, its running attempts finish where they are,
 * and no task runs twice. Its output must equal a FIFO run's byte for byte.
 */
describe('tyrex on a real cluster: work-conserving migration', () => {
  let tyrex: TestCluster;
  let fifo: TestCluster;
  const text = makeText(900_000, 23);

  before(async () => {
    // A 1 ms timer moves the job on at its first completed task, while most of its maps are still to run.
    [tyrex, fifo] = await Promise.all([
      startTestCluster({ policy: createPolicy('tyrex-static', { timersMs: [1] }) }),
      startTestCluster({ policy: 'fifo' }),
    ]);
    await Promise.all([
      tyrex.fs.put(Buffer.from(text), '/in/text.txt'),
      fifo.fs.put(Buffer.from(text), '/in/text.txt'),
    ]);
  });
  after(async () => {
    await Promise.all([tyrex?.stop(), fifo?.stop()]);
  });

  it('migrates mid-job, re-runs nothing, and writes the same output as FIFO', async () => {
    // Speculation off: a backup is a second attempt the move did not cause, and two clusters sharing
    // this machine's two cores make slow attempts enough to launch some.
    const options = {
      input: ['/in/text.txt'],
      output: '/out/wc',
      reducers: 3,
      conf: { 'job.speculative': false },
    };
    const [moved, plain] = await Promise.all([
      tyrex.cluster.client.run(appModule('wordcount'), options),
      fifo.cluster.client.run(appModule('wordcount'), options),
    ]);
    assert.equal(moved.state, 'succeeded');
    assert.equal(plain.state, 'succeeded');

    assert.equal(moved.migrations.length, 1, 'exactly one move, P_1 -> P_2');
    const m = moved.migrations[0]!;
    assert.deepEqual([m.from, m.to, m.timerMs], [0, 1, 1]);
    assert.ok((m.partialSizeMs ?? 0) > 1);
    assert.equal(moved.partition, 1);

    const attempts = await tyrex.cluster.client.attempts(moved.jobId);
    const maps = attempts.filter((a) => a.kind === 'map');
    const mapsBefore = maps.filter((a) => a.startTime <= m.time).length;
    assert.ok(
      mapsBefore > 0 && mapsBefore < moved.mapsTotal,
      `migrated with ${mapsBefore} of ${moved.mapsTotal} maps started`,
    );
    // Nothing re-executed: one attempt per task, all succeeded.
    assert.equal(attempts.length, moved.mapsTotal + moved.reducesTotal);
    assert.ok(attempts.every((a) => a.state === 'succeeded'));
    assert.equal(moved.killedAttempts + moved.failedAttempts, 0);

    assert.ok(
      (await readOutput(tyrex.fs, '/out/wc')).equals(await readOutput(fifo.fs, '/out/wc')),
      'output differs from the FIFO run',
    );
  });
});
