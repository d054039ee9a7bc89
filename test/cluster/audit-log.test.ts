import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { JobClient } from '../../src/runtime/index.js';
import type { AuditEntry } from '../../src/runtime/jobtracker/audit-log.js';
import { fixtureModule, startTestCluster, waitFor, type TestCluster } from '../helpers/cluster.js';

/**
 * The JobTracker's audit log on a real cluster: file system and job operations, through the
 * protocol and the HTTP API, allowed, denied and failed, each one JSON line saying who, from where,
 * what, on which path or job, and how it ended.
 */
describe('the audit log (HDFS-style JSON lines in <dir>/audit.log)', () => {
  let t: TestCluster;
  let bob: JobClient;

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    const secret = Buffer.from((await readFile(t.cluster.jobTracker.secretFile, 'utf8')).trim());
    bob = await JobClient.connect(t.cluster.url, { security: { credentials: { user: 'bob', secret } } });
  });
  after(async () => {
    bob?.close();
    await t?.stop();
  });

  function code(expected: string) {
    return (err: unknown) => err instanceof MinimrError && err.code === expected;
  }

  async function auditLines(): Promise<AuditEntry[]> {
    const text = await readFile(t.cluster.jobTracker.auditFile!, 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as AuditEntry);
  }

  it('records fs and job operations: allowed, denied and failed, with user, address, path or job', async () => {
    const admin = t.cluster.client;
    const adminUser = t.cluster.jobTracker.admin;
    await admin.fs.mkdir('/audit');
    await admin.fs.put(Buffer.from('a line\nanother line\n'), '/audit/in.txt');
    await assert.rejects(bob.fs.mkdir('/audit/bob'), code('EPERM'));
    await assert.rejects(bob.fs.stat('/audit/missing'), code('ENOENT'));
    const status = await admin.run(fixtureModule('chatty'), {
      input: ['/audit/in.txt'],
      output: '/audit/out',
      reducers: 1,
    });
    assert.equal(status.state, 'succeeded');
    await assert.rejects(bob.kill(status.jobId), code('EPERM'));
    assert.equal((await bob.status(status.jobId)).jobId, status.jobId);
    await assert.rejects(bob.status('job_19700101000000_9999'), code('ENOJOB'));
    await admin.fs.rename('/audit/in.txt', '/audit/moved.txt');
    // The HTTP API is the same dispatcher: its calls are audited too, as the signed-in user.
    const res = await fetch(`${t.cluster.url.replace(/^ws/, 'http')}/api/v1/fs/stat?path=/audit/moved.txt`, {
      headers: {
        authorization: `Basic ${Buffer.from(`carol:${t.cluster.jobTracker.webPassword}`).toString('base64')}`,
      },
    });
    assert.equal(res.status, 200);

    const lines = await waitFor(
      'the HTTP call in the audit log',
      async () => {
        const all = await auditLines();
        return all.some((l) => l.user === 'carol') ? all : undefined;
      },
      10_000,
    );
    for (const line of lines) {
      assert.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(line.address, '127.0.0.1', JSON.stringify(line));
      assert.ok(line.path !== undefined || line.jobId !== undefined || line.attemptId !== undefined);
    }
    const find = (want: Partial<AuditEntry>): AuditEntry | undefined =>
      lines.find((l) =>
        Object.entries(want).every(([k, v]) => JSON.stringify(l[k as keyof AuditEntry]) === JSON.stringify(v)),
      );
    const expected: Partial<AuditEntry>[] = [
      { user: adminUser, operation: 'fs-mkdir', path: '/audit', result: 'allowed' },
      { user: adminUser, operation: 'fs-create', path: '/audit/in.txt', result: 'allowed' },
      { user: adminUser, operation: 'fs-complete', path: '/audit/in.txt', result: 'allowed' },
      { user: 'bob', operation: 'fs-mkdir', path: '/audit/bob', result: 'denied' },
      { user: 'bob', operation: 'fs-stat', path: '/audit/missing', result: 'ENOENT' },
      {
        user: adminUser,
        operation: 'submit-job',
        path: '/audit/in.txt',
        paths: ['/audit/in.txt', '/audit/out'],
        jobId: status.jobId,
        result: 'allowed',
      },
      { user: 'bob', operation: 'kill-job', jobId: status.jobId, result: 'denied' },
      // An allowed job-status is polled by progress displays: not written (QUIET_WHEN_ALLOWED); a failed one is.
      { user: 'bob', operation: 'job-status', jobId: 'job_19700101000000_9999', result: 'ENOJOB' },
      {
        user: adminUser,
        operation: 'fs-rename',
        path: '/audit/in.txt',
        paths: ['/audit/in.txt', '/audit/moved.txt'],
        result: 'allowed',
      },
      { user: 'carol', operation: 'fs-stat', path: '/audit/moved.txt', result: 'allowed' },
    ];
    for (const want of expected) assert.ok(find(want), `no audit line like ${JSON.stringify(want)}`);
    // In the order they happened, and operations that name neither a path nor a job are not lines.
    const order = expected.map((want) => lines.indexOf(find(want)!));
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
    );
    assert.equal(
      lines.some((l) => l.operation === 'cluster-info' || l.operation === 'list-jobs'),
      false,
    );
    assert.equal(
      lines.some((l) => l.operation === 'job-status' && l.result === 'allowed'),
      false,
    );
    // The log names every user's paths: only the JobTracker's user may read it.
    assert.equal((await stat(t.cluster.jobTracker.auditFile!)).mode & 0o777, 0o600);
  });
});
