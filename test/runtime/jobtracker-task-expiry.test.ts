/**
 * What is left on a worker of the attempts given up while it was silent past the task expiry is
 * killed when it is back, whichever of its heartbeats first lists them. A real JobTracker on port 0
 * and a worker played on a raw protocol connection, so that the order of its frames is the test's:
 * a real worker stopped before it read its launch frames may send its first heartbeat back before
 * it reads them (its overdue heartbeat timer runs first), and that heartbeat lists none of them.
 * A job writing to another store (here a file:// output, whose abort removes its staging directory)
 * is aborted only once such an attempt is confirmed stopped, as for any attempt its worker must kill.
 */
import assert from 'node:assert/strict';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AttemptProgress, JobStatus } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { stagingDirOf } from '../../src/storage/stores/staging.js';
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
  let outputRoot: string;

  before(async () => {
    outputRoot = await mkdtemp(join(tmpdir(), 'minimr-task-expiry-'));
    lone = await startJobTracker(new FifoPolicy(), HEARTBEAT_MS, {
      taskExpiryMs: TASK_EXPIRY_MS,
      datanodeExpiryMs: 60_000,
      fileOutputRoots: [outputRoot],
    });
  });
  after(async () => {
    await lone.stop();
    await rm(outputRoot, { recursive: true, force: true });
  });

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

  it("a store job's abort waits until the worker, back, confirms a given-up reduce stopped", async () => {
    const { jt, client } = lone;
    const worker = await registerFakeWorker(jt.url, 'w-stale-reduce', { map: 2, reduce: 1 });
    try {
      const output = join(outputRoot, 'out');
      const jobId = await client.submit(appModule('pi'), {
        output: `file://${output}`,
        reducers: 1,
        params: { maps: 2, samples: 10 },
      });
      const staging = stagingDirOf(output, jobId);
      assert.ok(await exists(staging), 'the committer staged the output at submission');
      while (worker.launched.length < 2) await worker.heartbeat(jobId);
      for (const spec of worker.launched)
        worker.peer.send({
          type: 'attempt-finished',
          workerId: worker.id,
          attemptId: spec.attemptId,
          state: 'succeeded',
          counters: {},
          mapOutput: { partitionBytes: [1], partitionRecords: [1] },
        });
      while (!worker.launched.some((spec) => spec.kind === 'reduce')) await worker.heartbeat(jobId);
      const reduce = worker.launched.find((spec) => spec.kind === 'reduce')!.attemptId;
      // Silent past the task expiry: the books give the reduce up, though it may still be writing there.
      await waitFor('the task expiry', () => (jt.books.attempt(reduce) === undefined ? true : undefined), 10_000);

      // The job is killed while the worker is still silent: its abort must wait for the given-up reduce.
      let answered = false;
      const waiting = worker.peer.request<JobStatus>({ type: 'wait-job', jobId });
      void waiting.then(() => (answered = true));
      // Its answer comes once the job's end is carried out, abort included: not awaited yet.
      const killing = client.kill(jobId);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.ok(await exists(staging), 'no abort while the given-up reduce may still be writing');
      assert.equal(answered, false);

      // Back, the worker lists it and is told to kill it: still not stopped until it says so.
      await heartbeatListing(worker, jobId, [reduce]);
      assert.deepEqual(worker.killed, [reduce]);
      assert.ok(await exists(staging), 'no abort before the kill is confirmed');
      worker.peer.send({
        type: 'attempt-finished',
        workerId: worker.id,
        attemptId: reduce,
        state: 'killed',
        counters: {},
        error: { code: 'EKILLED', message: 'killed' },
      });
      const status = await waiting;
      assert.equal(status.state, 'killed');
      assert.equal((await killing).state, 'killed');
      assert.equal(await exists(staging), false, 'aborted once the worker confirmed');
    } finally {
      worker.close();
    }
  });
});

function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
