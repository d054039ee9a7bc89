import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import {
  DEFAULT_FAIR_OPTIONS,
  FairPolicy,
  createPolicy,
  fairShares,
  waterFill,
  type AttemptView,
  type ClusterSnapshot,
  type Decision,
  type JobView,
  type PoolView,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';
import { mkAttempt } from '../helpers/books.js';
import { mkJob, mkSnapshot, mkTask, mkWorker, validateDecisions } from './snapshot-driver.js';

policyConformance('fair', () => new FairPolicy());
policyConformance('fair via createPolicy', () => createPolicy('fair'));
policyConformance(
  'fair without delay or preemption',
  () => new FairPolicy({ nodeLocalDelayMs: 0, rackLocalDelayMs: 0, preemption: false }),
);
policyConformance(
  'fair with quick preemption',
  () => new FairPolicy({ minShareTimeoutMs: 1000, fairShareTimeoutMs: 2000 }),
);

type Launch = Extract<Decision, { kind: 'launch' }>;
type Kill = Extract<Decision, { kind: 'kill' }>;

const launches = (ds: readonly Decision[]): Launch[] => ds.filter((d): d is Launch => d.kind === 'launch');
const kills = (ds: readonly Decision[]): Kill[] => ds.filter((d): d is Kill => d.kind === 'kill');
/** How many launches each job got. */
function perJob(ds: readonly Decision[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of launches(ds)) out[d.jobId] = (out[d.jobId] ?? 0) + 1;
  return out;
}

function pool(name: string, over: Partial<PoolView> = {}): PoolView {
  return { name, minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fair', ...over };
}

/** `n` pending maps without input locations, indexes from `from`. */
function homelessMaps(jobId: string, n: number, from = 0) {
  return Array.from({ length: n }, (_, i) => mkTask(jobId, 'map', from + i));
}

function schedule(policy: FairPolicy, s: ClusterSnapshot): readonly Decision[] {
  const ds = policy.schedule(s);
  assert.deepEqual(validateDecisions(s, ds), [], `invalid decisions at t=${s.now}`);
  return ds;
}

const close = (actual: number, expected: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

describe('fair: water-filling shares', () => {
  const claim = (demand: number, minShare = 0, weight = 1) => ({ demand, minShare, weight });

  test('equal weights split the capacity evenly', () => {
    assert.deepEqual(waterFill([claim(100), claim(100), claim(100)], 12), [4, 4, 4]);
  });

  test('a claim demanding less than its share gives the rest to the others', () => {
    assert.deepEqual(waterFill([claim(2), claim(100), claim(100)], 12), [2, 5, 5]);
    assert.deepEqual(waterFill([claim(1), claim(3), claim(100)], 12), [1, 3, 8]);
  });

  test('weights split in proportion', () => {
    assert.deepEqual(waterFill([claim(100, 0, 1), claim(100, 0, 2), claim(100, 0, 3)], 12), [2, 4, 6]);
  });

  test('minimum shares are floors; the water level decides the rest', () => {
    // max(4, R) + R = 10 -> R = 5: a floor below the fair level changes nothing.
    assert.deepEqual(waterFill([claim(100, 4), claim(100)], 10), [5, 5]);
    // max(7, R) + R = 10 -> R = 3.
    assert.deepEqual(waterFill([claim(100, 7), claim(100)], 10), [7, 3]);
    // A floor is capped by demand: min(2, max(6, R)) + R = 10 -> R = 8.
    assert.deepEqual(waterFill([claim(2, 6), claim(100)], 10), [2, 8]);
    // min(4, max(3, R)) + R + 3R = 20 -> R = 4.
    assert.deepEqual(waterFill([claim(4, 3), claim(100), claim(100, 0, 3)], 20), [4, 4, 12]);
  });

  test('minimum shares above the capacity are scaled down in proportion', () => {
    assert.deepEqual(waterFill([claim(100, 6), claim(100, 6)], 8), [4, 4]);
    assert.deepEqual(waterFill([claim(100, 6), claim(100, 2), claim(100)], 4), [3, 1, 0]);
  });

  test('total demand below the capacity: everyone gets its demand', () => {
    assert.deepEqual(waterFill([claim(3, 1), claim(2), claim(0)], 50), [3, 2, 0]);
    assert.deepEqual(waterFill([], 10), []);
    assert.deepEqual(waterFill([claim(5)], 0), [0]);
  });

  test('fractional levels are solved exactly', () => {
    const shares = waterFill([claim(100), claim(100), claim(100)], 10);
    shares.forEach((s, i) => close(s, 10 / 3, `share ${i}`));
  });

  test('a snapshot: pools by minimum share and weight, unlisted pools at weight 1, jobs fair or FIFO inside', () => {
    // 16 map slots. prod: min 4, FIFO, demand 3 + 10; research: weight 2, demand 3 + 20;
    // adhoc (not configured): demand 20. R with prod = max(4, R), research = 2R, adhoc = R:
    // 4 + 2R + R = 16 -> R = 4: prod 4, research 8, adhoc 4.
    const workers = ['w1', 'w2', 'w3', 'w4'].map((id) => mkWorker(id, 'r1', { mapSlots: 4, freeMapSlots: 4 }));
    const pools = [pool('prod', { minMapSlots: 4, mode: 'fifo' }), pool('research', { weight: 2 })];
    const jobs: JobView[] = [
      mkJob('p1', homelessMaps('p1', 3), { pool: 'prod', submitTime: 0 }),
      mkJob('p2', homelessMaps('p2', 10), { pool: 'prod', submitTime: 5 }),
      mkJob('r1', homelessMaps('r1', 3), { pool: 'research' }),
      mkJob('r2', homelessMaps('r2', 20), { pool: 'research' }),
      mkJob('a1', homelessMaps('a1', 20), { pool: 'adhoc' }),
    ];
    const shares = fairShares(mkSnapshot(workers, jobs, { pools }));
    const poolShare = (name: string): number => shares.pools.get(name)!.map.share;
    const jobShare = (id: string): number => shares.jobs.get(id)!.map.share;
    close(poolShare('prod'), 4, 'prod');
    close(poolShare('research'), 8, 'research');
    close(poolShare('adhoc'), 4, 'adhoc');
    assert.equal(shares.pools.get('prod')!.map.minShare, 4);
    assert.equal(shares.pools.get('research')!.map.demand, 23);
    // FIFO inside prod: the earlier job takes what it demands first.
    close(jobShare('p1'), 3, 'p1');
    close(jobShare('p2'), 1, 'p2');
    // Fair inside research: r1 demands 3 < 4, so r2 gets 5.
    close(jobShare('r1'), 3, 'r1');
    close(jobShare('r2'), 5, 'r2');
    close(jobShare('a1'), 4, 'a1');
  });

  test('a snapshot: minimum shares the cluster cannot hold are scaled down; demand counts running attempts', () => {
    const workers = ['w1', 'w2'].map((id) => mkWorker(id, 'r1', { mapSlots: 4, freeMapSlots: 2, reduceSlots: 2 }));
    const pools = [pool('x', { minMapSlots: 6, minReduceSlots: 1 }), pool('y', { minMapSlots: 6 })];
    const jobs = [
      mkJob('a', homelessMaps('a', 8), {
        pool: 'x',
        runningAttempts: [mkAttempt('a', 'map', 20, 'w1', 0), mkAttempt('a', 'map', 21, 'w1', 0)],
      }),
      mkJob('b', homelessMaps('b', 8), {
        pool: 'y',
        runningAttempts: [mkAttempt('b', 'map', 20, 'w2', 0), mkAttempt('b', 'map', 21, 'w2', 0)],
      }),
      mkJob('c', [mkTask('c', 'reduce', 0), mkTask('c', 'reduce', 1)], { pool: 'x', mapsTotal: 1, mapsCompleted: 1 }),
    ];
    const shares = fairShares(mkSnapshot(workers, jobs, { pools }));
    assert.deepEqual(shares.pools.get('x')!.map, { running: 2, demand: 10, minShare: 4, share: 4 });
    assert.deepEqual(shares.pools.get('y')!.map, { running: 2, demand: 10, minShare: 4, share: 4 });
    // Reduce slots: 4; only x demands reduces (2), with a minimum of 1.
    assert.deepEqual(shares.pools.get('x')!.reduce, { running: 0, demand: 2, minShare: 1, share: 2 });
    assert.deepEqual(shares.jobs.get('c')!.reduce, { running: 0, demand: 2, minShare: 0, share: 2 });
  });
});

describe('fair: which job gets a free slot', () => {
  const oneWorker = (slots: number, over: Partial<WorkerView> = {}) => [
    mkWorker('w1', 'r1', {
      mapSlots: slots,
      freeMapSlots: slots,
      reduceSlots: 0,
      freeReduceSlots: 0,
      memoryMb: 100_000,
      freeMemoryMb: 100_000,
      ...over,
    }),
  ];

  test('pools split an empty cluster by weight, each slot to the pool with the fewest running per weight', () => {
    const s = mkSnapshot(
      oneWorker(6),
      [mkJob('a', homelessMaps('a', 10), { pool: 'A' }), mkJob('b', homelessMaps('b', 10), { pool: 'B' })],
      {
        pools: [pool('A'), pool('B', { weight: 2 })],
      },
    );
    // run/weight: A 0 = B 0 (tie -> name A), B 0 < A 1, B .5 < A 1, A 1 = B 1 (tie -> A), B 1 < 2, B 1.5 < 2.
    assert.deepEqual(
      launches(schedule(new FairPolicy(), s)).map((d) => d.jobId),
      ['a', 'b', 'b', 'a', 'b', 'b'],
    );
  });

  test('a pool below its minimum share goes first until it has it', () => {
    const s = mkSnapshot(
      oneWorker(8),
      [
        mkJob('q', homelessMaps('q', 10), { pool: 'Q' }),
        mkJob('p', homelessMaps('p', 10), { pool: 'P', submitTime: 5 }),
      ],
      {
        pools: [pool('P', { minMapSlots: 6 }), pool('Q')],
      },
    );
    assert.deepEqual(
      launches(schedule(new FairPolicy(), s)).map((d) => d.jobId),
      ['p', 'p', 'p', 'p', 'p', 'p', 'q', 'q'],
    );
  });

  test('inside a FIFO pool the earliest job takes all it can; inside a fair pool jobs alternate', () => {
    const jobs = [
      mkJob('f1', homelessMaps('f1', 5), { pool: 'F', submitTime: 0 }),
      mkJob('f2', homelessMaps('f2', 5), { pool: 'F', submitTime: 1 }),
    ];
    const fifo = mkSnapshot(oneWorker(6), jobs, { pools: [pool('F', { mode: 'fifo' })] });
    assert.deepEqual(perJob(schedule(new FairPolicy(), fifo)), { f1: 5, f2: 1 });
    const fair = mkSnapshot(oneWorker(6), jobs, { pools: [pool('F')] });
    assert.deepEqual(
      launches(schedule(new FairPolicy(), fair)).map((d) => d.jobId),
      ['f1', 'f2', 'f1', 'f2', 'f1', 'f2'],
    );
  });

  test('job weights split a pool in proportion', () => {
    const jobs = [
      mkJob('heavy', homelessMaps('heavy', 9), { weight: 3 }),
      mkJob('light', homelessMaps('light', 9), { submitTime: 1 }),
    ];
    assert.deepEqual(perJob(schedule(new FairPolicy(), mkSnapshot(oneWorker(8), jobs))), { heavy: 6, light: 2 });
  });

  test('running attempts count: the job with fewer running gets the free slots', () => {
    const w = oneWorker(4, { freeMapSlots: 2 });
    const a = mkJob('a', homelessMaps('a', 5), {
      runningAttempts: [mkAttempt('a', 'map', 10, 'w1', 0), mkAttempt('a', 'map', 11, 'w1', 0)],
    });
    const b = mkJob('b', homelessMaps('b', 5), { submitTime: 9 });
    assert.deepEqual(perJob(schedule(new FairPolicy(), mkSnapshot(w, [a, b]))), { b: 2 });
  });

  test('ties go to the earlier submission, then the smaller id', () => {
    const jobs = [
      mkJob('z', homelessMaps('z', 2), { submitTime: 1 }),
      mkJob('y', homelessMaps('y', 2), { submitTime: 2 }),
      mkJob('x', homelessMaps('x', 2), { submitTime: 1 }),
    ];
    assert.deepEqual(
      launches(schedule(new FairPolicy(), mkSnapshot(oneWorker(3), jobs))).map((d) => d.jobId),
      ['x', 'z', 'y'],
    );
  });

  test('free memory is respected: a task that does not fit passes the slot to the next job', () => {
    const w = oneWorker(3, { freeMemoryMb: 1000 });
    const big = mkJob('big', [mkTask('big', 'map', 0, { memoryMb: 2000 })]);
    const small = mkJob(
      'small',
      [0, 1, 2].map((i) => mkTask('small', 'map', i, { memoryMb: 400 })),
      { submitTime: 1 },
    );
    const ds = schedule(new FairPolicy(), mkSnapshot(w, [big, small]));
    assert.deepEqual(
      launches(ds).map((d) => [d.taskId, d.memoryMb]),
      [
        ['small-m0', 400],
        ['small-m1', 400],
      ],
    );
  });

  test('reduces go to reduce slots by the same order', () => {
    const w = [mkWorker('w1', 'r1', { mapSlots: 1, freeMapSlots: 0, reduceSlots: 3, freeReduceSlots: 3 })];
    const a = mkJob(
      'a',
      [0, 1, 2].map((i) => mkTask('a', 'reduce', i)),
      {
        runningAttempts: [mkAttempt('a', 'reduce', 9, 'w1', 0, { inputBytes: 64 * 1024 * 1024 })],
      },
    );
    const b = mkJob(
      'b',
      [0, 1, 2].map((i) => mkTask('b', 'reduce', i)),
      { submitTime: 3 },
    );
    assert.deepEqual(
      launches(schedule(new FairPolicy(), mkSnapshot(w, [a, b]))).map((d) => d.taskId),
      ['b-r0', 'a-r0', 'b-r1'],
    );
  });
});

describe('fair: delay scheduling', () => {
  // w1 and w2 on rack r1, w3 on r2, one map slot each; the free ones are listed per call.
  const cluster = (free: readonly string[]): WorkerView[] =>
    [mkWorker('w1', 'r1'), mkWorker('w2', 'r1'), mkWorker('w3', 'r2')].map((w) =>
      mkWorker(w.id, w.rack, { mapSlots: 1, freeMapSlots: free.includes(w.id) ? 1 : 0 }),
    );
  const layout = cluster([]);
  const mapOn = (jobId: string, index: number, holders: string[]) =>
    mkTask(jobId, 'map', index, { preferredWorkers: holders, workers: layout });

  /**
   * Feeds one policy a call per second over [from, to] until a call launches something (the
   * snapshots do not change with the decisions); that call's launches with its time.
   */
  function run(
    policy: FairPolicy,
    from: number,
    to: number,
    snapshotAt: (now: number) => ClusterSnapshot,
  ): Array<[number, Launch]> {
    for (let now = from; now <= to; now += 1000) {
      const got = launches(schedule(policy, snapshotAt(now)));
      if (got.length > 0) return got.map((d) => [now, d]);
    }
    return [];
  }

  test('a map with input on another node of the rack waits nodeLocalDelayMs, then runs rack-local', () => {
    const job = mkJob('j', [mapOn('j', 0, ['w1'])]);
    const got = run(new FairPolicy(), 0, 5000, (now) => mkSnapshot(cluster(['w2']), [job], { now }));
    assert.deepEqual(
      got.map(([t, d]) => [t, d.taskId, d.workerId, d.locality]),
      [[3000, 'j-m0', 'w2', 'rack']],
    );
  });

  test('a map with input on another rack waits nodeLocalDelayMs + rackLocalDelayMs, then runs off-rack', () => {
    const job = mkJob('j', [mapOn('j', 0, ['w1'])]);
    const got = run(new FairPolicy(), 0, 8000, (now) => mkSnapshot(cluster(['w3']), [job], { now }));
    assert.deepEqual(
      got.map(([t, d]) => [t, d.workerId, d.locality]),
      [[6000, 'w3', 'any']],
    );
    const quick = run(new FairPolicy({ nodeLocalDelayMs: 1000, rackLocalDelayMs: 500 }), 0, 8000, (now) =>
      mkSnapshot(cluster(['w3']), [job], { now: now / 2 }),
    );
    assert.deepEqual(
      quick.map(([t]) => t / 2),
      [1500],
    );
  });

  test('after a rack-local launch, the next map waits only rackLocalDelayMs to go off-rack', () => {
    const policy = new FairPolicy();
    const both = mkJob('j', [mapOn('j', 0, ['w1']), mapOn('j', 1, ['w1'])]);
    const first = run(policy, 0, 3000, (now) => mkSnapshot(cluster(['w2']), [both], { now }));
    assert.deepEqual(
      first.map(([t, d]) => [t, d.taskId, d.locality]),
      [[3000, 'j-m0', 'rack']],
    );
    // From 4000 on, only w3 (other rack) is free: skipped at 4000, 5000, 6000; waited 3000 ms at 7000.
    const rest = mkJob('j', [mapOn('j', 1, ['w1'])]);
    const second = run(policy, 4000, 12_000, (now) => mkSnapshot(cluster(['w3']), [rest], { now }));
    assert.deepEqual(
      second.map(([t, d]) => [t, d.taskId, d.locality]),
      [[7000, 'j-m1', 'any']],
    );
  });

  test('only time spent being skipped counts as waiting', () => {
    const job = mkJob('j', [mapOn('j', 0, ['w1'])]);
    // Skipped at 0; no free slot at 1000-4000 (only the 0..1000 interval counts); skipped again from 5000.
    const free = (now: number): string[] => (now === 0 || now >= 5000 ? ['w2'] : []);
    const got = run(new FairPolicy(), 0, 9000, (now) => mkSnapshot(cluster(free(now)), [job], { now }));
    assert.deepEqual(
      got.map(([t, d]) => [t, d.locality]),
      [[7000, 'rack']],
    );
  });

  test('a node-local launch resets the wait', () => {
    const policy = new FairPolicy();
    const job = mkJob('j', [mapOn('j', 0, ['w1']), mapOn('j', 1, ['w3'])]);
    // 0, 1000: only w2 is free, j-m0 would be rack-local there: skipped. 2000: w1 frees up -> node-local.
    const got = run(policy, 0, 2000, (now) => mkSnapshot(cluster(now < 2000 ? ['w2'] : ['w1']), [job], { now }));
    assert.deepEqual(
      got.map(([t, d]) => [t, d.taskId, d.locality]),
      [[2000, 'j-m0', 'node']],
    );
    // j-m1, now with a replica on w1 too, is rack-local to w2: after the reset it waits the full 3000 ms.
    const rest = mkJob('j', [mapOn('j', 1, ['w3', 'w1'])]);
    const later = run(policy, 3000, 9000, (now) => mkSnapshot(cluster(['w2']), [rest], { now }));
    assert.deepEqual(
      later.map(([t, d]) => [t, d.locality]),
      [[6000, 'rack']],
    );
  });

  test('a waiting job lets the next job take the slot, and gets its own node later', () => {
    const policy = new FairPolicy();
    const a = mkJob('a', [mapOn('a', 0, ['w1'])], { submitTime: 0 });
    const b = mkJob('b', homelessMaps('b', 3), { submitTime: 1 });
    const atZero = schedule(policy, mkSnapshot(cluster(['w3']), [a, b], { now: 0 }));
    assert.deepEqual(
      launches(atZero).map((d) => [d.taskId, d.workerId]),
      [['b-m0', 'w3']],
    );
    const atOne = schedule(
      policy,
      mkSnapshot(cluster(['w1']), [a, mkJob('b', homelessMaps('b', 2, 1), { submitTime: 1 })], { now: 1000 }),
    );
    assert.deepEqual(
      launches(atOne).map((d) => [d.taskId, d.workerId, d.locality]),
      [['a-m0', 'w1', 'node']],
    );
  });

  test('maps without input locations, or with input only on dead workers, never wait', () => {
    const job = mkJob('j', [
      mkTask('j', 'map', 0),
      mkTask('j', 'map', 1, { preferredWorkers: ['gone'], preferredRacks: ['r9'] }),
    ]);
    const ds = schedule(new FairPolicy(), mkSnapshot(cluster(['w2', 'w3']), [job]));
    assert.deepEqual(
      launches(ds).map((d) => [d.taskId, d.workerId]),
      [
        ['j-m0', 'w2'],
        ['j-m1', 'w3'],
      ],
    );
  });

  test('reduces never wait', () => {
    const w = [
      mkWorker('w1', 'r1', { mapSlots: 1, freeMapSlots: 1, reduceSlots: 1, freeReduceSlots: 1 }),
      mkWorker('w2', 'r2', { freeMapSlots: 0 }),
    ];
    const j = mkJob('j', [mkTask('j', 'map', 0, { preferredWorkers: ['w2'], workers: w })]);
    const k = mkJob('k', [mkTask('k', 'reduce', 0)], { submitTime: 1 });
    assert.deepEqual(
      launches(schedule(new FairPolicy(), mkSnapshot(w, [j, k]))).map((d) => d.taskId),
      ['k-r0'],
    );
  });

  test('zero delays run off-rack at once', () => {
    const job = mkJob('j', [mapOn('j', 0, ['w1'])]);
    const ds = schedule(
      new FairPolicy({ nodeLocalDelayMs: 0, rackLocalDelayMs: 0 }),
      mkSnapshot(cluster(['w3']), [job]),
    );
    assert.deepEqual(
      launches(ds).map((d) => d.locality),
      ['any'],
    );
  });

  test('a job starved past fairShareTimeoutMs stops waiting for locality (as Hadoop does)', () => {
    // Capacity 3, demand 1: share 1, so running 0 is below half of it from t=0.
    const job = mkJob('j', [mapOn('j', 0, ['w1'])]);
    const policy = new FairPolicy({
      nodeLocalDelayMs: 60_000,
      rackLocalDelayMs: 60_000,
      minShareTimeoutMs: 1000,
      fairShareTimeoutMs: 4000,
      preemption: false,
    });
    const got = run(policy, 0, 6000, (now) => mkSnapshot(cluster(['w3']), [job], { now }));
    assert.deepEqual(
      got.map(([t, d]) => [t, d.locality]),
      [[4000, 'any']],
    );
  });

  test('a pool starved past minShareTimeoutMs stops waiting for locality', () => {
    const job = mkJob('j', [mapOn('j', 0, ['w1'])], { pool: 'p' });
    const policy = new FairPolicy({
      nodeLocalDelayMs: 60_000,
      rackLocalDelayMs: 60_000,
      minShareTimeoutMs: 2000,
      fairShareTimeoutMs: 50_000,
    });
    const got = run(policy, 0, 6000, (now) =>
      mkSnapshot(cluster(['w3']), [job], { now, pools: [pool('p', { minMapSlots: 1 })] }),
    );
    assert.deepEqual(
      got.map(([t, d]) => [t, d.locality]),
      [[2000, 'any']],
    );
  });
});

describe('fair: preemption', () => {
  /** Four workers on one rack with two map slots each; `free` lists free map slots. */
  const cluster = (free: Record<string, number> = {}): WorkerView[] =>
    ['w1', 'w2', 'w3', 'w4'].map((id) => mkWorker(id, 'r1', { mapSlots: 2, freeMapSlots: free[id] ?? 0 }));
  const ids = (ds: readonly Decision[]): string[] => kills(ds).map((k) => k.attemptId);

  test(
    'a pool below its minimum share for minShareTimeoutMs kills the ' +
      'most recent attempts of the pool over its share',
    () => {
      const policy = new FairPolicy({ minShareTimeoutMs: 5000, fairShareTimeoutMs: 20_000 });
      const pools = [pool('prod', { minMapSlots: 3 })];
      // b (pool batch) holds all 8 slots: b-m{2i}, b-m{2i+1} on w{i+1}, launched 100 ms apart.
      const bRunning = Array.from({ length: 8 }, (_, i) =>
        mkAttempt('b', 'map', i, `w${Math.floor(i / 2) + 1}`, i * 100),
      );
      const b = mkJob('b', [], { pool: 'batch', runningAttempts: bRunning });
      const p = mkJob('p', homelessMaps('p', 5), { pool: 'prod', submitTime: 1000 });
      // prod = max(3, R) capped at 5, batch = R: R + R = 8 -> 4 each; prod is below its minimum 3 from t=1000.
      for (let now = 1000; now < 6000; now += 1000) {
        assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [b, p], { now, pools })), [], `t=${now}`);
      }
      const atTimeout = schedule(policy, mkSnapshot(cluster(), [b, p], { now: 6000, pools }));
      assert.deepEqual(ids(atTimeout), ['b-m7_1', 'b-m6_1', 'b-m5_1']);
      assert.equal(atTimeout.length, 3, 'no launch into the slots being freed');
      assert.match(kills(atTimeout)[0]!.reason, /pool "prod".*minimum share/);

      // The runtime has not confirmed the kills yet: nothing more to kill.
      assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [b, p], { now: 7000, pools })), []);

      // Confirmed: the slots are free and prod takes them.
      const b2 = mkJob('b', homelessMaps('b', 3, 5), { pool: 'batch', runningAttempts: bRunning.slice(0, 5) });
      const after = schedule(policy, mkSnapshot(cluster({ w3: 1, w4: 2 }), [b2, p], { now: 8000, pools }));
      assert.deepEqual(perJob(after), { p: 3 });
      assert.deepEqual(kills(after), []);
    },
  );

  test(
    'a job below half its fair share for fairShareTimeoutMs kills ' + 'down to its share, never below a victim share',
    () => {
      const policy = new FairPolicy({ minShareTimeoutMs: 5000, fairShareTimeoutMs: 10_000 });
      const w = cluster().slice(0, 3);
      // a: 4 running, b: 2 running (b's newest attempt is the newest of all), c: 4 pending.
      // Shares: min(4,R) + min(2,R) + min(4,R) = 6 -> R = 2: a 2, b 2, c 2.
      const a = mkJob('a', [], {
        runningAttempts: [
          mkAttempt('a', 'map', 0, 'w1', 0),
          mkAttempt('a', 'map', 1, 'w1', 100),
          mkAttempt('a', 'map', 2, 'w2', 200),
          mkAttempt('a', 'map', 3, 'w2', 300),
        ],
      });
      const b = mkJob('b', [], {
        runningAttempts: [mkAttempt('b', 'map', 0, 'w3', 50), mkAttempt('b', 'map', 1, 'w3', 500)],
      });
      const c = mkJob('c', homelessMaps('c', 4), { submitTime: 2000 });
      for (let now = 2000; now < 12_000; now += 1000)
        assert.deepEqual(schedule(policy, mkSnapshot(w, [a, b, c], { now })), [], `t=${now}`);
      const ds = schedule(policy, mkSnapshot(w, [a, b, c], { now: 12_000 }));
      assert.deepEqual(ids(ds), ['a-m3_1', 'a-m2_1']);
      assert.match(kills(ds)[0]!.reason, /job c.*half its fair share/);
    },
  );

  test('the job most over its share loses first', () => {
    const policy = new FairPolicy({ minShareTimeoutMs: 500, fairShareTimeoutMs: 1000 });
    // a: 4 running, b: 4 running, c: 4 pending; 8 slots -> shares 8/3 each; c needs floor(8/3) = 2.
    // a and b are equally over (4 - 8/3): the newer latest attempt goes first (b's), then a is the most over.
    const a = mkJob('a', [], {
      runningAttempts: [0, 1, 2, 3].map((i) => mkAttempt('a', 'map', i, `w${i + 1}`, i * 10)),
    });
    const b = mkJob('b', [], {
      runningAttempts: [0, 1, 2, 3].map((i) => mkAttempt('b', 'map', i, `w${i + 1}`, 5 + i * 10)),
    });
    const c = mkJob('c', homelessMaps('c', 4));
    assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [a, b, c], { now: 0 })), []);
    assert.deepEqual(ids(schedule(policy, mkSnapshot(cluster(), [a, b, c], { now: 1000 }))), ['b-m3_1', 'a-m3_1']);
  });

  test('a job with at least half its fair share does not preempt', () => {
    const policy = new FairPolicy({ minShareTimeoutMs: 500, fairShareTimeoutMs: 1000 });
    // Shares 4 and 4 (b demands 2 running + 2 pending); b runs 2 = half of 4.
    const a = mkJob('a', [], {
      runningAttempts: [0, 1, 2, 3, 4, 5].map((i) => mkAttempt('a', 'map', i, `w${(i % 4) + 1}`, i)),
    });
    const b = mkJob('b', homelessMaps('b', 2), {
      runningAttempts: [mkAttempt('b', 'map', 9, 'w3', 0), mkAttempt('b', 'map', 8, 'w4', 0)],
    });
    for (let now = 0; now <= 5000; now += 1000)
      assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [a, b], { now })), []);
  });

  test('minimum-share preemption never takes from a pool at its minimum share, however recent its attempts', () => {
    const policy = new FairPolicy({ minShareTimeoutMs: 1000, fairShareTimeoutMs: 60_000 });
    const pools = [pool('x', { minMapSlots: 4 }), pool('y'), pool('z', { minMapSlots: 4 })];
    // Minimums 4 + 4 take all 8 slots: x 4, y 0, z 4. a (x) launched last, b (y) first.
    const a = mkJob('a', [], {
      pool: 'x',
      runningAttempts: [0, 1, 2, 3].map((i) => mkAttempt('a', 'map', i, `w${i + 1}`, 1000 + i)),
    });
    const b = mkJob('b', [], {
      pool: 'y',
      runningAttempts: [0, 1, 2, 3].map((i) => mkAttempt('b', 'map', i, `w${i + 1}`, i)),
    });
    const c = mkJob('c', homelessMaps('c', 4), { pool: 'z' });
    assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [a, b, c], { now: 2000, pools })), []);
    assert.deepEqual(ids(schedule(policy, mkSnapshot(cluster(), [a, b, c], { now: 3000, pools }))), [
      'b-m3_1',
      'b-m2_1',
      'b-m1_1',
      'b-m0_1',
    ]);
  });

  test('reduce slots are preempted on their own, killing reduce attempts only', () => {
    const policy = new FairPolicy({ minShareTimeoutMs: 500, fairShareTimeoutMs: 1000 });
    const w = ['w1', 'w2'].map((id) =>
      mkWorker(id, 'r1', { mapSlots: 1, freeMapSlots: 0, reduceSlots: 1, freeReduceSlots: 0 }),
    );
    const reduce = (jobId: string, i: number, workerId: string, start: number): AttemptView =>
      mkAttempt(jobId, 'reduce', i, workerId, start);
    const a = mkJob('a', [], {
      runningAttempts: [
        reduce('a', 0, 'w1', 0),
        reduce('a', 1, 'w2', 10),
        mkAttempt('a', 'map', 0, 'w1', 20),
        mkAttempt('a', 'map', 1, 'w2', 30),
      ],
    });
    const b = mkJob('b', [mkTask('b', 'reduce', 0), mkTask('b', 'reduce', 1)], { mapsTotal: 2, mapsCompleted: 2 });
    assert.deepEqual(schedule(policy, mkSnapshot(w, [a, b], { now: 0 })), []);
    assert.deepEqual(ids(schedule(policy, mkSnapshot(w, [a, b], { now: 1000 }))), ['a-r1_1']);
  });

  test('preemption: false never kills', () => {
    const policy = new FairPolicy({ preemption: false, minShareTimeoutMs: 500, fairShareTimeoutMs: 1000 });
    const a = mkJob('a', [], {
      runningAttempts: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => mkAttempt('a', 'map', i, `w${(i % 4) + 1}`, i)),
    });
    const b = mkJob('b', homelessMaps('b', 8));
    for (let now = 0; now <= 10_000; now += 1000)
      assert.deepEqual(schedule(policy, mkSnapshot(cluster(), [a, b], { now })), []);
  });
});

describe('fair: options', () => {
  const rejects = (options: Record<string, unknown>, name: string): void => {
    for (const make of [() => createPolicy('fair', options), () => new FairPolicy(options as never)]) {
      assert.throws(
        make,
        (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && err.message.includes(name),
        JSON.stringify(options),
      );
    }
  };

  test('defaults', () => {
    assert.deepEqual(DEFAULT_FAIR_OPTIONS, {
      nodeLocalDelayMs: 3000,
      rackLocalDelayMs: 3000,
      preemption: true,
      minShareTimeoutMs: 15_000,
      fairShareTimeoutMs: 30_000,
    });
    const p = createPolicy('fair');
    assert.ok(p instanceof FairPolicy);
    assert.equal(p.name, 'fair');
    assert.deepEqual(p.options, DEFAULT_FAIR_OPTIONS);
    assert.deepEqual((createPolicy('fair', { nodeLocalDelayMs: 0, preemption: false }) as FairPolicy).options, {
      ...DEFAULT_FAIR_OPTIONS,
      nodeLocalDelayMs: 0,
      preemption: false,
    });
  });

  test('unknown options and bad values are EBADCONF naming the option', () => {
    rejects({ nodeDelayMs: 1 }, 'nodeDelayMs');
    rejects({ nodeLocalDelayMs: -1 }, 'nodeLocalDelayMs');
    rejects({ rackLocalDelayMs: '3000' }, 'rackLocalDelayMs');
    rejects({ rackLocalDelayMs: Infinity }, 'rackLocalDelayMs');
    rejects({ preemption: 'yes' }, 'preemption');
    rejects({ fairShareTimeoutMs: NaN }, 'fairShareTimeoutMs');
    rejects({ minShareTimeoutMs: 30_000 }, 'minShareTimeoutMs');
    rejects({ minShareTimeoutMs: 5000, fairShareTimeoutMs: 4000 }, 'fairShareTimeoutMs');
  });

  test('the timeouts may be in any order when preemption is off', () => {
    assert.doesNotThrow(() =>
      createPolicy('fair', { preemption: false, minShareTimeoutMs: 9000, fairShareTimeoutMs: 1000 }),
    );
  });
});
