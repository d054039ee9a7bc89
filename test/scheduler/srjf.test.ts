/** SRJF, the meganode bound's scheduler: conformance, order by remaining work, and the meganode itself. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPolicy, remainingWorkMs } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { meganode } from '../../src/workloads/index.js';
import { STEADY_RESPONSE_BOUND_MS, policyConformance } from './conformance.js';
import { mkJob, mkSnapshot, mkTask, mkWorker } from './snapshot-driver.js';

// Shortest first by design: the big job of the steady load waits while small ones keep arriving
// (96 s), so its bound is doubled. It still finishes: starving forever would fail.
policyConformance('srjf', () => createPolicy('srjf'), { steadyResponseBoundMs: 2 * STEADY_RESPONSE_BOUND_MS });

describe('srjf', () => {
  test('the job with the least work left goes first; what does not fit is skipped, not waited for', () => {
    const long = mkJob(
      'long',
      [0, 1].map((i) => mkTask('long', 'map', i, { memoryMb: 1000, idealDurationMs: 50_000 })),
      { submitTime: 0 },
    );
    const short = mkJob(
      'short',
      [0, 1].map((i) => mkTask('short', 'map', i, { memoryMb: 1000, idealDurationMs: 10_000 })),
      { submitTime: 1 },
    );
    const big = mkJob('big', [mkTask('big', 'map', 0, { memoryMb: 3000, idealDurationMs: 1_000 })], { submitTime: 2 });
    assert.equal(remainingWorkMs(long, 0), 100_000);
    const s = mkSnapshot(
      [mkWorker('w1', 'r1', { mapSlots: 4, freeMapSlots: 3, memoryMb: 4096, freeMemoryMb: 2500 })],
      [long, short, big],
    );
    const launched = createPolicy('srjf')
      .schedule(s)
      .map((d) => (d.kind === 'launch' ? d.taskId : ''));
    // big (1 s of work) first but needs 3000 MB; short's two maps take 2000 MB; long gets nothing.
    assert.deepEqual(launched, ['short-m0', 'short-m1']);
  });

  test('meganode pools every worker into one', () => {
    const c = meganode({
      name: 'c',
      workers: [1, 2, 3].map((i) => ({
        id: `w${i}`,
        rack: 'r',
        mapSlots: 16,
        reduceSlots: 0,
        memoryMb: 10_240,
        diskMBps: 100,
      })),
    });
    assert.deepEqual(c.workers, [
      { id: 'meganode', rack: 'mega', mapSlots: 48, reduceSlots: 0, memoryMb: 30_720, diskMBps: 300 },
    ]);
  });

  test("a meganode above a JobTracker's worker limits (100 nodes x 16 slots) runs in the simulator", () => {
    // The limits guard a JobTracker against a worker's claims (1024 slots); a simulated cluster is trusted.
    const c = meganode({
      name: 'c',
      workers: Array.from({ length: 100 }, (_, i) => ({
        id: `w${i}`,
        rack: 'r',
        mapSlots: 16,
        reduceSlots: 16,
        memoryMb: 10_240,
        diskMBps: 100,
      })),
    });
    const jobs = [0, 1].map((j) => ({
      id: `j${j}`,
      name: `j${j}`,
      app: 'wordcount',
      submitMs: j * 1000,
      maps: Array.from({ length: 2000 }, () => ({ workMs: 1000, memoryMb: 500 })),
      reduces: [{ workMs: 1000, memoryMb: 500 }],
    }));
    const r = simulate({
      workload: { name: 'w', jobs },
      cluster: c,
      policy: createPolicy('srjf'),
      heartbeatMs: 1000,
      recordDecisions: false,
    });
    assert.deepEqual(
      r.run.jobs.map((j) => j.state),
      ['succeeded', 'succeeded'],
    );
    // 4000 maps of 1 s on 1600 slots: at least three waves.
    assert.ok(Math.max(...r.run.jobs.map((j) => j.finishMs ?? 0)) >= 3000);
  });
});
