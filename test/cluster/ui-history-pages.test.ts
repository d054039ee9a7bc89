/**
 * The web UI of jobs retired from the JobTracker's memory to its history: a real local cluster
 * that keeps one ended job in memory, so the first jobs run retire. Their pages are read from the
 * history and must show what `minimr job status` and `job attempts` say of them; their attempts'
 * log links must still reach the workers' logs, and say so plainly once a log is gone.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { JobClient, type JobStatus } from '../../src/runtime/index.js';
import { readSecretFile } from '../../src/runtime/wire/auth.js';
import { fixtureModule, isCode, makeText, startTestCluster, type TestCluster } from '../helpers/cluster.js';
import { MINIMR_BIN as BIN } from '../helpers/cli.js';
import { unescapeHtml } from '../helpers/html.js';

/** Every element with `data-field="NAME"` in a part of a page: its text. */
function fields(part: string, name: string): string[] {
  return [...part.matchAll(new RegExp(`data-field="${name}"[^>]*>([^<]*)<`, 'g'))].map((m) => m[1]!);
}

/** The part of a page from the heading that starts with `from` to the next that starts with `to`. */
function section(page: string, from: string, to?: string): string {
  const start = page.indexOf(`<h2>${from}`);
  assert.ok(start >= 0, `no heading ${from}`);
  const end = to === undefined ? -1 : page.indexOf(`<h2>${to}`, start);
  return page.slice(start, end < 0 ? undefined : end);
}

/**
 * The rows (`<tr data-id="ID">`) of a part of a page, by id, each up to the next row
 * (of any table: counters are nested).
 */
function rows(part: string): Map<string, string> {
  return new Map(
    part
      .split('<tr data-id="')
      .slice(1)
      .map((row) => [row.slice(0, row.indexOf('"')), row]),
  );
}

describe('web UI of jobs retired to the history', () => {
  let t: TestCluster;
  let base: string;
  /** Oldest first; all but the last retire. */
  const jobs: JobStatus[] = [];

  const get = async (path: string): Promise<{ status: number; body: string }> => {
    const auth = Buffer.from(`operator:${t.cluster.jobTracker.webPassword}`).toString('base64');
    const res = await fetch(base + path, { headers: { authorization: `Basic ${auth}` } });
    return { status: res.status, body: await res.text() };
  };

  before(async () => {
    t = await startTestCluster({ retainedJobs: 1 });
    base = `http://127.0.0.1:${t.cluster.jobTracker.port}`;
    await t.fs.put(Buffer.from(makeText(150_000, 3)), '/in/text.txt');
    // One map's first attempt fails, so the retired job has a failed attempt and a retried task.
    for (const [i, failFirst] of [1, 0, 0].entries()) {
      jobs.push(
        await t.cluster.client.run(fixtureModule('chatty'), {
          input: ['/in/text.txt'],
          output: `/out/chatty-${i}`,
          reducers: 2,
          params: { failFirst },
          conf: { 'job.maxMaps': 2 },
        }),
      );
    }
  });
  after(async () => {
    await t?.stop();
  });

  it("a retired job's page shows the numbers of `minimr job status` and every attempt of `job attempts`", async () => {
    const retired = jobs[0]!;
    const inMemory = (await t.cluster.client.list()).map((s) => s.jobId);
    assert.ok(
      !inMemory.includes(retired.jobId),
      `${retired.jobId} has left the JobTracker's memory (${inMemory.join(', ')})`,
    );

    const { status, body } = await get(`/jobs/${retired.jobId}`);
    assert.equal(status, 200);
    const cli = await promisify(execFile)(process.execPath, [
      BIN,
      'job',
      'status',
      retired.jobId,
      '--jobtracker',
      t.cluster.url,
      '--secret-file',
      t.cluster.jobTracker.secretFile,
    ]);
    const m = /(\S+)  chatty  \S+  (\w+)  maps (\d+)\/(\d+)  reduces (\d+)\/(\d+)/.exec(cli.stdout);
    assert.ok(m, cli.stdout);
    assert.equal(m[1], retired.jobId);
    assert.match(body, new RegExp(`data-field="state"><span class="state-${m[2]}">${m[2]}<`));
    assert.deepEqual(
      ['mapsCompleted', 'mapsTotal', 'reducesCompleted', 'reducesTotal'].map((f) => fields(body, f)[0]),
      [m[3], m[4], m[5], m[6]],
    );
    // `job status` prints the counters on stderr, one `NAME value` a line.
    const counters = [...cli.stderr.matchAll(/^\s*([A-Z_]+)\s+(\d+)\s*$/gm)].map((c) => [c[1]!, c[2]!]);
    assert.ok(
      counters.some(([name]) => name === 'MAP_INPUT_RECORDS'),
      cli.stderr,
    );
    const jobCounters = rows(section(body, 'Counters'));
    for (const [name, value] of counters)
      assert.match(jobCounters.get(name) ?? '', new RegExp(`<td class="num">${value}</td>`), name);

    const attempts = await t.cluster.client.attempts(retired.jobId);
    const shown = new Map([...rows(section(body, 'Attempts', 'Counters'))].filter(([id]) => id.startsWith('attempt_')));
    assert.deepEqual([...shown.keys()].sort(), attempts.map((a) => a.attemptId).sort());
    for (const a of attempts) {
      const row = shown.get(a.attemptId)!;
      assert.deepEqual(fields(row, 'worker'), [a.workerId], a.attemptId);
      assert.match(row, new RegExp(`class="state-${a.state}"`), a.attemptId);
      assert.deepEqual(fields(row, 'MAP_INPUT_RECORDS'), [String(a.counters.MAP_INPUT_RECORDS ?? '')], a.attemptId);
    }
    assert.ok(
      attempts.some((a) => a.state === 'failed'),
      'the failed first attempt is recorded',
    );
    // Tasks as the books ended them: every map and reduce, each succeeded.
    const tasks = rows(section(body, 'Tasks', 'Attempts'));
    assert.equal(tasks.size, retired.mapsTotal + retired.reducesTotal);
    for (const [taskId, row] of tasks)
      assert.match(row, /data-field="state"><span class="state-succeeded">succeeded</, taskId);
  });

  it("a retired job's attempt log links reach the worker's log, and say so once it is gone", async () => {
    const retired = jobs[0]!;
    const failed = (await t.cluster.client.attempts(retired.jobId)).find((a) => a.state === 'failed')!;
    const { body } = await get(`/jobs/${retired.jobId}`);
    const href = `/attempts/${failed.attemptId}/logs?stream=stderr`;
    assert.ok(body.includes(`href="${href}"`), 'the page links the attempt log');

    const log = await get(href);
    assert.equal(log.status, 200);
    const pre = /<pre class="log" id="log">([\s\S]*)<\/pre>/.exec(log.body);
    assert.ok(pre, log.body);
    assert.match(
      unescapeHtml(pre[1]!),
      new RegExp(`${failed.attemptId} fails now\\n\\[minimr\\] attempt failed: ETASK`),
    );
    assert.equal(
      unescapeHtml(pre[1]!),
      (await t.cluster.client.attemptLog(failed.attemptId, 'stderr')).text,
      'the log `minimr job logs` reads',
    );
    assert.ok(log.body.includes(`href="/jobs/${retired.jobId}"`), 'links back to its job');

    // The owner's or the admin's to read, retired or not.
    const mallory = await JobClient.connect(t.cluster.url, {
      security: { credentials: { user: 'mallory', secret: await readSecretFile(t.cluster.jobTracker.secretFile) } },
    });
    try {
      await assert.rejects(mallory.attemptLog(failed.attemptId, 'stderr'), isCode('EPERM', /belongs to/));
    } finally {
      mallory.close();
    }

    // Its worker removed the job's logs (its retention time passed): a page that says so, not a 500.
    await rm(join(t.dir, failed.workerId, 'logs', retired.jobId), { recursive: true, force: true });
    const gone = await get(href);
    assert.equal(gone.status, 404);
    assert.match(gone.body, /Log no longer available: worker \S+: this worker has no stderr log/);
    assert.ok(gone.body.includes(`href="/jobs/${retired.jobId}"`), 'links back to its job');
    assert.equal(
      (await get('/attempts/attempt_20990101000000_0001_m_000000_0/logs')).status,
      404,
      'an attempt no job had',
    );
  });

  it('the jobs page lists the finished jobs from the history, newest first, a page at a time', async () => {
    const newestFirst = jobs.map((j) => j.jobId).reverse();
    const all = await get('/jobs');
    assert.match(all.body, new RegExp(`Finished \\(${jobs.length}\\)`));
    assert.deepEqual([...rows(section(all.body, 'Finished')).keys()], newestFirst);

    const seen: string[] = [];
    let next: string | undefined = '/jobs?limit=2';
    while (next) {
      const { status, body } = await get(next);
      assert.equal(status, 200);
      const page = [...rows(section(body, 'Finished')).keys()];
      assert.ok(page.length >= 1 && page.length <= 2, `${page.length} jobs on ${next}`);
      seen.push(...page);
      next = /<a href="([^"]+)" rel="next">older<\/a>/.exec(body)?.[1]?.replace(/&amp;/g, '&');
    }
    assert.deepEqual(seen, newestFirst, 'the pages together list every finished job once');
    assert.equal((await get('/jobs?limit=0')).status, 400);
    assert.equal((await get('/jobs?before=yesterday')).status, 400);
  });
});
