/** Penalty models and YARN-ME's elastic grant, against hand-computed durations (docs/specs/yarn-me.md). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  bestElasticGrant,
  elasticDiskMBps,
  minimumGrantMb,
  penalizedMs,
  spilledBytes,
  type PenaltyModel,
} from '../../src/scheduler/index.js';

const MiB = 1024 * 1024;
/** A reducer whose shuffle is 1000 MiB, no overhead, spilling at 100 MB/s. */
const reduceSpill: PenaltyModel = {
  kind: 'spill',
  rule: 'reduce',
  bufferBytes: 1000 * MiB,
  overheadMb: 0,
  minFraction: 0.1,
  diskMBps: 100,
};

describe('penalty models', () => {
  test('regular grants run their ideal duration whatever the model', () => {
    for (const p of [
      undefined,
      { kind: 'none' } as const,
      { kind: 'step', factor: 3, minFraction: 0.1 } as const,
      reduceSpill,
    ]) {
      assert.equal(penalizedMs(1000, p, 60_000, 1000, 100), 60_000);
      assert.equal(penalizedMs(1000, p, 60_000, 1200, 100), 60_000);
    }
  });

  test('step: any under-sized grant takes factor x the ideal duration', () => {
    const step: PenaltyModel = { kind: 'step', factor: 3, minFraction: 0.1 };
    assert.equal(penalizedMs(1000, step, 60_000, 900, 100), 180_000);
    assert.equal(penalizedMs(1000, step, 60_000, 100, 100), 180_000);
  });

  test('power: ideal duration x (ideal / granted)^n', () => {
    assert.equal(penalizedMs(1000, { kind: 'power', exponent: 2, minFraction: 0.1 }, 10_000, 500, 100), 40_000);
    assert.equal(penalizedMs(1000, { kind: 'power', exponent: 0.5, minFraction: 0.1 }, 10_000, 250, 100), 20_000);
  });

  test('reduce spill: a sawtooth of spilled bytes, buffer x (ceil(shuffle / buffer) - 1)', () => {
    // 300 MiB buffer: 4 fills of 1000 MiB, 3 spilled: 900 MiB, +9 s at 100 MB/s.
    assert.equal(spilledBytes(reduceSpill as Extract<PenaltyModel, { kind: 'spill' }>, 300), 900 * MiB);
    assert.equal(
      penalizedMs(1000, reduceSpill, 5_000, 300, 50),
      14_000,
      "the model's own disk rate wins over the worker's",
    );
    // 500 MiB: 2 fills, 1 spilled (+5 s); 600 MiB: 600 MiB spilled (+6 s): more memory, slower.
    assert.equal(penalizedMs(1000, reduceSpill, 5_000, 500, 100), 10_000);
    assert.equal(penalizedMs(1000, reduceSpill, 5_000, 600, 100), 11_000);
  });

  test('map spill: one extra pass over the whole buffer, whatever the grant below ideal', () => {
    const mapSpill: PenaltyModel = {
      kind: 'spill',
      rule: 'map',
      bufferBytes: 200 * MiB,
      overheadMb: 100,
      minFraction: 0.1,
    };
    // Worker disk 50 MB/s: 200 MiB / 50 = +4 s.
    assert.equal(penalizedMs(300, mapSpill, 10_000, 250, 50), 14_000);
    assert.equal(penalizedMs(300, mapSpill, 10_000, 120, 50), 14_000);
  });

  test("an elastic run's disk rate: spilled bytes over its duration; models without bytes use none", () => {
    // 500 MiB spilled over 5 + 5 s.
    assert.equal(elasticDiskMBps(1000, reduceSpill, 5_000, 500, 100), 50);
    assert.equal(elasticDiskMBps(1000, reduceSpill, 5_000, 1000, 100), 0, 'regular');
    assert.equal(elasticDiskMBps(1000, { kind: 'step', factor: 3, minFraction: 0.1 }, 5_000, 500, 100), 0);
  });

  test('the minimum grant is 10% of ideal unless the model says, rounded up to whole MB', () => {
    assert.equal(minimumGrantMb(3000, undefined), 300);
    assert.equal(minimumGrantMb(1234, { kind: 'step', factor: 2, minFraction: 0.5 }), 617);
    assert.equal(minimumGrantMb(1001, { kind: 'none' }), 101);
  });
});

describe('the elastic grant: lowest predicted duration, smallest among ties', () => {
  const task = { memoryMb: 1000, penalty: reduceSpill, idealDurationMs: 5_000 };

  test('the sawtooth makes 500 MB the best grant below 1000 MB', () => {
    // Spilled MiB by grant: 100: 900, 200: 800, 300: 900, 400: 800, 500: 500, 600: 600, ... 900: 900.
    assert.deepEqual(bestElasticGrant(task, 4000, 100, 100, 100), { memoryMb: 500, durationMs: 10_000 });
  });

  test('equal durations keep the smaller grant (200 MB, not 400 MB)', () => {
    assert.deepEqual(bestElasticGrant(task, 450, 100, 100, 100), { memoryMb: 200, durationMs: 13_000 });
  });

  test('a step model: every grant is as slow, so the minimum, rounded up to a whole step', () => {
    const step = {
      memoryMb: 2500,
      penalty: { kind: 'step', factor: 1.5, minFraction: 0.1 } as const,
      idealDurationMs: 10_000,
    };
    assert.deepEqual(bestElasticGrant(step, 2000, 250, 100, 100), { memoryMb: 300, durationMs: 15_000 });
    assert.deepEqual(bestElasticGrant(step, 300, 250, 100, 100), { memoryMb: 300, durationMs: 15_000 });
    assert.equal(bestElasticGrant(step, 299, 250, 100, 100), null, 'the minimum rounded up does not fit');
  });

  test('nothing when even the minimum does not fit', () => {
    assert.equal(bestElasticGrant(task, 99, 100, 100, 100), null);
    assert.equal(
      bestElasticGrant(task, 250, 250, 100, 100),
      null,
      'no whole step between the minimum and the free memory',
    );
  });
});
