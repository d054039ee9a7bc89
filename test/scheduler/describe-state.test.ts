import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPolicy, type ClusterSnapshot, type Policy, type PolicyState } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { clusterPreset, namedWorkload } from '../../src/workloads/index.js';

/** The same policy, asked to describe its state before and after every `every`-th decision. */
function describing(policy: Policy, states: PolicyState[], every = 1): Policy {
  let calls = 0;
  return {
    name: policy.name,
    consultWhen: policy.consultWhen,
    get balanceHistory() {
      return policy.balanceHistory;
    },
    schedule(s: ClusterSnapshot) {
      const look = calls++ % every === 0;
      if (look) states.push(policy.describeState!(s));
      const decisions = policy.schedule(s);
      if (look) states.push(policy.describeState!(s));
      return decisions;
    },
  };
}

const CASES = [
  { policy: 'fair', workload: 'improved-fair', cluster: 'improved-fair-12', titles: ['Pools', 'Jobs'] },
  { policy: 'improved-fair', workload: 'improved-fair', cluster: 'improved-fair-12', titles: ['Pools', 'Jobs'] },
  { policy: 'tyrex', workload: 'hvw', cluster: 'tyrex-20', titles: ['Partitions', 'Jobs'] },
  {
    policy: 'yarn-me',
    workload: 'yarn-me-exp',
    cluster: 'yarn-me-50',
    titles: ['Nodes', 'Queue (fair-share order: least memory in use per unit of weight first)', 'Elastic attempts'],
  },
  { policy: 'fawkes', workload: 'wkld-d', cluster: 'fawkes-48', titles: ['MR-clusters'] },
] as const;

describe('describeState: a policy shows its own state for the web UI without changing what it decides', () => {
  for (const c of CASES) {
    it(`${c.policy}: same run with and without describeState calls; tables with a row per column`, () => {
      const run = (policy: Policy) =>
        simulate({
          workload: namedWorkload(c.workload, { seed: 3, scale: 0.05 }),
          cluster: clusterPreset(c.cluster),
          policy,
          maxSimMs: 3_600_000,
          recordDecisions: false,
        }).run;
      const plain = run(createPolicy(c.policy));
      const states: PolicyState[] = [];
      const described = run(describing(createPolicy(c.policy), states));
      assert.deepEqual(
        described.jobs.map((j) => [j.id, j.finishMs]),
        plain.jobs.map((j) => [j.id, j.finishMs]),
      );
      assert.ok(states.length > 10);
      for (const s of states) {
        assert.deepEqual(
          s.tables.map((t) => t.title),
          c.titles,
        );
        for (const t of s.tables)
          for (const row of t.rows) assert.equal(row.length, t.columns.length, `${t.title}: ${JSON.stringify(row)}`);
      }
      assert.ok(
        states.some((s) => s.tables[0]!.rows.length > 0),
        'the first table has rows at some point',
      );
    });
  }

  it('YARN-ME lists the elastic attempts the snapshot holds', () => {
    const states: PolicyState[] = [];
    const { run } = simulate({
      workload: namedWorkload('yarn-me-uniform', { seed: 3, scale: 0.2 }),
      cluster: clusterPreset('yarn-me-50'),
      policy: describing(createPolicy('yarn-me'), states, 50),
      maxSimMs: 3_600_000,
      recordDecisions: false,
    });
    assert.ok(
      run.attempts.some((a) => a.memoryMb < a.idealMemoryMb),
      'the run has elastic attempts',
    );
    const listed = new Set(states.flatMap((s) => s.tables[2]!.rows.map((r) => String(r[0]))));
    assert.ok(listed.size > 0, 'elastic attempts shown');
    for (const id of listed)
      assert.ok(
        run.attempts.some((a) => a.id === id && a.memoryMb < a.idealMemoryMb),
        `${id} was elastic`,
      );
  });
});
