import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { JobClient, JobTracker, clientCredentials, connectPeer } from '../../src/runtime/index.js';
import { osUserName } from '../../src/runtime/wire/index.js';
import type { Credentials, UserCredential } from '../../src/runtime/wire/index.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { appModule } from '../helpers/cluster.js';
import { registerFakeWorker } from '../helpers/jobtracker.js';

async function refusal(p: Promise<unknown>): Promise<MinimrError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof MinimrError, `expected a MinimrError, got ${String(err)}`);
  return err;
}

/** A JobTracker on port 0 in `dir` (its own secret there), and a client of its admin (this process's OS user). */
async function startAt(dir: string): Promise<{ jt: JobTracker; admin: JobClient }> {
  const jt = new JobTracker({
    dataDir: dir,
    port: 0,
    policy: createPolicy('fifo'),
    heartbeatMs: 100_000,
    logger: createLogger('jt', 'silent'),
  });
  await jt.start();
  return { jt, admin: await JobClient.connect(jt.url) };
}

function asCredentials(c: UserCredential, user = c.user): Credentials {
  return { user, secret: Buffer.from(c.key, 'base64url'), via: 'credential' };
}

/**
 * Users with credentials on a real JobTracker on port 0: the admin (this process's OS user, who
 * started it) adds, lists and revokes users; a user's credential acts as that user and no other.
 */
describe('users who prove who they are', () => {
  let dir: string;
  let jt: JobTracker;
  let admin: JobClient;
  let bobCredential: UserCredential;

  const start = async () => {
    ({ jt, admin } = await startAt(dir));
  };
  const connectAs = (credentials: Credentials) => JobClient.connect(jt.url, { security: { credentials } });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-users-'));
    await start();
    bobCredential = await admin.addUser('bob');
  });
  after(async () => {
    admin?.close();
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives bob a credential he acts with as bob, and only as bob', async () => {
    assert.equal(bobCredential.user, 'bob');
    assert.equal(Buffer.from(bobCredential.key, 'base64url').length, 32);
    const bob = await connectAs(asCredentials(bobCredential));
    try {
      await bob.fs.mkdir('/bob');
      assert.equal((await bob.fs.stat('/bob')).owner, 'bob');
      // Not the admin: chown is refused.
      assert.equal((await refusal(bob.fs.chown('/bob', 'root', null))).code, 'EPERM');
    } finally {
      bob.close();
    }
    // His key naming root (or the admin): refused, naming the user named.
    for (const user of ['root', osUserName()]) {
      const err = await refusal(connectAs(asCredentials(bobCredential, user)));
      assert.equal(err.code, 'EAUTH');
      assert.match(err.message, new RegExp(`user ${user}\\b`));
    }
  });

  it('refuses a wrong key and a user without a credential, naming the user', async () => {
    const wrong = await refusal(connectAs({ user: 'bob', secret: Buffer.alloc(32, 7), via: 'credential' }));
    assert.equal(wrong.code, 'EAUTH');
    assert.match(wrong.message, /user bob: wrong credential/);
    const unknown = await refusal(connectAs({ user: 'mallory', secret: Buffer.alloc(32, 7), via: 'credential' }));
    assert.equal(unknown.code, 'EAUTH');
    assert.match(unknown.message, /user mallory: no such user, or revoked/);
  });

  it('a credential file names its user: a client asking for another is refused before it connects', async () => {
    const file = join(dir, 'bob.credential');
    await writeFile(file, JSON.stringify(bobCredential), { mode: 0o600 });
    const own = await clientCredentials(jt.url, { credentialFile: file });
    assert.equal(own?.user, 'bob');
    assert.equal(own?.via, 'credential');
    const err = await refusal(clientCredentials(jt.url, { credentialFile: file, user: 'root' }));
    assert.equal(err.code, 'EAUTH');
    assert.match(err.message, /user bob's: it cannot act as root/);
  });

  it('only the admin manages users, and a user credential cannot register a worker', async () => {
    const bob = await connectAs(asCredentials(bobCredential));
    try {
      assert.equal((await refusal(bob.addUser('eve'))).code, 'EPERM');
      assert.equal((await refusal(bob.users())).code, 'EPERM');
      assert.equal((await refusal(bob.revokeUser('bob'))).code, 'EPERM');
    } finally {
      bob.close();
    }
    const err = await refusal(
      registerFakeWorker(jt.url, 'bobs-worker', { map: 1, reduce: 1 }, 1, undefined, asCredentials(bobCredential)),
    );
    assert.equal(err.code, 'EPERM');
    assert.match(err.message, /register.*daemon/);
  });

  it('keeps credentials across a restart (file mode 0600), and revokes them at once', async () => {
    const carol = await admin.addUser('carol');
    admin.close();
    await jt.stop();
    assert.equal((await stat(join(dir, 'users.json'))).mode & 0o777, 0o600);
    await start();
    const names = (await admin.users()).map((u) => u.name);
    assert.deepEqual(names, ['bob', 'carol']);
    const carolClient = await connectAs(asCredentials(carol));
    await carolClient.fs.mkdir('/carol');
    carolClient.close();
    const carolLink = await connectPeer(jt.url, () => undefined, undefined, 10_000, {
      credentials: asCredentials(carol),
    });
    const closed = carolLink.closed;
    const revoked = await admin.revokeUser('carol');
    assert.equal(revoked.name, 'carol');
    assert.ok(revoked.revokedAt !== undefined);
    // Her open connection is closed, and she can no longer sign in.
    assert.match((await closed).reason, /revoked/);
    const err = await refusal(connectAs(asCredentials(carol)));
    assert.equal(err.code, 'EAUTH');
    assert.match(err.message, /user carol/);
    const listed = (await admin.users()).find((u) => u.name === 'carol');
    assert.ok(listed?.revokedAt !== undefined);
  });
});

/**
 * Job tokens: a task's file calls, forwarded by its worker, act as the job's owner only with the
 * token of one of the job's attempts, only while the job runs, and only within its paths.
 */
describe('job tokens of tasks', () => {
  let dir: string;
  let jt: JobTracker;
  let admin: JobClient;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-job-tokens-'));
    ({ jt, admin } = await startAt(dir));
  });
  after(async () => {
    admin?.close();
    await jt?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('acts within the attempt token, and refuses another job, a forged token, other paths and an ended job', async () => {
    const worker = await registerFakeWorker(jt.url, 'w1', { map: 2, reduce: 1 });
    const jobId = await admin.submit(appModule('pi'), { output: '/out/pi', params: { maps: 1, samples: 10 } });
    const other = await admin.submit(appModule('pi'), { output: '/out/other', params: { maps: 1, samples: 10 } });
    await worker.heartbeat(jobId);
    const spec = worker.launched.find((a) => a.jobId === jobId);
    assert.ok(spec, 'the job was launched on the fake worker');
    const call = (op: string, args: Record<string, unknown>) => worker.peer.request({ type: `task-fs-${op}`, ...args });
    const attemptDir = `/out/pi/_temporary/${spec.attemptId}`;

    // Within: its own temporary directory, and reading its output directory.
    await call('mkdir', { path: attemptDir, parents: true, jobId, jobToken: spec.jobToken });
    assert.equal(
      ((await call('stat', { path: attemptDir, jobId, jobToken: spec.jobToken })) as { type: string }).type,
      'dir',
    );
    // Another job's id with this token; a forged token; paths outside the job's.
    const refusals = [
      call('stat', { path: '/out/other', jobId: other, jobToken: spec.jobToken }),
      call('stat', { path: attemptDir, jobId, jobToken: `${spec.jobToken.slice(0, -2)}AA` }),
      call('mkdir', { path: '/elsewhere', jobId, jobToken: spec.jobToken }),
      call('mkdir', { path: '/out/pi/_temporary/attempt_other', jobId, jobToken: spec.jobToken }),
      call('list', { path: '/', jobId, jobToken: spec.jobToken }),
    ];
    for (const r of refusals) assert.equal((await refusal(r)).code, 'ETOKEN');
    // Once the job has ended, its tokens act no more.
    await admin.kill(jobId);
    await admin.waitForCompletion(jobId).catch(() => undefined);
    const ended = await refusal(call('stat', { path: attemptDir, jobId, jobToken: spec.jobToken }));
    assert.ok(['ETOKEN', 'ENOJOB'].includes(ended.code), ended.message);
    await admin.kill(other);
    worker.close();
  });
});
