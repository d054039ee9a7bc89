/**
 * Skew assignment in the simulator: the same books as the JobTracker assign partitions, and a
 * reduce's work follows the share of the output it reads (src/sim/skew-model.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { readWorkloadJson, type JobSpec } from '../../src/workloads/index.js';
import { partitionOfKey } from '../../src/skew/index.js';
import { cluster, job, task, worker } from './helpers.js';

const REDUCE_MS = 20_000;

function skewedJob(
  strategy: 'hash' | 'simple' | 'cms',
  partitionFactor: number,
  zipf: number,
  id = 'job_0001',
  submitMs = 0,
): JobSpec {
  const maps = Array.from({ length: 8 }, () => task(1000, { inputBytes: 64 << 20, outputBytes: 64 << 20 }));
  const reduces = Array.from({ length: 4 }, () => task(REDUCE_MS));
  return job(id, submitMs, maps, reduces, { skew: { strategy, partitionFactor, keys: 300, zipf } });
}

/** A map-only job on every worker: the books learn the workers' speeds from it, as from a cluster's earlier jobs. */
function warmUp(): JobSpec {
  return job(
    'job_0000',
    0,
    Array.from({ length: 8 }, () => task(1000, { inputBytes: 64 << 20 })),
  );
}

/** Reference: Zipf(s) shares of keys "k0".."k{n-1}", summed by the default partitioner into P partitions. */
function referenceShares(keys: number, zipf: number, partitions: number): number[] {
  const weights = Array.from({ length: keys }, (_, i) => 1 / (i + 1) ** zipf);
  const total = weights.reduce((a, b) => a + b, 0);
  const shares = new Array<number>(partitions).fill(0);
  weights.forEach((w, i) => (shares[partitionOfKey(new TextEncoder().encode(`k${i}`), partitions, 0)]! += w / total));
  return shares;
}

function reducePhaseMs(r: ReturnType<typeof simulate>): number {
  const reduces = r.run.attempts.filter(
    (a) => a.jobId === 'job_0001' && a.kind === 'reduce' && a.outcome === 'succeeded',
  );
  return Math.max(...reduces.map((a) => a.endMs)) - Math.min(...reduces.map((a) => a.startMs));
}

describe('simulator: skew assignment', () => {
  test(
    "'hash': reduce i works R x its share of the task's work, its " + 'share being the keys hashing to p mod R = i',
    () => {
      const workers = ['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, '/r1'));
      const r = simulate({
        workload: { name: 'skew', jobs: [skewedJob('hash', 2, 1.1)] },
        cluster: cluster(...workers),
        policy: new FifoPolicy(),
        seed: 1,
      });
      const shares = referenceShares(300, 1.1, 8);
      const expected = [0, 1, 2, 3].map((i) => Math.round(REDUCE_MS * 4 * (shares[i]! + shares[i + 4]!)));
      const got = [0, 1, 2, 3].map((i) => {
        const a = r.run.attempts.find((x) => x.taskId === `task_0001_r_00000${i}` && x.outcome === 'succeeded')!;
        return a.endMs - a.startMs;
      });
      assert.deepEqual(got, expected);
      assert.ok(Math.max(...got) > 1.3 * REDUCE_MS, `the keys are skewed enough to matter: ${got}`);
    },
  );

  test(
    "a worker three times slower, known from earlier jobs: 'simple' " +
      "and 'cms' finish the reduce phase sooner than 'hash'",
    () => {
      // 'cms' assigns at submission, so the speeds it plans with are those of the cluster's earlier jobs.
      const workers = ['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, '/r1', id === 'w4' ? { cpuThrottle: 3 } : {}));
      const phase = (strategy: 'hash' | 'simple' | 'cms') =>
        reducePhaseMs(
          simulate({
            workload: { name: 'skew', jobs: [warmUp(), skewedJob(strategy, 4, 1.1, 'job_0001', 10_000)] },
            cluster: cluster(...workers),
            policy: new FifoPolicy(),
            seed: 1,
          }),
        );
      const hash = phase('hash');
      const simple = phase('simple');
      const cms = phase('cms');
      assert.ok(simple < 0.8 * hash, `simple ${simple} ms against hash ${hash} ms`);
      assert.ok(cms < 0.8 * hash, `cms ${cms} ms against hash ${hash} ms`);
    },
  );

  test('a workload file carries "skew", and a bad one is EBADCONF naming the job and the field', () => {
    const file = (skew: unknown) =>
      JSON.stringify({
        format: 'minimr-workload',
        jobs: [
          {
            id: 'j1',
            name: 'j1',
            app: 'wc',
            submitMs: 0,
            maps: [{ workMs: 1, memoryMb: 1 }],
            reduces: [{ workMs: 1, memoryMb: 1 }],
            skew,
          },
        ],
      });
    assert.deepEqual(readWorkloadJson(file({ strategy: 'simple', keys: 10, zipf: 1 })).jobs[0]!.skew, {
      strategy: 'simple',
      keys: 10,
      zipf: 1,
    });
    assert.throws(
      () => readWorkloadJson(file({ strategy: 'lpt', keys: 10, zipf: 1 })),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        /job "j1"/.test(err.message) &&
        /strategy/.test(err.message),
    );
    assert.throws(
      () => readWorkloadJson(file({ strategy: 'hash', keys: 0, zipf: 1 })),
      (err: unknown) => err instanceof MinimrError && /"keys"/.test(err.message),
    );
  });
});
