import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import {
  computeMetrics,
  metricsTable,
  quantile,
  responseBreakdown,
  summarizeSlowdowns,
  variability,
  type JobRunRecord,
  type RunRecord,
} from '../../src/metrics/index.js';
import { comparePolicies, writeComparison } from '../../src/experiments/index.js';
import { clusterPreset, tyrexWorkload } from '../../src/workloads/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { mkRunAttempt } from '../helpers/run-records.js';

describe('quantiles', () => {
  const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  test('nearest rank: smallest x with F(x) >= q', () => {
    assert.equal(quantile(ten, 50), 5);
    assert.equal(quantile(ten, 95), 10);
    assert.equal(quantile(ten, 90), 9);
    assert.equal(quantile(ten, 91), 10);
    assert.equal(quantile(ten, 10), 1);
    assert.equal(quantile(ten, 0), 1);
    assert.equal(quantile([7], 99), 7);
    assert.ok(Number.isNaN(quantile([], 50)));
  });

  test('V_F(q) = F^-1(q) / F^-1(50)', () => {
    assert.equal(variability(ten, 95), 2);
    const s = summarizeSlowdowns([4, 1, 2, 8, 1, 1, 3, 2, 1, 20]);
    // sorted: 1 1 1 1 2 2 3 4 8 20 -> median (rank 5) 2, p95 (rank 10) 20, p90 (rank 9) 8
    assert.deepEqual([s.median, s.p95, s.vf95, s.vf90, s.max, s.mean], [2, 20, 10, 4, 20, 4.3]);
  });
});

function jobRec(id: string, submitMs: number, finishMs: number, over: Partial<JobRunRecord> = {}): JobRunRecord {
  return {
    id,
    name: id,
    app: 'x',
    pool: 'default',
    cluster: 'default',
    submitMs,
    finishMs,
    state: 'succeeded',
    mapsTotal: 1,
    reducesTotal: 1,
    mapPhase: null,
    reducePhase: null,
    partition: 0,
    migrations: [],
    ...over,
  };
}

describe('computeMetrics on a hand-made run', () => {
  const run: RunRecord = {
    policy: 'p',
    workload: 'w',
    cluster: 'c',
    seed: 1,
    endMs: 40_000,
    jobs: [
      jobRec('j1', 0, 20_000, {
        mapPhase: { requestMs: 0, firstStartMs: 1000, endMs: 12_000 },
        reducePhase: { requestMs: 12_000, firstStartMs: 12_000, endMs: 20_000 },
      }),
      jobRec('j2', 10_000, 40_000, {
        partition: 1,
        mapPhase: { requestMs: 10_000, firstStartMs: 10_000, endMs: 30_000 },
        reducePhase: { requestMs: 30_000, firstStartMs: 31_000, endMs: 40_000 },
      }),
      jobRec('j3', 5_000, 0, { state: 'failed', finishMs: null }),
    ],
    attempts: [
      mkRunAttempt({
        jobId: 'j1',
        startMs: 0,
        endMs: 4000,
        outcome: 'killed',
        bytesRead: 100,
        remoteNodeBytes: 100,
        remoteRackBytes: 0,
      }),
      mkRunAttempt({
        jobId: 'j1',
        startMs: 4000,
        endMs: 12_000,
        remoteNodeBytes: 300,
        remoteRackBytes: 300,
        bytesRead: 300,
      }),
      mkRunAttempt({ jobId: 'j2', startMs: 10_000, endMs: 30_000, partition: 1, outcome: 'failed' }),
    ],
    replications: [
      { timeMs: 1, jobId: 'j1', taskId: 't', workerId: 'w2', bytes: 50, crossRack: true },
      // Owed replicas of an upload: placed by a policy or completed by default, not data moved.
      { timeMs: 2, jobId: 'j1', taskId: 't', workerId: 'w3', bytes: 30, crossRack: true, cause: 'placed' },
      { timeMs: 3, jobId: 'j1', taskId: 't', workerId: 'w4', bytes: 20, crossRack: false, cause: 'completed' },
    ],
    utilization: [
      {
        timeMs: 0,
        mapSlotsUsed: 2,
        reduceSlotsUsed: 0,
        memoryUsedMb: 100,
        mapSlots: 4,
        reduceSlots: 2,
        memoryMb: 400,
        elasticAttempts: 0,
        partitionSlotsUsed: [2],
        workers: 1,
      },
      {
        timeMs: 20_000,
        mapSlotsUsed: 4,
        reduceSlotsUsed: 2,
        memoryUsedMb: 400,
        mapSlots: 4,
        reduceSlots: 2,
        memoryMb: 400,
        elasticAttempts: 2,
        partitionSlotsUsed: [0, 6],
        workers: 1,
      },
    ],
  };
  const m = computeMetrics(
    run,
    new Map([
      ['j1', 10_000],
      ['j2', 10_000],
      ['j3', 5_000],
    ]),
    { partitionCapacity: [0.5, 0.5] },
  );

  test('slowdowns, JCT, makespan and phases', () => {
    assert.deepEqual(
      m.perJob.map((j) => [j.id, j.slowdown]),
      [
        ['j1', 2],
        ['j2', 3],
      ],
    );
    assert.equal(m.slowdown.median, 2);
    assert.equal(m.slowdown.p95, 3);
    assert.equal(m.avgJctMs, 25_000);
    assert.equal(m.makespanMs, 40_000);
    // map phases 12 s and 20 s; reduce phases 8 s and 10 s (from the request, not the first launch)
    assert.equal(m.avgMapPhaseMs, 16_000);
    assert.equal(m.avgReducePhaseMs, 9_000);
    assert.deepEqual([m.jobs, m.finished, m.failed, m.unfinished], [3, 2, 1, 0]);
  });

  test('data movement', () => {
    assert.deepEqual(m.dataMovement, {
      remoteNodeBytes: 400,
      remoteRackBytes: 300,
      rereadBytes: 100,
      killedSlotSeconds: 4,
      killedAttempts: 1,
      failedSlotSeconds: 20,
      failedAttempts: 1,
      replicatedBytes: 50,
      replicatedCrossRackBytes: 50,
      placedBytes: 30,
      completedBytes: 20,
      networkBytes: 450,
    });
  });

  test('utilization is time-weighted over first submission .. last finish', () => {
    // 0-20 s: 2/6 slots, 100/400 memory; 20-40 s: 6/6, 400/400.
    assert.ok(Math.abs(m.utilization.slots - (2 / 6 + 1) / 2) < 1e-12);
    assert.ok(Math.abs(m.utilization.memory - (0.25 + 1) / 2) < 1e-12);
    assert.ok(Math.abs(m.utilization.mapSlots - 0.75) < 1e-12);
    assert.equal(m.utilization.elasticAttempts, 1);
  });

  test('partitions: jobs finished in each, slot-seconds and utilization against capacity', () => {
    // partition 0: 4 + 8 s of attempts; partition 1: 20 s. Capacity 0.5 * 6 slots * 40 s = 120 slot-s.
    assert.deepEqual(
      m.partitions.map((p) => [p.partition, p.jobsFinished, p.fraction, p.slotSeconds, p.utilization]),
      [
        [0, 1, 0.5, 12, 12 / 120],
        [1, 1, 0.5, 20, 20 / 120],
      ],
    );
  });

  test('response breakdown: queued, map phase, gap, reduce phase and tail add up to the response', () => {
    // j1: queued 1 s, maps 11 s, reduce 8 s; j2: maps 20 s, a 1 s gap, reduce 9 s; j4: a map-only
    // job queued 2 s with 3 s of maps and a 4 s tail; j3 failed and does not count.
    const withTail: RunRecord = {
      ...run,
      jobs: [
        ...run.jobs,
        jobRec('j4', 1000, 10_000, { reducesTotal: 0, mapPhase: { requestMs: 1000, firstStartMs: 3000, endMs: 6000 } }),
      ],
      attempts: [
        ...run.attempts,
        mkRunAttempt({ jobId: 'j4', kind: 'reduce', startMs: 0, endMs: 2000 }),
        mkRunAttempt({ jobId: 'j4', kind: 'reduce', startMs: 0, endMs: 500, outcome: 'killed' }),
      ],
    };
    const b = responseBreakdown(withTail);
    assert.equal(b.jobs, 3);
    assert.equal(b.responseMs, (20_000 + 30_000 + 9000) / 3);
    assert.equal(b.queuedMs, (1000 + 0 + 2000) / 3);
    assert.equal(b.mapPhaseMs, (11_000 + 20_000 + 3000) / 3);
    assert.equal(b.betweenPhasesMs, (0 + 1000 + 0) / 3);
    assert.equal(b.reducePhaseMs, (8000 + 9000 + 0) / 3);
    assert.equal(b.tailMs, (0 + 0 + 4000) / 3);
    // succeeded attempts only: the killed map and the failed one do not count
    assert.equal(b.mapAttemptMs, 8000);
    assert.equal(b.reduceAttemptMs, 2000);
  });

  test('the Markdown table has a row per policy', () => {
    const table = metricsTable([
      { policy: 'a', metrics: m },
      { policy: 'b', metrics: m },
    ]);
    assert.equal(table.trim().split('\n').length, 4);
    assert.match(table, /\| a \| 2\/3 \| 2\.00 \| 3\.00 \|/);
  });
});

describe('comparePolicies and writeComparison', () => {
  test('runs each policy fresh on the same workload and writes the report files', async () => {
    const workload = tyrexWorkload({ variant: 'hvw', seed: 5, scale: 0.1 });
    const result = comparePolicies({
      workload,
      cluster: clusterPreset('tyrex-20'),
      policies: ['fifo', { name: 'fifo-again', create: () => new FifoPolicy() }],
    });
    assert.deepEqual(
      result.policies.map((p) => p.policy),
      ['fifo', 'fifo-again'],
    );
    // Same policy twice on the same workload and seed: identical figures.
    assert.deepEqual(result.policies[0]!.metrics, result.policies[1]!.metrics);
    assert.equal(Object.keys(result.runtimeAloneMs).length, workload.jobs.length);
    // A job's response time is never below its runtime alone under FIFO on the same model, up to
    // the heartbeat phase (its arrival relative to the workers' heartbeats; tyrex-20 beats every 3 s).
    for (const j of result.policies[0]!.metrics.perJob)
      assert.ok(j.responseMs >= j.aloneMs - 3000, `${j.id}: ${j.responseMs} ms vs ${j.aloneMs} ms alone`);
    const dir = await mkdtemp(join(tmpdir(), 'minimr-compare-'));
    try {
      const files = await writeComparison(dir, result);
      assert.deepEqual(
        files.map((f) => f.slice(dir.length + 1)),
        [
          'results.json',
          'results.md',
          'slowdown-cdf.svg',
          'slowdown-cdf.csv',
          'data-movement.svg',
          'data-movement.csv',
        ],
      );
      const json = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8')) as {
        policies: Array<{ policy: string }>;
      };
      assert.deepEqual(
        json.policies.map((p) => p.policy),
        ['fifo', 'fifo-again'],
      );
      assert.match(await readFile(join(dir, 'slowdown-cdf.svg'), 'utf8'), /^<svg/);
      assert.match(await readFile(join(dir, 'data-movement.svg'), 'utf8'), /fifo-again/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
