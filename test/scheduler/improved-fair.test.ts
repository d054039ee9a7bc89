import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import {
  DEFAULT_FAIR_OPTIONS,
  DEFAULT_IMPROVED_FAIR_OPTIONS,
  FairPolicy,
  ImprovedFairPolicy,
  createPolicy,
  diskRateOf,
  ioBoundCategory,
  ioBoundOn,
  jobCharacter,
  orderCpuBoundVictims,
  orderIoBoundVictims,
  type AttemptView,
  type Decision,
  type JobStats,
  type Locality,
  type Policy,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';
import { mkAttempt } from '../helpers/books.js';
import { SnapshotDriver, mkJob, mkSnapshot, mkTask, mkWorker, validateDecisions } from './snapshot-driver.js';

policyConformance('improved-fair', () => new ImprovedFairPolicy());
policyConformance('improved-fair via createPolicy', () => createPolicy('improved-fair'));
policyConformance(
  'improved-fair with quick preemption',
  () => new ImprovedFairPolicy({ minShareTimeoutMs: 1000, fairShareTimeoutMs: 2000, minMapsForCharacter: 1 }),
);

const MB = 1e6;

/** A running map attempt with 64 MB (decimal) of input. */
function attempt(
  jobId: string,
  index: number,
  workerId: string,
  startTime: number,
  locality: Locality = 'any',
): AttemptView {
  return mkAttempt(jobId, 'map', index, workerId, startTime, { locality, inputBytes: 64 * MB });
}

/** Stats of `maps` finished maps of 64 MB each, output = lambda x input, `mtct` ms each on average. */
function stats(maps: number, lambda: number, mtct: number): JobStats {
  return {
    completedMapMs: maps * mtct,
    completedReduceMs: 0,
    mapInputBytes: maps * 64 * MB,
    mapOutputBytes: maps * 64 * MB * lambda,
  };
}

describe('improved-fair: job character', () => {
  // n = 8 map slots, lambda = 1, MID = 64 MB, DIOR = 100 MB/s:
  // n (1 + lambda) MID / DIOR = 8 * 2 * 64e6 B / (1e5 B/ms) = 10240 ms.
  test('I/O-bound exactly when the I/O time of n concurrent maps exceeds the mean map time', () => {
    assert.equal(ioBoundOn(stats(4, 1, 10_240), 4, 8, 100, 3), false, 'equal is CPU-bound');
    assert.equal(ioBoundOn(stats(4, 1, 10_239), 4, 8, 100, 3), true);
    // A GrepCount-like job (output 1% of input) on the same node: 8 * 1.01 * 64e6 / 1e5 = 5171.2 ms.
    assert.equal(ioBoundOn(stats(4, 0.01, 5172), 4, 8, 100, 3), false);
    assert.equal(ioBoundOn(stats(4, 0.01, 5171), 4, 8, 100, 3), true);
    // Half the slots, half the I/O time.
    assert.equal(ioBoundOn(stats(4, 1, 5119), 4, 4, 100, 3), true);
    assert.equal(ioBoundOn(stats(4, 1, 5120), 4, 4, 100, 3), false);
  });

  test('CPU-bound until minMapsForCharacter maps have finished, with nothing read, or with no disk rate known', () => {
    assert.equal(ioBoundOn(stats(2, 1, 1), 2, 8, 100, 3), false);
    assert.equal(ioBoundOn(stats(3, 1, 1), 3, 8, 100, 3), true);
    assert.equal(ioBoundOn(stats(2, 1, 1), 2, 8, 100, 2), true);
    assert.equal(
      ioBoundOn({ completedMapMs: 10, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 }, 5, 8, 100, 3),
      false,
    );
    assert.equal(ioBoundOn(stats(4, 1, 1), 4, 8, 0, 3), false);
  });

  test("a worker reporting no disk rate counts with the cluster's mean", () => {
    const workers = [
      mkWorker('a', 'r1', { diskMBps: 100 }),
      mkWorker('b', 'r1', { diskMBps: 300 }),
      mkWorker('c', 'r1'),
    ];
    assert.equal(diskRateOf(workers[0]!, workers), 100);
    assert.equal(diskRateOf(workers[2]!, workers), 200);
    assert.equal(diskRateOf(workers[2]!, [workers[2]!]), 0);
  });

  test('a job is I/O-bound when it is on a node running its maps (all nodes when it runs none)', () => {
    // fast: 8 * 2 * 64e6 / 1e6 = 1024 ms; slow: / 5e4 = 20480 ms; the job's maps take 10240 ms.
    const workers = [
      mkWorker('fast', 'r1', { mapSlots: 8, diskMBps: 1000 }),
      mkWorker('slow', 'r1', { mapSlots: 8, diskMBps: 50 }),
    ];
    const on = (workerIds: string[]) =>
      mkJob('j', [], {
        mapsCompleted: 4,
        stats: stats(4, 1, 10_240),
        runningAttempts: workerIds.map((w, i) => attempt('j', i, w, 0)),
      });
    assert.equal(jobCharacter(on(['fast']), workers), 'cpu-bound');
    assert.equal(jobCharacter(on(['slow']), workers), 'io-bound');
    assert.equal(jobCharacter(on(['fast', 'slow']), workers), 'io-bound');
    assert.equal(jobCharacter(on([]), workers), 'io-bound');
    assert.equal(jobCharacter(on(['slow']), workers, 5), 'cpu-bound', 'fewer finished maps than asked for');
  });
});

describe('improved-fair: victim order', () => {
  // The starved job's input sits on w1, w2, w3.
  const holdsNew = new Set(['w1', 'w2', 'w3']);

  test('I/O-bound victim: categories (1)-(6), most recent first within one', () => {
    const attempts = [
      attempt('v', 0, 'w6', 60, 'node'), // (6) no new input here, input on this node
      attempt('v', 1, 'w5', 50, 'rack'), // (5)
      attempt('v', 2, 'w4', 40, 'any'), // (4)
      attempt('v', 3, 'w3', 30, 'node'), // (3) new input here, own input on this node
      attempt('v', 4, 'w2', 20, 'rack'), // (2) new input here, own input on the same rack
      attempt('v', 5, 'w1', 10, 'any'), // (1) new input here, own input on another rack
      attempt('v', 6, 'w1', 5, 'any'), // (1) too, launched earlier
    ];
    assert.deepEqual(
      attempts.map((a) => ioBoundCategory(a, holdsNew)),
      [6, 5, 4, 3, 2, 1, 1],
    );
    assert.deepEqual(
      orderIoBoundVictims(attempts, holdsNew).map((a) => a.id),
      ['v-m5_1', 'v-m6_1', 'v-m4_1', 'v-m3_1', 'v-m2_1', 'v-m1_1', 'v-m0_1'],
    );
  });

  test(
    'CPU-bound victim: most recent first; among equally recent, ' +
      'input on another rack, then same rack, then same node',
    () => {
      const attempts = [
        attempt('v', 0, 'w1', 100, 'node'),
        attempt('v', 1, 'w2', 100, 'any'),
        attempt('v', 2, 'w3', 100, 'rack'),
        attempt('v', 3, 'w4', 200, 'node'),
        attempt('v', 4, 'w5', 50, 'any'),
      ];
      assert.deepEqual(
        orderCpuBoundVictims(attempts).map((a) => a.id),
        ['v-m3_1', 'v-m1_1', 'v-m2_1', 'v-m0_1', 'v-m4_1'],
      );
    },
  );
});

/**
 * A long job fills six one-slot workers (w1-w3 on r1, w4-w6 on r2); at 2 s a job of three maps with
 * all its input on w1 arrives. Copies land `replicationTicks` ticks (of 1 s) after they are asked
 * for. Every decision of the run, with its time.
 */
function drivenScene(policy: Policy, replicationTicks: number): Array<{ now: number; d: Decision }> {
  const driver = new SnapshotDriver({
    workers: ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map((id, i) => ({
      id,
      rack: i < 3 ? 'r1' : 'r2',
      mapSlots: 1,
      reduceSlots: 1,
      memoryMb: 4096,
    })),
    jobs: [
      { id: 'hog', submitTime: 0, maps: 6, reduces: 0, taskTicks: 40 },
      {
        id: 'wc',
        submitTime: 2000,
        maps: [0, 1, 2].map(() => ({ preferredWorkers: ['w1'], unplacedReplicas: 1 })),
        reduces: 0,
      },
    ],
    replicationTicks,
  });
  const result = driver.run(policy, { maxTicks: 200, record: true });
  assert.deepEqual(result.unfinished, []);
  return result.rounds.flatMap((r) => r.decisions.map((d) => ({ now: r.snapshot.now, d })));
}

describe('improved-fair: preemption', () => {
  // Six one-slot workers, w1-w3 on r1 and w4-w6 on r2, all busy with the victim v; 100 MB/s disks.
  const workers: WorkerView[] = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map((id, i) =>
    mkWorker(id, i < 3 ? 'r1' : 'r2', { mapSlots: 1, freeMapSlots: 0, diskMBps: 100 }),
  );
  const locality: Locality[] = ['any', 'rack', 'node', 'any', 'rack', 'node'];
  // Launched oldest on w1 to newest on w6, so FAIR's most-recent-first kills w6, w5, w4.
  const victimAttempts = workers.map((w, i) => attempt('v', i, w.id, i * 10, locality[i]));
  // n (1 + lambda) MID / DIOR = 1 * 2 * 64e6 / 1e5 = 1280 ms: maps of 1000 ms are I/O-bound, of 2000 ms CPU-bound.
  const victim = (mtct: number) =>
    mkJob('v', [], { runningAttempts: victimAttempts, mapsCompleted: 4, stats: stats(4, 1, mtct) });
  // b's input is a private data set whose upload still owes each block one replica, unless `owed` says otherwise.
  const starved = (holders: string[][], owed = 1) =>
    mkJob(
      'b',
      holders.map((h, i) =>
        mkTask('b', 'map', i, { preferredWorkers: h, workers, ...(owed > 0 ? { unplacedReplicas: owed } : {}) }),
      ),
      { submitTime: 1 },
    );
  const options = { minShareTimeoutMs: 500, fairShareTimeoutMs: 1000 };

  /** Decisions at the timeout: shares v 3, b 3, so b (0 running) needs 3 slots. */
  function atTimeout(policy: Policy, v: ReturnType<typeof victim>, b: ReturnType<typeof starved>): readonly Decision[] {
    assert.deepEqual(policy.schedule(mkSnapshot(workers, [v, b], { now: 0 })), []);
    const s = mkSnapshot(workers, [v, b], { now: 1000 });
    const ds = policy.schedule(s);
    assert.deepEqual(validateDecisions(s, ds), []);
    return ds;
  }
  const describeAll = (ds: readonly Decision[]): string[] =>
    ds.map((d) =>
      d.kind === 'kill'
        ? `kill ${d.attemptId}`
        : d.kind === 'replicate'
          ? `replicate ${d.taskId} -> ${d.workerId}`
          : d.kind,
    );

  test(
    'an I/O-bound victim loses attempts on the nodes holding the ' +
      'starved input, remote input first; FAIR takes the newest',
    () => {
      const b = starved([['w1'], ['w2'], ['w3']]);
      assert.equal(jobCharacter(victim(1000), workers), 'io-bound');
      // Categories (1) w1, (2) w2, (3) w3; each node then holds input of one pending map of b: no copies.
      assert.deepEqual(describeAll(atTimeout(new ImprovedFairPolicy(options), victim(1000), b)), [
        'kill v-m0_1',
        'kill v-m1_1',
        'kill v-m2_1',
      ]);
      assert.deepEqual(describeAll(atTimeout(new FairPolicy(options), victim(1000), b)), [
        'kill v-m5_1',
        'kill v-m4_1',
        'kill v-m3_1',
      ]);
    },
  );

  test('an I/O-bound victim without attempts on such nodes loses remote-input attempts first', () => {
    // b's input is on no live node, so every attempt is in (4)-(6): (4) holds w4 and w1 (newest first), then (5) w5.
    const b = starved([['gone'], ['gone'], ['gone']]);
    assert.deepEqual(
      describeAll(atTimeout(new ImprovedFairPolicy({ ...options, placePrivateData: false }), victim(1000), b)),
      ['kill v-m3_1', 'kill v-m0_1', 'kill v-m4_1'],
    );
  });

  test('a CPU-bound victim loses its newest attempts, and each freed node gets a replica of a starved map', () => {
    const b = starved([['w1'], ['w2'], ['w3']]);
    assert.equal(jobCharacter(victim(2000), workers), 'cpu-bound');
    assert.deepEqual(describeAll(atTimeout(new ImprovedFairPolicy(options), victim(2000), b)), [
      'kill v-m5_1',
      'replicate b-m0 -> w6',
      'kill v-m4_1',
      'replicate b-m1 -> w5',
      'kill v-m3_1',
      'replicate b-m2 -> w4',
    ]);
  });

  test('no copy to a freed node that already holds input of a starved map no other freed slot counts on', () => {
    const b = starved([['w1'], ['w5', 'w6'], ['w3']]);
    // w6 holds b-m1: it is counted on there; w5 holds only b-m1, now taken: b-m0 is copied; w4 gets b-m2.
    assert.deepEqual(describeAll(atTimeout(new ImprovedFairPolicy(options), victim(2000), b)), [
      'kill v-m5_1',
      'kill v-m4_1',
      'replicate b-m0 -> w5',
      'kill v-m3_1',
      'replicate b-m2 -> w4',
    ]);
  });

  test('an input that owes no replica gets no copy: an extra copy moves what the remote read would', () => {
    const b = starved([['w1'], ['w2'], ['w3']], 0);
    assert.deepEqual(describeAll(atTimeout(new ImprovedFairPolicy(options), victim(2000), b)), [
      'kill v-m5_1',
      'kill v-m4_1',
      'kill v-m3_1',
    ]);
  });

  test('placePrivateData: false copies nothing', () => {
    const b = starved([['w1'], ['w2'], ['w3']]);
    assert.deepEqual(
      describeAll(atTimeout(new ImprovedFairPolicy({ ...options, placePrivateData: false }), victim(2000), b)),
      ['kill v-m5_1', 'kill v-m4_1', 'kill v-m3_1'],
    );
  });

  test('driven: after preemption the starved job runs data-local under improved FAIR, off-rack under FAIR', () => {
    // A long job fills six one-slot workers; at 2 s a job with all its input on w1 arrives. Its share
    // is 3, so at 5 s (fairShareTimeoutMs after arrival) three attempts die: the newest, on w6, w5, w4
    // (all launched at 0; the highest task index first). FAIR then runs the new maps off-rack there;
    // improved FAIR has copied one map's input to each freed node, so they run node-local.
    const runWith = (policy: Policy) => {
      const all = drivenScene(policy, 0);
      return {
        kills: all
          .filter(({ d }) => d.kind === 'kill')
          .map(({ now, d }) => [now, (d as { attemptId: string }).attemptId]),
        replicas: all.filter(({ d }) => d.kind === 'replicate').length,
        wc: all
          .filter(({ d }) => d.kind === 'launch' && d.jobId === 'wc')
          .map(({ now, d }) => [now, (d as { locality: Locality }).locality]),
      };
    };
    const opts = { minShareTimeoutMs: 1000, fairShareTimeoutMs: 3000 };
    const expectedKills = [
      [5000, 'hog-m5_1'],
      [5000, 'hog-m4_1'],
      [5000, 'hog-m3_1'],
    ];
    const fair = runWith(new FairPolicy(opts));
    assert.deepEqual(fair.kills, expectedKills);
    assert.equal(fair.replicas, 0);
    assert.deepEqual(fair.wc, [
      [6000, 'any'],
      [6000, 'any'],
      [6000, 'any'],
    ]);
    const improved = runWith(new ImprovedFairPolicy(opts));
    assert.deepEqual(improved.kills, expectedKills);
    assert.equal(improved.replicas, 3);
    assert.deepEqual(improved.wc, [
      [6000, 'node'],
      [6000, 'node'],
      [6000, 'node'],
    ]);
  });

  describe('driven, copies that take time to land', () => {
    // The scene above, but each copy lands `replicationTicks` ticks (of 1 s) after it was asked for
    // at 5 s; the killed attempts' slots are free from 6 s on.
    const runWith = (policy: Policy, replicationTicks: number) => {
      const all = drivenScene(policy, replicationTicks);
      return {
        kills: all.filter(({ d }) => d.kind === 'kill').length,
        launchesBefore: (t: number) => all.filter(({ now, d }) => d.kind === 'launch' && now >= 5000 && now < t).length,
        wc: all
          .filter(({ d }) => d.kind === 'launch' && d.jobId === 'wc')
          .map(({ now, d }) => [now, d.kind === 'launch' ? `${d.workerId} ${d.locality}` : '']),
      };
    };
    const opts = { minShareTimeoutMs: 1000, fairShareTimeoutMs: 3000 };

    test('the freed slots stay idle until the copies land, then run the maps they were made for, node-local', () => {
      const run = runWith(new ImprovedFairPolicy(opts), 2);
      assert.equal(run.kills, 3, 'no further kills while the slots wait');
      assert.equal(run.launchesBefore(7000), 0, 'nobody takes a held slot');
      assert.deepEqual(run.wc, [
        [7000, 'w4 node'],
        [7000, 'w5 node'],
        [7000, 'w6 node'],
      ]);
    });

    test('placementWaitMs 0: the maps run at once and read their input over the network, wasting the copies', () => {
      const run = runWith(new ImprovedFairPolicy({ ...opts, placementWaitMs: 0 }), 2);
      assert.deepEqual(run.wc, [
        [6000, 'w4 any'],
        [6000, 'w5 any'],
        [6000, 'w6 any'],
      ]);
    });

    test('a copy later than placementWaitMs: the slots go back to the shares when the wait ends', () => {
      // Asked for at 5 s, waited for until 7 s; the copies would land at 10 s.
      const run = runWith(new ImprovedFairPolicy({ ...opts, placementWaitMs: 2000 }), 5);
      assert.equal(run.kills, 3);
      assert.equal(run.launchesBefore(7000), 0);
      assert.deepEqual(run.wc, [
        [7000, 'w4 any'],
        [7000, 'w5 any'],
        [7000, 'w6 any'],
      ]);
    });
  });
});

describe('improved-fair: options', () => {
  test('defaults: FAIR options plus minMapsForCharacter 3, placePrivateData true and placementWaitMs 3000', () => {
    assert.deepEqual(DEFAULT_IMPROVED_FAIR_OPTIONS, {
      ...DEFAULT_FAIR_OPTIONS,
      minMapsForCharacter: 3,
      placePrivateData: true,
      placementWaitMs: 3000,
    });
    const p = createPolicy('improved-fair');
    assert.ok(p instanceof ImprovedFairPolicy);
    assert.ok(p instanceof FairPolicy);
    assert.equal(p.name, 'improved-fair');
    assert.deepEqual(p.improvedOptions, DEFAULT_IMPROVED_FAIR_OPTIONS);
    const tuned = createPolicy('improved-fair', {
      nodeLocalDelayMs: 1000,
      minMapsForCharacter: 5,
    }) as ImprovedFairPolicy;
    assert.equal(tuned.options.nodeLocalDelayMs, 1000);
    assert.equal(tuned.improvedOptions.minMapsForCharacter, 5);
  });

  test('unknown options and bad values are EBADCONF naming the option', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ minMapsForCharacter: 0 }, 'minMapsForCharacter'],
      [{ minMapsForCharacter: 1.5 }, 'minMapsForCharacter'],
      [{ minMapsForCharacter: '3' }, 'minMapsForCharacter'],
      [{ placePrivateData: 1 }, 'placePrivateData'],
      [{ placementWaitMs: -1 }, 'placementWaitMs'],
      [{ rackLocalDelayMs: -5 }, 'rackLocalDelayMs'],
      [{ victimOrder: 'io' }, 'victimOrder'],
      [{ minShareTimeoutMs: 40_000 }, 'minShareTimeoutMs'],
    ];
    for (const [options, name] of cases) {
      for (const make of [
        () => createPolicy('improved-fair', options),
        () => new ImprovedFairPolicy(options as never),
      ]) {
        assert.throws(
          make,
          (err: unknown) =>
            err instanceof MinimrError &&
            err.code === 'EBADCONF' &&
            err.message.includes(name) &&
            err.message.includes('improved-fair'),
        );
      }
    }
  });
});
