/**
 * The public conformance suite (src/scheduler/conformance.ts, what `minimr policy check` runs) against
 * every built-in policy: a plug-in is held to what the built-ins keep. And the suite itself against
 * hand-written broken policies, each of which must be reported under the rule it breaks.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  checkConformance,
  conformanceLines,
  definePolicy,
  policyDefinitions,
  type ClusterSnapshot,
  type Decision,
  type Policy,
  type PolicyOptions,
} from '../../src/scheduler/index.js';

/** Options a built-in needs to be created at all (it has no default for them). */
const NEEDED: Readonly<Record<string, PolicyOptions>> = { 'tyrex-static': { timersMs: [2000] } };

describe('conformance suite: every built-in policy keeps the contract', () => {
  for (const definition of policyDefinitions()) {
    test(definition.name, () => {
      // As on a real cluster (createPolicy's 'cluster' engine): YARN's ApplicationMasters, which the
      // simulator models and the JobTracker has not, would hold the first launches of an idle cluster.
      const report = checkConformance(definition, { ...definition.clusterDefaults, ...NEEDED[definition.name] });
      assert.deepEqual(conformanceLines(report), []);
      assert.ok(report.calls >= report.scenarios);
    });
  }
});

/** A definition whose policies schedule with `schedule`. */
function broken(name: string, schedule: (snapshot: ClusterSnapshot, calls: number) => unknown) {
  return definePolicy({
    name,
    summary: 'broken on purpose',
    options: {},
    defaults: {},
    create: () => {
      let calls = 0;
      return { name, consultWhen: 'every-event', schedule: (s: ClusterSnapshot) => schedule(s, calls++) } as Policy;
    },
  });
}

function rulesOf(definition: ReturnType<typeof broken>): string[] {
  return [...new Set(checkConformance(definition).violations.map((v) => v.rule))].sort();
}

/** The first pending task of the snapshot, launched on the first worker, locality as achieved. */
function firstLaunch(s: ClusterSnapshot): Decision[] {
  const w = s.workers[0];
  const t = s.jobs.flatMap((j) => j.pendingTasks)[0];
  if (!w || !t || (t.kind === 'map' ? w.freeMapSlots : w.freeReduceSlots) === 0 || w.freeMemoryMb < t.memoryMb)
    return [];
  const locality = t.preferredWorkers.includes(w.id) ? 'node' : t.preferredRacks.includes(w.rack) ? 'rack' : 'any';
  return [{ kind: 'launch', taskId: t.id, jobId: t.jobId, workerId: w.id, locality }];
}

describe('conformance suite: broken policies are named by the rule they break', () => {
  test('throws', () => {
    assert.deepEqual(
      rulesOf(
        broken('thrower', (s) => {
          if (s.jobs.length > 0) throw new Error('boom');
          return [];
        }),
      ),
      ['does-not-throw'],
    );
  });
  test('reads the clock (and the clocks are restored afterwards)', () => {
    const now = Date.now;
    const perf = performance.now;
    const report = checkConformance(broken('clock', (s) => (performance.now() > 0 ? firstLaunch(s) : [])));
    assert.deepEqual([...new Set(report.violations.map((v) => v.rule))], ['reads-clock']);
    assert.equal(Date.now, now);
    assert.equal(performance.now, perf);
    assert.match(conformanceLines(report)[0]!, /^reads-clock: schedule called performance\.now/);
  });
  test('returns something other than an array, or malformed decisions', () => {
    assert.deepEqual(rulesOf(broken('not-array', () => ({ kind: 'launch' }))), ['returns-array']);
    assert.deepEqual(rulesOf(broken('bad-kind', () => [{ kind: 'teleport' }])), ['well-formed-decisions']);
  });
  test('launches on a full worker and on a lost one', () => {
    const everywhere = broken('everywhere', (s) => {
      const t = s.jobs.flatMap((j) => j.pendingTasks)[0];
      return t ? [{ kind: 'launch', taskId: t.id, jobId: t.jobId, workerId: 'w4', locality: 'node' }] : [];
    });
    const rules = rulesOf(everywhere);
    assert.ok(rules.includes('launch-on-full-worker'), rules.join());
    assert.ok(rules.includes('launch-on-unknown-worker'), rules.join());
  });
  test('is not deterministic, mutates its snapshot, never launches', () => {
    let seed = 0;
    assert.deepEqual(
      rulesOf(broken('random', (s) => (seed++ % 2 === 0 ? firstLaunch(s) : []))).includes('deterministic'),
      true,
    );
    assert.deepEqual(
      rulesOf(
        broken('mutator', (s) => {
          (s.jobs as unknown as unknown[]).reverse();
          return [];
        }),
      ).includes('mutates-snapshot'),
      true,
    );
    assert.deepEqual(rulesOf(broken('idle', () => [])), ['uses-idle-cluster']);
  });
  test('a correct small policy keeps the contract', () => {
    assert.deepEqual(conformanceLines(checkConformance(broken('first-fit', (s) => firstLaunch(s)))), []);
  });
});
