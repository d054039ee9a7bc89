/**
 * Jobs as users write them (issue 35, items 1 and 2), on a real 3-worker cluster: a job importing a
 * helper file and an npm package is bundled on submit and gives its single-file twin's output, a
 * TypeScript job importing a TypeScript helper too; a map that throws is shown at the user's own
 * file and line in `job status`, `job attempts`, `job logs`, the web UI and /api/v1; a syntax error,
 * an unresolved import and a native addon are EJOBMODULE at submit, naming file, line and column,
 * with no job created. The fixtures are in test/fixtures/jobs (submitted from their sources).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import type { AttemptSummary, JobClient, JobStatus } from '../../src/runtime/index.js';
import { CLIENT_PROTOCOL } from '../../src/runtime/wire/index.js';
import { cliEnv, runMinimr } from '../helpers/cli.js';
import { isCode, makeText, readOutput, startTestCluster, type TestCluster } from '../helpers/cluster.js';

const JOBS = fileURLToPath(new URL('../../../test/fixtures/jobs/', import.meta.url));

/** Word counts of `text` as the fixture jobs count words (lower case, punctuation around a word trimmed). */
function referenceCounts(text: string): string {
  const counts = new Map<string, number>();
  for (const raw of text.split(/\s+/)) {
    const w = raw.toLowerCase().replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
    if (w) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return [...counts]
    .map(([w, n]) => `${w}\t${n}`)
    .sort()
    .join('\n');
}

function sortedLines(out: Buffer): string {
  return out.toString('utf8').trimEnd().split('\n').sort().join('\n');
}

/** `file:line:col` of the first occurrence of `marker` in the fixture `file`, at column `of` (a text on that line). */
async function locationOf(file: string, marker: string, of: string): Promise<string> {
  const lines = (await readFile(join(JOBS, file), 'utf8')).split('\n');
  const index = lines.findIndex((l) => l.includes(marker));
  assert.ok(index >= 0, `${marker} in ${file}`);
  const column = lines[index]!.indexOf(of);
  assert.ok(column >= 0, `${of} on line ${index + 1} of ${file}`);
  return `${file}:${index + 1}:${column + 1}`;
}

describe('job modules bundled on submit', () => {
  let t: TestCluster;
  let client: JobClient;
  let scratch: string;
  const text = `${makeText(120_000, 5)}\nHello, World! hello world... (WORLD)\n`;

  const cli = (args: string[]) =>
    runMinimr(args, {
      env: cliEnv({ MINIMR_JOBTRACKER: t.cluster.url, MINIMR_SECRET_FILE: t.cluster.jobTracker.secretFile }),
    });

  before(async () => {
    t = await startTestCluster();
    client = t.cluster.client;
    scratch = await mkdtemp(join(tmpdir(), 'minimr-bundle-'));
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('a job importing a helper file and an npm package gives the output of its single-file twin', async () => {
    const single = await client.run(join(JOBS, 'wordcount-single.mjs'), {
      input: ['/in/text.txt'],
      output: '/out/single',
      reducers: 2,
    });
    const split = await client.run(join(JOBS, 'wordcount-split.mjs'), {
      input: ['/in/text.txt'],
      output: '/out/split',
      reducers: 2,
    });
    assert.equal(single.state, 'succeeded');
    assert.equal(split.state, 'succeeded');
    const want = referenceCounts(text);
    assert.equal(sortedLines(await readOutput(t.fs, '/out/single')), want);
    assert.equal(sortedLines(await readOutput(t.fs, '/out/split')), want);
  });

  it("a package's optional native addon is left out: its JavaScript fallback runs", async () => {
    const lines = ['abc', 'Straße 日本'];
    await t.fs.put(Buffer.from(`${lines.join('\n')}\n`), '/in/lines.txt');
    const status = await client.run(join(JOBS, 'optional-native.mjs'), {
      input: ['/in/lines.txt'],
      output: '/out/opt',
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(
      sortedLines(await readOutput(t.fs, '/out/opt')),
      lines
        .map((l) => `${[...l].reverse().join('')}\tplain`)
        .sort()
        .join('\n'),
    );
  });

  it('a TypeScript job importing a TypeScript helper runs, with the same output', async () => {
    const status = await client.run(join(JOBS, 'wordcount-ts.ts'), { input: ['/in/text.txt'], output: '/out/ts' });
    assert.equal(status.state, 'succeeded');
    assert.equal(sortedLines(await readOutput(t.fs, '/out/ts')), referenceCounts(text));
  });

  describe('a map that throws is shown at the user’s file and line', () => {
    let jobId: string;
    let thrownAt: string;
    let calledAt: string;

    before(async () => {
      thrownAt = await locationOf('lib/checks.mjs', 'THROWS HERE', 'new Error');
      calledAt = await locationOf('throwing-map.mjs', 'CALLS THE CHECK', 'checkLine');
      jobId = await client.submit(join(JOBS, 'throwing-map.mjs'), {
        input: ['/in/text.txt'],
        output: '/out/throwing',
        params: { forbidden: 'Hello' },
        maxAttempts: 2,
      });
      await assert.rejects(client.waitForCompletion(jobId), isCode('EJOBFAILED', new RegExp(`at ${thrownAt}`)));
    });

    /** The user's stack as it must read: the error's line, then the helper's frame, then the map's. */
    function assertUserStack(stack: unknown): void {
      assert.equal(typeof stack, 'string');
      const lines = (stack as string).split('\n');
      assert.equal(lines[0], 'Error: line holds the forbidden word Hello');
      assert.match(lines[1]!, new RegExp(`^ {4}at checkLine \\(${thrownAt}\\)$`));
      assert.match(lines[2]!, new RegExp(`\\(${calledAt}\\)$`));
      assert.equal(lines.length, 3, `only the user's frames: ${stack}`);
    }

    it('in the job status, the failed attempts and /api/v1', async () => {
      const status = await client.status(jobId);
      assert.equal(status.error?.details?.at, thrownAt);
      assertUserStack(status.error?.details?.stack);
      const failed = (await client.attempts(jobId)).filter((a) => a.state === 'failed');
      assert.equal(failed.length, 2);
      for (const a of failed) {
        assert.equal(a.error?.code, 'ETASK');
        assert.match(a.error!.message, new RegExp(`threw: line holds the forbidden word Hello \\(at ${thrownAt}\\)$`));
        assertUserStack(a.error?.details?.stack);
      }
      const base = t.cluster.url.replace(/^ws/, 'http');
      const auth = `Basic ${Buffer.from(`operator:${t.cluster.jobTracker.webPassword}`).toString('base64')}`;
      const get = async (path: string) => (await fetch(`${base}${path}`, { headers: { authorization: auth } })).text();
      const overHttp = JSON.parse(await get(`/api/v1/jobs/${jobId}/attempts`)) as AttemptSummary[];
      assert.ok(Value.Check(CLIENT_PROTOCOL['job-attempts'].result!, overHttp), 'attempts conform to their schema');
      const failedOverHttp = overHttp.filter((a) => a.state === 'failed');
      assert.equal(failedOverHttp.length, 2);
      for (const a of failedOverHttp) assertUserStack(a.error?.details?.stack);
      const jobOverHttp = JSON.parse(await get(`/api/v1/jobs/${jobId}`)) as JobStatus;
      assert.equal(jobOverHttp.error?.details?.at, thrownAt);
      const page = await get(`/jobs/${jobId}`);
      assert.ok(page.includes(`at checkLine (${thrownAt})`), 'the job page shows the stack');
      assert.ok(page.includes(`<summary>at ${thrownAt}</summary>`), 'each failed attempt shows where it threw');
    });

    it('in `minimr job status`, `job attempts` and `job logs`', async () => {
      const status = await cli(['job', 'status', jobId]);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, new RegExp(`error EJOBFAILED: .*\\(at ${thrownAt}\\)\\n`));
      assert.match(
        status.stdout,
        new RegExp(`\\n {4}Error: line holds the forbidden word Hello\\n {8}at checkLine \\(${thrownAt}\\)\\n`),
      );
      const attempts = await cli(['job', 'attempts', jobId]);
      assert.equal(attempts.code, 0, attempts.stderr);
      assert.equal(attempts.stdout.split(`    at checkLine (${thrownAt})\n`).length - 1, 2, attempts.stdout);
      const failed = (await client.attempts(jobId)).find((a) => a.state === 'failed')!;
      const logs = await cli(['job', 'logs', failed.attemptId, '--stream', 'stderr']);
      assert.equal(logs.code, 0, logs.stderr);
      assert.match(logs.stdout, new RegExp(`\\[minimr\\] attempt failed: ETASK: .*\\(at ${thrownAt}\\)\\n`));
      assert.ok(logs.stdout.includes(`[minimr]     at checkLine (${thrownAt})\n`), logs.stdout);
      assert.ok(logs.stdout.includes(`(${calledAt})\n`), logs.stdout);
    });
  });

  it('a prepare that throws is ETASK at the user’s line, before any job is created', async () => {
    const file = join(scratch, 'throwing-prepare.mjs');
    await writeFile(
      file,
      [
        "import { defineJob, textInput } from 'minimr';",
        'export default defineJob({',
        "  name: 'throwing-prepare',",
        '  input: textInput(),',
        '  map() {},',
        '  prepare() {',
        "    throw new RangeError('no split points');",
        '  },',
        '});',
        '',
      ].join('\n'),
    );
    const before = (await client.list(true)).length;
    await assert.rejects(
      client.submit(file, { input: ['/in/text.txt'], output: '/out/prepare' }),
      (err: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(err.code, 'ETASK');
        assert.equal(err.message, 'prepare of throwing-prepare threw: no split points (at throwing-prepare.mjs:7:11)');
        assert.equal(
          err.details?.stack,
          'RangeError: no split points\n    at Object.prepare (throwing-prepare.mjs:7:11)',
        );
        return true;
      },
    );
    assert.equal((await client.list(true)).length, before);
  });

  describe('refused at submit with EJOBMODULE, file, line and column, and no job created', () => {
    let jobsBefore: number;
    before(async () => {
      jobsBefore = (await client.list(true)).length;
    });
    after(async () => {
      assert.equal((await client.list(true)).length, jobsBefore, 'no job was created');
    });

    it('a syntax error in a helper file', async () => {
      await writeFile(
        join(scratch, 'uses-broken.mjs'),
        "import { defineJob, textInput } from 'minimr';\nimport { f } from './broken.mjs';\n" +
          "export default defineJob({ name: 'b', input: textInput(), map() { f(); } });\n",
      );
      await writeFile(join(scratch, 'broken.mjs'), 'export function f() {\n  return [1, 2;\n}\n');
      await assert.rejects(
        client.submit(join(scratch, 'uses-broken.mjs'), { input: ['/in/text.txt'], output: '/out/b' }),
        isCode(
          'EJOBMODULE',
          /^job module uses-broken\.mjs does not load: broken\.mjs:2:15: Expected "\]" but found ";"$/,
        ),
      );
    });

    it('an import that does not resolve: its specifier and the importing file and line', async () => {
      await writeFile(
        join(scratch, 'unresolved.mjs'),
        "import { defineJob, textInput } from 'minimr';\n\nimport { g } from './lib/missing-helper.mjs';\n" +
          "export default defineJob({ name: 'u', input: textInput(), map() { g(); } });\n",
      );
      await assert.rejects(
        client.submit(join(scratch, 'unresolved.mjs'), { input: ['/in/text.txt'], output: '/out/u' }),
        isCode('EJOBMODULE', /import "\.\/lib\/missing-helper\.mjs" at unresolved\.mjs:3:19 does not resolve/),
      );
      await writeFile(
        join(scratch, 'no-package.mjs'),
        "import { defineJob, textInput } from 'minimr';\nimport pad from 'no-such-package-here';\n" +
          "export default defineJob({ name: 'p', input: textInput(), map() { pad(); } });\n",
      );
      await assert.rejects(
        client.submit(join(scratch, 'no-package.mjs'), { input: ['/in/text.txt'], output: '/out/p' }),
        isCode('EJOBMODULE', /import "no-such-package-here" at no-package\.mjs:2:17 does not resolve \(no package/),
      );
    });

    it('a package with a native addon, named with the reason', async () => {
      const at = await locationOf('native-addon.mjs', "from 'native-pkg'", "'native-pkg'");
      await assert.rejects(
        client.submit(join(JOBS, 'native-addon.mjs'), { input: ['/in/text.txt'], output: '/out/n' }),
        isCode('EJOBMODULE', new RegExp(`${at}: package "native-pkg" cannot be bundled: it builds a native addon`)),
      );
      // A package that cannot work without one: refused as the client loads the bundle, at the require.
      const requireAt = await locationOf('node_modules/needs-native/index.js', 'REQUIRES THE ADDON', 'require');
      await assert.rejects(
        client.submit(join(JOBS, 'needs-native.mjs'), { input: ['/in/text.txt'], output: '/out/n' }),
        isCode(
          'EJOBMODULE',
          new RegExp(`package "native-pkg" cannot be bundled: it builds a native addon.*\\(at ${requireAt}\\)$`),
        ),
      );
      const napiAt = await locationOf('napi-addon.mjs', "from 'lz4-napi'", "'lz4-napi'");
      await assert.rejects(
        client.submit(join(JOBS, 'napi-addon.mjs'), { input: ['/in/text.txt'], output: '/out/n' }),
        isCode('EJOBMODULE', new RegExp(`${napiAt}: package "lz4-napi" cannot be bundled: it is a native addon`)),
      );
    });
  });
});
