/**
 * The JobTracker's side of reduce slow start: a reduce launched before the last map is given the
 * map outputs done at its launch, then told of each one as its map finishes and of each one lost
 * (the map re-runs), in order. A real JobTracker on port 0 under FIFO, fake workers on raw protocol
 * connections that record what they are told.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PROTOCOL_VERSION, type AttemptSpec } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';
import { registerFakeWorker, startJobTracker, type FakeWorker, type LoneJobTracker } from '../helpers/jobtracker.js';

describe('JobTracker: a reduce launched before the last map is told of map outputs as they come and go', () => {
  let lone: LoneJobTracker;

  before(async () => {
    lone = await startJobTracker(new FifoPolicy(), 100_000);
  });
  after(() => lone.stop());

  it('launch lists the outputs done; each finished map is announced, each lost one withdrawn, in order', async () => {
    const { jt, client } = lone;
    const w1 = await registerFakeWorker(jt.url, 'w1', { map: 3, reduce: 0 }, 1001);
    const w2 = await registerFakeWorker(jt.url, 'w2', { map: 0, reduce: 1 }, 1002);
    const jobId = await client.submit(appModule('pi'), {
      output: '/out/pi',
      params: { maps: 3, samples: 10 },
      conf: { 'job.reduceSlowStart': 0.3 },
    });
    // Frames on one socket are handled in order: a reply to a request sent after an event comes after what the event
    // caused.
    const settle = async (w: FakeWorker): Promise<void> => {
      await w.peer.request({ type: 'job-status', jobId });
      await w2.peer.request({ type: 'job-status', jobId });
    };
    const finish = async (w: FakeWorker, spec: AttemptSpec): Promise<void> => {
      w.peer.send({
        type: 'attempt-finished',
        workerId: w.id,
        attemptId: spec.attemptId,
        state: 'succeeded',
        counters: {},
        mapOutput: { partitionBytes: [100], partitionRecords: [7 + spec.index] },
      });
      await settle(w);
    };
    await settle(w1);
    assert.equal(w1.launched.length, 3, 'three maps on w1');
    assert.equal(w2.launched.length, 0, 'no reduce before ceil(0.3 x 3) = 1 map is done');

    const [m0, m1] = w1.launched;
    await finish(w1, m0!);
    assert.equal(w2.launched.length, 1, 'the reduce is launched once one map is done');
    const reduce = w2.launched[0]!;
    assert.equal(reduce.kind, 'reduce');
    assert.equal(reduce.mapsTotal, 3);
    assert.deepEqual(reduce.mapOutputs, [
      { mapIndex: 0, attemptId: m0!.attemptId, workerId: 'w1', host: '127.0.0.1', dataPort: 1001, records: 7 },
    ]);

    await finish(w1, m1!);
    assert.deepEqual(w2.told, [
      {
        v: PROTOCOL_VERSION,
        type: 'map-outputs',
        attemptId: reduce.attemptId,
        available: [
          { mapIndex: 1, attemptId: m1!.attemptId, workerId: 'w1', host: '127.0.0.1', dataPort: 1001, records: 8 },
        ],
        lost: [],
      },
    ]);

    // w1 is lost: its finished maps' outputs are gone (the maps re-run), its running map too.
    const w3 = await registerFakeWorker(jt.url, 'w3', { map: 3, reduce: 0 }, 1003);
    w1.peer.close();
    while ((await client.clusterInfo()).workers.some((w) => w.workerId === 'w1'))
      await new Promise((r) => setTimeout(r, 10));
    await settle(w3);
    const lost = w2.told.slice(1).flatMap((t) => t.lost);
    assert.deepEqual(
      lost.sort((a, b) => a.mapIndex - b.mapIndex),
      [
        { mapIndex: 0, attemptId: m0!.attemptId },
        { mapIndex: 1, attemptId: m1!.attemptId },
      ],
    );
    assert.ok(w2.told.slice(1).every((t) => t.available.length === 0));
    assert.deepEqual(
      w3.launched.map((s) => s.index).sort(),
      [0, 1, 2],
      'the two lost outputs and the map that was running on w1 run again on w3',
    );

    for (const spec of w3.launched) await finish(w3, spec);
    const announced = w2.told.flatMap((t) => t.available).filter((a) => a.workerId === 'w3');
    assert.deepEqual(announced.map((a) => a.mapIndex).sort(), [0, 1, 2]);
    assert.deepEqual(announced.map((a) => a.attemptId).sort(), w3.launched.map((s) => s.attemptId).sort());
    for (const w of [w2, w3]) w.peer.close();
    await client.kill(jobId).catch(() => undefined);
  });
});
