import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker } from '../../src/runtime/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { MINIMR_BIN, cliEnv } from '../helpers/cli.js';
import { fixtureModule, waitFor } from '../helpers/cluster.js';

/** Why this test cannot run here, if it cannot: it mounts a small tmpfs in a mount namespace of its own. */
function cannotRun(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs (in a mount namespace of its own)';
  try {
    execFileSync('unshare', ['-m', 'true'], { stdio: 'ignore' });
  } catch {
    return 'unshare -m is not available';
  }
  return undefined;
}

/**
 * Errors a client sees do not show a worker's files: a worker whose data directory is a 1 MiB tmpfs
 * (mounted in its own mount namespace) answers a write with EDISKFULL, and its attempts fail with
 * EDISKFULL, without the directory's path; the worker's log keeps it.
 */
describe('no server paths in the errors clients see', { skip: cannotRun() }, () => {
  let dir: string;
  let workerDir: string;
  let jt: JobTracker;
  let client: JobClient;
  let worker: ChildProcess;
  let workerLog = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-private-paths-'));
    workerDir = join(dir, 'small-disk');
    await mkdir(workerDir);
    jt = new JobTracker({
      dataDir: join(dir, 'jt'),
      port: 0,
      policy: createPolicy('fifo'),
      heartbeatMs: 200,
      blockSize: 256 * 1024,
      replication: 1,
      maxAttempts: 2,
      logger: createLogger('jt', 'silent'),
    });
    await jt.start();
    const args = [
      MINIMR_BIN,
      'worker',
      '--jobtracker',
      jt.url,
      '--secret-file',
      jt.secretFile,
      '--dir',
      workerDir,
      '--id',
      'small-disk',
      '--disk-mbps',
      '100',
      '--map-slots',
      '1',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    worker = spawn(
      'unshare',
      ['-m', 'sh', '-c', `mount -t tmpfs -o size=1m tmpfs '${workerDir}' && exec '${process.execPath}' ${args}`],
      { env: cliEnv({ MINIMR_LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    worker.stdout!.on('data', (d: Buffer) => (workerLog += d.toString()));
    worker.stderr!.on('data', (d: Buffer) => (workerLog += d.toString()));
    client = await JobClient.connect(jt.url);
    await waitFor(
      'the small-disk worker',
      async () => ((await client.clusterInfo()).workers.some((w) => w.workerId === 'small-disk') ? true : undefined),
      20_000,
    );
  });
  after(async () => {
    client?.close();
    worker?.kill('SIGKILL');
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function assertNoPaths(text: string): void {
    assert.ok(!text.includes(dir), `a server path in: ${text}`);
    assert.ok(!text.includes(tmpdir() + '/minimr-'), `a server path in: ${text}`);
  }

  it("a write to a full worker: EDISKFULL without the worker's directory; its log has it", async () => {
    const err = await client.fs.put(Buffer.alloc(3 << 20, 7), '/big').then(
      () => assert.fail('a 3 MiB file fit a 1 MiB disk'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof MinimrError, String(err));
    // Either the NameNode, knowing the disk full from the worker's heartbeats, refused the next block
    // (its message names the file only), or the worker's own write failed: then the writer's error
    // has the datanode's answer as its cause, the directory shown as a placeholder.
    const why = err.code === 'EDISKFULL' && !(err.cause instanceof MinimrError) ? err : err.cause;
    assert.ok(why instanceof MinimrError, `${err.code}: ${err.message}`);
    assert.equal(why.code, 'EDISKFULL', why.message);
    assert.match(
      why.message,
      /disk full while writing block \S+ in \[small-disk's data directory\]|no datanode has room for another block of \/big/,
    );
    for (const e of [err, why]) {
      assertNoPaths(e.message);
      assertNoPaths(JSON.stringify(e.details));
    }
    if (why.message.includes('[small-disk')) {
      await waitFor(
        'the full text in the worker log',
        () => (workerLog.includes(join(workerDir, 'blocks')) ? true : undefined),
        10_000,
      );
    }
  });

  it("an attempt that fills the disk: the job's error and the attempts' errors name no server path", async () => {
    await client.fs.remove('/big').catch(() => undefined);
    // Room again once the worker has deleted /big's blocks and said so in a heartbeat.
    await waitFor(
      'room on the small disk',
      () =>
        client.fs.put(Buffer.from('a\nb\n'), '/small.txt', { overwrite: true }).then(
          () => true,
          () => undefined,
        ),
      20_000,
    );
    const jobId = await client.submit(fixtureModule('bloat'), {
      input: ['/small.txt'],
      output: '/bloat-out',
      reducers: 1,
      params: { copies: 4000 },
    });
    const ended = await client.waitForCompletion(jobId).then(
      () => assert.fail('the job fit a 1 MiB disk'),
      (e: unknown) => e,
    );
    assert.ok(ended instanceof MinimrError && ended.code === 'EJOBFAILED', String(ended));
    assert.match(ended.message, /EDISKFULL|no space left on device/);
    assertNoPaths(ended.message);
    const status = await client.status(jobId);
    assert.equal(status.state, 'failed');
    const failed = (await client.attempts(status.jobId)).filter((a) => a.state === 'failed');
    assert.ok(failed.length > 0);
    assert.ok(
      failed.some((a) => a.error?.code === 'EDISKFULL'),
      JSON.stringify(failed.map((a) => a.error)),
    );
    for (const a of failed) assertNoPaths(JSON.stringify(a.error));
    assertNoPaths(JSON.stringify(status.error));
  });
});
