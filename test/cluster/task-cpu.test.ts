import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixtureModule, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * TASK_CPU_MS is the CPU time (user + system, all threads) the task process spent on the attempt,
 * beside its wall time TASK_MS: a map that spins for a known CPU time and one that blocks for the
 * same wall time without using the CPU tell them apart, whatever else the machine runs.
 */
describe('TASK_CPU_MS: the CPU an attempt used, beside its wall time', () => {
  let t: TestCluster;
  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 2, reduceSlots: 1, replication: 1 });
  });
  after(async () => {
    await t?.stop();
  });

  it('counts the CPU a spinning map used and not the time a waiting map blocked', async () => {
    const ms = 400;
    const client = t.cluster.client;
    const status = await client.run(fixtureModule('cpu-or-wait'), { output: '/out/cpu', params: { ms } });
    assert.equal(status.state, 'succeeded');
    const attempts = (await client.attempts(status.jobId)).filter((a) => a.state === 'succeeded');
    assert.equal(attempts.length, 2);
    // The split of map 0 spins, that of map 1 waits (the fixture's generated splits, in order).
    const [spin, wait] = [0, 1].map((i) => attempts.find((a) => a.taskId.endsWith(`_m_00000${i}`))!.counters);
    assert.ok(spin && wait);
    assert.ok(spin.TASK_CPU_MS! >= ms, `the spinning map used at least ${ms} ms of CPU: ${spin.TASK_CPU_MS}`);
    assert.ok(
      spin.TASK_CPU_MS! <= spin.TASK_MS! + 50,
      `one thread did the work: CPU ${spin.TASK_CPU_MS} <= wall ${spin.TASK_MS} (+ a little of the thread pool)`,
    );
    assert.ok(wait.TASK_MS! >= ms, `the waiting map took at least ${ms} ms: ${wait.TASK_MS}`);
    assert.ok(wait.TASK_CPU_MS! < ms / 2, `the waiting map used little CPU: ${wait.TASK_CPU_MS} ms`);
    assert.equal(
      status.counters.TASK_CPU_MS,
      spin.TASK_CPU_MS! + wait.TASK_CPU_MS!,
      'the job counter sums its attempts',
    );
  });
});
