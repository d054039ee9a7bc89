import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { isMinimrError } from '../../src/errors.js';
import type { JobClient } from '../../src/runtime/index.js';
import {
  appModule,
  fixtureModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

const runsAsRoot = process.getuid?.() === 0;

/**
 * Job code cannot reach the cluster's keys (issue 34, item 3): a map that reads the secret file, its
 * worker's command line, another process's, or another job's sandbox is refused with Node's access
 * error, and its job fails with it after its retries; a normal job runs as before. One worker with
 * two map slots, so that two jobs run side by side.
 */
describe('task sandbox: job code reads only its own directories', () => {
  let t: TestCluster;
  let client: JobClient;
  let run = 0;

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 2, reduceSlots: 1, replication: 1, maxAttempts: 2 });
    client = t.cluster.client;
  });
  after(async () => {
    await t?.stop();
  });

  const probe = (params: Record<string, string | number>) =>
    client.run(fixtureModule('sandbox-probe'), { output: `/out/probe-${++run}`, params, overwrite: true });

  /** WordCount of `text` (stored as /in/NAME.txt) with 2 reduces: succeeded, and its counts the reference's. */
  const wordCount = async (name: string, text: string) => {
    await t.fs.put(Buffer.from(text), `/in/${name}.txt`);
    const status = await client.run(appModule('wordcount'), {
      input: [`/in/${name}.txt`],
      output: `/out/${name}`,
      reducers: 2,
    });
    assert.equal(status.state, 'succeeded');
    assert.deepEqual(parseCounts((await readOutput(t.fs, `/out/${name}`)).toString()), referenceWordCount(text));
    return status;
  };

  /** The job fails after its 2 attempts, each refused by the runtime: ERR_ACCESS_DENIED naming the path. */
  const refused = async (path: string, named = path) => {
    await assert.rejects(probe({ probe: 'read', path }), (err: Error) => {
      assert.ok(isMinimrError(err, 'EJOBFAILED'), `${err.name}: ${err.message}`);
      assert.match(err.message, /failed 2 times/);
      assert.match(err.message, /ERR_ACCESS_DENIED: Access to this API has been restricted \(FileSystemRead /);
      assert.ok(err.message.includes(named), `the refused path is named: ${err.message}`);
      return true;
    });
  };

  it("the cluster secret file: refused (it is readable by the worker's user)", async () => {
    const secretFile = t.cluster.jobTracker.secretFile;
    assert.ok(readFileSync(secretFile).length >= 16, 'the secret is there to be read');
    await refused(secretFile);
  });

  it("the worker's command line and environment (/proc/<worker pid>/...), and /proc/1/cmdline: refused", async () => {
    await refused('/proc/{parent}/cmdline', '/cmdline');
    await refused('/proc/{parent}/environ', '/environ');
    await refused('/proc/1/cmdline');
  });

  it("another job's work directory and map outputs, and the worker's blocks: refused", async () => {
    const holder = probe({ probe: 'hold', ms: 6000 });
    // The holding job's sandbox, once its map wrote its marker there.
    const sandboxRoot = join(t.dir, 'worker-0', 'sandbox');
    let marker: string | undefined;
    for (let waited = 0; marker === undefined && waited < 20_000; waited += 50) {
      for (const job of existsSync(sandboxRoot) ? readdirSync(sandboxRoot) : []) {
        const path = join(sandboxRoot, job, 'work', 'marker');
        if (existsSync(path)) marker = path;
      }
      await sleep(50);
    }
    assert.ok(marker, 'the holding job wrote its marker in its work directory');
    // Paths in the worker's directory reach the client as a placeholder (no server paths in errors).
    const hidden = "[worker-0's data directory]";
    await refused(marker, hidden);
    await refused(join(t.dir, 'worker-0', 'shuffle'), hidden);
    await refused(join(t.dir, 'worker-0', 'blocks'), hidden);
    const status = await holder;
    assert.equal(status.state, 'succeeded');
    assert.equal((await readOutput(t.fs, `/out/probe-${run - 3}`)).toString(), `marker\t${marker}\n`);
  });

  it("another package's native addon (one that does file I/O of its own, outside the permission model): refused", async (tc) => {
    const addon = join(
      fileURLToPath(new URL('../../../node_modules/classic-level/prebuilds/linux-x64/', import.meta.url)),
      'classic-level.node',
    );
    if (process.platform !== 'linux' || process.arch !== 'x64' || !existsSync(addon)) {
      tc.skip('no classic-level addon for this platform');
      return;
    }
    await assert.rejects(probe({ probe: 'addon', path: realpathSync(addon) }), (err: Error) => {
      assert.ok(isMinimrError(err, 'EJOBFAILED'), `${err.name}: ${err.message}`);
      assert.match(
        err.message,
        /ERR_ACCESS_DENIED: Access to this API has been restricted: task processes load no other native addon/,
      );
      return true;
    });
  });

  it('runs as an unprivileged account where the worker runs as root, with no MINIMR_* setting of the worker', async () => {
    const status = await probe({ probe: 'identity' });
    assert.equal(status.state, 'succeeded');
    const got = new Map(
      (await readOutput(t.fs, `/out/probe-${run}`))
        .toString()
        .trim()
        .split('\n')
        .map((line) => line.split('\t') as [string, string]),
    );
    // The worker has MINIMR_SECRET_FILE and MINIMR_LOG_LEVEL (local-cluster.ts); its tasks keep only the log level
    // (and the config the worker gives them).
    assert.equal(got.get('minimr-env'), 'MINIMR_LOG_LEVEL,MINIMR_TASK_CONFIG');
    // Its job's sandbox, or the worker's spare one, which the job adopted (worker/sandbox.ts).
    assert.match(got.get('cwd') ?? '', /\/worker-0\/sandbox\/(job_[^/]+|spare-\d+)\/work$/);
    if (runsAsRoot) {
      assert.notEqual(got.get('uid'), '0', 'not root');
      // The job's owner (this test's user, root) has no account of uid >= 1000 here: nobody.
      assert.equal(got.get('uid'), '65534');
    } else assert.equal(got.get('uid'), String(process.getuid?.()));
  });

  it("a job on an idle worker starts in its spare process: its map outputs reach the reduces through the spare's link, and the spare's sandbox goes with the job", async () => {
    const sandboxRoot = join(t.dir, 'worker-0', 'sandbox');
    // The worker's spare: a spare-<n> sandbox no job has adopted (no link in its shuffle/ yet).
    const unadopted = () =>
      readdirSync(sandboxRoot).filter(
        (d) =>
          d.startsWith('spare-') &&
          existsSync(join(sandboxRoot, d, 'shuffle')) &&
          readdirSync(join(sandboxRoot, d, 'shuffle')).length === 0,
      );
    for (let waited = 0; unadopted().length === 0 && waited < 20_000; waited += 50) await sleep(50);
    const [spare] = unadopted();
    assert.ok(spare, 'the idle worker has a spare process');
    const status = await wordCount('spare', makeText(300_000, 11));
    assert.equal(status.counters.SPARE_LAUNCH, 1, 'its first launch took the spare, the others forked or reused');
    for (let waited = 0; existsSync(join(sandboxRoot, spare)) && waited < 10_000; waited += 50) await sleep(50);
    assert.equal(existsSync(join(sandboxRoot, spare)), false, "the spare's sandbox went with the job's clean-up");
  });

  it('a normal job reads its input (local replicas through links), shuffles and writes as before', async () => {
    const status = await wordCount('sandbox', makeText(400_000, 7));
    assert.ok((status.counters.BYTES_READ_LOCAL ?? 0) > 0, 'the maps read their local replicas');
  });
});

describe('task sandbox: a worker started with --no-spare-process', () => {
  let t: TestCluster;

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1, spareProcess: false });
  });
  after(async () => {
    await t?.stop();
  });

  it("starts task processes for jobs only: none ahead, each job's in its own sandbox", async () => {
    await sleep(1000);
    const sandboxRoot = join(t.dir, 'worker-0', 'sandbox');
    assert.deepEqual(readdirSync(sandboxRoot), [], 'no spare sandbox');
    const status = await t.cluster.client.run(fixtureModule('sandbox-probe'), {
      output: '/out/no-spare',
      params: { probe: 'identity' },
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.counters.SPARE_LAUNCH, undefined);
    const cwd = (await readOutput(t.fs, '/out/no-spare'))
      .toString()
      .split('\n')
      .find((line) => line.startsWith('cwd\t'));
    assert.match(cwd ?? '', /\/worker-0\/sandbox\/job_[^/]+\/work$/);
  });
});
