/**
 * Every registered policy, from its definition: it declares when to be consulted, its options are
 * checked by the one parser (EBADCONF naming the option), and the help text lists it with the
 * defaults a created policy really runs with. And a policy that is none of ours, declaring the
 * fastest consultation, is consulted that seldom by the simulator.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import {
  createPolicy,
  localityOf,
  policyDefinitions,
  policyHelp,
  policyNames,
  type ClusterSnapshot,
  type Consultation,
  type Decision,
  type OptionSpec,
  type Policy,
  type PolicyOptions,
} from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import type { ClusterShape, JobSpec, Workload } from '../../src/workloads/index.js';

/** The consultations `Policy.consultWhen` may declare, written out here rather than read from the code. */
const CONSULTATIONS: readonly Consultation[] = ['every-event', 'after-change', 'after-change-if-a-task-fits'];

/** Options a policy cannot be created without (STATICTAGS needs its timers). */
const NEEDED: Readonly<Record<string, PolicyOptions>> = { 'tyrex-static': { timersMs: [5000] } };

const needed = (name: string): PolicyOptions => NEEDED[name] ?? {};

/** Whether `f` throws EBADCONF whose message names the policy and the option. */
function rejects(f: () => unknown, policy: string, option: string, what: string): void {
  assert.throws(
    f,
    (err: unknown) =>
      err instanceof MinimrError &&
      err.code === 'EBADCONF' &&
      err.message.includes(`'${policy}'`) &&
      err.message.includes(`'${option}'`),
    `${policy}: ${what}`,
  );
}

/** A value of the wrong type for an option of this spec. */
function wrongTyped(spec: OptionSpec): unknown {
  switch (spec.type) {
    case 'boolean':
      return 'yes';
    case 'number':
      return '5';
    case 'choice':
      return 5;
    case 'numbers':
      return '1,2';
  }
}

/** Values of the right type outside what the spec allows: below and above its bounds, or not among its choices. */
function outOfRange(spec: OptionSpec): unknown[] {
  switch (spec.type) {
    case 'boolean':
      return [];
    case 'choice':
      return ['no-such-choice'];
    case 'number':
    case 'numbers': {
      const { min, max, minExclusive, maxExclusive, integer } = spec.range;
      const bad: number[] = [];
      if (min !== undefined) bad.push(minExclusive ? min : min - 1);
      if (max !== undefined) bad.push(maxExclusive ? max : max + 1);
      if (integer) bad.push((min ?? 0) + 1.5);
      bad.push(Number.NaN);
      if (spec.type === 'number') return bad;
      const items = Math.max(spec.minItems ?? 1, 1);
      return bad.map((x) => Array.from({ length: items }, () => x));
    }
  }
}

describe('the policy registry', () => {
  test('registers each policy once, by the name of its definition', () => {
    const names = policyDefinitions().map((d) => d.name);
    assert.deepEqual(policyNames(), names);
    assert.equal(new Set(names).size, names.length);
    // The policies the README documents are all there.
    for (const name of [
      'fifo',
      'tyrex',
      'tyrex-dynamic',
      'tyrex-static',
      'fair',
      'improved-fair',
      'fawkes',
      'yarn',
      'yarn-me',
      'srjf',
    ])
      assert.ok(names.includes(name), name);
  });

  test('an unknown policy is EBADCONF listing the known ones', () => {
    assert.throws(
      () => createPolicy('no-such-policy'),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        err.message.includes("'no-such-policy'") &&
        policyNames().every((n) => err.message.includes(n)),
    );
  });

  for (const definition of policyDefinitions()) {
    const { name } = definition;
    describe(name, () => {
      test('declares when it wants to be consulted; each creation is a fresh object', () => {
        const policy = createPolicy(name, needed(name));
        assert.ok(CONSULTATIONS.includes(policy.consultWhen), `${name} declares ${String(policy.consultWhen)}`);
        assert.notEqual(createPolicy(name, needed(name)), policy);
      });

      test('an unknown option is EBADCONF naming it', () => {
        rejects(() => createPolicy(name, { ...needed(name), noSuchOption: 1 }), name, 'noSuchOption', 'unknown option');
      });

      test('a wrong-typed option is EBADCONF naming it', () => {
        for (const [option, spec] of Object.entries(definition.options)) {
          rejects(
            () => createPolicy(name, { ...needed(name), [option]: wrongTyped(spec) }),
            name,
            option,
            `${option}: ${JSON.stringify(wrongTyped(spec))}`,
          );
        }
      });

      test('an out-of-range option is EBADCONF naming it', () => {
        let cases = 0;
        for (const [option, spec] of Object.entries(definition.options)) {
          for (const value of outOfRange(spec)) {
            cases++;
            rejects(
              () => createPolicy(name, { ...needed(name), [option]: value }),
              name,
              option,
              `${option}: ${String(value)}`,
            );
          }
        }
        const bounded = Object.values(definition.options).some((spec) => spec.type !== 'boolean');
        assert.equal(cases > 0, bounded, 'every option with a range or choices was tried out of it');
      });

      test('the defaults it declares are what a policy created without options runs with', () => {
        const policy = createPolicy(name, needed(name));
        for (const option of Object.keys(definition.options)) {
          if (option in needed(name) || definition.defaults[option] === undefined) continue;
          assert.deepEqual(policy.options?.[option], definition.defaults[option], option);
        }
      });
    });
  }
});

/**
 * The help text's sections, by policy: its first line and its options' `NAME = DEFAULT`
 * (DEFAULT parsed as JSON; undefined when it says none).
 */
function helpSections(help: string): Map<string, { heading: string; defaults: Map<string, unknown> }> {
  const sections = new Map<string, { heading: string; defaults: Map<string, unknown> }>();
  let current: { heading: string; defaults: Map<string, unknown> } | undefined;
  for (const line of help.split('\n')) {
    const heading = /^([a-z][\w-]*): (.*)$/.exec(line);
    if (heading) {
      current = { heading: line, defaults: new Map() };
      sections.set(heading[1]!, current);
      continue;
    }
    const withDefault = /^  (\w+) = (\S+): /.exec(line);
    if (withDefault && current) current.defaults.set(withDefault[1]!, JSON.parse(withDefault[2]!));
    const without = /^  (\w+) \(no default\): /.exec(line);
    if (without && current) current.defaults.set(without[1]!, undefined);
  }
  return sections;
}

describe('policyHelp()', () => {
  const help = policyHelp();
  const sections = helpSections(help);

  test('lists every registered policy with its summary and every option', () => {
    assert.deepEqual([...sections.keys()], policyNames());
    for (const d of policyDefinitions()) {
      const section = sections.get(d.name)!;
      assert.ok(help.includes(d.summary.split(' ').slice(0, 4).join(' ')), `${d.name}'s summary`);
      assert.deepEqual([...section.defaults.keys()], Object.keys(d.options), d.name);
    }
    assert.match(help, /^srjf: [^\n]*(\n {4}[^\n]*)*\n {2}\(no options\)/m);
  });

  test('each default it shows is the value a created policy runs with', () => {
    let compared = 0;
    for (const name of policyNames()) {
      const policy = createPolicy(name, needed(name));
      for (const [option, shown] of sections.get(name)!.defaults) {
        if (shown === undefined || option in needed(name)) continue;
        assert.ok(policy.options !== undefined && option in policy.options, `${name} runs with ${option}`);
        assert.deepEqual(policy.options[option], shown, `${name}: ${option}`);
        compared++;
      }
    }
    assert.ok(compared >= 30, `${compared} defaults compared`);
  });

  test('the defaults the README and the papers give', () => {
    // An independent record of a few defaults (README's policy table), so a default changed in the
    // code and in its help text alike is still noticed.
    const expected: Array<[string, string, unknown]> = [
      ['fifo', 'nodeLocalDelayMs', 0],
      ['fair', 'nodeLocalDelayMs', 3000],
      ['fair', 'minShareTimeoutMs', 15_000],
      ['fair', 'fairShareTimeoutMs', 30_000],
      ['improved-fair', 'minMapsForCharacter', 3],
      ['improved-fair', 'placementWaitMs', 3000],
      ['fawkes', 'weighting', 'td'],
      ['fawkes', 'intervalMs', 60_000],
      ['fawkes', 'tau', 0.001],
      ['yarn', 'backfillReserved', false],
      ['yarn-me', 'backfillReserved', true],
      ['yarn-me', 'diskShare', 0.5],
      ['yarn-me', 'timelineRefreshMs', 3000],
      // DSS's and YARN MapReduce's ApplicationMaster, FairScheduler's defaults.
      ['yarn', 'amMb', 1000],
      ['yarn-me', 'amMb', 1000],
      ['yarn', 'amCores', 1],
      ['yarn', 'allocation', 'on-change'],
      ['yarn', 'reservableNodes', 0.05],
      ['yarn', 'maxAMShare', 0.5],
      ['yarn-me', 'admission', 'timeline'],
      ['tyrex', 'capacities', [0.3, 0.7]],
      ['tyrex', 'cv2Threshold', 2],
      ['tyrex', 'migratedOrder', 'tail'],
      ['tyrex-static', 'mode', 'static'],
    ];
    for (const [name, option, value] of expected)
      assert.deepEqual(sections.get(name)!.defaults.get(option), value, `${name}: ${option}`);
  });
});

/**
 * Launches, at ideal memory, every pending task that fits a free slot: decisions from the snapshot alone, so it may
 * declare any consultation.
 */
class GreedyPolicy implements Policy {
  readonly name = 'greedy-test';
  calls = 0;

  constructor(readonly consultWhen: Consultation) {}

  schedule(s: ClusterSnapshot): readonly Decision[] {
    this.calls++;
    const free = new Map(
      s.workers.map((w) => [w.id, { map: w.freeMapSlots, reduce: w.freeReduceSlots, memoryMb: w.freeMemoryMb }]),
    );
    const decisions: Decision[] = [];
    for (const job of s.jobs) {
      for (const task of job.pendingTasks) {
        const worker = s.workers.find(
          (w) => free.get(w.id)![task.kind] > 0 && free.get(w.id)!.memoryMb >= task.memoryMb,
        );
        if (!worker) continue;
        const room = free.get(worker.id)!;
        room[task.kind]--;
        room.memoryMb -= task.memoryMb;
        decisions.push({
          kind: 'launch',
          taskId: task.id,
          jobId: job.id,
          workerId: worker.id,
          memoryMb: task.memoryMb,
          locality: localityOf(task, worker),
        });
      }
    }
    return decisions;
  }
}

describe('the simulator consults a policy as the policy declares', () => {
  const cluster: ClusterShape = {
    name: 'two',
    workers: ['w1', 'w2'].map((id) => ({ id, rack: 'r1', mapSlots: 2, reduceSlots: 1, memoryMb: 4096, diskMBps: 100 })),
  };
  const task = (workMs: number) => ({ workMs, memoryMb: 1024, inputBytes: 0, replicas: [] });
  const job = (i: number): JobSpec => ({
    id: `job_${String(i).padStart(4, '0')}`,
    name: `j${i}`,
    app: 'test',
    submitMs: i * 7_000,
    maps: Array.from({ length: 5 }, (_, k) => task(10_000 + 1_000 * k)),
    reduces: [task(5_000)],
  });
  const workload: Workload = { name: 'small', jobs: Array.from({ length: 4 }, (_, i) => job(i)) };
  const run = (consultWhen: Consultation) => {
    const policy = new GreedyPolicy(consultWhen);
    const result = simulate({ workload, cluster, policy, heartbeatMs: 1000 });
    return { policy, result, finishes: result.run.jobs.map((j) => [j.id, j.finishMs]) };
  };

  test(
    "a policy of its own declaring 'after-change-if-a-task-fits' is " + 'called far less often, and decides the same',
    () => {
      const every = run('every-event');
      const fast = run('after-change-if-a-task-fits');
      assert.equal(every.result.stats.policyCallMode, 'every-event');
      assert.equal(fast.result.stats.policyCallMode, 'when-useful');
      // Counted by the policy itself, not only by the simulator.
      assert.equal(fast.policy.calls, fast.result.stats.policyCalls);
      assert.equal(every.policy.calls, every.result.stats.policyCalls);
      assert.ok(fast.policy.calls * 4 < every.policy.calls, `${fast.policy.calls} calls against ${every.policy.calls}`);
      assert.ok(fast.finishes.every(([, t]) => t !== null));
      assert.deepEqual(fast.finishes, every.finishes);
    },
  );

  test("'after-change' is between the two", () => {
    const every = run('every-event');
    const changed = run('after-change');
    const fast = run('after-change-if-a-task-fits');
    assert.equal(changed.result.stats.policyCallMode, 'when-changed');
    assert.ok(
      changed.policy.calls < every.policy.calls && fast.policy.calls <= changed.policy.calls,
      `${fast.policy.calls} <= ${changed.policy.calls} < ${every.policy.calls}`,
    );
    assert.deepEqual(changed.finishes, every.finishes);
  });
});
