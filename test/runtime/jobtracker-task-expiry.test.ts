/**
 * What is left on a worker of the attempts given up while it was silent past the task expiry is
 * killed when it is back, whichever of its heartbeats first lists them. A real JobTracker on port 0
 * and a worker played on a raw protocol connection, so that the order of its frames is the test's:
 * a real worker stopped before it read its launch frames may send its first heartbeat back before
 * it reads them (its overdue heartbeat timer runs first), and that heartbeat lists none of them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AttemptProgress } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { appModule, waitFor } from '../helpers/cluster.js';
import { registerFakeWorker, startJobTracker, type FakeWorker, type LoneJobTracker } from '../helpers/jobtracker.js';

/** Heartbeats every 200 ms: suspect after 1 s of silence, attempts given up after 1.5 s, lost after a minute. */
const HEARTBEAT_MS = 200;
const TASK_EXPIRY_MS = 1500;

function listing(attemptIds: readonly string[]): AttemptProgress[] {
  return attemptIds.map((attemptId) => ({ attemptId, progress: 0.5, counters: {} }));
}

/** The attempts the worker was given besides `given` (their tasks' new attempts, once it is back). */
function launchedSince(worker: FakeWorker, given: readonly string[]): string[] {
  return worker.launched.map((spec) => spec.attemptId).filter((id) => !given.includes(id));
}

/** Sends a heartbeat listing `attemptIds` and waits until the JobTracker has handled it. */
async function heartbeatListing(worker: FakeWorker, jobId: string, attemptIds: readonly string[]): Promise<void> {
  worker.peer.send({ type: 'heartbeat', workerId: worker.id, attempts: listing(attemptIds) });
  // Frames on one socket are handled in order: the answer to this comes after the heartbeat's effects.
  await worker.peer.request({ type: 'job-status', jobId });
}

describe('JobTracker: attempts given up at the task expiry are killed on their worker when it is back', () => {
  let lone: LoneJobTracker;

  before(async () => {
    lone = await startJobTracker(new FifoPolicy(), HEARTBEAT_MS, {
      taskExpiryMs: TASK_EXPIRY_MS,
      datanodeExpiryMs: 60_000,
    });
  });
  after(() => lone.stop());

  /** A worker given the job's 2 maps, then silent until the JobTracker gave them up: their ids. */
  async function launchedThenExpired(worker: FakeWorker, jobId: string): Promise<string[]> {
    while (worker.launched.length < 2) await worker.heartbeat(jobId);
    const given = worker.launched.map((spec) => spec.attemptId).sort();
    await waitFor(
      'the task expiry',
      () => (given.every((id) => lone.jt.books.attempt(id) === undefined) ? true : undefined),
      10_000,
    );
    return given;
  }

  it('a first heartbeat back that does not list them yet does not let them run on: the next one that does has them killed', async () => {
    const { jt, client } = lone;
    const worker = await registerFakeWorker(jt.url, 'w-late-listing', { map: 2, reduce: 0 });
    try {
      const jobId = await client.submit(appModule('pi'), { output: '/out/late', params: { maps: 2, samples: 10 } });
      const given = await launchedThenExpired(worker, jobId);
      const job = jt.books.job(jobId)!;
      for (const id of given)
        assert.ok(
          job.maps.some((t) => t.attempts.some((a) => a.id === id && a.state === 'killed')),
          `${id} given up`,
        );

      // Back: its first heartbeat was taken before it read the launches (or before it was stopped).
      await heartbeatListing(worker, jobId, []);
      assert.deepEqual(worker.killed, [], 'nothing listed, nothing to kill yet');
      // It reads them now, and its next heartbeat lists them (with whatever it was given since it is back).
      const sinceBack = launchedSince(worker, given);
      await heartbeatListing(worker, jobId, [...given, ...sinceBack]);
      assert.deepEqual([...worker.killed].sort(), given, 'the given-up attempts are killed on the worker');
      // Killed once: a later heartbeat that still lists them (their processes are being killed) adds no kill.
      await heartbeatListing(worker, jobId, [...given, ...sinceBack]);
      assert.deepEqual([...worker.killed].sort(), given);
      await client.kill(jobId);
    } finally {
      worker.close();
    }
  });

  it('one that ended on the worker while it was silent is not killed, the others are', async () => {
    const { jt, client } = lone;
    const worker = await registerFakeWorker(jt.url, 'w-ended-meanwhile', { map: 2, reduce: 0 });
    try {
      const jobId = await client.submit(appModule('pi'), { output: '/out/ended', params: { maps: 2, samples: 10 } });
      const [ended, running] = (await launchedThenExpired(worker, jobId)) as [string, string];
      // Back: it reports the one that finished meanwhile, then heartbeats, then lists the other.
      worker.peer.send({
        type: 'attempt-finished',
        workerId: worker.id,
        attemptId: ended,
        state: 'succeeded',
        counters: {},
        mapOutput: { partitionBytes: [1], partitionRecords: [1] },
      });
      await heartbeatListing(worker, jobId, []);
      await heartbeatListing(worker, jobId, [running, ...launchedSince(worker, [ended, running])]);
      assert.deepEqual(worker.killed, [running]);
      const task = jt.books.job(jobId)!.maps.find((t) => t.attempts.some((a) => a.id === ended))!;
      assert.notEqual(task.successfulAttempt?.id, ended, 'the end report of a given-up attempt does not count');
      await client.kill(jobId);
    } finally {
      worker.close();
    }
  });
});
