/**
 * A client is told when a job ends ('wait-job' is answered then) instead of polling for it. A real
 * JobTracker on port 0 under FIFO and a fake worker that finishes the attempts when told to.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import type { AttemptSpec, JobStatus } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';
import { registerFakeWorker, startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

describe('JobTracker: wait-job is answered when the job ends', () => {
  let lone: LoneJobTracker;

  before(async () => {
    lone = await startJobTracker(new FifoPolicy(), 100_000);
  });
  after(() => lone.stop());

  it('answers with the final status once the last attempt is done and the clean-up finished, not before', async () => {
    const { jt, client } = lone;
    const { peer: worker, launched } = await registerFakeWorker(jt.url, 'w1', { map: 2, reduce: 1 });
    const jobId = await client.submit(appModule('pi'), { output: '/out/pi', params: { maps: 2, samples: 10 } });
    let answered = false;
    const waiting = worker.request<JobStatus>({ type: 'wait-job', jobId });
    void waiting.then(() => (answered = true));
    const finish = async (spec: AttemptSpec, state: 'succeeded' | 'failed') => {
      worker.send({
        type: 'attempt-finished',
        workerId: 'w1',
        attemptId: spec.attemptId,
        state,
        counters: {},
        ...(state === 'failed'
          ? { error: { code: 'ETASK', message: 'no luck' } }
          : { mapOutput: { partitionBytes: [1], partitionRecords: [1] } }),
      });
      await worker.request({ type: 'job-status', jobId });
    };
    while (launched.length < 2) await worker.request({ type: 'job-status', jobId });
    for (const spec of launched.splice(0)) await finish(spec, 'succeeded');
    assert.equal(answered, false, 'not answered while the reduce runs');
    while (launched.length < 1) await worker.request({ type: 'job-status', jobId });
    // The reduce's part file was never written (a fake worker): its commit fails the job, which then ends.
    await finish(launched[0]!, 'succeeded');
    const answer = await waiting;
    assert.equal(answer.jobId, jobId);
    assert.ok(answer.state === 'succeeded' || answer.state === 'failed', `an ended state, got ${answer.state}`);
    assert.deepEqual(answer, await client.status(jobId), 'the same status a poll gives once it has ended');
    worker.close();
  });

  it('answers a wait for a job it does not know with ENOJOB', async () => {
    await assert.rejects(
      lone.client.waitForCompletion('job_no_such_job'),
      (err: unknown) => err instanceof MinimrError && err.code === 'ENOJOB',
    );
  });
});
