/**
 * NodeHoldings (src/scheduler/holdings.ts) keeps what runs on each node between calls. What it
 * answers must be what a walk of the snapshot gives, holding by holding and in the same order (the
 * disk share adds spill rates in that order): checked here against such a walk, written out
 * afresh, on every event of simulated runs and on hand-built snapshots that break the books'
 * habits (jobs reordered, an attempt listed twice or moved).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  NodeHoldings,
  createPolicy,
  elasticDiskMBps,
  penalizedMs,
  type AttemptView,
  type ClusterSnapshot,
  type Decision,
  type Holding,
  type JobView,
  type PenaltyModel,
  type Policy,
  type TimelineRelease,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { uniformCluster, yarnMeTrace, type Workload } from '../../src/workloads/index.js';
import { mkAttempt } from '../helpers/books.js';
import { mkJob, mkSnapshot, mkWorker } from './snapshot-driver.js';

/** Every node's holdings from a walk of the snapshot: jobs in order, each job's attempts in order. */
function walked(snapshot: ClusterSnapshot): Map<string, Holding[]> {
  const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
  const now = snapshot.now;
  const byNode = new Map<string, Holding[]>();
  for (const job of snapshot.jobs) {
    for (const a of job.runningAttempts) {
      const w = workers.get(a.workerId);
      const disk = w ? (w.diskMBps > 0 ? w.diskMBps : 100) : 100;
      const elapsed = Math.max(1, now - a.startTime);
      const end =
        a.idealDurationMs !== undefined
          ? a.startTime + penalizedMs(a.idealMemoryMb, a.penalty, a.idealDurationMs, a.memoryMb, disk)
          : a.progress > 0
            ? a.startTime + elapsed / a.progress
            : now + elapsed;
      const spill =
        a.elastic && a.idealDurationMs !== undefined && w
          ? elasticDiskMBps(a.idealMemoryMb, a.penalty, a.idealDurationMs, a.memoryMb, disk)
          : 0;
      const h = { jobId: a.jobId, kind: a.kind, memoryMb: a.memoryMb, endMs: Math.max(now, end), diskMBps: spill };
      byNode.set(a.workerId, [...(byNode.get(a.workerId) ?? []), h]);
    }
  }
  return byNode;
}

/**
 * Every running attempt as the timeline releases it, from a walk of the snapshot: the walk's list
 * sorted (stably) by end, an end already passed taken as now; and each job's latest end.
 */
function walkedReleases(snapshot: ClusterSnapshot): { releases: TimelineRelease[]; latest: Map<string, number> } {
  const list: TimelineRelease[] = [];
  for (const [nodeId, holdings] of walked(snapshot)) for (const h of holdings) list.push({ nodeId, ...h });
  // walked() lists by node; the walk's own order is jobs, then their attempts.
  const order = snapshot.jobs.flatMap((j) => j.runningAttempts);
  const listed = order.map((a) => {
    const i = list.findIndex((r) => r.nodeId === a.workerId && r.jobId === a.jobId && r.memoryMb === a.memoryMb);
    const [r] = list.splice(i, 1);
    return r!;
  });
  const latest = new Map<string, number>();
  for (const r of listed) latest.set(r.jobId, Math.max(latest.get(r.jobId) ?? r.endMs, r.endMs));
  return {
    releases: listed
      .map((r) => ({ nodeId: r.nodeId, jobId: r.jobId, kind: r.kind, memoryMb: r.memoryMb, endMs: r.endMs }))
      .sort((a, b) => a.endMs - b.endMs),
    latest,
  };
}

/** The workers each NodeHoldings was last read with (inReleaseOrder is told when they changed). */
const lastWorkers = new WeakMap<NodeHoldings, string>();

/**
 * Asserts the kept holdings of every node named in the snapshot (workers and attempts) are the
 * walk's, and so are the running attempts in release order.
 */
function assertSameAsWalk(kept: NodeHoldings, snapshot: ClusterSnapshot, where: string): void {
  kept.update(snapshot.jobs);
  const expected = walked(snapshot);
  const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
  const nodes = new Set([...workers.keys(), ...expected.keys()]);
  for (const node of nodes)
    assert.deepEqual(kept.on(node, workers.get(node), snapshot.now), expected.get(node) ?? [], `${where}, ${node}`);
  const ids = [...workers.keys()].join(',');
  const running = kept.inReleaseOrder(snapshot.now, (id) => workers.get(id), lastWorkers.get(kept) !== ids);
  lastWorkers.set(kept, ids);
  const reference = walkedReleases(snapshot);
  const now = snapshot.now;
  assert.deepEqual(
    running.releases.map((r) => ({ ...r, endMs: Math.max(now, r.endMs) })),
    reference.releases,
    `${where}: release order`,
  );
  for (const job of snapshot.jobs) {
    const latest = running.latestEndMs(job.id);
    assert.equal(
      latest === undefined ? undefined : Math.max(now, latest),
      reference.latest.get(job.id),
      `${where}: ${job.id}'s latest end`,
    );
  }
}

/** Checks the kept holdings on every event, then lets `inner` decide. */
class CheckingPolicy implements Policy {
  readonly name = 'checking holdings';
  readonly consultWhen = 'every-event';
  calls = 0;
  nonEmpty = 0;
  private readonly kept = new NodeHoldings();

  constructor(private readonly inner: Policy) {}

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    this.calls++;
    if (snapshot.jobs.some((j) => j.runningAttempts.length > 0)) this.nonEmpty++;
    assertSameAsWalk(this.kept, snapshot, `call ${this.calls} at ${snapshot.now} ms`);
    return this.inner.schedule(snapshot);
  }
}

const MiB = 1024 * 1024;
const mapSpill: PenaltyModel = {
  kind: 'spill',
  rule: 'map',
  bufferBytes: 400 * MiB,
  overheadMb: 0,
  minFraction: 0.1,
};

/** The YARN-ME trace with spill penalties (elastic attempts then have disk rates); some tasks without estimates. */
function spillTrace(seed: number): Workload {
  const w = yarnMeTrace({
    kind: 'uniform',
    penalty: 3,
    seed,
    scale: 0.1,
    maxTasks: 60,
    maxDurationS: 120,
    maxMemoryGb: 6,
  });
  return { ...w, jobs: w.jobs.map((j) => ({ ...j, maps: j.maps.map((t) => ({ ...t, penalty: mapSpill })) })) };
}

const cluster = uniformCluster({
  name: 'holdings-8',
  workers: 8,
  perRack: 4,
  mapSlots: 8,
  reduceSlots: 0,
  memoryMb: 8 * 1024,
  diskMBps: 100,
});

describe('NodeHoldings: what a walk of the snapshot gives, on every event of a run', () => {
  for (const [policy, seed] of [
    ['yarn-me', 1],
    ['yarn-me', 2],
    ['yarn', 3],
  ] as const) {
    test(`${policy}, seed ${seed}`, () => {
      const checking = new CheckingPolicy(createPolicy(policy));
      const r = simulate({ workload: spillTrace(seed), cluster, policy: checking, recordDecisions: false });
      assert.ok(checking.nonEmpty > 100, `${checking.nonEmpty} calls with attempts running`);
      assert.equal(r.run.jobs.filter((j) => j.finishMs === null).length, 0);
    });
  }

  test('elastic attempts with spill rates are among them', () => {
    let spilling = 0;
    const inner = createPolicy('yarn-me');
    const counting: Policy = {
      name: 'counting',
      consultWhen: 'every-event',
      schedule: (s) => {
        for (const j of s.jobs) for (const a of j.runningAttempts) if (a.elastic) spilling++;
        return inner.schedule(s);
      },
    };
    simulate({ workload: spillTrace(1), cluster, policy: counting, recordDecisions: false });
    assert.ok(spilling > 0);
  });
});

describe('NodeHoldings: hand-built snapshots', () => {
  const workers: WorkerView[] = [mkWorker('w1', 'r1', { diskMBps: 100 }), mkWorker('w2', 'r1', { diskMBps: 50 })];
  const spill: PenaltyModel = { ...mapSpill, bufferBytes: 1000 * MiB };
  const attempt = (jobId: string, index: number, workerId: string, over: Partial<AttemptView> = {}): AttemptView =>
    mkAttempt(jobId, 'map', index, workerId, 1_000, {
      memoryMb: 500,
      idealMemoryMb: 1000,
      elastic: true,
      idealDurationMs: 10_000,
      penalty: spill,
      progress: 0.1,
      ...over,
    });
  const job = (id: string, attempts: AttemptView[], submitTime = 0): JobView =>
    mkJob(id, [], { runningAttempts: attempts, submitTime });

  test('attempts come, go, report progress, and lose their estimate; jobs leave and arrive', () => {
    const kept = new NodeHoldings();
    const a0 = attempt('a', 0, 'w1');
    const a1 = attempt('a', 1, 'w1', { idealDurationMs: undefined, progress: 0.25 });
    const b0 = attempt('b', 0, 'w1', { memoryMb: 300 });
    const b1 = attempt('b', 1, 'w2');
    const snapshots = [
      mkSnapshot(workers, [job('a', [a0, a1]), job('b', [b0, b1])], { now: 2_000 }),
      // a1's progress; a new attempt of b before b0 on w1 (a task of lower index).
      mkSnapshot(workers, [job('a', [a0, { ...a1, progress: 0.5 }]), job('b', [attempt('b', 7, 'w1'), b0, b1])], {
        now: 3_000,
      }),
      // a0 ends; job c arrives with an attempt on w1; w2 is gone.
      mkSnapshot(
        [workers[0]!],
        [job('a', [{ ...a1, progress: 0.5 }]), job('b', [b0, b1]), job('c', [attempt('c', 0, 'w1')])],
        { now: 40_000 },
      ),
      // a leaves; b's attempts end and a new one starts.
      mkSnapshot(workers, [job('b', [attempt('b', 9, 'w1')]), job('c', [attempt('c', 0, 'w1')])], { now: 41_000 }),
    ];
    snapshots.forEach((s, i) => assertSameAsWalk(kept, s, `snapshot ${i}`));
  });

  test('jobs in another order, an attempt listed twice, moved to another node or changed: still the walk', () => {
    const kept = new NodeHoldings();
    const a = [attempt('a', 0, 'w1'), attempt('a', 1, 'w1', { memoryMb: 700 })];
    const b = [attempt('b', 0, 'w1', { memoryMb: 200 }), attempt('b', 1, 'w2')];
    const snapshots = [
      mkSnapshot(workers, [job('a', a), job('b', b)], { now: 2_000 }),
      // b before a.
      mkSnapshot(workers, [job('b', b), job('a', a)], { now: 2_000 }),
      // a's attempts in the other order.
      mkSnapshot(workers, [job('b', b), job('a', [a[1]!, a[0]!])], { now: 2_000 }),
      // An attempt twice.
      mkSnapshot(workers, [job('b', b), job('a', [a[1]!, a[0]!, a[0]!])], { now: 2_000 }),
      mkSnapshot(workers, [job('a', a), job('b', b)], { now: 2_500 }),
      // b's second attempt now on w1.
      mkSnapshot(workers, [job('a', a), job('b', [b[0]!, { ...b[1]!, workerId: 'w1' }])], { now: 2_500 }),
      mkSnapshot(workers, [job('a', a), job('b', b)], { now: 3_000 }),
      // The same attempt with another grant and estimate.
      mkSnapshot(workers, [job('a', [{ ...a[0]!, memoryMb: 800, idealDurationMs: 20_000 }, a[1]!]), job('b', b)], {
        now: 3_000,
      }),
      // A job twice.
      mkSnapshot(workers, [job('a', a), job('b', b), job('a', a)], { now: 3_000 }),
      mkSnapshot(workers, [job('a', a)], { now: 3_000 }),
    ];
    snapshots.forEach((s, i) => assertSameAsWalk(kept, s, `snapshot ${i}`));
  });
});
