import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { FifoPolicy, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import { computeMetrics } from '../../src/metrics/index.js';
import {
  EventHeap,
  RackIndex,
  placeReplicas,
  simulate,
  streamFor,
  type SimulationOptions,
} from '../../src/sim/index.js';
import { clusterPreset, tyrexWorkload } from '../../src/workloads/index.js';
import { MiB, cluster, grantingPolicy, job, task, worker } from './helpers.js';

function finishTimes(r: ReturnType<typeof simulate>): Record<string, number | null> {
  return Object.fromEntries(r.run.jobs.map((j) => [j.id, j.finishMs]));
}

describe('event heap', () => {
  test('equal times come out in insertion order, times in order', () => {
    const heap = new EventHeap<string>();
    const pushed: Array<[number, string]> = [];
    const rand = streamFor(7, 'heap');
    for (let i = 0; i < 500; i++) {
      const t = Math.floor(rand() * 20);
      heap.push(t, `e${i}`);
      pushed.push([t, `e${i}`]);
    }
    // Reference: a stable sort by time keeps insertion order among equal times.
    const expected = [...pushed].sort((a, b) => a[0] - b[0]).map((p) => p[1]);
    const got: string[] = [];
    for (let e = heap.pop(); e; e = heap.pop()) got.push(e.value);
    assert.deepEqual(got, expected);
  });

  test('a rank orders events of one instant before insertion does', () => {
    const heap = new EventHeap<string>();
    const pushed: Array<[number, number, string]> = [];
    const rand = streamFor(11, 'ranked heap');
    for (let i = 0; i < 500; i++) {
      const t = Math.floor(rand() * 10);
      const rank = Math.floor(rand() * 4);
      heap.push(t, `e${i}`, rank);
      pushed.push([t, rank, `e${i}`]);
    }
    // Reference: a stable sort by (time, rank) keeps insertion order among equal keys.
    const expected = [...pushed].sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((p) => p[2]);
    const got: string[] = [];
    for (let e = heap.pop(); e; e = heap.pop()) got.push(e.value);
    assert.deepEqual(got, expected);
  });

  test('interleaved pushes and pops keep the (time, sequence) order', () => {
    const heap = new EventHeap<string>();
    heap.push(5, 'a');
    heap.push(5, 'b');
    heap.push(1, 'c');
    assert.equal(heap.pop()!.value, 'c');
    heap.push(5, 'd');
    heap.push(3, 'e');
    assert.deepEqual(
      [heap.pop()!.value, heap.pop()!.value, heap.pop()!.value, heap.pop()!.value],
      ['e', 'a', 'b', 'd'],
    );
    assert.equal(heap.pop(), undefined);
  });
});

describe('replica placement', () => {
  test('HDFS-like: three distinct workers, second off the first rack, third on the second rack', () => {
    const shape = clusterPreset('improved-fair-12');
    const index = new RackIndex(shape.workers);
    const rackOf = new Map(shape.workers.map((w) => [w.id, w.rack]));
    const rand = streamFor(3, 'placement');
    for (let i = 0; i < 200; i++) {
      const [a, b, c] = placeReplicas(index, 3, rand);
      assert.equal(new Set([a, b, c]).size, 3);
      assert.notEqual(rackOf.get(b!), rackOf.get(a!));
      assert.equal(rackOf.get(c!), rackOf.get(b!));
    }
  });

  test('one rack: replicas are distinct; never more than the workers', () => {
    const shape = cluster(worker('a', 'r'), worker('b', 'r'));
    const got = placeReplicas(new RackIndex(shape.workers), 3, streamFor(1, 'x'));
    assert.deepEqual([...got].sort(), ['a', 'b']);
  });
});

describe('simulator: hand-computed FIFO runs', () => {
  // 1 worker, 1 map + 1 reduce slot. Job 1 (t=0): maps of 10 s and 10 s, a reduce of 5 s.
  // Job 2 (t=1 s): one map of 3 s. FIFO: job 1's maps run 0-10 and 10-20; at 20 s its reduce
  // starts (20-25) and the map slot goes to job 2 (20-23).
  const options = (over: Partial<SimulationOptions> = {}): SimulationOptions => ({
    workload: {
      name: 'tiny',
      jobs: [job('job_0001', 0, [task(10_000), task(10_000)], [task(5_000)]), job('job_0002', 1_000, [task(3_000)])],
    },
    cluster: cluster(worker('w1', 'r1')),
    policy: new FifoPolicy(),
    heartbeatMs: 1000,
    ...over,
  });

  for (const policyCalls of ['when-useful', 'every-event'] as const) {
    for (const batchSameTime of [true, false]) {
      test(`exact finish times (${policyCalls}, batch ${batchSameTime})`, () => {
        const r = simulate(options({ policyCalls, batchSameTime, freeze: true }));
        assert.deepEqual(finishTimes(r), { job_0001: 25_000, job_0002: 23_000 });
        const j1 = r.run.jobs[0]!;
        assert.deepEqual(j1.mapPhase, { requestMs: 0, firstStartMs: 0, endMs: 20_000 });
        assert.deepEqual(j1.reducePhase, { requestMs: 20_000, firstStartMs: 20_000, endMs: 25_000 });
        assert.deepEqual(
          r.run.attempts.map((a) => [a.id, a.startMs, a.endMs, a.outcome]),
          [
            ['attempt_0001_m_000000_0', 0, 10_000, 'succeeded'],
            ['attempt_0001_m_000001_0', 10_000, 20_000, 'succeeded'],
            ['attempt_0002_m_000000_0', 20_000, 23_000, 'succeeded'],
            ['attempt_0001_r_000000_0', 20_000, 25_000, 'succeeded'],
          ],
        );
      });
    }
  }

  test(
    'reduceSlowStart: a reduce launches once that fraction of its ' +
      "job's maps is done, holds its slot, and works after the last " +
      'map',
    () => {
      // Job 1's reduce opens when 1 of its 2 maps is done (10 s) and holds the reduce slot from then;
      // its 5 s of work start when the second map ends (20 s). Job 2's one map runs 20-23 as before.
      const r = simulate(options({ reduceSlowStart: 0.5 }));
      assert.deepEqual(finishTimes(r), { job_0001: 25_000, job_0002: 23_000 });
      assert.deepEqual(r.run.jobs[0]!.reducePhase, { requestMs: 10_000, firstStartMs: 10_000, endMs: 25_000 });
      assert.deepEqual(
        r.run.attempts.filter((a) => a.kind === 'reduce').map((a) => [a.id, a.startMs, a.endMs]),
        [['attempt_0001_r_000000_0', 10_000, 25_000]],
      );
      // 0: open from submission; 1 (the default): only after the last map.
      assert.equal(simulate(options({ reduceSlowStart: 0 })).run.attempts.find((a) => a.kind === 'reduce')!.startMs, 0);
      assert.equal(
        simulate(options({ reduceSlowStart: 1 })).run.attempts.find((a) => a.kind === 'reduce')!.startMs,
        20_000,
      );
    },
  );

  test('an early reduce keeps the slot from the next job until its own maps are done', () => {
    // Two map slots, one reduce slot. Job 1: three maps of 10 s (0-10, 0-10, 10-20), a reduce of
    // 5 s. Job 2 (t = 1 s): a map of 3 s (10-13), a reduce of 2 s. Without slow start job 2's
    // reduce takes the free slot at 13 s (13-15); with slow start 0 job 1's reduce took it at 0 s
    // and holds it through job 1's maps and its own work (0-25): job 2's reduce runs 25-27.
    const run = (reduceSlowStart: number) =>
      simulate({
        ...options({ reduceSlowStart }),
        workload: {
          name: 'hog',
          jobs: [
            job('job_0001', 0, [task(10_000), task(10_000), task(10_000)], [task(5_000)]),
            job('job_0002', 1_000, [task(3_000)], [task(2_000)]),
          ],
        },
        cluster: cluster(worker('w1', 'r1'), worker('w2', 'r1', { reduceSlots: 0 })),
      });
    assert.deepEqual(finishTimes(run(1)), { job_0001: 25_000, job_0002: 15_000 });
    assert.deepEqual(finishTimes(run(0)), { job_0001: 25_000, job_0002: 27_000 });
  });

  test('reduceSlowStart outside [0, 1] is EBADCONF', () => {
    for (const reduceSlowStart of [-0.1, 1.5, Number.NaN]) {
      assert.throws(
        () => simulate(options({ reduceSlowStart })),
        (err: unknown) =>
          err instanceof MinimrError && err.code === 'EBADCONF' && err.message.includes('reduceSlowStart'),
      );
    }
  });

  test('decisions are recorded with their time and trigger', () => {
    const r = simulate(options());
    assert.deepEqual(
      r.decisions.map((d) => [d.timeMs, d.trigger, d.decision.kind === 'launch' ? d.decision.taskId : d.decision.kind]),
      [
        [0, 'job-submitted', 'task_0001_m_000000'],
        [10_000, 'attempt-finished', 'task_0001_m_000001'],
        [20_000, 'attempt-finished', 'task_0002_m_000000'],
        [20_000, 'attempt-finished', 'task_0001_r_000000'],
      ],
    );
  });

  test('utilization samples hold the slot and memory use between events', () => {
    const r = simulate(options({ sampleEveryMs: 5_000 }));
    const at = (t: number) => r.run.utilization.find((s) => s.timeMs === t)!;
    assert.equal(at(5_000).mapSlotsUsed, 1);
    assert.equal(at(5_000).reduceSlotsUsed, 0);
    assert.equal(at(5_000).memoryUsedMb, 1024);
    assert.equal(at(20_000).mapSlotsUsed, 1); // left-limit at 20 s: job 1's second map
    assert.equal(at(0).mapSlots, 1);
  });
});

describe('simulator: model', () => {
  test('step penalty: an under-sized map takes factor x its work', () => {
    const r = simulate({
      workload: {
        name: 'p',
        jobs: [
          job('job_0001', 0, [
            task(10_000, { memoryMb: 1000, penalty: { kind: 'step', factor: 1.5, minFraction: 0.1 } }),
          ]),
        ],
      },
      cluster: cluster(worker('w1', 'r1')),
      policy: grantingPolicy(0.5),
      sampleEveryMs: 5_000,
    });
    assert.deepEqual([r.run.attempts[0]!.memoryMb, r.run.attempts[0]!.idealMemoryMb], [500, 1000]);
    assert.equal(r.run.jobs[0]!.finishMs, 15_000);
    assert.deepEqual(
      r.run.utilization.map((u) => [u.timeMs, u.elasticAttempts, u.memoryUsedMb]),
      [
        [0, 0, 0],
        [5_000, 1, 500],
        [10_000, 1, 500],
        [15_000, 1, 500], // the left limit at 15 s
        [15_000, 0, 0], // the run's end
      ],
    );
  });

  test('spill penalty: T + spilled / disk rate, sawtooth rule for reducers', () => {
    // Buffer 1000 MiB, no overhead, granted 300 MB: 300 MiB * (ceil(1000/300) - 1) = 900 MiB
    // spilled at the worker's 100 MB/s: +9 s.
    const spill = { kind: 'spill', rule: 'reduce', bufferBytes: 1000 * MiB, overheadMb: 0, minFraction: 0.1 } as const;
    const r = simulate({
      workload: { name: 'p', jobs: [job('job_0001', 0, [], [task(10_000, { memoryMb: 1000, penalty: spill })])] },
      cluster: cluster(worker('w1', 'r1')),
      policy: grantingPolicy(0.3),
    });
    assert.equal(r.run.jobs[0]!.finishMs, 19_000);
  });

  test('a grant below the minimum allocation is refused by the books: the run stops naming it', () => {
    assert.throws(
      () =>
        simulate({
          workload: {
            name: 'p',
            jobs: [
              job('job_0001', 0, [
                task(10_000, { memoryMb: 1200, penalty: { kind: 'step', factor: 3, minFraction: 0.5 } }),
              ]),
            ],
          },
          cluster: cluster(worker('w1', 'r1')),
          policy: grantingPolicy(0.25),
          maxAttempts: 3,
        }),
      /grants task_0001_m_000000 300 MB, below its minimum 600 MB/,
    );
  });

  for (const [label, racks, mbps, remoteRack] of [
    ['off-rack', ['r1', 'r2'], 40, 64 * MiB],
    ['rack-local', ['r1', 'r1'], 100, 0],
  ] as const) {
    test(`a ${label} map adds input / ${mbps} MB/s and counts its bytes`, () => {
      // The input sits on w2, which has no map slot: FIFO runs the map on w1.
      const r = simulate({
        workload: { name: 'l', jobs: [job('job_0001', 0, [task(10_000, { inputBytes: 64 * MiB, replicas: ['w2'] })])] },
        cluster: cluster(worker('w1', racks[0]), worker('w2', racks[1], { mapSlots: 0 })),
        policy: new FifoPolicy(),
        rackMBps: 100,
        offRackMBps: 40,
      });
      const a = r.run.attempts[0]!;
      assert.equal(a.workerId, 'w1');
      assert.equal(a.endMs, 10_000 + Math.round((64 / mbps) * 1000));
      assert.equal(a.remoteNodeBytes, 64 * MiB);
      assert.equal(a.remoteRackBytes, remoteRack);
    });
  }

  test('a node-local map reads nothing remotely', () => {
    const r = simulate({
      workload: { name: 'l', jobs: [job('job_0001', 0, [task(10_000, { inputBytes: 64 * MiB, replicas: ['w1'] })])] },
      cluster: cluster(worker('w1', 'r1')),
      policy: new FifoPolicy(),
    });
    assert.deepEqual(
      [r.run.attempts[0]!.locality, r.run.attempts[0]!.endMs, r.run.attempts[0]!.remoteNodeBytes],
      ['node', 10_000, 0],
    );
  });

  test("a lost worker's attempt fails and is re-run; a worker that comes back gets work again", () => {
    const base = {
      workload: { name: 'f', jobs: [job('job_0001', 0, [task(10_000), task(10_000)])] },
      cluster: cluster(worker('w1', 'r1'), worker('w2', 'r1')),
      policy: new FifoPolicy(),
    };
    // w2 lost at 5 s for good: its map re-runs on w1 after w1's map ends (10-20 s).
    const lost = simulate({ ...base, failures: { workers: [{ workerId: 'w2', atMs: 5_000 }] } });
    assert.equal(lost.run.jobs[0]!.finishMs, 20_000);
    assert.deepEqual(
      lost.run.attempts.map((a) => [a.id, a.workerId, a.startMs, a.endMs, a.outcome, a.cause ?? '']),
      [
        ['attempt_0001_m_000001_0', 'w2', 0, 5_000, 'failed', 'worker-lost'],
        ['attempt_0001_m_000000_0', 'w1', 0, 10_000, 'succeeded', ''],
        ['attempt_0001_m_000001_1', 'w1', 10_000, 20_000, 'succeeded', ''],
      ],
    );
    // Back at 7 s: the map is launched there at once and ends at 17 s.
    const back = simulate({ ...base, failures: { workers: [{ workerId: 'w2', atMs: 5_000, backAtMs: 7_000 }] } });
    assert.equal(back.run.jobs[0]!.finishMs, 17_000);
    assert.deepEqual(back.run.attempts.at(-1)!.workerId, 'w2');
  });

  test("a lost worker's finished map is redone when the job's reduces still need it", () => {
    // Maps end at 10 s on w1 and w2; the reduce (w1 only has a reduce slot) runs 10-30 s. w2 is
    // lost at 15 s: its map output is gone, so that map runs again on w1 (15-25 s).
    const r = simulate({
      workload: { name: 'f', jobs: [job('job_0001', 0, [task(10_000), task(10_000)], [task(20_000)])] },
      cluster: cluster(worker('w1', 'r1'), worker('w2', 'r1', { reduceSlots: 0 })),
      policy: new FifoPolicy(),
      failures: { workers: [{ workerId: 'w2', atMs: 15_000 }] },
    });
    const rerun = r.run.attempts.find((a) => a.id === 'attempt_0001_m_000001_1');
    assert.ok(rerun, 'the map was not re-run');
    assert.deepEqual([rerun.workerId, rerun.startMs, rerun.endMs], ['w1', 15_000, 25_000]);
  });

  test('per-attempt failure probability: failed attempts are re-run and counted; the job still finishes', () => {
    const r = simulate({
      workload: tyrexWorkload({ variant: 'hvw', seed: 2, scale: 0.1 }),
      cluster: clusterPreset('tyrex-20'),
      policy: new FifoPolicy(),
      failures: { attemptFailureProbability: 0.1 },
      maxAttempts: 10,
    });
    const failed = r.run.attempts.filter((a) => a.outcome === 'failed');
    assert.ok(failed.length > 0);
    assert.ok(failed.every((a) => a.cause === 'task-error' && a.endMs > a.startMs));
    assert.ok(r.run.jobs.every((j) => j.state === 'succeeded'));
  });

  test('noise changes durations within +-noise, deterministically', () => {
    const opts = {
      workload: {
        name: 'n',
        jobs: [
          job(
            'job_0001',
            0,
            Array.from({ length: 20 }, () => task(10_000)),
          ),
        ],
      },
      cluster: cluster(worker('w1', 'r1', { mapSlots: 20 })),
      policy: new FifoPolicy(),
      noise: 0.15,
    };
    const r = simulate(opts);
    const durations = r.run.attempts.map((a) => a.endMs - a.startMs);
    assert.ok(durations.every((d) => d >= 8_500 && d <= 11_500));
    assert.ok(new Set(durations).size > 10);
    assert.deepEqual(
      simulate(opts).run.attempts.map((a) => a.endMs),
      r.run.attempts.map((a) => a.endMs),
    );
  });
});

describe('simulator: FIFO with a locality wait', () => {
  // w1 runs m0 (its own input, 4 s); m1's input is on w1 too, so w2's free slot waits for it.
  const run = (nodeLocalDelayMs: number) =>
    simulate({
      workload: {
        name: 'wait',
        jobs: [job('job_0001', 0, [task(4_000, { replicas: ['w1'] }), task(1_000, { replicas: ['w1'] })])],
      },
      cluster: cluster(worker('w1', 'r1'), worker('w2', 'r1')),
      policy: new FifoPolicy({ nodeLocalDelayMs }),
      heartbeatMs: 1000,
    })
      .run.attempts.map((a) => [a.taskId, a.workerId, a.startMs, a.locality] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([, workerId, startMs, locality]) => [workerId, startMs, locality]);

  test('without a wait the second map runs on the other worker at once', () => {
    assert.deepEqual(run(0), [
      ['w1', 0, 'node'],
      ['w2', 0, 'rack'],
    ]);
  });

  test('a wait longer than the holder is busy runs it on the holder when it frees', () => {
    assert.deepEqual(run(5_000), [
      ['w1', 0, 'node'],
      ['w1', 4_000, 'node'],
    ]);
  });

  test(
    'a shorter wait runs it elsewhere at the first heartbeat once ' + 'the wait is over, though nothing else changed',
    () => {
      const [first, second] = run(2_000);
      assert.deepEqual(first, ['w1', 0, 'node']);
      // At a heartbeat within one interval (1 s) after the wait ran out, not when w1 freed at 4 s.
      assert.deepEqual([second![0], second![2]], ['w2', 'rack']);
      assert.ok((second![1] as number) >= 2_000 && (second![1] as number) < 3_000, String(second![1]));
    },
  );
});

describe('simulator: decisions', () => {
  /** FIFO, plus one kill of the first running map at the first call at or after 5 s. */
  function killingPolicy(): Policy {
    const fifo = new FifoPolicy();
    let killed = false;
    return {
      name: 'kill-once',
      consultWhen: 'every-event',
      schedule(s: ClusterSnapshot): readonly Decision[] {
        const victim = s.jobs.flatMap((j) => j.runningAttempts)[0];
        if (!killed && s.now >= 5_000 && victim) {
          killed = true;
          return [{ kind: 'kill', attemptId: victim.id, reason: 'test' }];
        }
        return fifo.schedule(s);
      },
    };
  }

  test('a kill returns the task to pending and counts the input read and the slot time lost', () => {
    const r = simulate({
      workload: { name: 'k', jobs: [job('job_0001', 0, [task(10_000, { inputBytes: 64 * MiB, replicas: ['w1'] })])] },
      cluster: cluster(worker('w1', 'r1')),
      policy: killingPolicy(),
      heartbeatMs: 1000,
    });
    assert.deepEqual(
      r.run.attempts.map((a) => [a.outcome, a.startMs, a.endMs, a.bytesRead]),
      [
        ['killed', 0, 5_000, 32 * MiB],
        // The kill does not reschedule by itself (as in the JobTracker): the next heartbeat does.
        ['succeeded', 6_000, 16_000, 64 * MiB],
      ],
    );
    assert.equal(r.run.attempts[0]!.cause, 'policy-kill: test');
  });

  test('migrate, replicate and move-node are honoured', () => {
    let step = 0;
    const policy: Policy = {
      name: 'misc',
      consultWhen: 'every-event',
      schedule(s) {
        step++;
        if (step === 1) {
          const t = s.jobs[0]!.pendingTasks[0]!;
          return [
            { kind: 'migrate', jobId: 'job_0001', toPartition: 1, partialSizeMs: 5, timerMs: 3 },
            { kind: 'replicate', taskId: t.id, jobId: 'job_0001', workerId: 'w2' },
            { kind: 'move-node', workerId: 'w2', toCluster: 'c-2' },
          ];
        }
        if (step === 2) {
          assert.equal(s.jobs[0]!.partition, 1);
          assert.deepEqual(s.jobs[0]!.pendingTasks[0]!.preferredWorkers, ['w1', 'w2']);
          assert.deepEqual(s.jobs[0]!.pendingTasks[0]!.preferredRacks, ['r1', 'r2']);
          assert.equal(s.workers.find((w) => w.id === 'w2')!.cluster, 'c-2');
        }
        return new FifoPolicy().schedule(s);
      },
    };
    const r = simulate({
      workload: { name: 'm', jobs: [job('job_0001', 0, [task(1_000, { inputBytes: 64 * MiB, replicas: ['w1'] })])] },
      cluster: cluster(worker('w1', 'r1', { mapSlots: 0 }), worker('w2', 'r2')),
      policy,
      heartbeatMs: 500,
    });
    assert.ok(step >= 2);
    assert.deepEqual(r.run.jobs[0]!.migrations, [{ timeMs: 0, from: 0, to: 1, partialSizeMs: 5, timerMs: 3 }]);
    assert.equal(r.run.jobs[0]!.partition, 1);
    assert.deepEqual(r.run.replications, [
      {
        timeMs: 0,
        jobId: 'job_0001',
        taskId: 'task_0001_m_000000',
        workerId: 'w2',
        bytes: 64 * MiB,
        crossRack: true,
        cause: 'extra',
      },
    ]);
    assert.equal(r.run.attempts[0]!.locality, 'node');
    assert.equal(r.run.attempts[0]!.partition, 1);
  });

  test('owed replicas: a replicate places one, the window close completes the rest on a rack-mate', () => {
    // Two maps of a private data set on w1, each owing one replica; the policy places map 0's on w3
    // (another rack) at once; map 1's is still owed when the 5 s window closes and goes to w2, w1's
    // rack-mate. A second replicate for map 0 is an extra copy.
    let step = 0;
    const owedSeen: number[][] = [];
    const policy: Policy = {
      name: 'owed',
      consultWhen: 'every-event',
      schedule(s) {
        step++;
        const maps = s.jobs[0]?.pendingTasks ?? [];
        owedSeen.push(maps.map((t) => t.unplacedReplicas ?? 0));
        if (step === 1) return [{ kind: 'replicate', taskId: maps[0]!.id, jobId: 'job_0001', workerId: 'w3' }];
        if (step === 2) return [{ kind: 'replicate', taskId: maps[0]!.id, jobId: 'job_0001', workerId: 'w4' }];
        // Nothing runs before the window has closed, so the completion lands on a pending map.
        return s.now < 6_000 ? [] : new FifoPolicy().schedule(s);
      },
    };
    const r = simulate({
      workload: {
        name: 'owed',
        jobs: [
          {
            ...job('job_0001', 0, [
              task(1_000, { inputBytes: 64 * MiB, replicas: ['w1'] }),
              task(1_000, { inputBytes: 64 * MiB, replicas: ['w1'] }),
            ]),
            inputPlacement: { replication: 2, windowMs: 5_000 },
          },
        ],
      },
      cluster: cluster(worker('w1', 'r1'), worker('w2', 'r1'), worker('w3', 'r2'), worker('w4', 'r2')),
      policy,
      heartbeatMs: 1000,
    });
    assert.deepEqual(owedSeen.slice(0, 3), [
      [1, 1],
      [0, 1],
      [0, 1],
    ]);
    assert.deepEqual(
      r.run.replications.map((x) => [x.timeMs, x.taskId, x.workerId, x.cause]),
      [
        [0, 'task_0001_m_000000', 'w3', 'placed'],
        // The next scheduling round: the next worker's heartbeat (four workers share each second).
        [250, 'task_0001_m_000000', 'w4', 'extra'],
        [5_000, 'task_0001_m_000001', 'w2', 'completed'],
      ],
    );
    const d = computeMetrics(r.run, new Map()).dataMovement;
    assert.deepEqual([d.replicatedBytes, d.placedBytes, d.completedBytes], [64 * MiB, 64 * MiB, 64 * MiB]);
    assert.ok(r.run.attempts.every((a) => a.outcome === 'succeeded' && a.locality === 'node'));
  });

  test('an invalid decision list is an error naming the policy', () => {
    const policy: Policy = {
      name: 'broken',
      consultWhen: 'every-event',
      schedule: () => [{ kind: 'launch', taskId: 'nope', jobId: 'job_0001', workerId: 'w1', locality: 'any' }],
    };
    assert.throws(
      () =>
        simulate({
          workload: { name: 'x', jobs: [job('job_0001', 0, [task(1)])] },
          cluster: cluster(worker('w1', 'r1')),
          policy,
        }),
      (err: unknown) =>
        err instanceof MinimrError && /policy 'broken'/.test(err.message) && /not pending/.test(err.message),
    );
  });

  test('frozen snapshots: a policy that writes to one throws', () => {
    const policy: Policy = {
      name: 'writer',
      consultWhen: 'every-event',
      schedule(s) {
        (s.jobs[0] as { partition: number }).partition = 3;
        return [];
      },
    };
    assert.throws(
      () =>
        simulate({
          workload: { name: 'x', jobs: [job('job_0001', 0, [task(1)])] },
          cluster: cluster(worker('w1', 'r1')),
          policy,
          freeze: true,
        }),
      (err: MinimrError) =>
        err.code === 'EPOLICY' &&
        err.details?.rule === 'does-not-throw' &&
        /^policy 'writer' broke the policy contract, rule does-not-throw: schedule threw TypeError: /.test(err.message),
    );
  });

  test('incremental snapshots: nothing a policy has seen changes afterwards', () => {
    const seen: Array<{ snapshot: ClusterSnapshot; copy: string }> = [];
    const fifo = new FifoPolicy();
    const policy: Policy = {
      name: 'recorder',
      consultWhen: 'every-event',
      schedule(s) {
        seen.push({ snapshot: s, copy: JSON.stringify(s) });
        return fifo.schedule(s);
      },
    };
    simulate({
      workload: tyrexWorkload({ variant: 'hvw', seed: 3, scale: 0.05 }),
      cluster: clusterPreset('tyrex-20'),
      policy,
      failures: { workers: [{ workerId: 'w0003', atMs: 20_000, backAtMs: 60_000 }] },
    });
    assert.ok(seen.length > 100);
    for (const [i, { snapshot, copy }] of seen.entries())
      assert.equal(JSON.stringify(snapshot), copy, `snapshot ${i} changed after the call`);
    // And unchanged parts are shared, not copied: consecutive snapshots share worker views.
    const shared = seen
      .slice(1)
      .filter((x, i) => x.snapshot.workers.some((w, k) => w === seen[i]!.snapshot.workers[k]));
    assert.ok(shared.length > seen.length / 2);
  });

  test("'when-useful' calls give FIFO exactly the decisions 'every-event' calls do", () => {
    const base = {
      workload: tyrexWorkload({ variant: 'mvw', seed: 4, scale: 0.1 }),
      cluster: clusterPreset('tyrex-20'),
      batchSameTime: false,
      heartbeatMs: 3000,
    };
    const every = simulate({ ...base, policy: new FifoPolicy(), policyCalls: 'every-event' });
    const useful = simulate({ ...base, policy: new FifoPolicy(), policyCalls: 'when-useful' });
    assert.ok(useful.stats.policyCalls < every.stats.policyCalls / 2);
    assert.deepEqual(
      useful.decisions.map((d) => [d.timeMs, d.decision]),
      every.decisions.map((d) => [d.timeMs, d.decision]),
    );
  });
});

describe('simulator: determinism', () => {
  const run = (seed: number) =>
    simulate({
      workload: tyrexWorkload({ variant: 'hvw', seed: 11, scale: 0.2 }),
      cluster: clusterPreset('tyrex-20'),
      policy: new FifoPolicy(),
      seed,
      noise: 0.15,
      failures: { attemptFailureProbability: 0.02 },
    });

  test('same seed: byte-identical run record and decisions; another seed: different', () => {
    const a = run(1);
    const b = run(1);
    assert.equal(JSON.stringify(a.run), JSON.stringify(b.run));
    assert.equal(JSON.stringify(a.decisions), JSON.stringify(b.decisions));
    const c = run(2);
    assert.notEqual(JSON.stringify(c.run), JSON.stringify(a.run));
  });
});
