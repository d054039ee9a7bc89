import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { withBaselineTaskTimes } from '../../src/experiments/index.js';
import type { AttemptRunRecord, RunRecord } from '../../src/metrics/index.js';
import type { PenaltyModel } from '../../src/scheduler/index.js';
import type { Workload } from '../../src/workloads/index.js';
import { mkRunAttempt } from '../helpers/run-records.js';

function run(attempts: AttemptRunRecord[]): RunRecord {
  return {
    policy: 'yarn',
    workload: 'w',
    cluster: 'c',
    seed: 1,
    endMs: 0,
    jobs: [],
    attempts,
    replications: [],
    utilization: [],
  };
}

describe('the yarn-me-real prediction from the baseline runs', () => {
  const penalty: PenaltyModel = { kind: 'step', factor: 3, minFraction: 0.1 };
  const workload: Workload = {
    name: 'mix',
    jobs: [
      {
        id: 'j1',
        name: 'j1',
        app: 'terasort',
        submitMs: 0,
        maps: [
          { workMs: 500, memoryMb: 150, penalty },
          { workMs: 500, memoryMb: 150, penalty },
        ],
        reduces: [{ workMs: 300, memoryMb: 120 }],
      },
      {
        id: 'j2',
        name: 'j2',
        app: 'grep',
        submitMs: 2000,
        maps: [{ workMs: 700, memoryMb: 100 }],
        reduces: [{ workMs: 200, memoryMb: 100 }],
      },
    ],
  };

  it(
    "gives each task its job's mean regular attempt time of its " + 'kind over the runs, and keeps memory and penalty',
    () => {
      const baseline = [
        run([
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 0, endMs: 1000 }),
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 100, endMs: 1300 }),
          mkRunAttempt({ jobId: 'j1', kind: 'reduce', startMs: 1300, endMs: 1700 }),
          // neither a failed attempt nor an elastic one times the task's ideal duration
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 0, endMs: 9000, outcome: 'failed' }),
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 0, endMs: 9000, memoryMb: 50, idealMemoryMb: 150 }),
        ]),
        run([
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 0, endMs: 1400 }),
          mkRunAttempt({ jobId: 'j1', kind: 'map', startMs: 0, endMs: 1000 }),
          mkRunAttempt({ jobId: 'j1', kind: 'reduce', startMs: 2000, endMs: 2600 }),
          mkRunAttempt({ jobId: 'j2', kind: 'map', startMs: 2000, endMs: 2900 }),
        ]),
      ];
      const timed = withBaselineTaskTimes(workload, baseline);
      const [j1, j2] = timed.jobs;
      // j1 maps: (1000 + 1200 + 1400 + 1000) / 4 = 1150; j1 reduce: (400 + 600) / 2 = 500
      assert.deepEqual(
        j1!.maps.map((t) => t.workMs),
        [1150, 1150],
      );
      assert.deepEqual(
        j1!.reduces.map((t) => t.workMs),
        [500],
      );
      assert.deepEqual(j1!.maps[0]!.penalty, penalty);
      assert.equal(j1!.maps[0]!.memoryMb, 150);
      // j2's map measured (900); its reduce never ran in the baseline: the profile's time stays
      assert.deepEqual(
        j2!.maps.map((t) => t.workMs),
        [900],
      );
      assert.deepEqual(
        j2!.reduces.map((t) => t.workMs),
        [200],
      );
      assert.equal(workload.jobs[0]!.maps[0]!.workMs, 500, 'the given workload is not changed');
    },
  );
});
