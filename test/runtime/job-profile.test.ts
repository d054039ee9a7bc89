/**
 * The fit of a recurring job's profile (src/runtime/job-profile.ts) against hand-computed cases:
 * buckets of attempts, scaling to a task's input, T and the fitted disk rate of T(m) = T +
 * spilledBytes(m)/diskRate, and what makes a profile unusable.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import {
  addObservations,
  estimatesFor,
  MAX_BUCKET_ATTEMPTS,
  phaseEstimate,
  profileObservations,
  validateElasticityProfile,
  type AttemptObservation,
  type BufferBucket,
  type ElasticityProfile,
  type JobProfile,
} from '../../src/runtime/index.js';

const MiB = 1024 * 1024;

function bucket(
  bufferMiB: number,
  attempts: number,
  perAttempt: { ms: number; input: number; need: number; spilled?: number },
): BufferBucket {
  return {
    bufferMiB,
    attempts,
    taskMs: perAttempt.ms * attempts,
    inputBytes: perAttempt.input * attempts,
    needBytes: perAttempt.need * attempts,
    spilledBytes: (perAttempt.spilled ?? 0) * attempts,
  };
}

const reduceShape = { kind: 'reduce', memoryMb: 356, bufferBytes: 256 * MiB, buffers: true } as const;

describe('job profiles: buckets', () => {
  it('adds attempts to the bucket of their buffer size and counts runs and imports', () => {
    const obs = (kind: 'map' | 'reduce', bufferBytes: number, taskMs: number): AttemptObservation => ({
      kind,
      bufferBytes,
      taskMs,
      inputBytes: 10,
      needBytes: 5,
      spilledBytes: 1,
    });
    const one = addObservations(
      undefined,
      'wc',
      [obs('map', 64 * MiB, 100), obs('map', 64 * MiB + 1000, 300), obs('reduce', 20 * MiB, 50)],
      7,
      'run',
    );
    assert.deepEqual(one, {
      job: 'wc',
      updatedAt: 7,
      runs: 1,
      imports: 0,
      map: [{ bufferMiB: 64, attempts: 2, taskMs: 400, inputBytes: 20, needBytes: 10, spilledBytes: 2 }],
      reduce: [{ bufferMiB: 20, attempts: 1, taskMs: 50, inputBytes: 10, needBytes: 5, spilledBytes: 1 }],
    });
    const two = addObservations(one, 'wc', [obs('map', 16 * MiB, 10)], 9, 'import');
    assert.deepEqual([two.runs, two.imports, two.map.map((b) => b.bufferMiB)], [1, 1, [16, 64]]);
  });

  it('keeps about the last MAX_BUCKET_ATTEMPTS attempts of a bucket: older sums are scaled down', () => {
    let p: JobProfile | undefined;
    const at = (ms: number): AttemptObservation => ({
      kind: 'map',
      bufferBytes: MiB,
      taskMs: ms,
      inputBytes: 0,
      needBytes: 0,
      spilledBytes: 0,
    });
    for (let i = 0; i < MAX_BUCKET_ATTEMPTS; i++) p = addObservations(p, 'j', [at(100)], i, 'run');
    p = addObservations(p, 'j', [at(1100)], 0, 'run');
    const b = p.map[0]!;
    assert.equal(b.attempts, MAX_BUCKET_ATTEMPTS);
    // 199 old attempts' worth of 100 ms and the new one of 1100 ms.
    assert.ok(Math.abs(b.taskMs - (199 * 100 + 1100)) < 1e-6);
  });
});

describe('job profiles: the fit of a phase', () => {
  it('scales to the task input and fits the disk rate from the most under-sized bucket (reduce sawtooth)', () => {
    // Attempts of 10 MiB that need 64 MiB of buffer: 4 at 100 MiB (1000 ms), 2 at 16 MiB (1800 ms).
    const buckets = [
      bucket(16, 2, { ms: 1800, input: 10 * MiB, need: 64 * MiB }),
      bucket(100, 4, { ms: 1000, input: 10 * MiB, need: 64 * MiB }),
    ];
    const v = phaseEstimate(buckets, reduceShape, 20 * MiB, 4096);
    assert.ok(v?.ok);
    // A task of twice the input: it needs 128 MiB and takes 2000 ms at ideal. The under-sized
    // bucket had a quarter of its need: at that scale a 32 MiB buffer, which under the reduce rule
    // spills 32 * (ceil(128 / 32) - 1) = 96 MiB, and took 3600 ms: 1600 ms more, so 60 MiB/s.
    assert.equal(v.value.idealDurationMs, 2000);
    assert.equal(v.value.neededMemoryMb, 128 + 100);
    assert.deepEqual(v.value.penalty, {
      kind: 'spill',
      rule: 'reduce',
      bufferBytes: 128 * MiB,
      overheadMb: 100,
      minFraction: 101 / 356,
      diskMBps: 60,
    });
  });

  it("without an under-sized bucket that ran slower, no rate of its own (the worker's is used)", () => {
    const v = phaseEstimate(
      [bucket(100, 3, { ms: 900, input: 0, need: 40 * MiB })],
      { ...reduceShape, kind: 'map' },
      0,
      0,
    );
    assert.ok(v?.ok);
    assert.deepEqual(v.value.penalty, {
      kind: 'spill',
      rule: 'map',
      bufferBytes: 40 * MiB,
      overheadMb: 100,
      minFraction: 101 / 356,
    });
    const faster = phaseEstimate(
      [bucket(100, 3, { ms: 900, input: 0, need: 40 * MiB }), bucket(10, 1, { ms: 800, input: 0, need: 40 * MiB })],
      reduceShape,
      0,
      0,
    );
    assert.ok(faster?.ok && faster.value.penalty?.kind === 'spill' && faster.value.penalty.diskMBps === undefined);
  });

  it(
    'caps the modelled buffer at the configured one and, with no ' + 'bucket at its ideal, measures from the closest',
    () => {
      // Every attempt needed 200 MiB and had at most 64 (the configured buffer): T is the 64 MiB
      // bucket's, and that is the buffer the model takes as ideal.
      const v = phaseEstimate(
        [bucket(64, 2, { ms: 700, input: 0, need: 200 * MiB }), bucket(32, 1, { ms: 900, input: 0, need: 200 * MiB })],
        { ...reduceShape, bufferBytes: 64 * MiB, memoryMb: 164 },
        0,
        0,
      );
      assert.ok(v?.ok);
      assert.equal(v.value.idealDurationMs, 700);
      // At half of 64 MiB (32 MiB) the reduce rule spills 32 * (ceil(64 / 32) - 1) = 32 MiB in 200 ms more: 160 MiB/s.
      assert.deepEqual(v.value.penalty, {
        kind: 'spill',
        rule: 'reduce',
        bufferBytes: 64 * MiB,
        overheadMb: 100,
        minFraction: 101 / 164,
        diskMBps: 160,
      });
    },
  );

  it('a map-only map buffers nothing: memory-insensitive down to a real grant', () => {
    const v = phaseEstimate(
      [bucket(64, 2, { ms: 500, input: 0, need: 0 })],
      { kind: 'map', memoryMb: 164, bufferBytes: 64 * MiB, buffers: false },
      0,
      0,
    );
    assert.ok(v?.ok);
    assert.deepEqual(v.value.penalty, { kind: 'none', minFraction: 101 / 164 });
  });

  it('refuses negative or non-finite measurements, and a need above every worker', () => {
    const negative = phaseEstimate([bucket(64, 1, { ms: -5, input: 0, need: MiB })], reduceShape, 0, 0);
    assert.ok(negative && !negative.ok && /negative or not numbers/.test(negative.reason));
    const nan = phaseEstimate([{ ...bucket(64, 1, { ms: 5, input: 0, need: MiB }), attempts: NaN }], reduceShape, 0, 0);
    assert.ok(nan && !nan.ok);
    const huge = phaseEstimate([bucket(64, 1, { ms: 5, input: 0, need: 5000 * MiB })], reduceShape, 0, 2048);
    assert.ok(huge && !huge.ok);
    assert.match(huge.reason, /need 5100 MB not to spill, more than any worker offers \(2048 MB\)/);
    assert.equal(phaseEstimate([], reduceShape, 0, 0), null);
  });
});

describe('job profiles: estimates for a job', () => {
  const profile = addObservations(
    undefined,
    'wc',
    [
      { kind: 'map', bufferBytes: 64 * MiB, taskMs: 1000, inputBytes: 4 * MiB, needBytes: 8 * MiB, spilledBytes: 0 },
      { kind: 'reduce', bufferBytes: 64 * MiB, taskMs: 3000, inputBytes: 8 * MiB, needBytes: 2 * MiB, spilledBytes: 0 },
    ],
    1,
    'run',
  );
  const shape = {
    conf: undefined,
    mapInputBytes: [2 * MiB, 4 * MiB, 6 * MiB],
    reducers: 2,
    mapMemoryMb: 164,
    reduceMemoryMb: 164,
  };

  it('gives each map its own duration and buffer by its split, each reduce its share of the input', () => {
    const v = estimatesFor(profile, shape, 1000);
    assert.equal(v.use.state, 'used');
    assert.deepEqual(
      v.estimates?.maps.map((e) => e.idealDurationMs),
      [500, 1000, 1500],
    );
    assert.deepEqual(
      v.estimates?.maps.map((e) => (e.penalty?.kind === 'spill' ? e.penalty.bufferBytes / MiB : 0)),
      [4, 8, 12],
    );
    // 12 MiB of input over 2 reduces: 6 MiB each, where the profile's reduce stood for 8.
    assert.equal(v.estimates?.reduce.idealDurationMs, 2250);
    assert.deepEqual(v.use, {
      state: 'used',
      map: { attempts: 1, idealDurationMs: 1000, neededMemoryMb: 108, penalty: 'spill' },
      reduce: { attempts: 1, idealDurationMs: 2250, neededMemoryMb: 102, penalty: 'spill' },
    });
  });

  it('no profile: none; an absurd one: rejected with the reason, and no estimates', () => {
    assert.deepEqual(estimatesFor(undefined, shape, 1000), { use: { state: 'none' } });
    const v = estimatesFor(profile, shape, 105);
    assert.deepEqual(v, {
      use: { state: 'rejected', reason: 'its maps need 108 MB not to spill, more than any worker offers (105 MB)' },
    });
  });
});

describe('job profiles: `minimr profile` results', () => {
  const result = {
    job: 'wordcount.js',
    jobName: 'wordcount',
    maps: 2,
    idealMapBufferBytes: 8 * MiB,
    idealReduceBufferBytes: 16 * MiB,
    mapInputBytes: MiB,
    points: [
      {
        fraction: 1,
        mapBufferBytes: 8 * MiB,
        reduceBufferBytes: 16 * MiB,
        mapMs: 100,
        reduceMs: 200,
        mapSpilledBytes: 10,
        reduceSpilledBytes: 0,
      },
      {
        fraction: 0.25,
        mapBufferBytes: 2 * MiB,
        reduceBufferBytes: 4 * MiB,
        mapMs: 150,
        reduceMs: 400,
        mapSpilledBytes: 30,
        reduceSpilledBytes: 50,
      },
    ],
  } as unknown as ElasticityProfile;

  it("become observations: each point its maps and its one reduce, at the point's buffers", () => {
    const obs = profileObservations(result);
    assert.equal(obs.length, 6);
    assert.deepEqual(obs[2], {
      kind: 'reduce',
      bufferBytes: 16 * MiB,
      taskMs: 200,
      inputBytes: 2 * MiB,
      needBytes: 16 * MiB,
      spilledBytes: 0,
    });
    assert.deepEqual(obs[3], {
      kind: 'map',
      bufferBytes: 2 * MiB,
      taskMs: 150,
      inputBytes: MiB,
      needBytes: 8 * MiB,
      spilledBytes: 30,
    });
  });

  it('are checked: anything else is EBADCONF naming the field', () => {
    assert.equal(validateElasticityProfile(result), result);
    const broken = { ...result, points: [{ ...result.points[0], mapMs: -1 }] };
    assert.throws(
      () => validateElasticityProfile(broken),
      (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF' && /points\[0\]\.mapMs/.test(e.message),
    );
    assert.throws(() => validateElasticityProfile([1, 2]), /EBADCONF|JSON object/);
    assert.throws(() => validateElasticityProfile({ ...result, maps: 0 }), /"maps"/);
  });
});

describe('job profiles: a damaged store', () => {
  it('a profile that is not one is rejected, not thrown', () => {
    const v = estimatesFor(
      { job: 'x', map: 'nonsense' } as unknown as JobProfile,
      { conf: undefined, mapInputBytes: [1], reducers: 1, mapMemoryMb: 164, reduceMemoryMb: 164 },
      0,
    );
    assert.equal(v.use.state, 'rejected');
    assert.equal(v.estimates, undefined);
  });
});
