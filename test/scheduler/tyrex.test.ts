import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import {
  TyrexPolicy,
  createPolicy,
  optimalCutoff,
  partitionCapacities,
  squaredCoefficientOfVariation,
  type ClusterSnapshot,
  type Decision,
} from '../../src/scheduler/index.js';
import { STEADY_RESPONSE_BOUND_MS, policyConformance } from './conformance.js';
import { SnapshotDriver, mkJob, mkSnapshot, mkTask, mkWorker } from './snapshot-driver.js';

// Tyrex keeps each partition's slots for its own queue (not work-conserving by design), and a job
// in P_1 has 30% of the cluster, so the steady workload's bound is doubled.
const TYREX_CONFORMANCE = { workConserving: false, steadyResponseBoundMs: 2 * STEADY_RESPONSE_BOUND_MS };
policyConformance('tyrex-dynamic', () => createPolicy('tyrex-dynamic'), TYREX_CONFORMANCE);
policyConformance('tyrex-static', () => createPolicy('tyrex-static', { timersMs: [5000] }), TYREX_CONFORMANCE);

// ---- independent reference: CV^2 by definition and the cutoff by a fine scan, no bisection ----
function cv2(xs: number[]): number {
  if (xs.length < 2) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (mean === 0) return 0;
  return xs.reduce((a, x) => a + (x - mean) ** 2, 0) / xs.length / mean ** 2;
}
function scanCutoff(xs: number[], steps = 200_000): number | undefined {
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  let prev: number | undefined;
  for (let i = 0; i <= steps; i++) {
    const p = lo + ((hi - lo) * i) / steps;
    const d = cv2(xs.map((x) => Math.min(x, p))) - cv2(xs.filter((x) => x > p).map((x) => x - p));
    if (prev !== undefined && prev < 0 && d >= 0) return p;
    if (i === 0 && d >= 0) return p;
    prev = d;
  }
  return undefined;
}

describe('tyrex: squared coefficient of variation and the optimal cutoff', () => {
  test('CV^2 by hand: {1, 3} has mean 2, variance 1, CV^2 1/4; constants and singletons have 0', () => {
    assert.equal(squaredCoefficientOfVariation([1, 3]), 0.25);
    assert.equal(squaredCoefficientOfVariation([5, 5, 5]), 0);
    assert.equal(squaredCoefficientOfVariation([7]), 0);
  });

  test(
    '{0, 0, 10}: min(X, p) = {0, 0, p} has CV^2 2 for every p > 0 ' +
      'while the single value above has 0, so the crossing is at p = 0',
    () => {
      assert.equal(optimalCutoff([0, 0, 10]), 0);
    },
  );

  test(
    '{1, 1, 1, 1, 40, 40}: on (1, 40) L = {1,1,1,1,p,p} and R = ' +
      '{40-p, 40-p}; CV^2(R) = 0, so the crossing is at p = 1',
    () => {
      // CV^2(L) at p = 1 is 0 and CV^2(R) is 0 too: d(1) = 0, the first point where d >= 0.
      assert.equal(optimalCutoff([1, 1, 1, 1, 40, 40]), 1);
    },
  );

  test('heavy-tailed samples agree with a brute-force scan of d(p) to within the scan step', () => {
    const samples = [
      [10, 20, 30, 40, 50, 60, 1000, 5000],
      [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584],
      [60, 60, 120, 90, 30, 45, 3000, 12_000, 240, 600],
    ];
    for (const xs of samples) {
      const want = scanCutoff(xs);
      const got = optimalCutoff(xs);
      assert.ok(want !== undefined && got !== undefined, `cutoff of ${xs}`);
      const step = (Math.max(...xs) - Math.min(...xs)) / 200_000;
      assert.ok(Math.abs(got - want) <= 2 * step + 1e-6, `${xs}: got ${got}, scan ${want}`);
    }
  });

  test('fewer than two distinct values: no cutoff', () => {
    assert.equal(optimalCutoff([]), undefined);
    assert.equal(optimalCutoff([5, 5, 5]), undefined);
  });
});

describe('tyrex: partition capacities', () => {
  test('paper shape: 120 map slots and 40 reduce slots at 30/70', () => {
    assert.deepEqual(partitionCapacities(120, [0.3, 0.7]), [36, 84]);
    assert.deepEqual(partitionCapacities(40, [0.3, 0.7]), [12, 28]);
  });
  test('largest remainder: 6 slots at 30/70 are 1.8/4.2 -> 2/4; every partition keeps a slot', () => {
    assert.deepEqual(partitionCapacities(6, [0.3, 0.7]), [2, 4]);
    assert.deepEqual(partitionCapacities(2, [0.1, 0.9]), [1, 1]);
    // Fewer slots than partitions: each partition may use the one slot.
    assert.deepEqual(partitionCapacities(1, [0.3, 0.7]), [1, 1]);
  });
});

describe('tyrex: options', () => {
  test('bad options are rejected with EBADCONF naming the problem', () => {
    const bad = (f: () => unknown, re: RegExp) =>
      assert.throws(f, (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF' && re.test(e.message));
    bad(() => createPolicy('tyrex', { capacities: [0.5, 0.6] }), /sum to 1/);
    bad(() => createPolicy('tyrex', { capacities: [1] }), /at least two/);
    bad(() => createPolicy('tyrex-static', {}), /timersMs/);
    bad(() => createPolicy('tyrex-dynamic', { timersMs: [5] }), /static mode only/);
    bad(() => createPolicy('tyrex', { timer: 5 }), /unknown option/);
    bad(() => createPolicy('tyrex-dynamic', { mode: 'static', timersMs: [1] }), /cannot take mode/);
    assert.equal(createPolicy('tyrex', { mode: 'static', timersMs: [100] }).name, 'tyrex-static');
    assert.equal(createPolicy('tyrex').name, 'tyrex-dynamic');
  });
});

type Launch = Extract<Decision, { kind: 'launch' }>;
type Migrate = Extract<Decision, { kind: 'migrate' }>;

describe('tyrex: STATICTAGS on a driven cluster', () => {
  test('a long job migrates when its partial size passes the timer, and a short job then runs in P_1 at once', () => {
    // One worker, 10 map slots -> caps 3 (P_1) and 7 (P_2). Tasks take 3 ticks of 1000 ms.
    const driver = new SnapshotDriver({
      workers: [{ id: 'w1', rack: 'r1', mapSlots: 10, reduceSlots: 1, memoryMb: 100_000 }],
      jobs: [
        { id: 'long', submitTime: 0, maps: 20, reduces: 1 },
        { id: 'short', submitTime: 1000, maps: 3, reduces: 1 },
      ],
    });
    const policy = new TyrexPolicy({ mode: 'static', timersMs: [5000] });
    const rounds = driver.run(policy, { maxTicks: 200, record: true }).rounds;
    const at = (t: number) => rounds.find((r) => r.snapshot.now === t)!.decisions;
    // t = 0: only P_1's three slots are used, by the long job.
    assert.deepEqual(
      at(0).map((d) => (d as Launch).taskId),
      ['long-m0', 'long-m1', 'long-m2'],
    );
    // t = 1000 and 2000: P_1 is full, the short job waits; P_2 is empty but serves no P_1 job.
    assert.deepEqual(at(1000), []);
    assert.deepEqual(at(2000), []);
    // t = 3000: 3 x 3000 ms completed = 9000 > 5000: the long job moves to P_2 (its 7 slots), and the
    // short job takes P_1's 3 slots.
    const d = at(3000);
    const migrations = d.filter((x): x is Migrate => x.kind === 'migrate');
    assert.deepEqual(migrations, [
      { kind: 'migrate', jobId: 'long', toPartition: 1, partialSizeMs: 9000, timerMs: 5000 },
    ]);
    const launches = d.filter((x): x is Launch => x.kind === 'launch').map((x) => x.taskId);
    assert.deepEqual(launches.slice(0, 3), ['short-m0', 'short-m1', 'short-m2']);
    assert.equal(launches.filter((id) => id.startsWith('long-m')).length, 7);
  });

  test('no partition ever runs more attempts than its capacity (independent count over a whole run)', () => {
    const jobs = Array.from({ length: 12 }, (_, i) => ({
      id: `j${i}`,
      submitTime: i * 700,
      maps: i % 4 === 0 ? 25 : 3,
      reduces: 2,
    }));
    const driver = new SnapshotDriver({
      workers: [
        { id: 'w1', rack: 'r1', mapSlots: 4, reduceSlots: 2, memoryMb: 100_000 },
        { id: 'w2', rack: 'r2', mapSlots: 6, reduceSlots: 2, memoryMb: 100_000 },
      ],
      jobs,
    });
    const result = driver.run(new TyrexPolicy({ mode: 'static', timersMs: [4000] }), { maxTicks: 2000, record: true });
    assert.deepEqual(result.unfinished, []);
    const caps = { map: partitionCapacities(10, [0.3, 0.7]), reduce: partitionCapacities(4, [0.3, 0.7]) };
    const partitionOf = new Map<string, number>();
    const running: { end: number; kind: 'map' | 'reduce'; k: number }[] = [];
    for (const r of result.rounds) {
      const now = r.snapshot.now;
      for (let i = running.length - 1; i >= 0; i--) if (running[i]!.end <= now) running.splice(i, 1);
      for (const d of r.decisions) {
        if (d.kind === 'migrate') partitionOf.set(d.jobId, d.toPartition);
        if (d.kind === 'launch') {
          const kind = d.taskId.includes('-m') ? 'map' : 'reduce';
          running.push({ end: now + 3000, kind, k: partitionOf.get(d.jobId) ?? 0 });
        }
      }
      for (const kind of ['map', 'reduce'] as const) {
        for (const k of [0, 1]) {
          const n = running.filter((a) => a.kind === kind && a.k === k).length;
          assert.ok(n <= caps[kind][k]!, `t=${now}: ${n} ${kind}s in P_${k + 1}, cap ${caps[kind][k]}`);
        }
      }
    }
    assert.ok([...partitionOf.keys()].includes('j0'), 'the first 25-map job migrated');
  });
});

describe('tyrex: DYNAMICTAGS decisions on hand-made snapshots', () => {
  const workers = [mkWorker('w1', 'r1', { mapSlots: 10, reduceSlots: 2, freeMapSlots: 0, freeReduceSlots: 0 })];
  const jobWith = (id: string, completedMs: number) =>
    mkJob(id, [mkTask(id, 'map', 9)], {
      stats: { completedMapMs: completedMs, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 },
    });

  test('CV^2 of partial sizes <= 2: nothing migrates', () => {
    const sizes = [100, 200, 300, 400];
    assert.ok(cv2(sizes) <= 2);
    const s: ClusterSnapshot = mkSnapshot(
      workers,
      sizes.map((x, i) => jobWith(`j${i}`, x)),
    );
    assert.deepEqual(
      new TyrexPolicy().schedule(s).filter((d) => d.kind === 'migrate'),
      [],
    );
  });

  test('CV^2 > 2: exactly the jobs above the reference cutoff migrate, with that timer', () => {
    const sizes = [10, 20, 30, 40, 50, 60, 1000, 5000];
    assert.ok(cv2(sizes) > 2);
    const want = scanCutoff(sizes)!;
    const s = mkSnapshot(
      workers,
      sizes.map((x, i) => jobWith(`j${i}`, x)),
    );
    const policy = new TyrexPolicy();
    const migrations = policy.schedule(s).filter((d): d is Migrate => d.kind === 'migrate');
    const expected = sizes
      .map((x, i) => ({ x, id: `j${i}` }))
      .filter(({ x }) => x > want)
      .map(({ id }) => id);
    assert.deepEqual(
      migrations.map((m) => m.jobId),
      expected,
    );
    for (const m of migrations) assert.ok(Math.abs(m.timerMs! - want) < 0.05);
    assert.equal(policy.timerHistory.length, 1);
    // The migrated jobs' partial sizes in P_2 restart at zero: a second call migrates nothing more.
    assert.deepEqual(
      policy.schedule(s).filter((d) => d.kind === 'migrate'),
      [],
    );
  });
});

policyConformance('tyrex-dynamic+borrow', () => createPolicy('tyrex-dynamic', { borrowIdle: true }), TYREX_CONFORMANCE);

describe('tyrex: borrowing idle slots (beyond the paper)', () => {
  test('an idle partition lends its slots, charged to it, and gets them back at the next task boundary', () => {
    // One worker, 10 map slots: caps 3 (P_1) and 7 (P_2). One job in P_1, nothing in P_2.
    const driver = new SnapshotDriver({
      workers: [{ id: 'w1', rack: 'r1', mapSlots: 10, reduceSlots: 1, memoryMb: 100_000 }],
      jobs: [
        { id: 'a', submitTime: 0, maps: 12, reduces: 1 },
        { id: 'b', submitTime: 1000, maps: 2, reduces: 1 },
      ],
    });
    const policy = new TyrexPolicy({ mode: 'static', timersMs: [1e9], borrowIdle: true });
    const rounds = driver.run(policy, { maxTicks: 100, record: true }).rounds;
    const at = (t: number) =>
      rounds
        .find((r) => r.snapshot.now === t)!
        .decisions.filter((d): d is Launch => d.kind === 'launch')
        .map((d) => d.taskId);
    // t = 0: P_1's 3 slots and P_2's 7 idle ones all go to a.
    assert.equal(at(0).length, 10);
    // t = 1000: b arrives in P_1, whose slots are busy; P_2 lent all 7: nothing free.
    assert.deepEqual(at(1000), []);
    // t = 3000: all 10 end. P_1 (cap 3) serves its queue in FIFO order: a's last two maps, then
    // b's first map; P_2 has nothing of its own and lends its 7: b's other map.
    assert.deepEqual(at(3000), ['a-m10', 'a-m11', 'b-m0', 'b-m1']);
    assert.equal(policy.name, 'tyrex-static+borrow');
  });
});
