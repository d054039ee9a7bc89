/**
 * YARN's shape around the yarn and yarn-me policies, in the simulator (issue 36): ApplicationMasters
 * placed first and held until their job's last task ends, allocation at node heartbeats with at most
 * maxAssign containers each, launches through the AM's next heartbeat, FairScheduler's reservations
 * and guards, and the deadlock the simulator ends a run with. Every expected figure is worked out by
 * hand in the comments from the rules in docs/specs/yarn-me.md and DSS's events/yarn/yarn.py.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { runSimCommand, simPolicyOptions } from '../../src/experiments/index.js';
import { createPolicy, parseYarnOptions, type PolicyOptions } from '../../src/scheduler/index.js';
import { simulate, type SimulationResult } from '../../src/sim/index.js';
import { uniformCluster, type JobSpec, type Workload } from '../../src/workloads/index.js';

const NO_NOISE = { noise: 0, memoryNoise: 0, penaltyNoise: 0 } as const;

function job(id: string, submitMs: number, tasks: number, memoryMb: number, workMs: number): JobSpec {
  return {
    id,
    name: id,
    app: 'synthetic',
    submitMs,
    maps: Array.from({ length: tasks }, () => ({ workMs, memoryMb, replicas: [] })),
    reduces: [],
  };
}

function run(
  jobs: readonly JobSpec[],
  shape: { workers: number; slots: number; memoryMb: number },
  options: PolicyOptions,
  heartbeatMs = 1000,
  policy = 'yarn',
): SimulationResult {
  const workload: Workload = { name: 'hand-built', jobs };
  const cluster = uniformCluster({
    name: 'hand-built',
    workers: shape.workers,
    perRack: shape.workers,
    mapSlots: shape.slots,
    reduceSlots: 0,
    memoryMb: shape.memoryMb,
    diskMBps: 100,
  });
  return simulate({ ...NO_NOISE, workload, cluster, policy: createPolicy(policy, options), heartbeatMs });
}

const finishOf = (r: SimulationResult, id: string): number | null => r.run.jobs.find((j) => j.id === id)!.finishMs;
const starts = (r: SimulationResult): number[] => r.run.attempts.map((a) => a.startMs).sort((a, b) => a - b);

describe('ApplicationMasters', () => {
  test("a job's AM holds memory beside its tasks until the job ends", () => {
    // One node of 10,000 MB and 4 cores, three 5,000 MB tasks of 100 s. Without an AM two run at once
    // and the third after them: 200 s. With a 1,000 MB AM only one fits beside it: 300 s.
    const jobs = [job('j', 0, 3, 5000, 100_000)];
    const shape = { workers: 1, slots: 4, memoryMb: 10_000 };
    assert.equal(finishOf(run(jobs, shape, { amMb: 0 }), 'j'), 200_000);
    assert.equal(finishOf(run(jobs, shape, { amMb: 1000 }), 'j'), 300_000);
  });

  test('an AM takes its cores', () => {
    // Two cores, four 1,000 MB tasks of 10 s: two at a time without an AM (20 s), one with it (40 s).
    const jobs = [job('j', 0, 4, 1000, 10_000)];
    const shape = { workers: 1, slots: 2, memoryMb: 10_000 };
    assert.equal(finishOf(run(jobs, shape, { amMb: 0 }), 'j'), 20_000);
    assert.equal(finishOf(run(jobs, shape, { amMb: 1000, amCores: 1 }), 'j'), 40_000);
  });

  test("the next job's AM waits for the memory the first job's AM gives back when it ends", () => {
    // 10,000 MB: a's AM (1,000) and a's 9,000 MB task fill the node until 50 s; b (submitted at 1 ms)
    // gets its AM and its task only then, and ends at 100 s.
    const jobs = [job('a', 0, 1, 9000, 50_000), job('b', 1, 1, 9000, 50_000)];
    const r = run(jobs, { workers: 1, slots: 4, memoryMb: 10_000 }, { amMb: 1000 });
    assert.equal(finishOf(r, 'a'), 50_000);
    assert.equal(finishOf(r, 'b'), 100_000);
  });

  test('a real cluster runs the policies without AMs', () => {
    assert.equal(createPolicy('yarn', {}, 'cluster').options?.amMb, 0);
    assert.equal(createPolicy('yarn-me', { backfillReserved: false }, 'cluster').options?.amMb, 0);
    assert.equal(createPolicy('yarn', { amMb: 512 }, 'cluster').options?.amMb, 512, 'unless told');
    assert.equal(createPolicy('yarn').options?.amMb, 1000);
  });
});

describe('allocation at node heartbeats', () => {
  // One node, heartbeats every 1,000 ms; the first after the job's arrival at 0 is at 1,000. No AMs,
  // so launches are at once.
  const shape = { workers: 1, slots: 16, memoryMb: 16_000 };
  const jobs = [job('j', 0, 4, 1000, 60_000)];

  test('one container per heartbeat (maxAssign 1), as FairScheduler without assignmultiple', () => {
    const r = run(jobs, shape, { amMb: 0, allocation: 'heartbeat', maxAssign: 1 });
    assert.deepEqual(starts(r), [0, 1000, 2000, 3000]);
    assert.equal(r.stats.policyCallMode, 'every-event');
  });

  test('maxAssign 2: two per heartbeat; 0: all that fit', () => {
    const two = run(jobs, shape, { amMb: 0, allocation: 'heartbeat', maxAssign: 2 });
    assert.deepEqual(starts(two), [0, 0, 1000, 1000]);
    assert.deepEqual(starts(run(jobs, shape, { amMb: 0, allocation: 'heartbeat', maxAssign: 0 })), [0, 0, 0, 0]);
  });

  test("containers launch through the AM's next heartbeat", () => {
    // Node heartbeats at 0, 1000, ...; the job arrives at 0, its AM polls at 1000, 2000, ...
    // 0: the node heartbeat allocates the AM; it starts at its first poll after that, 1000.
    // 1000: the node heartbeat allocates the task; the AM picks it up at its next heartbeat, 2000,
    // and launches it at the one after, 3000; 10 s of work end at 13,000.
    const r = run([job('j', 0, 1, 1000, 10_000)], shape, {
      amMb: 1000,
      allocation: 'heartbeat',
      maxAssign: 1,
      amHeartbeatMs: 1000,
    });
    const decision = r.decisions.find((d) => d.decision.kind === 'launch')!;
    assert.equal(decision.timeMs, 1000);
    assert.deepEqual(decision.decision, { ...decision.decision, startDelayMs: 2000 });
    assert.equal(finishOf(r, 'j'), 13_000);
  });
});

describe("a job's usage drops when the node reports the end (usageAtReports)", () => {
  // Two nodes with room for everything (no reservations), heartbeats every 1,000 ms: n1 at 0, 1000,
  // ..., n2 at 500, 1500, ...; no AMs (launches at once), one container per heartbeat. a arrives at
  // 400 ms: its first task (5,000 MB, 10.3 s) goes to n2 at 500 and ends at 10,800; its others and
  // b's (arrived at 401) are 1,000 MB x 1,000 s. The queue puts the job using less first, a on ties.
  //   1000-3000: b (usage 1,000 to 5,000 against a's 5,000); then a and b take turns, the tie going
  //   to a: a at 3500, 4500, ..., 10,500 (a 13,000 MB), b at 4000, ..., 10,000 (b 12,000).
  //   10,800: a's first task ends on n2, whose next heartbeat is at 11,500.
  //   11,000 (n1): usage counted when the container ends: a 8,000 < b 12,000, a's task. Counted when
  //   n2 reports it: a still 13,000 > b 12,000, b's task.
  const nodes = { workers: 2, slots: 100, memoryMb: 1_000_000 };
  const a: JobSpec = {
    ...job('a', 400, 20, 1000, 1_000_000),
    maps: [
      { workMs: 10_300, memoryMb: 5000, replicas: [] },
      ...Array.from({ length: 19 }, () => ({ workMs: 1_000_000, memoryMb: 1000, replicas: [] })),
    ],
  };
  const b = job('b', 401, 20, 1000, 1_000_000);
  const jobAt = (r: SimulationResult, ms: number): string[] =>
    r.run.attempts.filter((x) => x.startMs === ms).map((x) => x.jobId);

  test('the container at 11,000 goes to b, whose fair share is now the lesser', () => {
    const r = run([a, b], nodes, { compat: 'dss', amMb: 0, usageAtReports: true });
    assert.deepEqual(jobAt(r, 10_500), ['a']);
    assert.deepEqual(jobAt(r, 11_000), ['b']);
    assert.deepEqual(jobAt(r, 11_500), ['a']);
  });

  test('without it (the default, compat dss too): to a, whose usage dropped when its task ended', () => {
    const r = run([a, b], nodes, { compat: 'dss', amMb: 0 });
    assert.deepEqual(jobAt(r, 11_000), ['a']);
  });

  test('it is off unless asked for, compat dss included', () => {
    assert.equal(parseYarnOptions({}).usageAtReports, false);
    assert.equal(parseYarnOptions({ compat: 'dss' }).usageAtReports, false);
    assert.equal(parseYarnOptions({ compat: 'dss', usageAtReports: true }).usageAtReports, true);
  });
});

describe('reservations and the deadlock', () => {
  // Two nodes of 2,000 MB; two jobs of 1,500 MB tasks. Each job's AM (1,000 MB) lands on a node of
  // its own, leaving 1,000 MB there: no task fits anywhere, ever.
  const shape = { workers: 2, slots: 4, memoryMb: 2000 };
  const jobs = [job('a', 0, 2, 1500, 10_000), job('b', 1, 2, 1500, 10_000)];

  test('is detected: the run ends at once, naming each stuck job and why', () => {
    const r = run(jobs, shape, { compat: 'dss' });
    assert.ok(r.run.deadlock, 'a deadlock is recorded');
    assert.deepEqual(r.run.deadlock.jobs.map((j) => j.jobId).sort(), ['a', 'b']);
    for (const j of r.run.deadlock.jobs)
      assert.match(j.reason, /needs 1500 MB and the most free on any node is 1000 MB/);
    assert.ok(r.run.endMs < 10_000, `ended at ${r.run.endMs} ms, not after the stall limit`);
    assert.deepEqual(
      r.run.jobs.map((j) => j.state),
      ['unfinished', 'unfinished'],
    );
  });

  test("maxAMShare keeps one AM out until the other's job ends, and both finish", () => {
    // AMs may hold a quarter of 4,000 MB: one at a time. a's AM and a task (2,500 MB) fit one node,
    // the other task the other node.
    const r = run(jobs, shape, { compat: 'dss', maxAMShare: 0.25 });
    assert.equal(r.run.deadlock, undefined);
    assert.deepEqual(
      r.run.jobs.map((j) => j.state),
      ['succeeded', 'succeeded'],
    );
  });

  test('reservable-nodes: the head job reserves at most its share of the nodes', () => {
    // Ten nodes of 2,000 MB. "busy" puts a 1,500 MB task of 100 s on each at the first heartbeats;
    // "big" (2,000 MB tasks, at 20 s) fits nowhere until those end and, first in the queue (no memory
    // in use), reserves every node it is offered; "small" (400 MB tasks of 10 s, at 21 s) would fit in
    // the 500 MB left on each node. No guard: big reserves all ten, so small waits for busy's end past
    // 100 s. reservableNodes 0.2: big reserves ceil(0.2 * 10) = 2 nodes and small runs on the others
    // at their next heartbeats (done by about 33 s).
    const ten = { workers: 10, slots: 4, memoryMb: 2000 };
    const jobs3 = [
      job('busy', 0, 10, 1500, 100_000),
      job('big', 20_000, 10, 2000, 10_000),
      job('small', 21_000, 8, 400, 10_000),
    ];
    const options = { amMb: 0, reservationLimit: 'none', allocation: 'heartbeat', maxAssign: 1 } as const;
    const unguarded = finishOf(run(jobs3, ten, { ...options, reservableNodes: 1 }), 'small')!;
    const guarded = finishOf(run(jobs3, ten, { ...options, reservableNodes: 0.2 }), 'small')!;
    assert.ok(unguarded > 100_000, `unguarded: small ended at ${unguarded} ms`);
    assert.ok(guarded <= 40_000, `guarded: small ended at ${guarded} ms`);
  });
});

describe('minimr sim --compat dss, --am-mb', () => {
  const workloadFile = (dir: string) => {
    const file = join(dir, 'w.json');
    writeFileSync(
      file,
      JSON.stringify({
        format: 'minimr-workload',
        name: 'two-jobs',
        jobs: [job('a', 0, 2, 1500, 10_000), job('b', 1, 2, 1500, 10_000)],
      }),
    );
    return file;
  };
  const clusterFile = (dir: string) => {
    const file = join(dir, 'c.json');
    const node = (id: string) => ({ id, rack: 'r1', mapSlots: 4, reduceSlots: 0, memoryMb: 2000, diskMBps: 100 });
    writeFileSync(file, JSON.stringify({ format: 'minimr-cluster', name: 'two', workers: [node('n1'), node('n2')] }));
    return file;
  };

  test('the table says which jobs are stuck and why; --am-mb 0 lets them run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'minimr-yarn-shape-'));
    try {
      const args = { workload: workloadFile(dir), cluster: clusterFile(dir), policies: ['yarn'] };
      const stuck = await runSimCommand({ ...args, compat: 'dss' }, () => undefined);
      assert.match(stuck.table, /yarn: deadlock at t=[\d.]+ s: 2 job\(s\) can never run/);
      assert.match(stuck.table, /a: its next task needs 1500 MB and the most free on any node is 1000 MB/);
      assert.equal(stuck.result.policies[0]!.stats.heartbeatMs, 1000, "DSS's node heartbeat");
      const free = await runSimCommand({ ...args, compat: 'dss', amMb: 0 }, () => undefined);
      assert.doesNotMatch(free.table, /deadlock/);
      assert.equal(free.result.policies[0]!.metrics.finished, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--compat for policies that do not model YARN is EUSAGE', () => {
    assert.throws(
      () => simPolicyOptions({ workload: 'x', policies: ['fifo', 'fair'], compat: 'dss' }),
      (e: unknown) => e instanceof MinimrError && e.code === 'EUSAGE' && /yarn, yarn-me/.test(e.message),
    );
    assert.deepEqual(simPolicyOptions({ workload: 'x', policies: ['fifo', 'yarn'], amMb: 0 }), {
      fifo: {},
      yarn: { amMb: 0 },
    });
  });

  test('--policy-options: one object for each policy, or keyed by policy name, each its own', () => {
    const timers = { timersMs: [60_000] };
    assert.deepEqual(simPolicyOptions({ workload: 'x', policies: ['tyrex-static', 'tyrex'], policyOptions: timers }), {
      'tyrex-static': timers,
      tyrex: timers,
    });
    const keyed = { 'tyrex-static': timers, fair: { preemption: false } } as unknown as PolicyOptions;
    assert.deepEqual(
      simPolicyOptions({ workload: 'x', policies: ['fifo', 'fair', 'tyrex-static'], policyOptions: keyed }),
      { fifo: {}, fair: { preemption: false }, 'tyrex-static': timers },
    );
  });
});

describe('Policy.readsProgress', () => {
  test("the simulator reports no progress to a policy that reads only unestimated attempts' (every simulated task has an estimate)", () => {
    const seen = (readsProgress: 'all' | 'unestimated'): number => {
      const inner = createPolicy('yarn', { amMb: 0 });
      let most = 0;
      const policy = {
        name: 'watching',
        consultWhen: 'every-event' as const,
        readsProgress,
        schedule(s: Parameters<typeof inner.schedule>[0]) {
          for (const j of s.jobs) for (const a of j.runningAttempts) most = Math.max(most, a.progress);
          return inner.schedule(s);
        },
      };
      const workload: Workload = { name: 'one', jobs: [job('j', 0, 2, 1000, 30_000)] };
      const cluster = uniformCluster({
        name: 'one',
        workers: 1,
        perRack: 1,
        mapSlots: 2,
        reduceSlots: 0,
        memoryMb: 4000,
        diskMBps: 100,
      });
      simulate({ ...NO_NOISE, workload, cluster, policy, heartbeatMs: 1000 });
      return most;
    };
    assert.ok(seen('all') > 0.9, 'progress reported');
    assert.equal(seen('unestimated'), 0);
    // yarn and yarn-me predict ends from the estimates: their decisions do not need progress.
    assert.equal(createPolicy('yarn-me').readsProgress, 'unestimated');
  });
});
