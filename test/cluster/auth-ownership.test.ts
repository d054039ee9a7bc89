import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createHmac } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import { WebSocket } from 'ws';
import { JobClient, PROTOCOL_VERSION } from '../../src/runtime/index.js';
import { MINIMR_BIN as BIN, runMinimr, type CliResult } from '../helpers/cli.js';
import {
  appModule,
  assertCountsEqual,
  fixtureModule,
  isCode,
  makeText,
  readOutput,
  waitFor,
} from '../helpers/cluster.js';

/**
 * A JobTracker and a worker as real processes on port 0, with an admin named `admin`, and users
 * alice and bob; each attack below is refused with a clear error, and a WordCount run afterwards
 * is still exact. HOME points into the test's directory: the JobTracker's pointer to its secret lands there.
 */
describe('security: authentication and ownership on real processes', () => {
  let dir: string;
  let url: string;
  let secretFile: string;
  let secret: Buffer;
  let jobTracker: ChildProcess;
  let worker: ChildProcess;
  let alice: JobClient;
  let admin: JobClient;
  let runs = 0;
  const text = makeText(96 * 1024, 17);

  function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const base: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: join(dir, 'home'),
      MINIMR_LOG_LEVEL: 'error',
      MINIMR_JOBTRACKER: url,
    };
    delete base.MINIMR_SECRET_FILE;
    delete base.MINIMR_USER;
    return { ...base, ...extra };
  }

  function minimr(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
    return runMinimr(args, { env: env(extra) });
  }

  /** `minimr` as a user who has the cluster secret. */
  function as(user: string, args: string[]): Promise<CliResult> {
    return minimr([...args, '--user', user], { MINIMR_SECRET_FILE: secretFile });
  }

  function connect(user: string): Promise<JobClient> {
    return JobClient.connect(url, { security: { credentials: { user, secret } } });
  }

  /** The cluster still serves: alice's WordCount of the shared input is exact. */
  async function wordCountStillCorrect(): Promise<void> {
    const output = `/alice/wc-${++runs}`;
    const jobId = await alice.submit(appModule('wordcount'), { input: ['/data/words.txt'], output, reducers: 2 });
    const status = await alice.waitForCompletion(jobId);
    assert.equal(status.state, 'succeeded');
    assert.equal(status.user, 'alice');
    assertCountsEqual(await readOutput(alice.fs, output), text);
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-security-'));
    await mkdir(join(dir, 'home'));
    url = '';
    jobTracker = spawn(
      process.execPath,
      [
        BIN,
        'jobtracker',
        '--port',
        '0',
        '--dir',
        join(dir, 'jt'),
        '--admin',
        'admin',
        '--heartbeat-ms',
        '200',
        '--block-size',
        '64k',
        '--replication',
        '1',
      ],
      {
        env: env(),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let banner = '';
    url = await new Promise<string>((resolve, reject) => {
      jobTracker.stderr!.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
        const m = /JobTracker (ws:\/\/\S+), admin admin, cluster secret (\S+)/.exec(banner);
        if (m) resolve(m[1]!);
      });
      jobTracker.once('exit', () => reject(new Error(`jobtracker exited: ${banner}`)));
    });
    secretFile = join(dir, 'jt', 'secret');
    secret = Buffer.from((await readFile(secretFile, 'utf8')).trim());
    worker = spawn(
      process.execPath,
      [
        BIN,
        'worker',
        '--dir',
        join(dir, 'w1'),
        '--id',
        'w1',
        '--disk-mbps',
        '100',
        '--map-slots',
        '2',
        '--reduce-slots',
        '2',
      ],
      {
        env: env({ MINIMR_SECRET_FILE: secretFile }),
        stdio: 'ignore',
      },
    );
    admin = await connect('admin');
    alice = await connect('alice');
    await waitFor(
      'the worker to register',
      async () => ((await admin.clusterInfo()).workers.length === 1 ? true : undefined),
      60_000,
    );
    await alice.fs.put(Buffer.from(text), '/data/words.txt');
  });

  after(async () => {
    alice?.close();
    admin?.close();
    for (const p of [worker, jobTracker]) {
      if (p && p.exitCode === null && p.signalCode === null) {
        const exited = once(p, 'exit');
        p.kill('SIGTERM');
        await exited;
      }
    }
    await rm(dir, { recursive: true, force: true });
  });

  /** A raw protocol socket: what an attacker without the secret can send. */
  async function rawSocket(): Promise<{
    ws: WebSocket;
    nonce: string;
    next(): Promise<Record<string, unknown>>;
    closed: Promise<[number, string]>;
  }> {
    const ws = new WebSocket(url);
    const frames: Record<string, unknown>[] = [];
    const waiting: ((f: Record<string, unknown>) => void)[] = [];
    ws.on('message', (data: Buffer) => {
      const frame = unpack(data) as Record<string, unknown>;
      const w = waiting.shift();
      if (w) w(frame);
      else frames.push(frame);
    });
    const closed = once(ws, 'close').then(([code, reason]) => [code as number, String(reason)] as [number, string]);
    await once(ws, 'open');
    const next = () =>
      frames.length > 0
        ? Promise.resolve(frames.shift()!)
        : new Promise<Record<string, unknown>>((r) => waiting.push(r));
    const hello = await next();
    assert.equal(hello.type, 'hello');
    return { ws, nonce: String(hello.nonce), next, closed };
  }

  for (const [what, frame] of [
    ['submit', { type: 'submit-job', id: 1, job: { name: 'x' } }],
    [
      'register',
      {
        type: 'register',
        id: 1,
        worker: {
          workerId: 'rogue',
          host: '127.0.0.1',
          dataPort: 1,
          rack: '/r',
          mapSlots: 64,
          reduceSlots: 64,
          memoryMb: 1 << 20,
          diskMBps: 0,
        },
        blockIds: [],
      },
    ],
    ['fs', { type: 'fs-remove', id: 1, path: '/data', recursive: true }],
  ] as const) {
    it(`refuses an unauthenticated ${what} with EAUTH and closes that connection only`, async () => {
      const raw = await rawSocket();
      raw.ws.send(pack({ v: PROTOCOL_VERSION, ...frame }));
      const reply = await raw.next();
      assert.equal(reply.ok, false);
      const error = reply.error as Record<string, unknown>;
      assert.equal(error.code, 'EAUTH');
      assert.match(String(error.message), /requires authentication.*secret/);
      assert.equal(error.stack, undefined, 'no stack trace in a reply');
      const [code, reason] = await raw.closed;
      assert.equal(code, 4401);
      assert.match(reason, /EAUTH/);
      assert.equal((await admin.clusterInfo()).workers.length, 1, 'no rogue worker registered');
      assert.equal((await admin.fs.stat('/data/words.txt')).owner, 'alice');
      await wordCountStillCorrect();
    });
  }

  it(
    'refuses a command without the secret, or with a wrong one, ' + 'with EAUTH; a worker with a wrong secret exits',
    async () => {
      // The JobTracker left a pointer to its secret in this HOME (for its OS user); another HOME has none.
      assert.equal((await minimr(['fs', 'ls', '/'])).code, 0);
      const none = await minimr(['fs', 'ls', '/'], { HOME: join(dir, 'elsewhere') });
      assert.equal(none.code, 1);
      assert.match(none.stderr, /^minimr: EAUTH: this JobTracker requires authentication/m);
      const wrongFile = join(dir, 'wrong-secret');
      await writeFile(wrongFile, 'not-the-secret-but-long-enough\n', { mode: 0o600 });
      const wrong = await minimr(['fs', 'rm', '-r', '/data'], { MINIMR_SECRET_FILE: wrongFile });
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /^minimr: EAUTH: authentication failed for user \S+: wrong cluster secret/m);
      const rogue = await minimr(['worker', '--dir', join(dir, 'rogue'), '--id', 'w1', '--disk-mbps', '100'], {
        MINIMR_SECRET_FILE: wrongFile,
      });
      assert.equal(rogue.code, 1);
      assert.match(rogue.stderr, /EAUTH/);
      const open = join(dir, 'open-secret');
      await writeFile(open, await readFile(secretFile), { mode: 0o644 });
      const exposed = await minimr(['fs', 'ls', '/'], { MINIMR_SECRET_FILE: open });
      assert.equal(exposed.code, 1);
      assert.match(exposed.stderr, /EBADCONF: the cluster secret file .* is readable by other users/);
      assert.deepEqual(
        (await admin.clusterInfo()).workers.map((w) => w.workerId),
        ['w1'],
      );
      await wordCountStillCorrect();
    },
  );

  it('answers hostile or garbage handshake frames with a clear error and keeps serving', async () => {
    const missing = await rawSocket();
    missing.ws.send(pack({ v: PROTOCOL_VERSION, type: 'auth', id: 1, user: 'alice' }));
    const [code1, reason1] = await missing.closed;
    assert.equal(code1, 1002);
    assert.match(reason1, /EPROTOCOL: message "auth" lacks field "nonce"/);

    const badUser = await rawSocket();
    badUser.ws.send(
      pack({ v: PROTOCOL_VERSION, type: 'auth', id: 1, user: '../root\n', nonce: 'ab'.repeat(32), proof: 'x' }),
    );
    assert.equal(((await badUser.next()).error as { code: string }).code, 'EAUTH');
    assert.equal((await badUser.closed)[0], 4401);

    // A proof made for one connection's challenge is worth nothing on another (replay).
    const first = await rawSocket();
    const clientNonce = 'cd'.repeat(32);
    const proof = createHmac('sha256', secret)
      .update(`minimr-auth-v1\0client\0${first.nonce}\0${clientNonce}\0admin`)
      .digest('hex');
    const second = await rawSocket();
    second.ws.send(pack({ v: PROTOCOL_VERSION, type: 'auth', id: 1, user: 'admin', nonce: clientNonce, proof }));
    const replayed = (await second.next()).error as { code: string; message: string };
    assert.equal(replayed.code, 'EAUTH');
    assert.match(replayed.message, /wrong cluster secret/);
    // On its own connection the same proof is good, and replies then carry code and message, no stack.
    first.ws.send(pack({ v: PROTOCOL_VERSION, type: 'auth', id: 1, user: 'admin', nonce: clientNonce, proof }));
    const accepted = await first.next();
    assert.equal(accepted.ok, true, JSON.stringify(accepted));
    assert.equal(
      (accepted.result as { proof: string }).proof,
      createHmac('sha256', secret)
        .update(`minimr-auth-v1\0server\0${first.nonce}\0${clientNonce}\0admin`)
        .digest('hex'),
    );
    first.ws.send(pack({ v: PROTOCOL_VERSION, type: 'kill-job', id: 2, jobId: 'job_nope_0001' }));
    const noJob = await first.next();
    assert.deepEqual(Object.keys(noJob.error as object).sort(), ['code', 'details', 'message']);
    first.ws.close();

    const garbage = await rawSocket();
    garbage.ws.send(Buffer.from([0xde, 0xad, 0xbe, 0xef, 0xc1]));
    assert.equal((await garbage.closed)[0], 1002);
    await wordCountStillCorrect();
  });

  it("refuses to kill another user's job with EPERM; the admin may", async () => {
    const jobId = await alice.submit(fixtureModule('slow-wordcount'), {
      input: ['/data/words.txt'],
      output: '/alice/slow',
      params: { mapDelayMs: 200 },
    });
    const bob = await as('bob', ['job', 'kill', jobId]);
    assert.equal(bob.code, 1);
    assert.match(
      bob.stderr,
      new RegExp(`^minimr: EPERM: permission denied: job ${jobId} belongs to alice; user bob may not kill it`, 'm'),
    );
    assert.equal((await admin.status(jobId)).state, 'running');
    const killed = await as('admin', ['job', 'kill', jobId]);
    assert.equal(killed.code, 0, killed.stderr);
    assert.equal((await alice.waitForCompletion(jobId).catch(() => admin.status(jobId))).state, 'killed');
    await wordCountStillCorrect();
  });

  it("refuses to remove or write another user's paths with EPERM; the admin may", async () => {
    const ls = await as('bob', ['fs', 'ls', '/data']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^-rw-r--r--  1 alice supergroup +\d+ \S+ \/data\/words\.txt$/m);
    for (const args of [
      ['fs', 'rm', '-r', '/data'],
      ['fs', 'rm', '/data/words.txt'],
      ['fs', 'mkdir', '/data/bob'],
      ['fs', 'chmod', '777', '/data'],
    ]) {
      const r = await as('bob', args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /^minimr: EPERM: /m, args.join(' '));
    }
    const chown = await as('alice', ['fs', 'chown', 'alice', '/data']);
    assert.match(chown.stderr, /EPERM: permission denied: only the admin may change the owner/);
    // bob's job may read alice's input but not write into her directory.
    const bobs = await connect('bob');
    try {
      await assert.rejects(
        bobs.submit(appModule('wordcount'), { input: ['/data/words.txt'], output: '/data/bob-out' }),
        isCode('EPERM'),
      );
      await assert.rejects(bobs.kill('job_nope_0001'), isCode('ENOJOB'));
    } finally {
      bobs.close();
    }
    assert.equal((await as('admin', ['fs', 'mkdir', '/data/by-admin'])).code, 0);
    assert.equal((await as('admin', ['fs', 'rm', '-r', '/data/by-admin'])).code, 0);
    await wordCountStillCorrect();
  });

  it('gives bob a credential (minimr user add): with it he is bob, and cannot act as root or the admin', async () => {
    const file = join(dir, 'bob.credential');
    const added = await as('admin', ['user', 'add', 'bob', '--out', file]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /credential of user bob written to/);
    const bob = (args: string[], extra: Record<string, string> = {}) =>
      minimr(args, { MINIMR_CREDENTIAL_FILE: file, ...extra });
    const mkdir = await bob(['fs', 'mkdir', '/bobs']);
    assert.equal(mkdir.code, 0, mkdir.stderr);
    assert.match((await bob(['fs', 'ls', '/'])).stdout, /^drwxr-xr-x  0 bob +supergroup +0 \S+ \/bobs$/m);
    for (const user of ['root', 'admin']) {
      const r = await bob(['fs', 'chown', 'bob', '/data', '--user', user]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(`^minimr: EAUTH: the credential in \\S+ is user bob's: it cannot act as ${user}`, 'm'),
      );
    }
    const chown = await bob(['fs', 'chown', 'bob', '/data']);
    assert.match(chown.stderr, /EPERM: permission denied: only the admin may change the owner/);
    // Only the admin manages users; the admin sees bob, revokes him, and his credential stops working.
    assert.match((await bob(['user', 'list'])).stderr, /^minimr: EPERM: /m);
    assert.match((await as('admin', ['user', 'list'])).stdout, /^bob {2}\d{4}-\S+ {2}-$/m);
    assert.equal((await as('admin', ['user', 'revoke', 'bob'])).code, 0);
    const after = await bob(['fs', 'ls', '/']);
    assert.equal(after.code, 1);
    assert.match(after.stderr, /^minimr: EAUTH: authentication failed for user bob: no such user, or revoked/m);
  });

  it('fs ls escapes control characters in names', async () => {
    const name = '/alice/odd\nname\u001b[31mred\u0007';
    await alice.fs.put(Buffer.from('x'), name);
    const ls = await as('bob', ['fs', 'ls', '/alice']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.ok(
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters
      !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(ls.stdout),
      `raw control characters in ${JSON.stringify(ls.stdout)}`,
    );
    assert.ok(ls.stdout.includes('/alice/odd\\nname\\x1b[31mred\\x07\n'), ls.stdout);
  });
});
