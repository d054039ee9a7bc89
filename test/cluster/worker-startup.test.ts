import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pack } from 'msgpackr';
import { WebSocketServer } from 'ws';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker, PROTOCOL_VERSION } from '../../src/runtime/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { MINIMR_BIN, cliEnv, type CliResult } from '../helpers/cli.js';
import { freePort } from '../helpers/cluster.js';

/**
 * `minimr worker` with a config the JobTracker can never take exits at once with one line and
 * status 1; one whose JobTracker is not up yet waits for it.
 */

/** Runs `minimr worker ARGS`, killed after `limitMs` if it has not exited by then (code null). */
function runWorker(args: readonly string[], limitMs: number): Promise<CliResult & { ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MINIMR_BIN, 'worker', ...args],
      { env: cliEnv(), timeout: limitMs, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number | null }).code ?? null) : 0;
        resolve({ code: code as number, stdout, stderr, ms: Date.now() - started });
      },
    );
  });
}

describe('minimr worker at start-up', () => {
  let dir: string;
  let jt: JobTracker;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-worker-startup-'));
    jt = new JobTracker({
      dataDir: join(dir, 'jt'),
      port: 0,
      policy: createPolicy('fifo'),
      heartbeatMs: 200,
      logger: createLogger('jt', 'silent'),
    });
    await jt.start();
  });
  after(async () => {
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function assertOneLineExit(r: CliResult & { ms: number }, code: string, message: RegExp): void {
    assert.equal(r.code, 1, `exit status 1 (null: still retrying when killed); stderr: ${r.stderr}`);
    const lines = r.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`^minimr: ${code}: `));
    assert.match(lines[0]!, message);
  }

  it('a claim the JobTracker refuses (a malformed --id) exits 1 with the reason instead of retrying', async () => {
    const r = await runWorker(
      ['--jobtracker', jt.url, '--secret-file', jt.secretFile, '--dir', join(dir, 'w-bad-id'), '--id', 'bad id!'],
      20_000,
    );
    assertOneLineExit(r, 'EPROTOCOL', /cannot register with the JobTracker at ws:.*workerId/);
  });

  it('a wrong secret exits 1 naming it', async () => {
    const wrong = join(dir, 'wrong-secret');
    await writeFile(wrong, 'b'.repeat(64), { mode: 0o600 });
    const r = await runWorker(
      ['--jobtracker', jt.url, '--secret-file', wrong, '--dir', join(dir, 'w-wrong-secret')],
      20_000,
    );
    assertOneLineExit(r, 'EAUTH', /wrong cluster secret/);
  });

  it('a JobTracker of another protocol version: EVERSION at once, not after the authentication timeout', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await once(wss, 'listening');
    wss.on('connection', (socket) =>
      socket.send(pack({ v: PROTOCOL_VERSION + 1, type: 'hello', nonce: 'ab'.repeat(16) })),
    );
    try {
      const url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}`;
      const r = await runWorker(
        ['--jobtracker', url, '--secret-file', jt.secretFile, '--dir', join(dir, 'w-version')],
        20_000,
      );
      assertOneLineExit(r, 'EVERSION', /speaks another protocol: protocol version 3 is not supported/);
      assert.ok(r.ms < 15_000, `exited after ${r.ms} ms`);
    } finally {
      for (const c of wss.clients) c.terminate();
      await new Promise((resolve) => wss.close(resolve));
    }
  });

  it('a JobTracker not up yet is waited for: the worker registers once it starts', async () => {
    const port = await freePort();
    // The secret exists before the JobTracker starts, as an admin's copy would.
    const secretFile = join(dir, 'later-secret');
    await writeFile(secretFile, 'c'.repeat(64), { mode: 0o600 });
    const worker = spawn(
      process.execPath,
      [
        MINIMR_BIN,
        'worker',
        '--jobtracker',
        `ws://127.0.0.1:${port}`,
        '--secret-file',
        secretFile,
        '--dir',
        join(dir, 'w-later'),
        '--id',
        'w-later',
        '--disk-mbps',
        '100',
      ],
      { env: cliEnv(), stdio: 'ignore' },
    );
    const later = new JobTracker({
      dataDir: join(dir, 'jt-later'),
      host: '127.0.0.1',
      port,
      secretFile,
      policy: createPolicy('fifo'),
      heartbeatMs: 200,
      logger: createLogger('jt', 'silent'),
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(worker.exitCode, null, 'still waiting for the JobTracker');
      await later.start();
      const client = await JobClient.connect(later.url);
      try {
        const deadline = Date.now() + 20_000;
        let ids: string[] = [];
        while (Date.now() < deadline) {
          ids = (await client.clusterInfo()).workers.map((w) => w.workerId);
          if (ids.includes('w-later')) break;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        assert.deepEqual(ids, ['w-later']);
      } finally {
        client.close();
      }
    } finally {
      worker.kill('SIGKILL');
      await later.stop();
    }
  });
});
