/**
 * The JobTracker's profiles of recurring jobs: imported `minimr profile` results, what a submission
 * takes from them (the books' TaskPlan: ideal duration and penalty model, seen in the snapshot), the
 * fallback to regular with a logged warning when a profile is absurd, and the store surviving a
 * restart. A JobTracker on port 0 with a fake worker (its memory bounds what is absurd) and a
 * policy that launches nothing, so the submitted tasks stay pending.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { MinimrError } from '../../src/errors.js';
import { connectPeer, JobClient, JobTracker, type JobProfile, type RpcPeer } from '../../src/runtime/index.js';
import type { RegisterResult } from '../../src/runtime/wire/index.js';
import type { TaskView } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';

const MiB = 1024 * 1024;
const WORKER_MB = 1000;

/** A `minimr profile` result of pi: 2 maps at 6 MiB of buffer needed, a reduce needing `reduceNeedMiB`. */
function piProfile(reduceNeedMiB: number, mapMs = 400) {
  return {
    job: 'pi.js',
    jobName: 'pi',
    maps: 2,
    idealMapBufferBytes: 6 * MiB,
    idealReduceBufferBytes: reduceNeedMiB * MiB,
    points: [
      {
        fraction: 1,
        mapBufferBytes: 6 * MiB,
        reduceBufferBytes: reduceNeedMiB * MiB,
        mapMs,
        reduceMs: 300,
        mapSpilledBytes: MiB,
        reduceSpilledBytes: 0,
      },
      {
        fraction: 0.5,
        mapBufferBytes: 3 * MiB,
        reduceBufferBytes: (reduceNeedMiB * MiB) / 2,
        mapMs: mapMs + 100,
        reduceMs: 450,
        mapSpilledBytes: 3 * MiB,
        reduceSpilledBytes: MiB,
      },
    ],
  };
}

describe('JobTracker: profiles of recurring jobs', () => {
  let dir: string;
  let jt: JobTracker;
  let client: JobClient;
  let worker: RpcPeer;
  const logged: Array<{ level: number; msg: string; why?: string }> = [];

  const start = async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line) logged.push(JSON.parse(line) as (typeof logged)[number]);
        done();
      },
    });
    jt = new JobTracker({
      dataDir: dir,
      port: 0,
      policy: { name: 'none', consultWhen: 'every-event', schedule: () => [] },
      heartbeatMs: 100_000,
      logger: pino({ level: 'info' }, sink),
    });
    await jt.start();
    client = await JobClient.connect(jt.url);
    worker = await connectPeer(jt.url, () => undefined);
    await worker.request<RegisterResult>({
      type: 'register',
      worker: {
        workerId: 'w1',
        host: '127.0.0.1',
        dataPort: 1,
        rack: '/r1',
        mapSlots: 2,
        reduceSlots: 1,
        memoryMb: WORKER_MB,
        diskMBps: 0,
      },
      blockIds: [],
    });
  };
  const stop = async () => {
    worker.close(1000, 'done');
    client.close();
    await jt.stop();
  };
  let runs = 0;
  const submitPi = async () => {
    const jobId = await client.submit(appModule('pi'), {
      output: `/out/pi-${runs++}`,
      params: { maps: 2, samples: 10 },
    });
    const status = await client.status(jobId);
    const pending: TaskView[] = jt.snapshot({ kind: 'tick' }).jobs.find((j) => j.id === jobId)!
      .pendingTasks as TaskView[];
    return { status, pending };
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-profiles-'));
    await start();
  });
  after(async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a job with no profile runs regular', async () => {
    const { status, pending } = await submitPi();
    assert.deepEqual(status.profile, { state: 'none' });
    assert.ok(pending.every((t) => t.penalty === undefined && t.idealDurationMs === undefined));
  });

  it('an imported profile gives the tasks their ideal durations and penalty models', async () => {
    const p = await client.importProfile('pi', piProfile(20));
    assert.deepEqual(
      [p.job, p.runs, p.imports, p.map.map((b) => b.bufferMiB), p.reduce.map((b) => b.bufferMiB)],
      ['pi', 0, 1, [3, 6], [10, 20]],
    );
    const { status, pending } = await submitPi();
    assert.equal(status.profile.state, 'used');
    const map = pending.find((t) => t.kind === 'map')!;
    // Pi has no input bytes: no scaling. At half its 6 MiB the map spilled (a step of 6 MiB) in 100 ms more: 60 MiB/s.
    assert.equal(map.idealDurationMs, 400);
    assert.deepEqual(map.penalty, {
      kind: 'spill',
      rule: 'map',
      bufferBytes: 6 * MiB,
      overheadMb: 100,
      minFraction: 101 / 164,
      diskMBps: 60,
    });
  });

  it(
    'an absurd profile (ideal memory above every worker, negative ' + 'times) runs the job regular with a warning',
    async () => {
      await client.importProfile('pi', piProfile(2 * WORKER_MB));
      const tooBig = await submitPi();
      assert.equal(tooBig.status.profile.state, 'rejected');
      assert.ok(
        tooBig.pending.every((t) => t.penalty === undefined && t.idealDurationMs === undefined),
        'regular tasks',
      );
      const warning = logged.find((l) => l.level === 40 && l.msg === 'profile not usable: the job runs regular');
      assert.match(warning?.why ?? '', /reduces need \d+ MB not to spill, more than any worker offers \(1000 MB\)/);

      // A damaged store: times below zero.
      const [stored] = await client.profiles('pi');
      await jt.profiles.put({ ...stored!, map: stored!.map.map((b) => ({ ...b, taskMs: -b.taskMs })) } as JobProfile);
      const negative = await submitPi();
      assert.deepEqual(negative.status.profile, {
        state: 'rejected',
        reason: 'its map measurements are negative or not numbers (bucket of 3 MiB buffers)',
      });
      assert.ok(negative.pending.every((t) => t.penalty === undefined));
    },
  );

  it('refuses to import what is not a profile, and forgets a profile on request', async () => {
    await assert.rejects(
      client.importProfile('pi', { job: 'x', maps: 1, points: 'no' }),
      (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF' && /idealMapBufferBytes/.test(e.message),
    );
    assert.equal(await client.removeProfile('pi'), true);
    assert.equal(await client.removeProfile('pi'), false);
    assert.deepEqual(await client.profiles('pi'), []);
    assert.deepEqual((await submitPi()).status.profile, { state: 'none' });
  });

  it('keeps profiles across a restart on the same directory', async () => {
    await client.importProfile('pi', piProfile(20));
    await stop();
    await start();
    const [p] = await client.profiles();
    assert.deepEqual([p?.job, p?.imports], ['pi', 1]);
    assert.equal((await submitPi()).status.profile.state, 'used');
  });
});
