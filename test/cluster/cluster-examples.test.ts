/**
 * The multi-machine example of cluster/README.md, run as written (issue 35, item 7): a JobTracker
 * listening beyond loopback (so TLS), workers and clients joining with `minimr join-token`'s string,
 * a user with a credential of their own; the daemons configured by cluster/systemd/minimr.json with
 * only its paths and ports changed for this machine. A worker given neither the token nor the
 * secret is refused with EAUTH, as the README says.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { parseJoinToken } from '../../src/runtime/wire/index.js';
import { appModule, freePort, makeText, parseCounts, referenceWordCount, waitFor } from '../helpers/cluster.js';
import { cliEnv, MINIMR_BIN, runMinimr } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** An environment with no cluster settings of this machine's user (no secret found by itself). */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = cliEnv(extra);
  for (const k of ['MINIMR_JOBTRACKER', 'MINIMR_SECRET_FILE', 'MINIMR_JOIN_TOKEN', 'MINIMR_CREDENTIAL_FILE'])
    if (!(k in extra)) delete env[k];
  return env;
}

describe('cluster/README.md and cluster/systemd/minimr.json, run as written', () => {
  let dir: string;
  let config: string;
  let jobTracker: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let daemonToken = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-examples-'));
    const example = JSON.parse(await readFile(join(ROOT, 'cluster', 'systemd', 'minimr.json'), 'utf8')) as Record<
      string,
      Record<string, unknown>
    >;
    // This machine's paths and free ports; every other setting as the example has it.
    example.jobtracker!.dir = join(dir, 'jobtracker');
    example.jobtracker!.port = await freePort();
    example.worker!.dir = join(dir, 'worker');
    example.worker!['data-port'] = await freePort();
    example.worker!['memory-mb'] = 2048;
    config = join(dir, 'minimr.json');
    await writeFile(config, JSON.stringify(example), { mode: 0o600 });
    jobTracker = spawn(process.execPath, [MINIMR_BIN, 'jobtracker', '--config', config], {
      env: bareEnv(),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const joinUrl = join(dir, 'jobtracker', 'join-url');
    await waitFor(
      'the JobTracker to start',
      () =>
        stat(joinUrl).then(
          () => true,
          () => undefined,
        ),
      60_000,
    );
    const token = await runMinimr(['join-token', '--dir', join(dir, 'jobtracker')], { env: bareEnv() });
    assert.equal(token.code, 0, token.stderr);
    daemonToken = token.stdout.trim();
    // The token goes into the worker's and the client's sections, as the example's placeholders say.
    example.worker!['join-token'] = daemonToken;
    example.client!['join-token'] = daemonToken;
    await writeFile(config, JSON.stringify(example), { mode: 0o600 });
    worker = spawn(process.execPath, [MINIMR_BIN, 'worker', '--config', config], {
      env: bareEnv(),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  });

  after(async () => {
    for (const p of [worker, jobTracker]) {
      if (!p || p.exitCode !== null || p.signalCode !== null) continue;
      const exited = once(p, 'exit');
      p.kill('SIGTERM');
      await exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves TLS beyond loopback and says so in the join token', () => {
    const payload = parseJoinToken(daemonToken);
    assert.match(payload.url, /^wss:\/\//);
    assert.ok(payload.ca, 'the token carries the authority to pin');
  });

  it('a user added by the admin runs WordCount with their own join token, and owns its output', async () => {
    const admin = bareEnv();
    await waitFor(
      'the worker to register',
      async () => {
        const r = await runMinimr(['job', 'list', '--config', config], { env: admin });
        return r.code === 0 ? true : undefined;
      },
      60_000,
    );
    const credential = join(dir, 'alice.credential');
    const added = await runMinimr(['user', 'add', 'alice', '--out', credential, '--config', config], { env: admin });
    assert.equal(added.code, 0, added.stderr);
    const token = await runMinimr(['join-token', '--dir', join(dir, 'jobtracker'), '--credential', credential], {
      env: admin,
    });
    assert.equal(token.code, 0, token.stderr);
    const password = await runMinimr(['web-password', '--config', config], { env: admin });
    assert.equal(password.code, 0, password.stderr);
    assert.match(password.stdout, /\S{16,}/);
    const alice = bareEnv({ MINIMR_JOIN_TOKEN: token.stdout.trim() });
    const text = makeText(100_000, 31);
    const corpus = join(dir, 'corpus.txt');
    await writeFile(corpus, text);
    const put = await runMinimr(['fs', 'put', corpus, '/in/corpus.txt'], { env: alice });
    assert.equal(put.code, 0, put.stderr);
    const submitted = await runMinimr(
      ['submit', appModule('wordcount'), '--input', '/in/corpus.txt', '--output', '/out/wc', '--reducers', '8'],
      { env: alice },
    );
    assert.equal(submitted.code, 0, submitted.stderr);
    const cat = await runMinimr(['fs', 'cat', '/out/wc'], { env: alice });
    assert.equal(cat.code, 0, cat.stderr);
    assert.deepEqual(parseCounts(cat.stdout), referenceWordCount(text));
    const ls = await runMinimr(['fs', 'ls', '/out/wc'], { env: alice });
    assert.match(ls.stdout, /alice\s+\S+\s+\d+\s+\S+\s+\/out\/wc\/part-r-00007/);
    // Her token names her: acting as someone else is refused.
    const other = await runMinimr(['fs', 'ls', '/', '--user', 'root'], { env: alice });
    assert.equal(other.code, 1);
    assert.match(other.stderr, /^minimr: EAUTH: /);
  });

  it('a worker with neither the join token nor the secret is refused with EAUTH', async () => {
    const { url } = parseJoinToken(daemonToken);
    const r = await runMinimr(['worker', '--jobtracker', url, '--dir', join(dir, 'stranger')], { env: bareEnv() });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /minimr: EAUTH: /);
  });
});
