/**
 * Policy plug-ins end to end: the example policies (examples/policies, written only against
 * 'minimr/scheduler') pass `minimr policy check`, simulate next to a built-in, and run WordCount on a
 * real local cluster; the broken fixture fails `policy check` naming its rules; a plug-in that does not
 * load, has no default export or lacks schedule is EBADCONF naming the file, before any run starts.
 * Here because loading a plug-in bundles it with esbuild, which runs a child process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MinimrError } from '../../src/errors.js';
import { runSimCommand, runSweep, runSweepUnit, sweepUnits, type SweepSpec } from '../../src/experiments/index.js';
import { loadPolicyPlugin, loadPolicyPlugins } from '../../src/policy-plugins/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';
import {
  appModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

const execFileP = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLES = ['drf', 'srjf'].map((name) => join(ROOT, 'examples', 'policies', `${name}.ts`));
const fixture = (name: string) => join(ROOT, 'test', 'fixtures', 'policies', name);

/** `minimr policy check FILE` as a process: its exit status and stdout. */
async function policyCheck(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(process.execPath, [BIN, 'policy', 'check', file], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('minimr policy check', () => {
  for (const file of EXAMPLES)
    test(`${file.slice(ROOT.length)} keeps the contract`, async () => {
      const r = await policyCheck(file);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /keeps the policy contract/);
    });

  test('a broken policy fails, one line per rule it breaks, with the decision that broke it', async () => {
    const r = await policyCheck(fixture('broken-clock.mjs'));
    assert.equal(r.code, 1);
    const lines = r.stdout.trim().split('\n');
    const rules = lines.slice(0, -1).map((l) => l.split(':')[0]);
    assert.deepEqual([...rules].sort(), ['launch-on-full-worker', 'reads-clock', 'valid-decisions']);
    assert.match(lines.find((l) => l.startsWith('reads-clock'))!, /Date\.now/);
    assert.match(lines.find((l) => l.startsWith('launch-on-full-worker'))!, /decision \{"kind":"launch"/);
    assert.match(lines.at(-1)!, /breaks 3 rule\(s\)/);
  });
});

describe('loading plug-ins', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-plugins-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const refusedWith = (file: string, pattern: RegExp) => (err: unknown) => {
    assert.ok(err instanceof MinimrError, String(err));
    assert.equal(err.code, 'EBADCONF');
    assert.ok(err.message.includes(file), err.message);
    assert.match(err.message, pattern);
    return true;
  };

  test('no default export, no schedule, a syntax error, a missing file: EBADCONF naming the file', async () => {
    const noDefault = fixture('no-default.mjs');
    await assert.rejects(loadPolicyPlugin(noDefault), refusedWith(noDefault, /no default export/));
    const noSchedule = fixture('no-schedule.mjs');
    await assert.rejects(loadPolicyPlugin(noSchedule), refusedWith(noSchedule, /no policy with a schedule/));
    const bad = join(dir, 'syntax.ts');
    await writeFile(bad, "export default definePolicy({ name: 'oops',\n");
    await assert.rejects(loadPolicyPlugin(bad), refusedWith(bad, /does not load: .*syntax\.ts:2/));
    const missing = join(dir, 'missing.js');
    await assert.rejects(loadPolicyPlugin(missing), refusedWith(missing, /cannot read it/));
    const privateImport = join(dir, 'private.mjs');
    await writeFile(privateImport, "import { JobTracker } from 'minimr/runtime';\nexport default JobTracker;\n");
    await assert.rejects(loadPolicyPlugin(privateImport), refusedWith(privateImport, /is not public/));
  });

  test('a loaded plug-in is created by its name; its options are checked before any run', async () => {
    const [drf] = EXAMPLES;
    await loadPolicyPlugins([drf!, 'fifo']);
    assert.equal(createPolicy(drf!).name, 'drf');
    await assert.rejects(
      loadPolicyPlugins([drf!], () => ({ weigthed: false })),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && /unknown option/.test(err.message),
    );
  });

  test('a plug-in that breaks the contract in policy check is refused before any run, naming the rule', async () => {
    const file = fixture('broken-clock.mjs');
    await assert.rejects(
      loadPolicyPlugins([file, 'fifo']),
      refusedWith(file, /breaks the policy contract .*reads-clock: schedule called Date\.now/),
    );
  });

  test('a plug-in that throws in a simulation fails the run with EPOLICY naming the rule, time and policy', async () => {
    const file = fixture('throws-later.mjs');
    await assert.rejects(
      runSimCommand({ workload: 'hvw', policies: [file], policyOptions: { throwAfterMs: 600_000 } }, () => undefined),
      (err: unknown) => {
        assert.ok(err instanceof MinimrError, String(err));
        assert.equal(err.code, 'EPOLICY');
        assert.equal(err.details?.rule, 'does-not-throw');
        assert.match(
          err.message,
          /^policy 'throws-later' broke the policy contract, rule does-not-throw: schedule threw RangeError: the plug-in gave up \(at t=\d+ ms, trigger [a-z-]+\)$/,
        );
        assert.ok(Number(err.details?.timeMs) >= 600_000);
        return true;
      },
    );
  });

  test('minimr sim with a misspelt policy stops before the workload runs', async () => {
    const lines: string[] = [];
    await assert.rejects(
      runSimCommand({ workload: 'hvw', policies: [EXAMPLES[0]!, 'fiffo'] }, (l) => lines.push(l)),
      (err: unknown) => err instanceof MinimrError && err.code === 'EBADCONF' && /'fiffo'/.test(err.message),
    );
    assert.deepEqual(lines, [], 'nothing ran: not even the workload was read');
  });

  test('the example plug-ins simulate next to a built-in, each run named by its file', async () => {
    const { result } = await runSimCommand(
      { workload: 'improved-fair', policies: ['fifo', ...EXAMPLES], seed: 2 },
      () => undefined,
    );
    assert.deepEqual(
      result.policies.map((p) => p.policy),
      ['fifo', ...EXAMPLES],
    );
    for (const p of result.policies) assert.equal(p.metrics.finished, p.metrics.jobs, p.policy);
  });

  test('minimr sweep runs a plug-in on its worker threads, each unit as it runs in this thread', async () => {
    const srjf = EXAMPLES[1]!;
    const spec: SweepSpec = { workloads: ['improved-fair'], seeds: [1, 2], policies: ['fifo', srjf] };
    const out = join(dir, 'sweep.jsonl');
    const run = await runSweep(spec, { out, threads: 2 });
    assert.equal(run.ran, 4);
    await loadPolicyPlugins([srjf]);
    for (const unit of sweepUnits(spec).filter((u) => u.policy === srjf)) {
      const here = await runSweepUnit(spec, unit);
      const there = run.results.find((r) => r.key === unit.key)!;
      assert.equal(there.unfinished, 0);
      assert.equal(there.avgJctS, here.avgJctS, unit.key);
    }
  });
});

for (const file of EXAMPLES)
  describe(`WordCount on a real local cluster under ${file.slice(ROOT.length)}`, () => {
    let t: TestCluster;
    const text = makeText(300_000, 5);
    before(async () => {
      t = await startTestCluster({ policy: file });
      await t.fs.put(Buffer.from(text), '/in/text.txt');
    });
    after(async () => {
      await t?.stop();
    });
    test('the job succeeds with the reference counts', async () => {
      const status = await t.cluster.client.run(appModule('wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/wc',
        reducers: 2,
      });
      assert.equal(status.state, 'succeeded');
      assert.deepEqual(parseCounts((await readOutput(t.fs, '/out/wc')).toString('utf8')), referenceWordCount(text));
    });
  });

describe('a plug-in that fails on the real JobTracker', () => {
  let t: TestCluster;
  before(async () => {
    t = await startTestCluster({ policy: fixture('throws-later.mjs') });
    await t.fs.put(Buffer.from(makeText(1_500_000, 9)), '/in/big.txt');
  });
  after(async () => {
    await t?.stop();
  });

  test('stops scheduling new work and says so; the attempts that were running finish', async () => {
    const jobId = await t.cluster.client.submit(appModule('wordcount'), {
      input: ['/in/big.txt'],
      output: '/out/stopped',
      reducers: 2,
    });
    const client = t.cluster.client;
    // The first call launched a map in every map slot (6); the next, with maps running and waiting, threw.
    let status = await client.status(jobId);
    for (let i = 0; i < 300 && status.schedulingStopped === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await client.status(jobId);
    }
    const rule =
      /^policy 'throws-later' broke the policy contract, rule does-not-throw: schedule threw RangeError: the plug-in gave up; no new work is scheduled until the JobTracker restarts/;
    assert.match(status.schedulingStopped ?? '', rule);
    assert.match((await client.clusterInfo()).schedulingStopped ?? '', rule);
    let attempts = await client.attempts(jobId);
    for (let i = 0; i < 300 && attempts.some((a) => a.state === 'running'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      attempts = await client.attempts(jobId);
    }
    assert.equal(attempts.length, 6, 'one map in each of the six map slots, and nothing since');
    assert.deepEqual(
      attempts.map((a) => a.state),
      Array(6).fill('succeeded'),
    );
    status = await client.status(jobId);
    assert.equal(status.state, 'running');
    assert.equal(status.mapsCompleted, 6);
    assert.ok(status.mapsTotal > 6);
    assert.equal((await client.kill(jobId)).state, 'killed');
  });
});
