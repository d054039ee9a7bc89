/**
 * The JobTracker checks a policy's whole decision list before it carries out any of it: a list with
 * one bad decision launches nothing, where it used to launch the good ones, and a policy that broke
 * the contract is not asked again: scheduling stops, and the job's status says why. A real JobTracker
 * on port 0, a fake worker on a raw protocol connection that records what it is told to run, and a
 * scripted policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobClient, JobTracker } from '../../src/runtime/index.js';
import type { Decision, Policy } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';
import { fakeWorker, startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

describe('JobTracker: a decision list is checked whole before any of it is carried out', () => {
  let lone: LoneJobTracker;
  let jt: JobTracker;
  let client: JobClient;
  let mode: 'one-bad' | 'all-good' = 'one-bad';
  const calls: number[] = [];

  /** Launches the first pending task on the first worker; in 'one-bad' mode, also a task that does not exist. */
  const scripted: Policy = {
    name: 'scripted',
    consultWhen: 'every-event',
    schedule(snapshot) {
      const job = snapshot.jobs[0];
      const task = job?.pendingTasks[0];
      const worker = snapshot.workers[0];
      if (!job || !task || !worker) return [];
      calls.push(snapshot.now);
      const good: Decision = { kind: 'launch', taskId: task.id, jobId: job.id, workerId: worker.id, locality: 'any' };
      if (mode === 'all-good') return [good];
      return [
        good,
        { kind: 'launch', taskId: `${task.id}_no_such_task`, jobId: job.id, workerId: worker.id, locality: 'any' },
      ];
    },
  };

  before(async () => {
    lone = await startJobTracker(scripted, 100_000);
    ({ jt, client } = lone);
  });

  after(() => lone.stop());

  it('launches nothing from a list with an invalid decision, stops scheduling and says so', async () => {
    const worker = await fakeWorker(jt, { mapSlots: 2, reduceSlots: 1, memoryMb: 1 << 20 });
    const launched = worker.launched;
    const jobId = await client.submit(appModule('pi'), { output: '/out/pi', params: { maps: 2, samples: 10 } });
    const heartbeat = () => worker.heartbeat(jobId);
    await heartbeat();
    await heartbeat();
    assert.equal(calls.length, 1, 'the policy was consulted once, and not again after it broke the contract');
    assert.deepEqual(launched, []);
    const status = await client.status(jobId);
    assert.equal(status.state, 'pending');
    assert.match(
      status.schedulingStopped ?? '',
      /^policy 'scripted' broke the policy contract, rule valid-decisions: decision 1: .*_no_such_task.*; decision \{"kind":"launch","taskId":"[^"]+_no_such_task"/,
    );
    assert.deepEqual(await client.attempts(jobId), []);

    mode = 'all-good';
    await heartbeat();
    await heartbeat();
    assert.deepEqual(launched, [], 'a good list later is not asked for: only a restart schedules again');
    assert.equal(calls.length, 1);
    worker.close();
  });
});
