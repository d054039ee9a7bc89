import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import {
  FifoPolicy,
  createPolicy,
  policyNames,
  type Decision,
  type TaskView,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';
import { SnapshotDriver, mkJob, mkSnapshot, mkTask, mkWorker, validateDecisions } from './snapshot-driver.js';

policyConformance('fifo', () => new FifoPolicy());
policyConformance('fifo via createPolicy', () => createPolicy('fifo'));

type Launch = Extract<Decision, { kind: 'launch' }>;

function launches(decisions: readonly Decision[]): Launch[] {
  return decisions.filter((d): d is Launch => d.kind === 'launch');
}

/** task id -> worker id, the shape most assertions below care about. */
function placement(decisions: readonly Decision[]): Record<string, string> {
  return Object.fromEntries(launches(decisions).map((d) => [d.taskId, d.workerId]));
}

const full = { freeMapSlots: 0, freeReduceSlots: 0 } as const;

describe('fifo: job order', () => {
  test('a later job gets nothing while an earlier one has pending maps that fit', () => {
    const workers = [mkWorker('w1', 'r1'), mkWorker('w2', 'r1')];
    const a = mkJob(
      'a',
      [0, 1, 2, 3, 4].map((i) => mkTask('a', 'map', i)),
    );
    const b = mkJob(
      'b',
      [0, 1].map((i) => mkTask('b', 'map', i, { preferredWorkers: ['w1', 'w2'], workers })),
    );
    const decisions = new FifoPolicy().schedule(mkSnapshot(workers, [a, b]));
    assert.equal(launches(decisions).length, 4);
    assert.ok(
      launches(decisions).every((d) => d.jobId === 'a'),
      'b got a slot although a had maps that fit',
    );
  });

  test('the next job gets the slots the earlier one cannot use', () => {
    const workers = [mkWorker('w1', 'r1'), mkWorker('w2', 'r1')];
    const a = mkJob('a', [mkTask('a', 'map', 0)]);
    const b = mkJob(
      'b',
      [0, 1, 2, 3].map((i) => mkTask('b', 'map', i)),
    );
    const decisions = new FifoPolicy().schedule(mkSnapshot(workers, [a, b]));
    assert.deepEqual(
      launches(decisions).map((d) => d.taskId),
      ['a-m0', 'b-m0', 'b-m1', 'b-m2'],
    );
  });

  test("an earlier job's maps that do not fit in memory do not block a later job", () => {
    const workers = [mkWorker('w1', 'r1', { freeMemoryMb: 1024 })];
    const a = mkJob('a', [mkTask('a', 'map', 0, { memoryMb: 2048 })]);
    const b = mkJob('b', [mkTask('b', 'map', 0, { memoryMb: 512 })]);
    assert.deepEqual(placement(new FifoPolicy().schedule(mkSnapshot(workers, [a, b]))), { 'b-m0': 'w1' });
  });

  test('jobs start in submission order in a driven run', () => {
    const jobs = Array.from({ length: 6 }, (_, i) => ({ id: `j${i}`, submitTime: i * 2000, maps: 5, reduces: 1 }));
    const driver = new SnapshotDriver({
      workers: [
        { id: 'w1', rack: 'r1', mapSlots: 2, reduceSlots: 1, memoryMb: 4096 },
        { id: 'w2', rack: 'r2', mapSlots: 2, reduceSlots: 1, memoryMb: 4096 },
      ],
      jobs,
    });
    const result = driver.run(new FifoPolicy(), { maxTicks: 500, record: true });
    assert.deepEqual(result.unfinished, []);
    const firstLaunch = new Map<string, number>();
    for (const r of result.rounds) {
      for (const d of launches(r.decisions)) if (!firstLaunch.has(d.jobId)) firstLaunch.set(d.jobId, r.snapshot.now);
    }
    const starts = jobs.map((j) => firstLaunch.get(j.id) ?? Infinity);
    assert.deepEqual(
      starts,
      [...starts].sort((x, y) => x - y),
    );
  });
});

describe('fifo: locality', () => {
  // Three racks; b2 is the only worker with a free map slot, so each snapshot asks one question.
  const workers: WorkerView[] = [
    mkWorker('a1', 'rackA', full),
    mkWorker('a2', 'rackA', full),
    mkWorker('b1', 'rackB', full),
    mkWorker('b2', 'rackB', { freeMapSlots: 1 }),
    mkWorker('c1', 'rackC', full),
  ];
  const offRack = mkTask('j', 'map', 0, { preferredWorkers: ['a1', 'c1'], workers });
  const rackLocal = mkTask('j', 'map', 1, { preferredWorkers: ['b1', 'a2'], workers });
  const homeless = mkTask('j', 'map', 2, { workers });
  const nodeLocal = mkTask('j', 'map', 3, { preferredWorkers: ['c1', 'b2'], workers });

  const choose = (tasks: TaskView[]): Launch => {
    const decisions = launches(new FifoPolicy().schedule(mkSnapshot(workers, [mkJob('j', tasks)])));
    assert.equal(decisions.length, 1);
    return decisions[0]!;
  };

  test('node-local over rack-local over no preference over off-rack', () => {
    const node = choose([offRack, rackLocal, homeless, nodeLocal]);
    assert.deepEqual([node.taskId, node.locality], [nodeLocal.id, 'node']);
    const rack = choose([offRack, rackLocal, homeless]);
    assert.deepEqual([rack.taskId, rack.locality], [rackLocal.id, 'rack']);
    const none = choose([offRack, homeless]);
    assert.deepEqual([none.taskId, none.locality], [homeless.id, 'any']);
    const off = choose([offRack]);
    assert.deepEqual([off.taskId, off.locality], [offRack.id, 'any']);
  });

  test('among equally placed tasks the lowest index goes first', () => {
    const second = mkTask('j', 'map', 4, { preferredWorkers: ['b2'], workers });
    assert.equal(choose([offRack, nodeLocal, second]).taskId, nodeLocal.id);
  });

  test('every worker gets its own node-local task when each has one', () => {
    const open = workers.map((w) => mkWorker(w.id, w.rack, { freeMapSlots: 1 }));
    // Listed so that taking them in index order, ignoring locality, would place every one badly.
    const tasks = ['c1', 'b2', 'b1', 'a2', 'a1'].map((w, i) =>
      mkTask('j', 'map', i, { preferredWorkers: [w], workers: open }),
    );
    const decisions = launches(new FifoPolicy().schedule(mkSnapshot(open, [mkJob('j', tasks)])));
    assert.equal(decisions.length, 5);
    assert.ok(
      decisions.every((d) => d.locality === 'node'),
      JSON.stringify(decisions),
    );
  });

  test('locality is judged for the earliest job only: an earlier non-local map beats a later local one', () => {
    const a = mkJob('a', [offRack]);
    const b = mkJob('b', [mkTask('b', 'map', 0, { preferredWorkers: ['b2'], workers })]);
    assert.deepEqual(placement(new FifoPolicy().schedule(mkSnapshot(workers, [a, b]))), { [offRack.id]: 'b2' });
  });
});

describe('fifo: delay scheduling (nodeLocalDelayMs)', () => {
  // Two workers on one rack, one map slot each: w1 is free, w2 (which holds the input) is busy.
  const busyHolder: WorkerView[] = [mkWorker('w1', 'r1', { freeMapSlots: 1 }), mkWorker('w2', 'r1', full)];
  const onW2 = (job: string, index: number, over: Partial<TaskView> = {}) =>
    mkTask(job, 'map', index, { preferredWorkers: ['w2'], workers: busyHolder, ...over });
  const at = (now: number, jobs: ReturnType<typeof mkJob>[], workers = busyHolder) =>
    mkSnapshot(workers, jobs, { now, trigger: { kind: 'heartbeat', workerId: 'w1' } });
  const waiting = () => new FifoPolicy({ nodeLocalDelayMs: 3000 });

  test('a free slot without the input waits for the holder as long as the delay, then runs the map there', () => {
    const policy = waiting();
    const job = mkJob('j', [onW2('j', 0)]);
    // Skipped at 0 and at 2999 (2999 ms waited), launched at 3000 (3000 ms waited).
    assert.deepEqual(placement(policy.schedule(at(0, [job]))), {});
    assert.deepEqual(placement(policy.schedule(at(2999, [job]))), {});
    const late = launches(policy.schedule(at(3000, [job])));
    assert.deepEqual(
      late.map((d) => [d.taskId, d.workerId, d.locality]),
      [['j-m0', 'w1', 'rack']],
    );
  });

  test('by default (0) it does not wait; createPolicy takes nodeLocalDelayMs', () => {
    const job = mkJob('j', [onW2('j', 0)]);
    assert.deepEqual(placement(createPolicy('fifo').schedule(at(0, [job]))), { 'j-m0': 'w1' });
    assert.equal(new FifoPolicy().waitsForLocality, false);
    const quick = createPolicy('fifo', { nodeLocalDelayMs: 500 });
    assert.deepEqual(placement(quick.schedule(at(0, [job]))), {});
    assert.deepEqual(placement(quick.schedule(at(499, [job]))), {});
    assert.deepEqual(placement(quick.schedule(at(500, [job]))), { 'j-m0': 'w1' });
  });

  test('the holder takes the map node-local when its slot frees within the wait', () => {
    const policy = waiting();
    const job = mkJob('j', [onW2('j', 0)]);
    assert.deepEqual(placement(policy.schedule(at(0, [job]))), {});
    const bothFree = [mkWorker('w1', 'r1', { freeMapSlots: 1 }), mkWorker('w2', 'r1', { freeMapSlots: 1 })];
    const d = launches(policy.schedule(at(1000, [job], bothFree)));
    assert.deepEqual(
      d.map((x) => [x.taskId, x.workerId, x.locality]),
      [['j-m0', 'w2', 'node']],
    );
  });

  test('a node-local launch ends the wait: the next non-local map waits the whole delay afresh', () => {
    const policy = waiting();
    const tasks = [onW2('j', 0), onW2('j', 1)];
    assert.deepEqual(placement(policy.schedule(at(0, [mkJob('j', tasks)]))), {});
    const holderFree = [mkWorker('w1', 'r1', full), mkWorker('w2', 'r1', { freeMapSlots: 1 })];
    assert.deepEqual(placement(policy.schedule(at(2000, [mkJob('j', tasks)], holderFree))), { 'j-m0': 'w2' });
    // Had the wait gone on from 0, 4000 ms would be past it.
    const rest = () => [mkJob('j', [tasks[1]!])];
    assert.deepEqual(placement(policy.schedule(at(4000, rest()))), {});
    assert.deepEqual(placement(policy.schedule(at(6999, rest()))), {});
    assert.deepEqual(placement(policy.schedule(at(7000, rest()))), { 'j-m1': 'w1' });
  });

  test('time counts only while the job is skipped: calls in which it was not offered a slot add none', () => {
    const policy = waiting();
    const job = mkJob('j', [onW2('j', 0)]);
    assert.deepEqual(placement(policy.schedule(at(0, [job]))), {});
    const noneFree = [mkWorker('w1', 'r1', full), mkWorker('w2', 'r1', full)];
    // Skipped at 0 (waits from then to 1000); not offered at 1000 (1000 to 5000 do not count);
    // skipped again from 5000: 1000 + 1999 ms at 6999, 3000 at 7000.
    assert.deepEqual(placement(policy.schedule(at(1000, [job], noneFree))), {});
    assert.deepEqual(placement(policy.schedule(at(5000, [job]))), {});
    assert.deepEqual(placement(policy.schedule(at(6999, [job]))), {});
    assert.deepEqual(placement(policy.schedule(at(7000, [job]))), { 'j-m0': 'w1' });
  });

  test('a waiting job lets a later job run its node-local map on the slot', () => {
    const a = mkJob('a', [onW2('a', 0)]);
    const b = mkJob('b', [mkTask('b', 'map', 0, { preferredWorkers: ['w1'], workers: busyHolder })]);
    assert.deepEqual(placement(waiting().schedule(at(0, [a, b]))), { 'b-m0': 'w1' });
  });

  test('a map whose input is on no live worker, or only on one it failed on or without map slots, runs at once', () => {
    const gone = mkJob('g', [mkTask('g', 'map', 0, { preferredWorkers: ['w9'], workers: busyHolder })]);
    assert.deepEqual(placement(waiting().schedule(at(0, [gone]))), { 'g-m0': 'w1' });
    const failed = mkJob('f', [onW2('f', 0, { failedOnWorkers: ['w2'] })]);
    assert.deepEqual(placement(waiting().schedule(at(0, [failed]))), { 'f-m0': 'w1' });
    const noMapSlots = [mkWorker('w1', 'r1', { freeMapSlots: 1 }), mkWorker('w2', 'r1', { mapSlots: 0 })];
    const onReduceOnly = mkJob('n', [mkTask('n', 'map', 0, { preferredWorkers: ['w2'], workers: noMapSlots })]);
    assert.deepEqual(placement(waiting().schedule(at(0, [onReduceOnly], noMapSlots))), { 'n-m0': 'w1' });
  });

  test('maps with no stored input and reduces never wait', () => {
    const homeless = mkJob('h', [mkTask('h', 'map', 0, { workers: busyHolder })]);
    assert.deepEqual(placement(waiting().schedule(at(0, [homeless]))), { 'h-m0': 'w1' });
    const reduceSlotOnly = [mkWorker('w1', 'r1', { freeMapSlots: 0 }), mkWorker('w2', 'r1', full)];
    const reduces = mkJob('r', [mkTask('r', 'reduce', 0)]);
    assert.deepEqual(placement(waiting().schedule(at(0, [reduces], reduceSlotOnly))), { 'r-r0': 'w1' });
  });
});

describe('fifo: failed workers', () => {
  const one = { freeMapSlots: 1 } as const;

  test('a task is sent away from a worker it failed on when another can take it', () => {
    const workers = [mkWorker('w1', 'r1', one), mkWorker('w2', 'r1', one)];
    const tasks = [
      mkTask('j', 'map', 0, { failedOnWorkers: ['w1'], preferredWorkers: ['w1'], workers }),
      mkTask('j', 'map', 1),
    ];
    const s = mkSnapshot(workers, [mkJob('j', tasks)], { trigger: { kind: 'heartbeat', workerId: 'w1' } });
    const decisions = new FifoPolicy().schedule(s);
    assert.deepEqual(placement(decisions), { 'j-m0': 'w2', 'j-m1': 'w1' });
    assert.equal(launches(decisions).find((d) => d.taskId === 'j-m0')?.locality, 'rack');
  });

  test('it goes back to that worker when no other has a free slot', () => {
    const workers = [mkWorker('w1', 'r1', one), mkWorker('w2', 'r1', full)];
    const tasks = [mkTask('j', 'map', 0, { failedOnWorkers: ['w1'] })];
    assert.deepEqual(placement(new FifoPolicy().schedule(mkSnapshot(workers, [mkJob('j', tasks)]))), { 'j-m0': 'w1' });
  });

  test('it goes back to that worker when the others lack the memory', () => {
    const workers = [mkWorker('w1', 'r1', one), mkWorker('w2', 'r1', { freeMapSlots: 1, freeMemoryMb: 100 })];
    const tasks = [mkTask('j', 'map', 0, { failedOnWorkers: ['w1'] })];
    assert.deepEqual(placement(new FifoPolicy().schedule(mkSnapshot(workers, [mkJob('j', tasks)]))), { 'j-m0': 'w1' });
  });

  test('it goes back to a failed worker when it failed on every free one', () => {
    const workers = [mkWorker('w1', 'r1', one), mkWorker('w2', 'r1', one)];
    const tasks = [mkTask('j', 'map', 0, { failedOnWorkers: ['w1', 'w2'] })];
    const decisions = launches(new FifoPolicy().schedule(mkSnapshot(workers, [mkJob('j', tasks)])));
    assert.equal(decisions.length, 1);
  });

  test('reduces avoid failed workers too', () => {
    const workers = [mkWorker('w1', 'r1'), mkWorker('w2', 'r2')];
    const tasks = [mkTask('j', 'reduce', 0, { failedOnWorkers: ['w1'] })];
    const s = mkSnapshot(workers, [mkJob('j', tasks)], { trigger: { kind: 'heartbeat', workerId: 'w1' } });
    assert.deepEqual(placement(new FifoPolicy().schedule(s)), { 'j-r0': 'w2' });
  });
});

describe('fifo: slots, memory and order of visits', () => {
  test('reduces go to reduce slots only, maps to map slots only', () => {
    const workers = [mkWorker('w1', 'r1', { freeMapSlots: 3, freeReduceSlots: 1 })];
    const done = mkJob(
      'done',
      [0, 1, 2].map((i) => mkTask('done', 'reduce', i)),
      { mapsTotal: 2, mapsCompleted: 2 },
    );
    const more = mkJob(
      'more',
      [0, 1, 2, 3].map((i) => mkTask('more', 'map', i)),
    );
    const decisions = launches(new FifoPolicy().schedule(mkSnapshot(workers, [done, more])));
    assert.deepEqual(
      decisions.map((d) => d.taskId),
      ['more-m0', 'more-m1', 'more-m2', 'done-r0'],
    );
  });

  test('reduces are placed in job order', () => {
    const workers = [mkWorker('w1', 'r1', { freeMapSlots: 0, freeReduceSlots: 2 })];
    const a = mkJob('a', [mkTask('a', 'reduce', 0)]);
    const b = mkJob('b', [mkTask('b', 'reduce', 0), mkTask('b', 'reduce', 1)]);
    assert.deepEqual(
      launches(new FifoPolicy().schedule(mkSnapshot(workers, [a, b]))).map((d) => d.taskId),
      ['a-r0', 'b-r0'],
    );
  });

  test('free memory limits launches and each launch grants the task its memory', () => {
    const workers = [mkWorker('w1', 'r1', { freeMapSlots: 4, freeReduceSlots: 1, freeMemoryMb: 1100 })];
    const tasks = [
      mkTask('j', 'map', 0, { memoryMb: 512 }),
      mkTask('j', 'map', 1, { memoryMb: 700 }),
      mkTask('j', 'map', 2, { memoryMb: 512 }),
    ];
    const s = mkSnapshot(workers, [mkJob('j', tasks)]);
    const decisions = launches(new FifoPolicy().schedule(s));
    assert.deepEqual(
      decisions.map((d) => [d.taskId, d.memoryMb]),
      [
        ['j-m0', 512],
        ['j-m2', 512],
      ],
    );
    assert.deepEqual(validateDecisions(s, decisions), []);
  });

  test("the trigger's worker is served first, then workers by id", () => {
    const workers = [
      mkWorker('w3', 'r1', { freeMapSlots: 1 }),
      mkWorker('w1', 'r1', { freeMapSlots: 1 }),
      mkWorker('w2', 'r1', { freeMapSlots: 1 }),
    ];
    const jobs = [mkJob('j', [mkTask('j', 'map', 0), mkTask('j', 'map', 1)])];
    const onTick = new FifoPolicy().schedule(mkSnapshot(workers, jobs));
    assert.deepEqual(placement(onTick), { 'j-m0': 'w1', 'j-m1': 'w2' });
    const onHeartbeat = new FifoPolicy().schedule(
      mkSnapshot(workers, jobs, { trigger: { kind: 'heartbeat', workerId: 'w3' } }),
    );
    assert.deepEqual(placement(onHeartbeat), { 'j-m0': 'w3', 'j-m1': 'w1' });
    const onJoin = new FifoPolicy().schedule(
      mkSnapshot(workers, jobs, { trigger: { kind: 'worker-joined', workerId: 'w2' } }),
    );
    assert.deepEqual(placement(onJoin), { 'j-m0': 'w2', 'j-m1': 'w1' });
  });

  test('the order of the workers in the snapshot does not matter', () => {
    const workers = ['w4', 'w2', 'w3', 'w1'].map((id, i) => mkWorker(id, `r${i % 2}`));
    const tasks = Array.from({ length: 9 }, (_, i) =>
      mkTask('j', 'map', i, { preferredWorkers: [`w${(i % 4) + 1}`], workers }),
    );
    const jobs = [mkJob('j', tasks)];
    const expected = new FifoPolicy().schedule(mkSnapshot(workers, jobs));
    const reversed = new FifoPolicy().schedule(mkSnapshot([...workers].reverse(), jobs));
    assert.deepEqual(reversed, expected);
  });
});

describe('createPolicy', () => {
  test("'fifo' gives a fresh FifoPolicy each time", () => {
    const a = createPolicy('fifo');
    assert.ok(a instanceof FifoPolicy);
    assert.equal(a.name, 'fifo');
    assert.notEqual(createPolicy('fifo'), a);
    assert.ok(policyNames().includes('fifo'));
  });

  test('an unknown name is EBADCONF and lists the known policies', () => {
    for (const name of ['nope', 'FIFO', 'fifo2']) {
      assert.throws(
        () => createPolicy(name),
        (err: unknown) =>
          err instanceof MinimrError &&
          err.code === 'EBADCONF' &&
          err.message.includes(name) &&
          err.message.includes('fifo'),
      );
    }
  });

  test('options fifo does not take are rejected', () => {
    assert.throws(
      () => createPolicy('fifo', { delayMs: 5 }),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF',
    );
    for (const bad of [-1, '3000', Number.NaN]) {
      assert.throws(
        () => createPolicy('fifo', { nodeLocalDelayMs: bad }),
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && /nodeLocalDelayMs/.test(err.message),
      );
    }
  });
});
