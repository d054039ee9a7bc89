/**
 * The yarn and yarn-me policies: conformance, and single rounds against hand-computed choices
 * (the elastic grant, the finish-before-the-job rule, reservations and backfilling, the disk share).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import {
  type YarnMePolicy,
  createPolicy,
  type AttemptView,
  type ClusterSnapshot,
  type Decision,
  type PenaltyModel,
  type TaskView,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';
import { mkAttempt } from '../helpers/books.js';
import { mkJob, mkSnapshot, mkTask, mkWorker } from './snapshot-driver.js';

// The contract with the JobTracker, which runs these policies without ApplicationMasters (it has none:
// createPolicy's 'cluster' engine). With AMs a job on a one-slot worker never runs, as in YARN.
policyConformance('yarn', () => createPolicy('yarn', {}, 'cluster'));
policyConformance('yarn-me', () => createPolicy('yarn-me', {}, 'cluster'));
policyConformance('yarn-me without backfilling', () => createPolicy('yarn-me', { backfillReserved: false }, 'cluster'));
/**
 * The single rounds below were computed by hand for the loop alone: no ApplicationMasters and no
 * reservable-nodes guard (both have tests of their own in yarn-shape.test.ts).
 */
const BEFORE_AMS = { amMb: 0, reservableNodes: 1 } as const;

const MiB = 1024 * 1024;
const reduceSpill: PenaltyModel = {
  kind: 'spill',
  rule: 'reduce',
  bufferBytes: 1000 * MiB,
  overheadMb: 0,
  minFraction: 0.1,
  diskMBps: 100,
};
const step3: PenaltyModel = { kind: 'step', factor: 3, minFraction: 0.1 };

/** w1: 4096 MB, 100 MB/s disk, `freeMemoryMb` free, 4 map and 4 reduce slots. */
function w1(freeMemoryMb: number, over: Partial<WorkerView> = {}): WorkerView {
  return mkWorker('w1', 'r1', {
    memoryMb: 4096,
    freeMemoryMb,
    mapSlots: 4,
    reduceSlots: 4,
    freeMapSlots: 3,
    freeReduceSlots: 3,
    diskMBps: 100,
    ...over,
  });
}

/** A running map of job `jobId` on w1 holding `memoryMb` for `durationMs` from 0. */
function running(jobId: string, memoryMb: number, durationMs: number, over: Partial<AttemptView> = {}): AttemptView {
  return mkAttempt(jobId, 'map', 0, 'w1', 0, {
    id: `${jobId}-run_1`,
    taskId: `${jobId}-run`,
    progress: 0,
    memoryMb,
    idealMemoryMb: memoryMb,
    idealDurationMs: durationMs,
    inputBytes: 0,
    ...over,
  });
}

function reducer(jobId: string, index: number, over: Partial<TaskView> = {}): TaskView {
  return mkTask(jobId, 'reduce', index, { memoryMb: 1000, idealDurationMs: 5_000, penalty: reduceSpill, ...over });
}

function launches(decisions: readonly Decision[]): Array<[string, number | undefined, boolean]> {
  return decisions.flatMap((d) =>
    d.kind === 'launch' ? [[d.taskId, d.memoryMb, d.elastic ?? false] as [string, number | undefined, boolean]] : [],
  );
}

const heartbeat = { kind: 'heartbeat', workerId: 'w1' } as const;

/** w1 with `free` MB free; job "other" holds the rest until `busyUntilMs`; job J waits with one reduce. */
function waiting(free: number, busyUntilMs: number, tasks: TaskView[] = [reducer('j', 0)]): ClusterSnapshot {
  const other = mkJob('other', [], { runningAttempts: [running('other', 4096 - free, busyUntilMs)], submitTime: 0 });
  return mkSnapshot([w1(free)], [mkJob('j', tasks, { submitTime: 1 }), other], { trigger: heartbeat });
}

describe('yarn-me: one round', () => {
  test('a task whose ideal memory is free runs regular', () => {
    const s = mkSnapshot([w1(4096)], [mkJob('j', [reducer('j', 0)])], { trigger: heartbeat });
    assert.deepEqual(launches(createPolicy('yarn-me', BEFORE_AMS).schedule(s)), [['j-r0', 1000, false]]);
  });

  test(
    'elastic: the grant of lowest predicted duration, the smaller ' + 'of equal ones (sawtooth: 200 MB, not 400 MB)',
    () => {
      // 450 MB free: grants 100..400 spill 900, 800, 900, 800 MiB. J's task could start regularly
      // only at 60 s (end 65 s); 200 MB ends at 0 + 5 + 8 = 13 s: well before. (It spills 800 MiB
      // in 13 s, 62 MB/s: more than the default disk share of w1's 100 MB/s, 0.5: a whole disk here.)
      assert.deepEqual(
        launches(createPolicy('yarn-me', { ...BEFORE_AMS, diskShare: 1 }).schedule(waiting(450, 60_000))),
        [['j-r0', 200, true]],
      );
      // yarn grants only ideal memory: nothing.
      assert.deepEqual(launches(createPolicy('yarn', BEFORE_AMS).schedule(waiting(450, 60_000))), []);
    },
  );

  test('never the straggler: no elastic run that would end after the job would end regularly', () => {
    // The memory is back at 5 s: J's task would run 5-10 s regularly; elastic would end at 13 s.
    const policy = createPolicy('yarn-me', { ...BEFORE_AMS, diskShare: 1 }) as YarnMePolicy;
    assert.deepEqual(launches(policy.schedule(waiting(450, 5_000))), []);
    assert.deepEqual(policy.reserved(), [['w1', 'j']], 'J reserves the node instead');
  });

  test('a task without a penalty model (no profile) runs only regular', () => {
    const plain = mkTask('j', 'reduce', 0, { memoryMb: 1000, idealDurationMs: 5_000 });
    assert.deepEqual(
      launches(createPolicy('yarn-me', { ...BEFORE_AMS, diskShare: 1 }).schedule(waiting(450, 60_000, [plain]))),
      [],
    );
  });

  test(
    'reservations: a reserved node is kept for its job under yarn; ' +
      'yarn-me backfills only what ends before it can start',
    () => {
      // J (2000 MB, first in the queue) cannot start before 5 s, when "other" gives back its memory;
      // K's 500 MB task fits now.
      const j = mkJob('j', [mkTask('j', 'map', 0, { memoryMb: 2000, idealDurationMs: 20_000 })], { submitTime: 1 });
      const other = mkJob('other', [], { runningAttempts: [running('other', 3096, 5_000)] });
      const k = (ms: number) =>
        mkJob('k', [mkTask('k', 'map', 0, { memoryMb: 500, idealDurationMs: ms })], { submitTime: 2 });
      const at = (ms: number) => mkSnapshot([w1(1000)], [j, other, k(ms)], { trigger: heartbeat });
      const run = (name: string, options: Record<string, unknown>, ms: number) => {
        const policy = createPolicy(name, { ...BEFORE_AMS, ...options }) as YarnMePolicy;
        return { launched: launches(policy.schedule(at(ms))), reserved: policy.reserved() };
      };
      // yarn: J reserves w1 and K waits, however short.
      assert.deepEqual(run('yarn', {}, 3_000), { launched: [], reserved: [['w1', 'j']] });
      // yarn-me: K's 3 s task ends before 5 s and runs; a 10 s one would hold w1 when J could start.
      assert.deepEqual(run('yarn-me', {}, 3_000), { launched: [['k-m0', 500, false]], reserved: [['w1', 'j']] });
      assert.deepEqual(run('yarn-me', {}, 10_000), { launched: [], reserved: [['w1', 'j']] });
      assert.deepEqual(run('yarn-me', { backfillReserved: false }, 3_000), { launched: [], reserved: [['w1', 'j']] });
    },
  );

  test(
    'yarn reserves a node on its heartbeat even when no pending ' +
      'task fits it (then a later small job waits, as in YARN)',
    () => {
      // w1 has 1000 MB free; J's 2000 MB map fits nowhere. YARN reserves w1 for J all the same, so
      // that K, arriving later with a 500 MB map, does not take the memory J is waiting for.
      const policy = createPolicy('yarn', BEFORE_AMS) as YarnMePolicy;
      const other = mkJob('other', [], { runningAttempts: [running('other', 3096, 5_000)] });
      const j = mkJob('j', [mkTask('j', 'map', 0, { memoryMb: 2000 })], { submitTime: 1 });
      assert.deepEqual(launches(policy.schedule(mkSnapshot([w1(1000)], [j, other], { trigger: heartbeat }))), []);
      assert.deepEqual(policy.reserved(), [['w1', 'j']]);
      const k = mkJob('k', [mkTask('k', 'map', 0, { memoryMb: 500 })], { submitTime: 2 });
      assert.deepEqual(launches(policy.schedule(mkSnapshot([w1(1000)], [j, other, k], { trigger: heartbeat }))), []);
      assert.deepEqual(policy.reserved(), [['w1', 'j']]);
    },
  );

  test('a reservation ends with its job, and the node serves the queue again', () => {
    const policy = createPolicy('yarn', BEFORE_AMS) as YarnMePolicy;
    const other = mkJob('other', [], { runningAttempts: [running('other', 3096, 5_000)] });
    const k = mkJob('k', [mkTask('k', 'map', 0, { memoryMb: 500 })], { submitTime: 2 });
    const j = mkJob('j', [mkTask('j', 'map', 0, { memoryMb: 2000 })], { submitTime: 1 });
    assert.deepEqual(launches(policy.schedule(mkSnapshot([w1(1000)], [j, other, k], { trigger: heartbeat }))), []);
    assert.deepEqual(policy.reserved(), [['w1', 'j']]);
    assert.deepEqual(launches(policy.schedule(mkSnapshot([w1(1000)], [other, k], { trigger: heartbeat }))), [
      ['k-m0', 500, false],
    ]);
    assert.deepEqual(policy.reserved(), []);
  });

  test('fair queue order: the job using the least memory goes first', () => {
    const busy = mkJob('busy', [mkTask('busy', 'map', 0, { memoryMb: 1000 })], {
      submitTime: 0,
      runningAttempts: [running('busy', 1000, 60_000)],
    });
    const idle = mkJob('idle', [mkTask('idle', 'map', 0, { memoryMb: 1000 })], { submitTime: 5 });
    const s = mkSnapshot([w1(1500)], [busy, idle], { trigger: heartbeat });
    assert.deepEqual(launches(createPolicy('yarn', BEFORE_AMS).schedule(s)), [['idle-m0', 1000, false]]);
  });

  test('disk share: no new elastic task where the elastic tasks would spill beyond it', () => {
    // A running elastic reducer at 500 MB spills 500 MiB over 10 s: 50 MB/s of w1's 100 MB/s.
    // J's best grant with 600 MB free is 500 MB (also 50 MB/s): 100 MB/s in all.
    const spilling = running('other', 500, 5_000, {
      kind: 'reduce',
      idealMemoryMb: 1000,
      elastic: true,
      penalty: reduceSpill,
    });
    const hog = running('hog', 4096 - 600 - 500, 60_000);
    const s = mkSnapshot(
      [w1(600)],
      [
        mkJob('j', [reducer('j', 0)], { submitTime: 1 }),
        mkJob('other', [], { runningAttempts: [spilling] }),
        mkJob('hog', [], { runningAttempts: [{ ...hog, id: 'hog-run_1' }] }),
      ],
      { trigger: heartbeat },
    );
    assert.deepEqual(
      launches(createPolicy('yarn-me', BEFORE_AMS).schedule(s)),
      [],
      'the default share, 0.5, is 50 MB/s',
    );
    assert.deepEqual(launches(createPolicy('yarn-me', { ...BEFORE_AMS, diskShare: 1 }).schedule(s)), [
      ['j-r0', 500, true],
    ]);
  });

  test("elastic tasks run with a step model too (the paper's traces): the minimum, when the job is long", () => {
    const maps = Array.from({ length: 8 }, (_, i) =>
      mkTask('j', 'map', i, { memoryMb: 3000, idealDurationMs: 100_000, penalty: step3 }),
    );
    // 1000 MB free and 3096 MB busy for 100 s: eight 3000 MB maps take many waves; 300 MB x 3 = 300 s.
    const s = mkSnapshot(
      [w1(1000)],
      [mkJob('j', maps, { submitTime: 1 }), mkJob('other', [], { runningAttempts: [running('other', 3096, 100_000)] })],
      { trigger: heartbeat },
    );
    assert.deepEqual(launches(createPolicy('yarn-me', BEFORE_AMS).schedule(s)), [
      ['j-m0', 300, true],
      ['j-m1', 300, true],
      ['j-m2', 300, true],
    ]);
  });
});

describe('yarn and yarn-me options', () => {
  test('a bad --policy-options field is EBADCONF naming it', () => {
    for (const [name, options, field] of [
      ['yarn-me', { diskShar: 0.5 }, 'diskShar'],
      ['yarn-me', { diskShare: 2 }, 'diskShare'],
      ['yarn-me', { backfillReserved: 'yes' }, 'backfillReserved'],
      ['yarn', { diskShare: 0.5 }, 'diskShare'],
    ] as const) {
      assert.throws(
        () => createPolicy(name, options),
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && err.message.includes(`'${field}'`),
        `${name} ${JSON.stringify(options)}`,
      );
    }
  });
});
