import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliEnv, MINIMR_BIN as BIN, runMinimr, type CliResult } from '../helpers/cli.js';
import { startTestCluster, type TestCluster } from '../helpers/cluster.js';

function minimr(args: string[]): Promise<CliResult> {
  return runMinimr(args, { env: cliEnv({ MINIMR_JOBTRACKER: '' }) });
}

// The `minimr` command and a worker process reading a config file; the file's parsing alone is in
// test/cli/config.test.ts.
describe('--config minimr.json', () => {
  let dir: string;
  let t: TestCluster;
  const write = async (name: string, content: unknown) => {
    const file = join(dir, name);
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-config-'));
    t = await startTestCluster({ workers: 1, replication: 1 });
    await t.fs.put(Buffer.from('hello\n'), '/data/hello.txt');
  });
  after(async () => {
    await t?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('the CLI takes its options from the file, and flags win', async () => {
    const secretFile = t.cluster.jobTracker.secretFile;
    const good = await write('client.json', { client: { jobtracker: t.cluster.url, 'secret-file': secretFile } });
    const ls = await minimr(['fs', 'ls', '/data', '--config', good]);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /\/data\/hello\.txt/);
    const wrong = await write('wrong.json', { fs: { jobtracker: 'ws://127.0.0.1:1', 'secret-file': secretFile } });
    const overridden = await minimr(['fs', 'ls', '/data', '--config', wrong, '--jobtracker', t.cluster.url]);
    assert.equal(overridden.code, 0, overridden.stderr);
    assert.match(overridden.stdout, /\/data\/hello\.txt/);
    const unknown = await write('unknown.json', {
      fs: { jobtracker: t.cluster.url, 'secret-file': secretFile, racks: '/r' },
    });
    const refused = await minimr(['fs', 'ls', '/data', '--config', unknown]);
    assert.equal(refused.code, 2);
    // One line with its code (issue 35: usage errors are EUSAGE, no longer yargs' text under the whole help).
    assert.match(refused.stderr, /^minimr: EUSAGE: unknown argument 'racks' .*unknown\.json's "fs" section/m);
    const broken = await minimr(['fs', 'ls', '--config', await write('broken.json', '{')]);
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /^minimr: EBADCONF: the config file .*broken\.json is not valid JSON/);
  });

  it('the JobTracker refuses worker claim limits that are not positive integers', async () => {
    const r = await minimr([
      'jobtracker',
      '--dir',
      join(dir, 'jt-limits'),
      '--port',
      '0',
      '--max-worker-map-slots',
      '0',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^minimr: EBADCONF: --max-worker-map-slots must be a positive integer, got 0/);
  });

  it(
    'a worker started from a config file registers with its rack, ' +
      'slots and the address of its route to the JobTracker',
    async () => {
      const file = await write('worker.json', {
        worker: {
          jobtracker: t.cluster.url,
          'secret-file': t.cluster.jobTracker.secretFile,
          dir: join(dir, 'w9'),
          id: 'worker-from-config',
          rack: '/rack-config',
          'map-slots': 3,
          'reduce-slots': 2,
          'memory-mb': 2048,
          'disk-mbps': 50,
        },
      });
      const child = spawn(process.execPath, [BIN, 'worker', '--config', file, '--reduce-slots', '1'], {
        stdio: 'ignore',
        env: { ...process.env, MINIMR_LOG_LEVEL: 'error' },
      });
      try {
        await t.cluster.jobTracker.waitForWorkers(2, 30_000);
        const w = (await t.cluster.client.clusterInfo()).workers.find((x) => x.workerId === 'worker-from-config');
        assert.ok(w, 'registered');
        assert.deepEqual(
          [w.rack, w.mapSlots, w.reduceSlots, w.memoryMb, w.host],
          ['/rack-config', 3, 1, 2048, '127.0.0.1'],
        );
      } finally {
        // A worker that gave up (a refused registration) has exited already: waiting for 'exit' would hang.
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          await once(child, 'exit');
        }
      }
    },
  );
});
