/**
 * `/api/v1` over real HTTP on a real 3-worker cluster: a job submitted, followed and killed through
 * it with plain `fetch`, the same validation and authorization as the WebSocket link, results that
 * conform to the schemas the OpenAPI document publishes, and `minimr profiles rm` refused to a user
 * who is neither the admin nor the profile's owner.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import { CLIENT_PROTOCOL, type JobStatus, type Operation } from '../../src/runtime/wire/index.js';
import {
  appModule,
  fixtureModule,
  makeText,
  readOutput,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

const BIN = fileURLToPath(new URL('../../../bin/minimr.js', import.meta.url));

/** Word counts of `text` as WordCount defines words, computed here. */
function referenceCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const w of text.split(/[ \t\r\n\f]+/)) if (w) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

describe('/api/v1 on a real cluster', () => {
  let t: TestCluster;
  let base: string;
  let password: string;
  const text = makeText(200_000, 7);

  const auth = (user: string, secret = password) => ({
    authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`,
  });
  async function api(
    method: string,
    path: string,
    user: string | null,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        ...(user === null ? {} : auth(user)),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: await res.json() };
  }
  const resultSchema = (name: string) => (CLIENT_PROTOCOL as Record<string, Operation>)[name]!.result!;

  /** A WordCount submission as the JSON API takes it: the module's source and the job's formats. */
  async function submission(module: string, output: string, params: Record<string, unknown> = {}): Promise<unknown> {
    return {
      name: 'wordcount-over-http',
      moduleName: 'wordcount.js',
      moduleSource: await readFile(module, 'utf8'),
      inputPaths: ['/api/in.txt'],
      outputPath: output,
      overwrite: false,
      reducers: 2,
      params,
      shared: {},
      input: { kind: 'text' },
      output: { kind: 'text', separator: '\t' },
    };
  }

  before(async () => {
    t = await startTestCluster();
    base = t.cluster.url.replace(/^ws/, 'http');
    password = t.cluster.jobTracker.webPassword;
    await t.fs.put(Buffer.from(text), '/api/in.txt');
    // Jobs of alice's write their outputs under /api.
    await t.fs.chmod('/api', '777');
  });
  after(() => t.stop());

  it('answers 401 with a JSON error and no data without credentials, or with a wrong password', async () => {
    for (const r of [
      await api('GET', '/jobs', null),
      await fetch(`${base}/api/v1/jobs`, { headers: auth('alice', 'wrong') }).then(async (x) => ({
        status: x.status,
        json: await x.json(),
      })),
    ]) {
      assert.equal(r.status, 401);
      assert.equal((r.json as { error: { code: string } }).error.code, 'EAUTH');
    }
  });

  it('submits a job, follows it to the end and reads counts equal to a reference count', async () => {
    const submitted = await api('POST', '/jobs', 'alice', await submission(appModule('wordcount'), '/api/out'));
    assert.equal(submitted.status, 200, JSON.stringify(submitted.json));
    const { jobId } = submitted.json as { jobId: string };
    const ended = await api('GET', `/jobs/${jobId}/wait`, 'alice');
    assert.equal(ended.status, 200);
    const status = ended.json as JobStatus;
    assert.equal(status.state, 'succeeded', JSON.stringify(status.error));
    assert.equal(status.user, 'alice', "the job is the caller's");
    assert.ok(Value.Check(resultSchema('job-status'), status), 'a status conforms to its published schema');
    const out = (await readOutput(t.fs, '/api/out')).toString('utf8');
    const got = new Map(
      out
        .trim()
        .split('\n')
        .map((l) => [l.split('\t')[0]!, Number(l.split('\t')[1])] as [string, number]),
    );
    assert.deepEqual(got, referenceCounts(text));

    const attempts = await api('GET', `/jobs/${jobId}/attempts`, 'alice');
    assert.ok(Value.Check(resultSchema('job-attempts'), attempts.json));
    assert.ok((attempts.json as unknown[]).length >= status.mapsTotal + status.reducesTotal);
    const listing = await api('GET', '/fs/list?path=%2Fapi%2Fout', 'alice');
    assert.ok(Value.Check(resultSchema('fs-list'), listing.json));
    assert.ok((listing.json as { path: string }[]).some((f) => f.path === '/api/out/_SUCCESS'));
    const jobs = await api('GET', '/jobs?all=true', 'bob');
    assert.ok((jobs.json as JobStatus[]).some((j) => j.jobId === jobId));
    const cluster = await api('GET', '/cluster', 'bob');
    assert.ok(Value.Check(resultSchema('cluster-info'), cluster.json));
    assert.equal((cluster.json as { workers: unknown[] }).workers.length, 3);
  });

  it('kills a running job for its owner; another user gets 403 EPERM', async () => {
    const submitted = await api(
      'POST',
      '/jobs',
      'alice',
      await submission(fixtureModule('slow-wordcount'), '/api/slow', { mapDelayMs: 200 }),
    );
    assert.equal(submitted.status, 200, JSON.stringify(submitted.json));
    const { jobId } = submitted.json as { jobId: string };
    const refused = await api('POST', `/jobs/${jobId}/kill`, 'bob');
    assert.equal(refused.status, 403);
    assert.match(
      (refused.json as { error: { message: string } }).error.message,
      new RegExp(`job ${jobId} belongs to alice; user bob may not kill it`),
    );
    const killed = await api('POST', `/jobs/${jobId}/kill`, 'alice');
    assert.equal(killed.status, 200);
    const ended = (await api('GET', `/jobs/${jobId}/wait`, 'alice')).json as JobStatus;
    assert.equal(ended.state, 'killed');
  });

  it(
    'validates arguments as the WebSocket link does: 400 naming the ' +
      'operation and the field, 404 for no such job or route',
    async () => {
      const bad = await api('POST', '/jobs', 'alice', { name: 'x' });
      assert.equal(bad.status, 400);
      assert.equal((bad.json as { error: { code: string } }).error.code, 'EBADJOB');
      const badPath = await api('GET', '/fs/stat?path=', 'alice');
      assert.equal(badPath.status, 400);
      assert.equal((badPath.json as { error: { code: string } }).error.code, 'EBADPATH');
      const range = await api('GET', `/attempts/attempt_x/log?stream=stdout&length=-1`, 'alice');
      assert.equal(range.status, 400);
      assert.match((range.json as { error: { message: string } }).error.message, /"attempt-log": field "length"/);
      assert.equal((await api('GET', '/jobs/job_nope_0001', 'alice')).status, 404);
      assert.equal((await api('GET', '/no-such-thing', 'alice')).status, 404);
      assert.equal((await api('DELETE', '/jobs', 'alice')).status, 405);
      const admin = await api('POST', '/mr-clusters', 'mallory', { name: 'c1', minNodes: 1 });
      assert.equal(admin.status, 403);
    },
  );

  it('publishes an OpenAPI document that lists every client operation', async () => {
    const res = await api('GET', '/openapi.json', 'alice');
    assert.equal(res.status, 200);
    const doc = res.json as { openapi: string; paths: Record<string, Record<string, { operationId: string }>> };
    assert.match(doc.openapi, /^3\.1/);
    const listed = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((m) => m.operationId));
    assert.deepEqual([...listed].sort(), Object.keys(CLIENT_PROTOCOL).sort());
  });

  it("`minimr profiles rm JOB` is EPERM for a user who is neither the admin nor the profile's owner", async () => {
    const observation = {
      kind: 'map' as const,
      bufferBytes: 64 << 20,
      taskMs: 1000,
      inputBytes: 1 << 20,
      needBytes: 1 << 20,
      spilledBytes: 0,
    };
    await t.cluster.jobTracker.profiles.record('alices-job', [observation], Date.now(), 'alice');
    const minimr = (user: string) =>
      promisify(execFile)(process.execPath, [
        BIN,
        'profiles',
        'rm',
        'alices-job',
        '--jobtracker',
        t.cluster.url,
        '--secret-file',
        t.cluster.jobTracker.secretFile,
        '--user',
        user,
      ]).then(
        (r) => ({ code: 0, stderr: r.stderr }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
      );
    const bob = await minimr('bob');
    assert.equal(bob.code, 1);
    assert.match(
      bob.stderr,
      /^minimr: EPERM: permission denied: the profile of alices-job belongs to alice; user bob may not remove it/m,
    );
    assert.ok(t.cluster.jobTracker.profiles.get('alices-job'), 'still there');
    const alice = await minimr('alice');
    assert.equal(alice.code, 0, alice.stderr);
    assert.equal(t.cluster.jobTracker.profiles.get('alices-job'), undefined);
  });
});
