import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseSeeds } from '../../src/cli/commands/sweep.js';
import type { MinimrError } from '../../src/errors.js';
import {
  checkSweepSpec,
  runSimCommand,
  runSweep,
  runSweepUnit,
  summarise,
  sweepUnits,
  type SweepResult,
  type SweepSpec,
} from '../../src/experiments/index.js';

/**
 * `minimr sweep` (issue 38): units run on worker threads, results appended as JSON lines, and a
 * sweep stopped part-way and run again gives the same results file as one that ran through.
 */
describe('sweeps', () => {
  let dir: string;
  // Small traces of the improved-FAIR workload on its 12-node cluster: fast, and the policies differ.
  const spec: SweepSpec = { workloads: ['improved-fair'], seeds: [1, 2, 3], policies: ['fifo', 'fair'] };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-sweep-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A results file's lines by key, without the wall time (the one figure that differs between runs). */
  async function linesOf(file: string): Promise<Map<string, unknown>> {
    const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
    return new Map(
      lines.map((l) => {
        const { wallS: _wall, ...rest } = JSON.parse(l) as SweepResult;
        return [rest.key, rest];
      }),
    );
  }

  test('a sweep stopped part-way and resumed writes the same results as one run through', async () => {
    const through = join(dir, 'through.jsonl');
    const whole = await runSweep(spec, { out: through, threads: 2 });
    assert.equal(whole.ran, 6);
    assert.equal(whole.stopped, false);
    assert.deepEqual(
      whole.results.map((r) => r.key),
      sweepUnits(spec).map((u) => u.key),
    );
    for (const r of whole.results) assert.equal(r.unfinished, 0, r.key);

    const resumed = join(dir, 'resumed.jsonl');
    const stop = new AbortController();
    const first = await runSweep(spec, {
      out: resumed,
      threads: 2,
      signal: stop.signal,
      onProgress: (done) => {
        if (done >= 2) stop.abort();
      },
    });
    assert.equal(first.stopped, true);
    assert.ok(first.ran >= 2 && first.ran < 6, `${first.ran} units before the stop`);
    // A line cut short by the interruption: dropped, and its unit run again.
    await writeFile(resumed, `${await readFile(resumed, 'utf8')}{"key":"improved-fair|3|fa`);
    const second = await runSweep(spec, { out: resumed, threads: 2 });
    assert.equal(second.skipped, first.ran);
    assert.equal(second.ran, 6 - first.ran);
    assert.deepEqual(await linesOf(resumed), await linesOf(through));
    // Nothing left to run.
    const third = await runSweep(spec, { out: resumed, threads: 2 });
    assert.equal(third.ran, 0);
  });

  test('summarise: shares and median ratio of the average JCTs on the same traces, computed by hand', () => {
    const r = (seed: number, policy: string, avgJctS: number, meganode = false): SweepResult => ({
      key: `w|${seed}|${policy}${meganode ? '|meganode' : ''}`,
      workload: 'w',
      seed,
      policy,
      meganode,
      jobs: 10,
      unfinished: 0,
      avgJctS,
      makespanS: 0,
      wallS: 0,
    });
    const rows = summarise(
      [
        r(1, 'yarn', 100),
        r(1, 'yarn-me', 60),
        r(1, 'srjf', 80, true),
        r(2, 'yarn', 100),
        r(2, 'yarn-me', 90),
        r(2, 'srjf', 70, true),
        r(3, 'yarn', 100),
        r(3, 'yarn-me', 120),
        r(3, 'srjf', 130, true),
      ],
      'yarn',
    );
    const row = (policy: string, against: string) => rows.find((x) => x.policy === policy && x.against === against);
    // yarn-me/yarn: 0.6, 0.9, 1.2 -> faster on 2 of 3, <= 0.7 on 1 of 3, median 0.9.
    assert.deepEqual(row('yarn-me', 'yarn'), {
      workload: 'w',
      policy: 'yarn-me',
      against: 'yarn',
      traces: 3,
      faster: 2 / 3,
      atMost07: 1 / 3,
      medianRatio: 0.9,
    });
    // yarn-me/meganode: 0.75, 1.2857, 0.923 -> faster on 2 of 3, none <= 0.7, median 0.923.
    const mega = row('yarn-me', 'meganode')!;
    assert.equal(mega.faster, 2 / 3);
    assert.equal(mega.atMost07, 0);
    assert.ok(Math.abs(mega.medianRatio - 120 / 130) < 1e-12);
    assert.equal(row('yarn', 'yarn'), undefined);
  });

  test("--compat dss: a unit runs as minimr sim --compat dss runs it (DSS's AMs and 1 s heartbeat)", async () => {
    const dss: SweepSpec = { workloads: ['yarn-me-uniform'], seeds: [4], policies: ['yarn'], compat: 'dss' };
    const [unit] = sweepUnits(dss);
    const swept = await runSweepUnit(dss, unit!);
    const plain = await runSweepUnit({ ...dss, compat: undefined }, unit!);
    const { result } = await runSimCommand(
      { workload: 'yarn-me-uniform', seed: 4, policies: ['yarn'], compat: 'dss' },
      () => undefined,
    );
    const sim = result.policies[0]!.metrics;
    assert.equal(swept.unfinished, sim.unfinished);
    assert.ok(Math.abs(swept.avgJctS - sim.avgJctMs / 1000) < 1e-9, `${swept.avgJctS} vs ${sim.avgJctMs / 1000}`);
    assert.notEqual(swept.avgJctS, plain.avgJctS, 'the AMs and the heartbeat change the run');
  });

  test('bad specs fail before any simulation runs', async () => {
    await assert.rejects(
      checkSweepSpec({ ...spec, policies: ['fifo', 'fiar'] }),
      (e: MinimrError) => e.code === 'EBADCONF' && e.message.includes('fiar'),
    );
    await assert.rejects(checkSweepSpec({ ...spec, penalty: 0.5 }), (e: MinimrError) => e.code === 'EBADCONF');
    assert.deepEqual(parseSeeds('3'), [1, 2, 3]);
    assert.deepEqual(parseSeeds('5-7'), [5, 6, 7]);
    assert.deepEqual(parseSeeds('4,9'), [4, 9]);
    assert.throws(
      () => parseSeeds('x'),
      (e: MinimrError) => e.code === 'EUSAGE',
    );
  });
});
