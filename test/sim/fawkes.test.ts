/**
 * The simulator on MR-clusters (FAWKES): activation waits for the input to load, a drain's copies
 * take their hand-computed time, instant preemption leaves at once, and a whole FAWKES run keeps
 * every task on its own cluster's nodes and loses no block.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FifoPolicy,
  createPolicy,
  type ClusterSnapshot,
  type Decision,
  type Policy,
} from '../../src/scheduler/index.js';
import { computeMetrics } from '../../src/metrics/index.js';
import { simulate } from '../../src/sim/index.js';
import { clusterPreset, fawkesWorkload, type ClusterShape, type Workload } from '../../src/workloads/index.js';
import { MiB, cluster, job, task, worker } from './helpers.js';

/** w1..w4 on rack r1, w5..w8 on rack r2: one map slot each, disks of 100 MB/s. */
function eight(): ClusterShape {
  return cluster(
    ...['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, 'r1')),
    ...['w5', 'w6', 'w7', 'w8'].map((id) => worker(id, 'r2')),
  );
}

describe('simulator: MR-clusters', () => {
  test(
    'a job waits for its cluster: admitted with core nodes w1 and ' +
      'w5, it loads 3 x 1000 MiB at 2 x 100 MB/s (15 s), then runs on ' +
      'them only',
    () => {
      const workload: Workload = {
        name: 'activation',
        mrClusters: [{ name: 'A', minNodes: 2, inputBytes: 1000 * MiB }],
        jobs: [job('j1', 0, [task(1000), task(1000), task(1000), task(1000)], [], { cluster: 'A' })],
      };
      const { run } = simulate({ workload, cluster: eight(), policy: new FifoPolicy() });
      // Two slots from 15 s: two rounds of 1 s.
      assert.equal(run.jobs[0]!.submitMs, 0);
      assert.equal(run.jobs[0]!.finishMs, 17_000);
      assert.deepEqual([...new Set(run.attempts.map((a) => a.workerId))].sort(), ['w1', 'w5']);
      assert.deepEqual(
        run.mrClusters!.states.map((s) => `${s.timeMs}:${s.from}->${s.to}`),
        ['0:new->queued', '0:queued->activating', '15000:activating->active'],
      );
      assert.equal(run.mrClusters!.loadedBytes, 3000 * MiB);
    },
  );

  /**
   * A script: w3 joins A as a transient-core node; A's job j1 (one map writing 640 MiB of output,
   * ten blocks) runs there, j2 (30 s) on core node w1; once j1 is done, w3 leaves A by `preemption`.
   */
  function shrinkScript(preemption: 'instant' | 'delayed'): Policy {
    return {
      name: `script-${preemption}`,
      consultWhen: 'every-event',
      schedule(s: ClusterSnapshot): readonly Decision[] {
        const w3 = s.workers.find((w) => w.id === 'w3')!;
        const a = s.mrClusters?.find((c) => c.name === 'A');
        if (a?.state !== 'active') return [];
        if (w3.cluster === 'default' && a.storedBytes === 0)
          return [{ kind: 'move-node', workerId: 'w3', toCluster: 'A', nodeKind: 'transient-core' }];
        const out: Decision[] = [];
        for (const [jobId, workerId] of [
          ['j1', 'w3'],
          ['j2', 'w1'],
        ] as const) {
          const pending = s.jobs.find((j) => j.id === jobId)?.pendingTasks[0];
          if (pending && s.workers.find((w) => w.id === workerId)!.cluster === 'A')
            out.push({ kind: 'launch', taskId: pending.id, jobId, workerId, locality: 'any' });
        }
        if (a.storedBytes > 0 && w3.cluster === 'A' && w3.leavingFor === undefined)
          out.push({ kind: 'move-node', workerId: 'w3', toCluster: 'default', preemption });
        return out;
      },
    };
  }

  const shrinkWorkload: Workload = {
    name: 'shrink',
    mrClusters: [{ name: 'A', minNodes: 2 }],
    jobs: [
      job('j1', 0, [task(1000, { outputBytes: 640 * MiB })], [], { cluster: 'A' }),
      job('j2', 100, [task(30_000)], [], { cluster: 'A' }),
    ],
  };

  test(
    'delayed preemption: w3 drains its ten blocks one after ' +
      'another, to the core nodes w1 (its rack) and w5 (off-rack) in ' +
      'turn',
    () => {
      const { run } = simulate({
        workload: shrinkWorkload,
        cluster: eight(),
        policy: shrinkScript('delayed'),
        outputReplication: 1,
      });
      const mr = run.mrClusters!;
      // Copies alternate by load: five to w1 at min(100, 100, rack 100) MB/s = 640 ms each, five to
      // w5 at min(100, 100, off-rack 40) MB/s = 1600 ms each, one disk: 11.2 s in all.
      assert.equal(mr.drains.length, 1);
      const d = mr.drains[0]!;
      assert.deepEqual([d.workerId, d.cluster, d.bytes, d.cause], ['w3', 'A', 640 * MiB, 'drain']);
      assert.equal(d.startMs, run.jobs[0]!.finishMs);
      assert.ok(Math.abs(d.endMs - d.startMs - 11_200) < 1e-6, `drain took ${d.endMs - d.startMs} ms`);
      assert.deepEqual(
        mr.moves.map((m) => [m.workerId, m.from, m.to]).filter(([id]) => id === 'w3'),
        [
          ['w3', 'default', 'A'],
          ['w3', 'A', 'default'],
        ],
      );
      assert.equal(mr.moves.find((m) => m.workerId === 'w3' && m.to === 'default')!.timeMs, d.endMs);
      assert.deepEqual(mr.blocks, { blocks: 10, underReplicated: 0, missing: 0 });
      assert.equal(mr.copiedBytes, 640 * MiB);
    },
  );

  test(
    'instant preemption: with a second replica on a core node, w3 ' +
      'leaves at once and its blocks stay under-replicated',
    () => {
      const { run } = simulate({
        workload: shrinkWorkload,
        cluster: eight(),
        policy: shrinkScript('instant'),
        outputReplication: 2,
      });
      const mr = run.mrClusters!;
      assert.deepEqual(mr.drains, []);
      assert.equal(mr.moves.find((m) => m.workerId === 'w3' && m.to === 'default')!.timeMs, run.jobs[0]!.finishMs);
      assert.deepEqual(mr.blocks, { blocks: 10, underReplicated: 10, missing: 0 });
    },
  );

  test('a FAWKES run: every task ran on a node of its own cluster, no block was lost, and the figures add up', () => {
    const workload = fawkesWorkload({ variant: 'd', scale: 0.05, sizeScale: 0.1, minNodes: 4 });
    const policy = createPolicy('fawkes', { weighting: 'td', intervalMs: 60_000 });
    const { run } = simulate({ workload, cluster: clusterPreset('fawkes-48'), policy, recordDecisions: false });
    assert.ok(run.jobs.every((j) => j.state === 'succeeded'));
    const mr = run.mrClusters!;
    const clusterOf = (workerId: string, t: number): string => {
      let c = 'default';
      for (const m of mr.moves) if (m.workerId === workerId && m.timeMs <= t) c = m.to;
      return c;
    };
    const jobCluster = new Map(run.jobs.map((j) => [j.id, j.cluster]));
    for (const a of run.attempts.filter((x) => x.outcome === 'succeeded')) {
      assert.equal(
        clusterOf(a.workerId, a.startMs),
        jobCluster.get(a.jobId),
        `${a.id} on ${a.workerId} at ${a.startMs}`,
      );
    }
    assert.equal(mr.blocks.missing, 0);
    assert.ok(
      mr.balance.some((b) => b.reconfigured),
      'TD reconfigured at least once',
    );
    for (const s of mr.samples)
      assert.ok(s.clusters.reduce((n, c) => n + c.nodes, 0) + s.freeNodes === 48, `nodes at ${s.timeMs}`);
    const m = computeMetrics(run, Object.fromEntries(workload.jobs.map((j) => [j.id, j.referenceMs!]))).mrClusters!;
    assert.deepEqual(
      m.clusters.map((c) => [c.name, c.jobs]),
      [
        ['c-1', 8],
        ['c-2', 9],
        ['c-3', 28],
      ],
    );
    assert.ok(m.clusters.every((c) => c.maxNodes >= 4 && c.meanNodes > 0));
    assert.equal(m.reconfigurations, mr.balance.filter((b) => b.reconfigured).length);
  });

  test('FIFO on MR-clusters: each cluster keeps the nodes admission gave it', () => {
    const workload = fawkesWorkload({ variant: 'a', scale: 0.1, sizeScale: 0.1 });
    const { run } = simulate({ workload, cluster: clusterPreset('fawkes-60'), policy: new FifoPolicy() });
    assert.ok(run.jobs.every((j) => j.state === 'succeeded'));
    for (const s of run.mrClusters!.samples)
      for (const c of s.clusters) assert.ok(c.nodes <= 10, `${c.name} has ${c.nodes} nodes at ${s.timeMs}`);
  });
});
