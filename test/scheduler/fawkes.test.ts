/**
 * FAWKES: the conformance suite with each weighting, each weight on a hand-computed cluster, the
 * weights' normalization, Var(D) against tau over a driven interval, target allocations, and how
 * the policy grows, shrinks (the removal order), admits and deactivates clusters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import {
  FawkesPolicy,
  WEIGHTINGS,
  clusterFigures,
  createPolicy,
  globalDiscrimination,
  metricOf,
  normalizedWeights,
  parseFawkesOptions,
  targetNodes,
  type ClusterSnapshot,
  type Decision,
  type MrClusterView,
  type WorkerView,
} from '../../src/scheduler/index.js';
import { policyConformance } from './conformance.js';
import { mkAttempt } from '../helpers/books.js';
import { mkJob, mkSnapshot, mkTask, mkWorker, validateDecisions } from './snapshot-driver.js';

for (const weighting of WEIGHTINGS)
  policyConformance(`fawkes (${weighting.toUpperCase()})`, () => createPolicy('fawkes', { weighting }));

function mrc(name: string, over: Partial<MrClusterView> = {}): MrClusterView {
  return {
    name,
    state: 'active',
    minNodes: 2,
    requestedAt: 0,
    activeSince: 0,
    jobsCompleted: 0,
    tasksCompleted: 0,
    storedBytes: 0,
    storageBytes: 0,
    ...over,
  };
}

function node(id: string, cluster: string, over: Partial<WorkerView> = {}): WorkerView {
  return mkWorker(id, over.rack ?? 'r1', {
    cluster,
    ...(cluster === 'default' ? {} : { nodeKind: 'core', storedBytes: 0 }),
    ...over,
  });
}

function moves(decisions: readonly Decision[]): Array<Extract<Decision, { kind: 'move-node' }>> {
  return decisions.filter((d): d is Extract<Decision, { kind: 'move-node' }> => d.kind === 'move-node');
}

describe('fawkes: options', () => {
  it('an unknown weighting or option is EBADCONF naming it; names are case-insensitive', () => {
    assert.throws(
      () => parseFawkesOptions({ weighting: 'XY' }),
      (e: unknown) =>
        e instanceof MinimrError &&
        e.code === 'EBADCONF' &&
        /option 'weighting' must be one of "none", "eq", "jd", "dd", "td", "pu", "du", "ru", "js", "jt", "tt" \(any case\), got "XY"/.test(
          e.message,
        ),
    );
    assert.throws(
      () => parseFawkesOptions({ wieghting: 'td' }),
      (e: unknown) =>
        e instanceof MinimrError && e.code === 'EBADCONF' && /unknown option\(s\) 'wieghting'/.test(e.message),
    );
    assert.throws(() => parseFawkesOptions({ grow: 'TX' }), /option 'grow' must be one of "TR", "TC"/);
    assert.throws(() => parseFawkesOptions({ shrink: 'later' }), /option 'shrink' must be one of "IP"/);
    assert.throws(() => parseFawkesOptions({ sampleMs: 10_000, intervalMs: 5000 }), /must not exceed intervalMs/);
    assert.throws(() => parseFawkesOptions({ psi: 1 }), /option 'psi' must be a number in \(0, 1\)/);
    const o = parseFawkesOptions({ weighting: 'PU', grow: 'tr', shrink: 'ip' });
    assert.deepEqual([o.weighting, o.grow, o.shrink], ['pu', 'TR', 'IP']);
    assert.equal(createPolicy('fawkes', { weighting: 'JD', grow: 'TR', shrink: 'IP' }).name, 'fawkes-jd-tr-ip');
    assert.throws(
      () => createPolicy('fawkes', { weighting: 'fast' }),
      (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF',
    );
  });
});

describe('fawkes: weights', () => {
  /**
   * Cluster A at t = 5 s: job j1 waits (maps of 100 and 200 bytes, a reduce; reference 1 s,
   * submitted at 0: slowdown 5); j2 runs (4 maps, 1 done, 2 running; 2 reduces; reference 2 s,
   * submitted at 1 s: slowdown 2). Nodes: a1 with both map slots busy, a2 idle: 2 of 6 slots busy.
   * 100 of 400 bytes stored; 3 jobs and 12 tasks completed so far.
   */
  const cluster = mrc('A', { storedBytes: 100, storageBytes: 400, jobsCompleted: 3, tasksCompleted: 12 });
  const workers = [node('a1', 'A', { freeMapSlots: 0 }), node('a2', 'A')];
  const running = (i: number) => mkAttempt('j2', 'map', i, 'a1', 4000, { locality: 'node', inputBytes: 10 });
  const jobs = [
    mkJob('j1', [mkTask('j1', 'map', 0, { inputBytes: 100 }), mkTask('j1', 'map', 1, { inputBytes: 200 })], {
      cluster: 'A',
      reducesTotal: 1,
      submitTime: 0,
      referenceMs: 1000,
    }),
    mkJob('j2', [mkTask('j2', 'map', 3, { inputBytes: 10 })], {
      cluster: 'A',
      mapsTotal: 4,
      mapsCompleted: 1,
      reducesTotal: 2,
      runningAttempts: [running(1), running(2)],
      submitTime: 1000,
      referenceMs: 2000,
    }),
  ];
  const f = clusterFigures(cluster, jobs, workers, 5000);
  const options = { psi: 0.5, throughputBase: 2 };

  it('figures: waiting jobs and their input, waiting tasks, busy slots, slowdown', () => {
    // Waiting tasks: j1 2 + 1; j2 (4 - 1) + (2 - 0) - 2 running = 3.
    assert.deepEqual(f, {
      waitingJobs: 1,
      waitingInputBytes: 300,
      waitingTasks: 6,
      busySlots: 2,
      slots: 6,
      storedBytes: 100,
      storageBytes: 400,
      meanSlowdown: 3.5,
      jobsCompleted: 3,
      tasksCompleted: 12,
    });
  });

  it('each weighting samples its metric', () => {
    const expected: Record<string, number> = {
      none: 0,
      eq: 0,
      jd: 1,
      dd: 300,
      td: 6,
      pu: 2 / 6,
      du: 0.25,
      ru: 0.5 * (2 / 6) + 0.5 * 0.25,
      js: 3.5,
      jt: 2 ** -(3 / 1),
      tt: 2 ** -(12 / 6),
    };
    for (const w of WEIGHTINGS) assert.equal(metricOf(w, f, options), expected[w], w);
  });

  it('JT and TT: nothing waiting is weight 0; nothing completed yet is weight 1', () => {
    const idle = clusterFigures(mrc('B', { jobsCompleted: 5, tasksCompleted: 9 }), [], [], 0);
    assert.equal(metricOf('jt', idle, options), 0);
    assert.equal(metricOf('tt', idle, options), 0);
    const fresh = clusterFigures(mrc('C'), [mkJob('k', [mkTask('k', 'map', 0)], { cluster: 'C' })], [], 0);
    assert.equal(metricOf('jt', fresh, options), 1);
    assert.equal(metricOf('tt', fresh, options), 1);
    assert.equal(metricOf('js', fresh, options), 1, 'a job without a reference runtime counts as slowdown 1');
  });

  it('weights are the metrics over their sum; no signal at all is no weights', () => {
    assert.deepEqual(
      [
        ...normalizedWeights(
          new Map([
            ['A', 6],
            ['B', 2],
            ['C', 0],
          ]),
        )!,
      ],
      [
        ['A', 0.75],
        ['B', 0.25],
        ['C', 0],
      ],
    );
    assert.equal(
      normalizedWeights(
        new Map([
          ['A', 0],
          ['B', 0],
        ]),
      ),
      undefined,
    );
  });

  it('Var(D) is the mean squared discrimination', () => {
    assert.equal(globalDiscrimination([-0.5, 0, 0.5]), (0.25 + 0 + 0.25) / 3);
    assert.equal(globalDiscrimination([]), 0);
  });

  it('targets: minimum shares first (water-filled), the rest by weight, largest remainders for odd nodes', () => {
    // 48 x 0.2 = 9.6 and 48 x 0.1 = 4.8 are below the minimum of 10: B and C keep 10, A takes the 28 left.
    assert.deepEqual(
      Object.fromEntries(
        targetNodes(48, [
          { name: 'A', minNodes: 10, weight: 0.7 },
          { name: 'B', minNodes: 10, weight: 0.2 },
          { name: 'C', minNodes: 10, weight: 0.1 },
        ]),
      ),
      { A: 28, B: 10, C: 10 },
    );
    assert.deepEqual(
      Object.fromEntries(
        targetNodes(60, [
          { name: 'A', minNodes: 10, weight: 0.5 },
          { name: 'B', minNodes: 10, weight: 0.3 },
          { name: 'C', minNodes: 10, weight: 0.2 },
        ]),
      ),
      { A: 30, B: 18, C: 12 },
    );
    // 10 / 3 each: floors 3 + 3 + 3, the odd node to the first name.
    assert.deepEqual(
      Object.fromEntries(
        targetNodes(
          10,
          ['A', 'B', 'C'].map((name) => ({ name, minNodes: 1, weight: 1 })),
        ),
      ),
      { A: 4, B: 3, C: 3 },
    );
    assert.deepEqual(
      Object.fromEntries(
        targetNodes(6, [
          { name: 'A', minNodes: 2, weight: 0 },
          { name: 'B', minNodes: 2, weight: 0 },
        ]),
      ),
      { A: 2, B: 2 },
    );
  });
});

describe('fawkes: balance over an interval', () => {
  /**
   * 8 workers: A and B hold two core nodes each, four are free. A has 6 waiting tasks, B 2, for
   * the whole interval: TD weights 0.75 and 0.25; both shares 2/8 = 0.25; D = (-0.5, 0);
   * Var(D) = 0.125.
   */
  function snapshotAt(now: number, clusters = [mrc('A'), mrc('B')]): ClusterSnapshot {
    const workers = [
      node('a1', 'A'),
      node('a2', 'A'),
      node('b1', 'B'),
      node('b2', 'B'),
      ...['f1', 'f2', 'f3', 'f4'].map((id) => node(id, 'default')),
    ].map((w) => ({ ...w, freeMapSlots: 0, freeReduceSlots: 0 }));
    const jobs = [
      mkJob(
        'ja',
        Array.from({ length: 6 }, (_, i) => mkTask('ja', 'map', i)),
        { cluster: 'A' },
      ),
      mkJob(
        'jb',
        Array.from({ length: 2 }, (_, i) => mkTask('jb', 'map', i)),
        { cluster: 'B' },
      ),
    ];
    return mkSnapshot(workers, jobs, { now, mrClusters: clusters });
  }

  function drive(policy: FawkesPolicy, until: number): readonly Decision[] {
    let last: readonly Decision[] = [];
    for (let t = 0; t <= until; t += 5000) {
      const s = snapshotAt(t);
      last = policy.schedule(s);
      assert.deepEqual(validateDecisions(s, last), [], `t=${t}`);
    }
    return last;
  }

  it('Var(D) above tau moves the free nodes to the cluster the weights favour, as the grow setting says', () => {
    const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'td', tau: 0.1, grow: 'TC' }));
    const atBoundary = drive(policy, 60_000);
    assert.equal(policy.balanceHistory.length, 1);
    const [h] = policy.balanceHistory;
    assert.equal(h!.timeMs, 60_000);
    assert.deepEqual(
      h!.clusters.map((c) => [c.name, c.weight, c.share, c.discrimination]),
      [
        ['A', 0.75, 0.25, -0.5],
        ['B', 0.25, 0.25, 0],
      ],
    );
    assert.equal(h!.globalDiscrimination, 0.125);
    assert.equal(h!.reconfigured, true);
    // Targets: 8 x 0.25 = 2 for B (its minimum), 6 for A: the four free nodes join A, no preemption needed.
    assert.deepEqual(
      moves(atBoundary),
      ['f1', 'f2', 'f3', 'f4'].map((workerId) => ({
        kind: 'move-node',
        workerId,
        toCluster: 'A',
        nodeKind: 'transient-core',
      })),
    );
  });

  it('Var(D) at or below tau changes nothing', () => {
    const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'td', tau: 0.125 }));
    assert.deepEqual(moves(drive(policy, 60_000)), []);
    assert.equal(policy.balanceHistory[0]!.reconfigured, false);
  });

  it('None keeps every cluster at its minimum share; EQ gives equal shares; both with TR nodes when asked', () => {
    const none = new FawkesPolicy(parseFawkesOptions({ weighting: 'none', tau: 0 }));
    assert.deepEqual(moves(drive(none, 60_000)), []);
    const eq = new FawkesPolicy(parseFawkesOptions({ weighting: 'eq', tau: 0, grow: 'TR' }));
    // 8 / 2 = 4 each: two free nodes to each, the larger deficit first (a tie: by name).
    assert.deepEqual(
      moves(drive(eq, 60_000)).map((m) => [m.workerId, m.toCluster, m.nodeKind]),
      [
        ['f1', 'A', 'transient'],
        ['f2', 'A', 'transient'],
        ['f3', 'B', 'transient'],
        ['f4', 'B', 'transient'],
      ],
    );
  });
});

describe('fawkes: admission, shrink order, deactivation', () => {
  /**
   * A holds 6 of 6 workers: cores a1 a2, transient t1 (one busy slot) and t2 (idle), transient-core c1 (5 bytes) and c2
   * (1 byte).
   */
  const full = [
    node('a1', 'A'),
    node('a2', 'A'),
    node('t1', 'A', { nodeKind: 'transient', freeMapSlots: 1 }),
    node('t2', 'A', { nodeKind: 'transient' }),
    node('c1', 'A', { nodeKind: 'transient-core', storedBytes: 5 }),
    node('c2', 'A', { nodeKind: 'transient-core', storedBytes: 1 }),
  ];

  it(
    'a newly admitted cluster gets its minimum share from the ' +
      'clusters above theirs, cheapest nodes first, by the shrink ' +
      'setting',
    () => {
      const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'td', shrink: 'DP' }));
      const s = mkSnapshot(full, [], {
        now: 1000,
        mrClusters: [mrc('A'), mrc('B', { state: 'activating', minNodes: 3 })],
      });
      const decisions = policy.schedule(s);
      assert.deepEqual(validateDecisions(s, decisions), []);
      // B needs 3: the idle transient t2, the busy one t1, then the transient-core node with the fewest bytes, c2.
      assert.deepEqual(
        moves(decisions).map((m) => [m.workerId, m.toCluster, m.nodeKind, m.preemption]),
        [
          ['t2', 'B', 'core', 'delayed'],
          ['t1', 'B', 'core', 'delayed'],
          ['c2', 'B', 'core', 'delayed'],
        ],
      );
    },
  );

  it('nodes on their way count for their new cluster: no second move for the same need', () => {
    const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'td', shrink: 'IP' }));
    const draining = full.map((w) => (w.id === 't2' || w.id === 't1' || w.id === 'c2' ? { ...w, leavingFor: 'B' } : w));
    const s = mkSnapshot(draining, [], {
      now: 1000,
      mrClusters: [mrc('A'), mrc('B', { state: 'activating', minNodes: 3 })],
    });
    assert.deepEqual(moves(policy.schedule(s)), []);
  });

  it('an active cluster with no job and no running task for a whole interval is deactivated', () => {
    const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'td', intervalMs: 60_000 }));
    const idle = (now: number) =>
      mkSnapshot([node('a1', 'A'), node('a2', 'A')], [], { now, mrClusters: [mrc('A', { activeSince: 0 })] });
    assert.deepEqual(
      policy.schedule(idle(30_000)).filter((d) => d.kind === 'deactivate-cluster'),
      [],
    );
    assert.deepEqual(
      policy.schedule(idle(60_000)).filter((d) => d.kind === 'deactivate-cluster'),
      [{ kind: 'deactivate-cluster', cluster: 'A' }],
    );
    const off = new FawkesPolicy(parseFawkesOptions({ deactivateIdle: false }));
    assert.deepEqual(
      off.schedule(idle(120_000)).filter((d) => d.kind === 'deactivate-cluster'),
      [],
    );
  });

  it('inside a cluster, FIFO on its own nodes only, and never on a node that moves in the same list', () => {
    const policy = new FawkesPolicy(parseFawkesOptions({ weighting: 'none' }));
    const workers = [node('a1', 'A'), node('b1', 'B'), node('f1', 'default')];
    const jobs = [
      mkJob('ja', [mkTask('ja', 'map', 0), mkTask('ja', 'map', 1), mkTask('ja', 'map', 2)], { cluster: 'A' }),
    ];
    const s = mkSnapshot(workers, jobs, { now: 0, mrClusters: [mrc('A', { minNodes: 1 }), mrc('B', { minNodes: 1 })] });
    const decisions = policy.schedule(s);
    assert.deepEqual(validateDecisions(s, decisions), []);
    // a1 has two map slots: ja's first two maps; nothing on B's node or the free one.
    assert.deepEqual(
      decisions
        .filter((d) => d.kind === 'launch')
        .map((d) => [d.kind === 'launch' && d.taskId, d.kind === 'launch' && d.workerId]),
      [
        ['ja-m0', 'a1'],
        ['ja-m1', 'a1'],
      ],
    );
  });
});
