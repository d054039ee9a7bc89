import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobStatus } from '../../src/runtime/index.js';
import { escapeHtml } from '../../src/ui/index.js';
import { appModule, fixtureModule, makeText, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { unescapeHtml } from '../helpers/html.js';

// The pages of a real cluster; the markup's escaping without one is in test/ui/pages.test.ts.
const HOSTILE = `<script>alert("x")</script>&'`;

/** The text of the element with `data-field="NAME"` (the first, or all). */
function field(page: string, name: string): string {
  const m = new RegExp(`data-field="${name}"[^>]*>([^<]*)<`).exec(page);
  if (!m) throw new Error(`no data-field ${name}`);
  return m[1]!;
}

describe('web UI of a real cluster', () => {
  let t: TestCluster;
  let base: string;
  const hostilePath = `/in/<img src=x onerror=alert(1)>&"q'.txt`;
  const text = makeText(200_000, 11) + `${HOSTILE}\n`;
  let job: JobStatus;
  let chatty: JobStatus;

  before(async () => {
    t = await startTestCluster();
    base = `http://127.0.0.1:${t.cluster.jobTracker.port}`;
    await t.fs.put(Buffer.from(text), hostilePath);
    job = await t.cluster.client.run(appModule('wordcount'), {
      input: [hostilePath],
      output: '/out/wc',
      reducers: 2,
      pool: HOSTILE,
    });
    chatty = await t.cluster.client.run(fixtureModule('chatty'), {
      input: [hostilePath],
      output: '/out/chatty',
      reducers: 1,
    });
  });
  after(async () => {
    await t?.stop();
  });

  const get = async (path: string): Promise<{ status: number; body: string; headers: Headers }> => {
    const res = await fetch(base + path, { headers: signedIn() });
    return { status: res.status, body: await res.text(), headers: res.headers };
  };
  const signedIn = (password = t.cluster.jobTracker.webPassword, user = 'alice') => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  });

  it('answers nothing but 401 without the web password (derived from the cluster secret)', async () => {
    for (const headers of [
      {},
      signedIn('not-the-password'),
      signedIn(t.cluster.jobTracker.webPassword, 'bad user'),
      { authorization: 'Bearer x' },
    ]) {
      for (const path of ['/', '/jobs', '/metrics', '/fs?path=/in']) {
        const res = await fetch(base + path, { headers });
        assert.equal(res.status, 401, `${path} with ${JSON.stringify(headers)}`);
        assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm="minimr"/);
        assert.doesNotMatch(await res.text(), /wordcount|\/in\//);
      }
    }
  });

  it('the cluster overview counts the workers, slots and racks the JobTracker reports', async () => {
    const { status, body, headers } = await get('/');
    assert.equal(status, 200);
    assert.match(headers.get('content-type') ?? '', /^text\/html/);
    assert.match(headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const info = await t.cluster.client.clusterInfo();
    assert.equal(Number(field(body, 'workers')), info.workers.length);
    assert.equal(field(body, 'mapSlots'), `0 / ${info.workers.reduce((s, w) => s + w.mapSlots, 0)}`);
    for (const w of info.workers) assert.ok(body.includes(`data-id="${w.workerId}"`), w.workerId);
    assert.equal((body.match(/<tr data-id="worker-/g) ?? []).length, 3);
    assert.match(body, /\/rack-0<\/td>/);
  });

  it('the jobs page lists finished jobs with their (escaped) pool', async () => {
    const { body } = await get('/jobs');
    assert.ok(body.includes(`href="/jobs/${job.jobId}"`));
    assert.ok(!body.includes('<script'), 'the pool name is not markup');
    assert.ok(body.includes(escapeHtml(HOSTILE)));
    assert.match(body, /Finished \(2\)/);
  });

  it("a job's page shows the figures of `minimr job status` and every attempt with links to its logs", async () => {
    const s = await t.cluster.client.status(job.jobId);
    const { body } = await get(`/jobs/${job.jobId}`);
    assert.equal(Number(field(body, 'mapsCompleted')), s.mapsCompleted);
    assert.equal(Number(field(body, 'mapsTotal')), s.mapsTotal);
    assert.equal(Number(field(body, 'reducesCompleted')), s.reducesCompleted);
    assert.equal(Number(field(body, 'reducesTotal')), s.reducesTotal);
    assert.match(body, /data-field="state"><span class="state-succeeded">succeeded</);
    for (const counter of ['MAP_INPUT_RECORDS', 'REDUCE_OUTPUT_RECORDS']) {
      assert.match(
        body,
        new RegExp(`<tr data-id="${counter}"><td>${counter}</td><td class="num">${s.counters[counter]}</td>`),
      );
    }
    for (const a of await t.cluster.client.attempts(job.jobId)) {
      assert.ok(body.includes(`<tr data-id="${a.attemptId}">`), a.attemptId);
      assert.ok(body.includes(`href="/attempts/${a.attemptId}/logs?stream=stdout"`));
      assert.ok(body.includes(`href="/attempts/${a.attemptId}/logs?stream=stderr"`));
    }
  });

  it("an attempt's log page shows what it printed, escaped", async () => {
    const map = (await t.cluster.client.attempts(chatty.jobId)).find(
      (a) => a.kind === 'map' && a.state === 'succeeded',
    )!;
    const expected = await t.cluster.client.attemptLog(map.attemptId, 'stdout', { offset: 0, length: 64 * 1024 });
    const { status, body } = await get(`/attempts/${map.attemptId}/logs?stream=stdout&offset=0`);
    assert.equal(status, 200);
    const pre = /<pre class="log" id="log">([\s\S]*)<\/pre>/.exec(body);
    assert.ok(pre);
    assert.equal(unescapeHtml(pre[1]!), expected.text);
    assert.ok(!body.includes('<script'));
    assert.ok(body.includes(`href="/jobs/${chatty.jobId}"`), 'links back to its job');
  });

  it("the block store browser lists directories and a file's blocks, names escaped", async () => {
    const dir = await get('/fs?path=/in');
    assert.equal(dir.status, 200);
    assert.ok(!dir.body.includes('<img'), 'the file name is not markup');
    assert.ok(dir.body.includes(escapeHtml(`<img src=x onerror=alert(1)>&"q'.txt`)));
    assert.equal(Number(field(dir.body, 'bytes')), Buffer.byteLength(text));
    const file = await get(`/fs?path=${encodeURIComponent(hostilePath)}`);
    assert.equal(file.status, 200);
    const blocks = await t.fs.getBlocks(hostilePath);
    assert.equal((file.body.match(/data-field="block"/g) ?? []).length, blocks.length);
    assert.equal(Number(field(file.body, 'bytes')), Buffer.byteLength(text));
  });

  it('the scheduler page of a policy without state lists the active jobs', async () => {
    const { status, body } = await get('/scheduler');
    assert.equal(status, 200);
    assert.match(body, /Scheduler: fifo/);
    assert.match(body, /keeps no state/);
  });

  it('bad requests are pages that say what was wrong', async () => {
    const missing = await get('/jobs/job_nope');
    assert.equal(missing.status, 404);
    assert.match(missing.body, /no job job_nope on this JobTracker/);
    const attempt = await get('/attempts/attempt_nope/logs');
    assert.equal(attempt.status, 404);
    assert.equal((await get('/attempts/x/logs?offset=abc')).status, 400);
    assert.equal((await get('/attempts/x/logs?stream=stdin')).status, 400);
    assert.equal((await get('/fs?path=/nope')).status, 404);
    assert.equal((await get('/fs?path=relative')).status, 400);
    assert.equal((await fetch(`${base}/jobs`, { method: 'POST', headers: signedIn() })).status, 405);
    assert.equal((await get('/not-a-page')).status, 426, 'other paths still answer that the port speaks the protocol');
  });
});
