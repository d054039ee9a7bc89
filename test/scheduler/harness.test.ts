/**
 * Tests of the test harness itself: a conformance suite that cannot fail proves nothing, so each
 * check is shown to reject a policy or a decision list that breaks it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { FifoPolicy, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import { ImpureCallError, STEADY_RESPONSE_BOUND_MS, runSteadyLoad, withPurityGuard } from './conformance.js';
import { mkAttempt } from '../helpers/books.js';
import { SnapshotDriver, mkJob, mkSnapshot, mkTask, mkWorker, validateDecisions } from './snapshot-driver.js';

describe('validateDecisions', () => {
  const workers = [
    mkWorker('w1', 'r1', { freeMapSlots: 1, freeReduceSlots: 1, freeMemoryMb: 600 }),
    mkWorker('w2', 'r2'),
  ];
  const tasks = [
    mkTask('j', 'map', 0, { preferredWorkers: ['w1'], workers }),
    mkTask('j', 'map', 1),
    mkTask('j', 'reduce', 0),
    mkTask('j', 'reduce', 1),
  ];
  const running = [mkAttempt('j', 'map', 9, 'w2', 0, { inputBytes: 0 })];
  const s = mkSnapshot(workers, [mkJob('j', tasks, { runningAttempts: running })]);
  const launch = (
    taskId: string,
    workerId: string,
    over: Partial<Extract<Decision, { kind: 'launch' }>> = {},
  ): Decision => ({
    kind: 'launch',
    taskId,
    jobId: 'j',
    workerId,
    locality: taskId === 'j-m0' && workerId === 'w1' ? 'node' : 'any',
    ...over,
  });
  const cases: Array<[string, Decision[], RegExp]> = [
    ['too many maps', [launch('j-m0', 'w1'), launch('j-m1', 'w1')], /2 maps for 1 free map slots/],
    ['too many reduces', [launch('j-r0', 'w1'), launch('j-r1', 'w1')], /2 reduces for 1 free reduce slots/],
    [
      'too much memory',
      [launch('j-m0', 'w1', { memoryMb: 400 }), launch('j-r0', 'w1', { memoryMb: 400 })],
      /800 MB for 600 MB free/,
    ],
    ['same task twice', [launch('j-m1', 'w1'), launch('j-m1', 'w2')], /launched twice/],
    ['unknown worker', [launch('j-m1', 'w9')], /unknown worker w9/],
    ['task not pending', [launch('j-m9', 'w2')], /not pending/],
    ['wrong job', [launch('j-m1', 'w2', { jobId: 'k' })], /belongs to j/],
    [
      'claimed locality not achieved',
      [launch('j-m0', 'w2', { locality: 'node' })],
      /claims node locality, achieved any/,
    ],
    ['no memory granted', [launch('j-m1', 'w2', { memoryMb: 0 })], /grants 0 MB/],
    ['unknown attempt killed', [{ kind: 'kill', attemptId: 'nope', reason: 'x' }], /unknown attempt/],
  ];
  for (const [name, decisions, message] of cases) {
    test(`flags: ${name}`, () => {
      const problems = validateDecisions(s, decisions);
      assert.ok(
        problems.some((p) => message.test(p)),
        problems.join('; ') || 'no problem reported',
      );
    });
  }

  test('accepts a valid list', () => {
    const ok: Decision[] = [
      launch('j-m0', 'w1'),
      launch('j-r0', 'w2'),
      launch('j-m1', 'w2'),
      { kind: 'kill', attemptId: 'j-m9_1', reason: 'x' },
    ];
    assert.deepEqual(validateDecisions(s, ok), []);
  });
});

describe('withPurityGuard', () => {
  // Each read cleans up after itself: the check that the guard restored the real function runs it
  // for real, and a live timer would keep the test process from exiting.
  const reads: Array<[string, () => unknown]> = [
    ['Date.now', () => Date.now()],
    ['new Date()', () => new Date()],
    ['performance.now', () => performance.now()],
    ['Math.random', () => Math.random()],
    ['setTimeout', () => clearTimeout(setTimeout(() => undefined, 1)) ?? 'cleared'],
    ['setInterval', () => clearInterval(setInterval(() => undefined, 1)) ?? 'cleared'],
    ['setImmediate', () => clearImmediate(setImmediate(() => undefined)) ?? 'cleared'],
    ['process.hrtime', () => process.hrtime()],
    ['process.hrtime', () => process.hrtime.bigint()],
  ];
  for (const [what, read] of reads) {
    test(
      `catches ${read.toString().replace(/^\(\) => /, '')}, even when ` + `the throw is swallowed, and restores it`,
      () => {
        assert.throws(() => withPurityGuard(read), ImpureCallError);
        const { forbiddenCalls } = withPurityGuard(() => {
          try {
            read();
          } catch {
            // a policy hiding its clock read
          }
        });
        assert.deepEqual(forbiddenCalls, [what]);
        assert.notEqual(read(), undefined, `${what} was not restored`);
      },
    );
  }

  test('leaves pure computation alone, dates from numbers included', () => {
    const { result, forbiddenCalls } = withPurityGuard(() => new Date(86_400_000).toISOString());
    assert.equal(result, '1970-01-02T00:00:00.000Z');
    assert.deepEqual(forbiddenCalls, []);
  });
});

describe('steady-load starvation bound', () => {
  test('a newest-first policy overshoots it while FIFO stays inside', () => {
    const fifo = new FifoPolicy();
    const newestFirst: Policy = {
      name: 'newest-first',
      consultWhen: 'every-event',
      schedule: (s: ClusterSnapshot) => fifo.schedule({ ...s, jobs: [...s.jobs].reverse() }),
    };
    const worst = (p: Policy): number => Math.max(...runSteadyLoad(p).responses.values());
    assert.ok(worst(new FifoPolicy()) <= STEADY_RESPONSE_BOUND_MS);
    assert.ok(worst(newestFirst) > STEADY_RESPONSE_BOUND_MS, `newest-first worst ${worst(newestFirst)} ms`);
  });
});

describe('SnapshotDriver', () => {
  const workers = [
    { id: 'w1', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 1024 },
    { id: 'w2', rack: 'r2', mapSlots: 1, reduceSlots: 1, memoryMb: 1024 },
  ];

  test('reduces become pending only once every map is done, and jobs leave when finished', () => {
    const driver = new SnapshotDriver({
      workers,
      jobs: [{ id: 'j', submitTime: 0, maps: 2, reduces: 1 }],
      taskTicks: 2,
    });
    const policy = new FifoPolicy();
    const first = driver.step(policy);
    assert.equal(first.snapshot.trigger.kind, 'job-submitted');
    assert.deepEqual(
      first.snapshot.jobs[0]!.pendingTasks.map((t) => t.id),
      ['j-m0', 'j-m1'],
    );
    driver.step(policy);
    const third = driver.step(policy);
    assert.equal(third.snapshot.trigger.kind, 'attempt-finished');
    assert.deepEqual(
      third.snapshot.jobs[0]!.pendingTasks.map((t) => t.id),
      ['j-r0'],
    );
    assert.equal(third.snapshot.jobs[0]!.mapsCompleted, 2);
    const result = driver.run(policy, { maxTicks: 10 });
    assert.deepEqual(result.unfinished, []);
    assert.equal(result.finishTimes.get('j'), 4000);
  });

  test('running attempts use up slots and memory, and snapshots are frozen', () => {
    const driver = new SnapshotDriver({
      workers,
      jobs: [{ id: 'j', submitTime: 0, maps: 3, reduces: 0, mapMemoryMb: 300 }],
    });
    driver.step(new FifoPolicy());
    const s = driver.snapshot();
    assert.deepEqual(
      s.workers.map((w) => [w.freeMapSlots, w.freeMemoryMb]),
      [
        [0, 724],
        [0, 724],
      ],
    );
    assert.equal(s.jobs[0]!.runningAttempts.length, 2);
    assert.ok(Object.isFrozen(s.jobs[0]!.pendingTasks[0]));
  });

  test('a failed attempt puts its task back with the worker in failedOnWorkers', () => {
    const driver = new SnapshotDriver({
      workers,
      jobs: [{ id: 'j', submitTime: 0, maps: 1, reduces: 0 }],
      taskTicks: 1,
      failAttempt: ({ attemptNo }) => attemptNo === 1,
    });
    const first = driver.step(new FifoPolicy());
    const failedOn = (first.decisions[0] as Extract<Decision, { kind: 'launch' }>).workerId;
    const second = driver.step(new FifoPolicy());
    assert.deepEqual(second.snapshot.jobs[0]!.pendingTasks[0]!.failedOnWorkers, [failedOn]);
    assert.notEqual((second.decisions[0] as Extract<Decision, { kind: 'launch' }>).workerId, failedOn);
  });

  test('an invalid decision list is refused', () => {
    const greedy: Policy = {
      name: 'greedy',
      consultWhen: 'every-event',
      schedule: (s) =>
        s.jobs.flatMap((j) =>
          j.pendingTasks.map(
            (t): Decision => ({ kind: 'launch', taskId: t.id, jobId: j.id, workerId: 'w1', locality: 'any' }),
          ),
        ),
    };
    const driver = new SnapshotDriver({ workers, jobs: [{ id: 'j', submitTime: 0, maps: 3, reduces: 0 }] });
    assert.throws(() => driver.step(greedy), /3 maps for 1 free map slots/);
  });

  test('the same options give the same snapshots', () => {
    const run = () =>
      new SnapshotDriver({
        workers,
        jobs: [
          { id: 'j', submitTime: 0, maps: 4, reduces: 2 },
          { id: 'k', submitTime: 1500, maps: 2, reduces: 1 },
        ],
      }).run(new FifoPolicy(), { maxTicks: 50, record: true });
    assert.deepEqual(run(), run());
  });
});
