/**
 * Restart recovery, step by step, with workers played by the test: what a JobTracker started on a
 * dead one's directory keeps, what it re-runs, under which attempt ids, and which map outputs it
 * tells a worker to drop. (test/cluster/jobtracker-restart.test.ts kills real processes.)
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker } from '../../src/runtime/index.js';
import { JobJournal } from '../../src/runtime/jobtracker/job-journal.js';
import type { AttemptSpec } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { Namenode } from '../../src/storage/index.js';
import { appModule, waitFor } from '../helpers/cluster.js';
import { registerFakeWorker, type FakeWorker } from '../helpers/jobtracker.js';

function startAt(dir: string): Promise<JobTracker> {
  const jt = new JobTracker({
    dataDir: dir,
    port: 0,
    policy: new FifoPolicy(),
    heartbeatMs: 100_000,
    recoveryWaitMs: 60_000,
    logger: createLogger('jt', 'silent'),
  });
  return jt.start().then(() => jt);
}

/** Hadoop's attempt id of map `index` of `jobId`, attempt `n`: written out here, not taken from the code under test. */
function mapAttempt(jobId: string, index: number, n: number): string {
  return `attempt_${jobId.slice('job_'.length)}_m_${String(index).padStart(6, '0')}_${n}`;
}

describe('JobTracker restart recovery: what is kept, what re-runs', () => {
  let dir: string;
  let jt: JobTracker | undefined;
  let client: JobClient | undefined;
  const workers: FakeWorker[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-recovery-'));
  });
  after(async () => {
    for (const w of workers) w.close();
    client?.close();
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'keeps a map whose output its worker still holds, re-runs the ' +
      'others with new attempt numbers, drops orphan outputs',
    async () => {
      jt = await startAt(dir);
      client = await JobClient.connect(jt.url);
      const w1 = await registerFakeWorker(jt.url, 'w1', { map: 3, reduce: 1 });
      workers.push(w1);
      const jobId = await client.submit(appModule('pi'), { output: '/out/pi', params: { maps: 3, samples: 10 } });
      await w1.heartbeat(jobId);
      const byIndex = (specs: AttemptSpec[]) =>
        new Map(specs.filter((s) => s.kind === 'map').map((s) => [s.index, s.attemptId]));
      let launched = byIndex(w1.launched);
      assert.deepEqual([...launched.keys()].sort(), [0, 1, 2]);
      const finish = async (attemptId: string, state: 'succeeded' | 'failed') => {
        w1.peer.send({
          type: 'attempt-finished',
          workerId: 'w1',
          attemptId,
          state,
          counters: { MAP_OUTPUT_RECORDS: 1 },
          ...(state === 'failed'
            ? { error: { code: 'ETASK', message: 'no luck' } }
            : { mapOutput: { partitionBytes: [8], partitionRecords: [1] } }),
        });
        await w1.heartbeat(jobId);
      };
      await finish(launched.get(0)!, 'succeeded');
      await finish(launched.get(1)!, 'failed');
      launched = byIndex(w1.launched.slice(3));
      assert.equal(launched.get(1), mapAttempt(jobId, 1, 1), 'map 1 retried as its attempt 1');
      // The JobTracker goes away with map 0 done, maps 1 (attempt 1) and 2 (attempt 0) running.
      client.close();
      await jt.stop();
      w1.close();

      jt = await startAt(dir);
      client = await JobClient.connect(jt.url);
      const status = await client.status(jobId);
      assert.equal(status.state, 'pending', 'the job is back, waiting for its workers');
      assert.equal(status.mapsTotal, 3);
      // Another worker comes first: nothing runs while the worker holding map 0's output may still come back.
      const w2 = await registerFakeWorker(jt.url, 'w2', { map: 3, reduce: 1 });
      workers.push(w2);
      await w2.heartbeat(jobId);
      assert.deepEqual(w2.launched, []);
      const held = [
        { jobId, attemptId: mapAttempt(jobId, 0, 0) },
        { jobId, attemptId: mapAttempt(jobId, 2, 0) },
        { jobId: 'job_19990101000000_0001', attemptId: 'attempt_19990101000000_0001_m_000000_0' },
      ];
      const w1again = await registerFakeWorker(jt.url, 'w1', { map: 3, reduce: 1 }, 1, held);
      workers.push(w1again);
      assert.deepEqual(
        w1again.registered.orphanMapOutputs,
        held.slice(1),
        "map 2's unfinished output and an unknown job's are orphans",
      );
      await w1again.heartbeat(jobId);
      await w2.heartbeat(jobId);
      const relaunched = byIndex([...w1again.launched, ...w2.launched]);
      assert.deepEqual([...relaunched.keys()].sort(), [1, 2], 'map 0 is kept, maps 1 and 2 run again');
      assert.equal(relaunched.get(1), mapAttempt(jobId, 1, 2), 'map 1 goes on from attempt 2');
      assert.equal(relaunched.get(2), mapAttempt(jobId, 2, 1), 'map 2 goes on from attempt 1');
      const after = await client.status(jobId);
      assert.equal(after.mapsCompleted, 1);
      assert.equal(after.counters.MAP_OUTPUT_RECORDS, 1, "the kept map's counters are the job's");
      const kept = (await client.attempts(jobId)).find((a) => a.attemptId === mapAttempt(jobId, 0, 0));
      assert.equal(kept?.state, 'succeeded');
      assert.equal(kept?.workerId, 'w1');
    },
  );

  it('a damaged journal record is left out and named, and the JobTracker still starts', async () => {
    const journalDir = join(dir, 'damaged');
    const { Level } = await import('level');
    const raw = new Level<string, Buffer>(join(journalDir, 'jobs'), { valueEncoding: 'buffer' });
    await raw.put('job!job_19990101000000_0001', Buffer.from([0xc1, 0xc1, 0xc1]));
    await raw.put('job!job_19990101000000_0002', Buffer.from([0x93, 1, 2, 3]));
    await raw.close();
    const journal = new JobJournal(join(journalDir, 'jobs'));
    await journal.open();
    assert.deepEqual(journal.damaged, ['job!job_19990101000000_0001', 'job!job_19990101000000_0002']);
    assert.deepEqual(journal.activeJobs(), []);
    await journal.close();
    const started = await startAt(journalDir);
    await started.stop();
  });
});

/** An empty file at `path`, as a writer that wrote nothing leaves one. */
async function emptyFile(nn: Namenode, path: string): Promise<void> {
  await nn.create(path, { replication: 1 });
  await nn.complete(path);
}

describe('JobTracker restart recovery of a job replacing its output (--overwrite)', () => {
  let dir: string;
  let jt: JobTracker | undefined;
  let client: JobClient | undefined;
  const workers: FakeWorker[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-recovery-overwrite-'));
  });
  after(async () => {
    for (const w of workers) w.close();
    client?.close();
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a JobTracker that died after its commit replaced the output ends the job as succeeded, re-running nothing', async () => {
    jt = await startAt(dir);
    client = await JobClient.connect(jt.url);
    const w1 = await registerFakeWorker(jt.url, 'w1', { map: 2, reduce: 1 });
    workers.push(w1);
    await emptyFile(jt.namenode, '/out/pi/part-r-00000');
    await emptyFile(jt.namenode, '/out/pi/notes-of-the-old-output');
    const jobId = await client.submit(appModule('pi'), {
      output: '/out/pi',
      overwrite: true,
      params: { maps: 1, samples: 10 },
    });
    const staging = `/out/.pi.overwrite-${jobId}`;
    assert.equal((await jt.namenode.stat(staging)).type, 'dir', 'the job writes beside its output');
    assert.deepEqual(
      (await jt.namenode.list('/out/pi')).map((f) => f.path),
      ['/out/pi/notes-of-the-old-output', '/out/pi/part-r-00000'],
      'the old output is left alone while the job runs',
    );
    await w1.heartbeat(jobId);
    const map = w1.launched.find((s) => s.kind === 'map')!;
    assert.ok(map.outputTempPath.startsWith(`${staging}/_temporary/${map.attemptId}/`), map.outputTempPath);
    w1.peer.send({
      type: 'attempt-finished',
      workerId: 'w1',
      attemptId: map.attemptId,
      state: 'succeeded',
      counters: {},
      mapOutput: { partitionBytes: [8], partitionRecords: [1] },
    });
    await w1.heartbeat(jobId);
    assert.ok(w1.launched.some((s) => s.kind === 'reduce'));
    client.close();
    await jt.stop();
    w1.close();

    // What its commit did before the JobTracker died: the reduce's part and the marker in the
    // staging directory, which then replaced the output; the job's end was never journaled.
    const nn = new Namenode({ dbPath: join(dir, 'namenode'), logger: createLogger('nn', 'silent') });
    await nn.open();
    await emptyFile(nn, `${staging}/part-r-00000`);
    await emptyFile(nn, `${staging}/_SUCCESS`);
    await nn.renameReplacing(staging, '/out/pi');
    await nn.close();

    jt = await startAt(dir);
    client = await JobClient.connect(jt.url);
    const w1again = await registerFakeWorker(jt.url, 'w1', { map: 2, reduce: 1 }, 1, [
      { jobId, attemptId: map.attemptId },
    ]);
    workers.push(w1again);
    await w1again.heartbeat(jobId);
    const final = await waitFor('the recovered job to end', async () => {
      const s = await client!.status(jobId);
      return s.state === 'succeeded' || s.state === 'failed' ? s : undefined;
    });
    assert.equal(final.state, 'succeeded', final.error?.message);
    assert.deepEqual(w1again.launched, [], 'nothing ran again');
    assert.deepEqual(
      (await jt.namenode.list('/out/pi')).map((f) => f.path),
      ['/out/pi/_SUCCESS', '/out/pi/part-r-00000'],
    );
    await assert.rejects(jt.namenode.stat(staging), /ENOENT|no such file/);
  });
});
