/**
 * YARN-ME's mis-estimation in the simulator: policies see each task's estimates (penalty off by
 * +-penaltyNoise), runs follow the truth (an elastic run is penalized against the true ideal
 * memory, off by +-memoryNoise), and regular grants run as estimated.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import type { ClusterSnapshot, Decision, Policy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { cluster, grantingPolicy, job, task, worker } from './helpers.js';

const step3 = { kind: 'step', factor: 3, minFraction: 0.1 } as const;

/** 200 one-map jobs of 10 s, 1000 MB, 3x step penalty, on 200 single-slot workers. */
function manyMaps() {
  const jobs = Array.from({ length: 200 }, (_, i) =>
    job(`job_${String(i + 1).padStart(4, '0')}`, 0, [task(10_000, { memoryMb: 1000, penalty: step3 })]),
  );
  const workers = Array.from({ length: 200 }, (_, i) =>
    worker(`w${String(i).padStart(3, '0')}`, 'r1', { reduceSlots: 0 }),
  );
  return { workload: { name: 'many', jobs }, cluster: cluster(...workers) };
}

describe('simulator: mis-estimation of memory and penalty', () => {
  test(
    'memory: an elastic run at 90% of the estimate is unpenalized ' +
      'when the true ideal is below it (u <= -0.1: 40% of tasks at ' +
      '+-50%)',
    () => {
      const r = simulate({ ...manyMaps(), policy: grantingPolicy(0.9), memoryNoise: 0.5 });
      const durations = r.run.attempts.map((a) => a.endMs - a.startMs);
      assert.ok(
        durations.every((d) => d === 10_000 || d === 30_000),
        'ideal or 3x, nothing else',
      );
      const fast = durations.filter((d) => d === 10_000).length;
      assert.ok(fast >= 50 && fast <= 110, `${fast} of 200 unpenalized`);
      // Without the noise every elastic run is penalized; regular grants never are, noise or not.
      assert.ok(
        simulate({ ...manyMaps(), policy: grantingPolicy(0.9) }).run.attempts.every(
          (a) => a.endMs - a.startMs === 30_000,
        ),
      );
      assert.ok(
        simulate({ ...manyMaps(), policy: grantingPolicy(1), memoryNoise: 0.5 }).run.attempts.every(
          (a) => a.endMs - a.startMs === 10_000,
        ),
      );
    },
  );

  test('penalty: policies see the factor off by up to 15%, runs take the true 3x', () => {
    const seen: number[] = [];
    const inner = grantingPolicy(0.5);
    const recording: Policy = {
      name: 'recording',
      consultWhen: 'every-event',
      schedule(s: ClusterSnapshot): readonly Decision[] {
        for (const j of s.jobs)
          for (const t of j.pendingTasks) if (t.penalty?.kind === 'step') seen.push(t.penalty.factor);
        return inner.schedule(s);
      },
    };
    const r = simulate({ ...manyMaps(), policy: recording, penaltyNoise: 0.15 });
    assert.ok(seen.length >= 200);
    assert.ok(
      seen.every((f) => f >= 3 * 0.85 - 1e-9 && f <= 3 * 1.15 + 1e-9),
      'within +-15%',
    );
    assert.ok(new Set(seen).size > 100, 'drawn per task');
    assert.ok(r.run.attempts.every((a) => a.endMs - a.startMs === 30_000));
  });

  test('noise settings outside [0, 1) are EBADCONF naming them', () => {
    for (const field of ['noise', 'memoryNoise', 'penaltyNoise'] as const) {
      assert.throws(
        () => simulate({ ...manyMaps(), policy: grantingPolicy(1), [field]: 1 }),
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && err.message.includes(field),
      );
    }
  });
});
