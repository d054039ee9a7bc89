/**
 * The JobTracker carries a policy's memory grant through: the launch message tells the worker the
 * granted and the ideal memory and whether the attempt is elastic, and the attempt summary keeps
 * them. It refuses an elastic grant for a task without a penalty model, as the simulator does.
 * A real JobTracker on port 0, a fake worker that records launches, a scripted policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobClient, JobTracker } from '../../src/runtime/index.js';
import type { Decision, Policy } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';
import { fakeWorker, startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

/** A map's ideal memory with the default 64 MiB sort buffer: buffer + the task's 100 MiB overhead. */
const IDEAL_MB = 64 + 100;

describe('JobTracker: memory grants', () => {
  let lone: LoneJobTracker;
  let jt: JobTracker;
  let client: JobClient;
  let grantMb = IDEAL_MB + 36;

  /** Launches the first pending task on the first worker with `grantMb`. */
  const granting: Policy = {
    name: 'granting',
    consultWhen: 'every-event',
    schedule(snapshot) {
      const job = snapshot.jobs[0];
      const task = job?.pendingTasks[0];
      const worker = snapshot.workers[0];
      if (!job || !task || !worker) return [];
      const d: Decision = {
        kind: 'launch',
        taskId: task.id,
        jobId: job.id,
        workerId: worker.id,
        memoryMb: grantMb,
        locality: 'any',
      };
      return [d];
    },
  };

  before(async () => {
    lone = await startJobTracker(granting, 100_000);
    ({ jt, client } = lone);
  });

  after(() => lone.stop());

  it('passes the grant, the ideal memory and elasticity to the worker and into the attempt summary', async () => {
    const worker = await fakeWorker(jt, { mapSlots: 4, reduceSlots: 1, memoryMb: 4096 });
    const launched = worker.launched;
    const jobId = await client.submit(appModule('pi'), { output: '/out/pi-mem', params: { maps: 4, samples: 10 } });
    const heartbeat = () => worker.heartbeat(jobId);
    await heartbeat();
    // One launch per consultation (the submission, then the heartbeat), one task at a time.
    const regular = launched.length;
    assert.ok(regular >= 1 && regular < 4, `${regular} launches`);
    for (const a of launched) {
      assert.deepEqual([a.memoryMb, a.idealMemoryMb, a.elastic], [IDEAL_MB + 36, IDEAL_MB, false]);
      assert.equal(a.shuffle.mapBufferBytes, 64 * 1024 * 1024, 'a grant above ideal keeps the whole buffer');
    }

    // Less than ideal for a task with no penalty model (no profile): the books refuse it.
    grantMb = 100;
    await heartbeat();
    await heartbeat();
    assert.equal(launched.length, regular);

    const summaries = await client.attempts(jobId);
    assert.deepEqual(
      summaries.map((a) => [a.attemptId, a.memoryMb, a.idealMemoryMb, a.elastic]),
      launched.map((a) => [a.attemptId, IDEAL_MB + 36, IDEAL_MB, false]),
    );
    worker.close();
  });
});
