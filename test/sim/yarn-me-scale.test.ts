/**
 * The yarn and yarn-me policies, the books' snapshots and the simulator keep indexes between calls
 * so a 3000-node run costs what changes per call (issue 14's 3000-node case). They must not change
 * a single decision: the decision logs of small YARN-ME traces are pinned to those the code made
 * before the indexes (sort the queue, scan every node and attempt per call, place the timeline's
 * whole queue), and on every call of a run the kept fair queue is checked against a sort of the
 * snapshot's jobs.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  FairQueue,
  createPolicy,
  fairShareOrder,
  memoryInUse,
  type ClusterSnapshot,
  type Decision,
  type JobView,
  type Policy,
  type PolicyOptions,
} from '../../src/scheduler/index.js';
import { simulate, type SimSettings } from '../../src/sim/index.js';
import { uniformCluster, yarnMeTrace } from '../../src/workloads/index.js';

const cluster = uniformCluster({
  name: 'yarn-me-20',
  workers: 20,
  perRack: 10,
  mapSlots: 16,
  reduceSlots: 0,
  memoryMb: 10 * 1024,
  diskMBps: 100,
});
const BEFORE_AMS = { amMb: 0, reservableNodes: 1 } as const;
const MISESTIMATED: Partial<SimSettings> = { noise: 0.15, memoryNoise: 0.15, penaltyNoise: 0.15 };

function fingerprint(
  policy: string,
  kind: 'uniform' | 'exponential',
  penalty: number,
  seed: number,
  settings: Partial<SimSettings>,
  options: PolicyOptions,
): { decisions: number; hash: string; jobs: string } {
  const r = simulate({
    ...settings,
    workload: yarnMeTrace({ kind, penalty, seed, scale: 0.2 }),
    cluster,
    // The pins predate ApplicationMasters and the reservable-nodes guard (tested in yarn-shape.test.ts).
    policy: createPolicy(policy, { ...BEFORE_AMS, ...options }),
    recordDecisions: true,
  });
  const h = createHash('sha256');
  for (const d of r.decisions) h.update(`${JSON.stringify(d)}\n`);
  const jobs = r.run.jobs.map((j) => `${j.id}:${j.finishMs}`).join(',');
  return {
    decisions: r.decisions.length,
    hash: h.digest('hex').slice(0, 16),
    jobs: createHash('sha256').update(jobs).digest('hex').slice(0, 16),
  };
}

describe('yarn and yarn-me decide as without the indexes (pinned decision logs and job end times)', () => {
  // Recorded with main's code at 0d66a0e (no kept indexes, the timeline placed whole; with the
  // reservation fix c2e2df2): 20 nodes x 16 cores x 10 GB, 20 jobs. The yarn-me cases with
  // backfilling on were pinned again (issue 36, item 7) when a round began to count its launches
  // made before its first look at what runs on nodes (they were forgotten: a backfilled task could
  // end after the reserving job's task could have started). The old hashes are beside the new;
  // yarn, and yarn-me without backfilling, did not change.
  const cases: ReadonlyArray<{
    policy: string;
    kind: 'uniform' | 'exponential';
    penalty: number;
    seed: number;
    settings: Partial<SimSettings>;
    options: PolicyOptions;
    decisions: number;
    hash: string;
    jobs: string;
  }> = [
    {
      policy: 'yarn',
      kind: 'uniform',
      penalty: 3,
      seed: 1,
      settings: {},
      options: {},
      decisions: 3916,
      hash: '8c4d0c2e1860abf9',
      jobs: '1ba8a98567df084e',
    },
    {
      policy: 'yarn',
      kind: 'uniform',
      penalty: 1.5,
      seed: 2,
      settings: {},
      options: {},
      decisions: 2224,
      hash: '6b9549dd15930e9f',
      jobs: '36e9a492faa91060',
    },
    {
      policy: 'yarn',
      kind: 'exponential',
      penalty: 3,
      seed: 3,
      settings: {},
      options: {},
      decisions: 312,
      hash: 'a960b5869acd3657',
      jobs: '39057d888d65c0e7',
    },
    {
      policy: 'yarn',
      kind: 'exponential',
      penalty: 1.5,
      seed: 2,
      settings: {},
      options: {},
      decisions: 1483,
      hash: 'b3ce8fdf9aef52a9',
      jobs: '946c21b804901783',
    },
    {
      policy: 'yarn',
      kind: 'uniform',
      penalty: 3,
      seed: 5,
      settings: {},
      options: {},
      decisions: 2873,
      hash: 'd1b922c98d11294f',
      jobs: 'd69f390fd1360506',
    },
    {
      policy: 'yarn',
      kind: 'exponential',
      penalty: 3,
      seed: 6,
      settings: {},
      options: {},
      decisions: 1365,
      hash: 'f952caa672039d58',
      jobs: '89cc24322c0d38b8',
    },
    {
      policy: 'yarn-me',
      kind: 'uniform',
      penalty: 3,
      seed: 1,
      settings: {},
      options: {},
      decisions: 3916,
      hash: 'e76364f58c076bdc', // was ffbc4449830e224c (see above)
      jobs: '567629a37acd1240', // was e314833316a2bf56
    },
    {
      policy: 'yarn-me',
      kind: 'uniform',
      penalty: 1.5,
      seed: 2,
      settings: {},
      options: {},
      decisions: 2224,
      hash: '2b1e75a40b8acbe7', // was 1b5f7e78d1f281ce (see above)
      jobs: 'ca5e48cd36c9297b', // was 7a99c2f04699c932
    },
    {
      policy: 'yarn-me',
      kind: 'exponential',
      penalty: 3,
      seed: 3,
      settings: {},
      options: {},
      decisions: 312,
      hash: 'ced4e7cf04631904', // was d82887d59d95c82d (see above)
      jobs: 'edd368368f827858',
    },
    {
      policy: 'yarn-me',
      kind: 'exponential',
      penalty: 1.5,
      seed: 2,
      settings: {},
      options: {},
      decisions: 1483,
      hash: 'cbae1da488e7cc5d', // was f1e58c566c5bdf9b (see above)
      jobs: '6f08030515bd7ac6', // was 8bbbde686c26422a
    },
    {
      policy: 'yarn-me',
      kind: 'uniform',
      penalty: 3,
      seed: 5,
      settings: {},
      options: {},
      decisions: 2873,
      hash: '74a82e0795372641', // was 25857053fd9ac11e (see above)
      jobs: '9a5e77e846f2876f', // was 720bb814f8a8e2e2
    },
    {
      policy: 'yarn-me',
      kind: 'exponential',
      penalty: 3,
      seed: 6,
      settings: {},
      options: {},
      decisions: 1365,
      hash: '6a51c58e7f1ee317', // was ef7a496e02abc03b (see above)
      jobs: 'bee36a56173b527f', // was 8d3b353d8e812b21
    },
    {
      policy: 'yarn',
      kind: 'uniform',
      penalty: 3,
      seed: 3,
      settings: MISESTIMATED,
      options: {},
      decisions: 4256,
      hash: 'a33a54f39f825061',
      jobs: 'c43116f73b6074b6',
    },
    {
      policy: 'yarn-me',
      kind: 'uniform',
      penalty: 3,
      seed: 3,
      settings: MISESTIMATED,
      options: {},
      decisions: 4256,
      hash: '80a889697a62b08b', // was bef4a3cada4ceb3a (see above)
      jobs: '56963c23f25e3a9b', // was 6ee221b6ba1225c5
    },
    {
      policy: 'yarn-me',
      kind: 'uniform',
      penalty: 3,
      seed: 4,
      settings: {},
      options: { timelineRefreshMs: 1000 },
      decisions: 2607,
      hash: 'b3321cd828b5a751', // was 81c3fb5a9668a85c (see above)
      jobs: '3755aa37e6b75670', // was a268b325658d9fd2
    },
    {
      policy: 'yarn-me',
      kind: 'exponential',
      penalty: 3,
      seed: 4,
      settings: {},
      options: { backfillReserved: false },
      decisions: 961,
      hash: '3d01703c1fd9233b',
      jobs: 'b99cf131039b024c',
    },
  ];
  for (const c of cases) {
    const extras = [
      c.settings === MISESTIMATED ? '+-15% mis-estimation' : '',
      ...Object.entries(c.options).map(([k, v]) => `${k} ${String(v)}`),
    ].filter((x) => x !== '');
    test(`${c.policy}, ${c.kind} ${c.penalty}x seed ${c.seed}${extras.map((x) => `, ${x}`).join('')}`, () => {
      assert.deepEqual(fingerprint(c.policy, c.kind, c.penalty, c.seed, c.settings, c.options), {
        decisions: c.decisions,
        hash: c.hash,
        jobs: c.jobs,
      });
    });
  }
});

/**
 * Runs `inner`, and before each call checks the kept queue and the snapshot's attempt order against computations from
 * scratch.
 */
class CheckingPolicy implements Policy {
  readonly name = 'checking';
  /** Checks at every event, heartbeats included, not only when the inner policy would be consulted. */
  readonly consultWhen = 'every-event';
  calls = 0;
  private readonly queue = new FairQueue((job) => Math.min(...job.pendingTasks.map((t) => t.memoryMb)));

  constructor(private readonly inner: Policy) {}

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    this.calls++;
    this.queue.update(snapshot.jobs);
    const waiting = snapshot.jobs.filter((j) => j.pendingTasks.length > 0);
    const used = memoryInUse(snapshot.jobs);
    assert.deepEqual(
      this.queue.waiting.map((j) => j.id),
      fairShareOrder(waiting, used).map((j) => j.id),
    );
    for (const j of this.queue.waiting)
      assert.equal(
        j,
        snapshot.jobs.find((s) => s.id === j.id),
        "the queue holds the snapshot's own views",
      );
    for (const [id, mb] of used) assert.equal(this.queue.usedMb.get(id), mb);
    assert.equal(this.queue.leastAsk, Math.min(...waiting.flatMap((j) => j.pendingTasks.map((t) => t.memoryMb))));
    for (const job of snapshot.jobs)
      assert.deepEqual(job.runningAttempts.map(taskKey), [...job.runningAttempts].sort(byTask).map(taskKey));
    return this.inner.schedule(snapshot);
  }
}

type Attempt = JobView['runningAttempts'][number];
const taskKey = (a: Attempt): string => `${a.kind}:${a.taskId}:${a.id}`;
const indexOf = (a: Attempt): number => Number(a.taskId.split('_').pop());
const byTask = (a: Attempt, b: Attempt): number =>
  a.kind === b.kind ? indexOf(a) - indexOf(b) : a.kind === 'map' ? -1 : 1;

test("the kept fair queue is the sort of the snapshot's jobs, on every call of a run", () => {
  const checking = new CheckingPolicy(createPolicy('yarn', BEFORE_AMS));
  const r = simulate({
    workload: yarnMeTrace({ kind: 'exponential', penalty: 3, seed: 4, scale: 0.1 }),
    cluster,
    policy: checking,
    recordDecisions: false,
  });
  assert.ok(checking.calls > 100, `${checking.calls} calls`);
  assert.equal(r.run.jobs.filter((j) => j.finishMs === null).length, 0);
});
