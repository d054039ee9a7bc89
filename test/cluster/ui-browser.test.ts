import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { fixtureModule, makeText, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * The web UI in a real browser: headless Chromium (Debian's `chromium`, installed by
 * scripts/ensure-chromium.sh when missing) driven by playwright-core. Skipped, saying why, only
 * when Chromium is not there and cannot be installed. With MINIMR_UI_SCREENSHOTS=DIR the main
 * pages are saved as PNGs there (`npm run ui:screenshots` writes docs/).
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = `${ROOT}bin/minimr.js`;

function findChromium(): { path?: string; why?: string } {
  const r = spawnSync('sh', [`${ROOT}scripts/ensure-chromium.sh`], { encoding: 'utf8', timeout: 15 * 60_000 });
  const path = r.stdout.trim().split('\n').pop();
  if (r.status === 0 && path) return { path };
  return {
    why:
      `headless Chromium is not available and could not be ` +
      `installed: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}`,
  };
}

const chromium = findChromium();
const SHOTS = process.env.MINIMR_UI_SCREENSHOTS;

describe('the web UI in headless Chromium', { skip: chromium.why }, () => {
  let t: TestCluster;
  let browser: Browser;
  let page: Page;
  let base: string;
  const text = makeText(700_000, 5);

  const shot = async (name: string) => {
    if (!SHOTS) return;
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
  };

  before(async () => {
    const { chromium: driver } = await import('playwright-core');
    browser = await driver.launch({
      executablePath: chromium.path!,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    // One ended job kept in memory: the first job retires to the history when the second ends.
    t = await startTestCluster({
      retainedJobs: 1,
      policy: 'fair',
      pools: [
        { name: 'research', minMapSlots: 2, minReduceSlots: 1, weight: 2, mode: 'fair' },
        { name: 'default', minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fair' },
      ],
    });
    base = `http://127.0.0.1:${t.cluster.jobTracker.port}`;
    // Signed in as a browser is: HTTP Basic with any user name and the web password.
    page = await browser.newPage({
      viewport: { width: 1280, height: 800 },
      httpCredentials: { username: 'operator', password: t.cluster.jobTracker.webPassword },
    });
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await browser?.close();
    await t?.stop();
  });

  const fieldText = async (name: string) => (await page.textContent(`[data-field="${name}"]`))?.trim() ?? '';

  it("a running job's progress moves, and its final numbers are those of `minimr job status`", async () => {
    const jobId = await t.cluster.client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/slow',
      reducers: 2,
      pool: 'research',
      params: { mapDelayMs: 60 },
    });
    const seen: number[] = [];
    let state = '';
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const res = await page.goto(`${base}/jobs/${jobId}`);
      assert.equal(res?.status(), 200);
      state = await fieldText('state');
      const progress = Number(await page.getAttribute('[data-field="mapProgress"]', 'data-value'));
      if (state === 'running' && seen.at(-1) !== progress) {
        seen.push(progress);
        if (seen.length === 2) await shot('ui-job-running');
      }
      if (state !== 'running' && state !== 'pending') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(state, 'succeeded');
    assert.ok(seen.length >= 2, `map progress seen while running: ${seen.join(', ')}`);
    for (let i = 1; i < seen.length; i++)
      assert.ok(seen[i]! > seen[i - 1]!, `progress moves forward: ${seen.join(', ')}`);
    await page.reload();
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [
      BIN,
      'job',
      'status',
      jobId,
      '--jobtracker',
      t.cluster.url,
      '--secret-file',
      t.cluster.jobTracker.secretFile,
    ]);
    // `job status`: id, name, owner, state, maps, reduces.
    const m = /(\S+)  slow-wordcount  \S+  (\w+)  maps (\d+)\/(\d+)  reduces (\d+)\/(\d+)/.exec(stdout);
    assert.ok(m, stdout);
    assert.equal(await fieldText('state'), m[2]);
    assert.deepEqual(
      [
        await fieldText('mapsCompleted'),
        await fieldText('mapsTotal'),
        await fieldText('reducesCompleted'),
        await fieldText('reducesTotal'),
      ],
      [m[3], m[4], m[5], m[6]],
    );
    // `job status` prints the counters on stderr.
    const counters = /MAP_INPUT_RECORDS\s+(\d+)/.exec(stderr);
    assert.ok(counters, stderr);
    assert.equal((await page.textContent('#job-counters tr[data-id="MAP_INPUT_RECORDS"] td.num'))?.trim(), counters[1]);
    await shot('ui-job');
  });

  it("a link from a job's page reaches an attempt's log", async () => {
    const status = await t.cluster.client.run(fixtureModule('chatty'), {
      input: ['/in/text.txt'],
      output: '/out/chatty',
      reducers: 1,
      params: { failFirst: 1 },
      conf: { 'job.maxMaps': 2 },
    });
    await page.goto(`${base}/jobs`);
    await page.click(`a[href="/jobs/${status.jobId}"]`);
    assert.equal(new URL(page.url()).pathname, `/jobs/${status.jobId}`);
    const failed = (await t.cluster.client.attempts(status.jobId)).find((a) => a.state === 'failed')!;
    await page.click(`tr[data-id="${failed.attemptId}"] a.log-link:text("stderr")`);
    assert.equal(new URL(page.url()).pathname, `/attempts/${failed.attemptId}/logs`);
    const log = await page.textContent('#log');
    const expected = await t.cluster.client.attemptLog(failed.attemptId, 'stderr');
    assert.equal(log, expected.text);
    assert.match(log ?? '', /fails now\n\[minimr\] attempt failed: ETASK/);
    await shot('ui-attempt-log');
  });

  it("a retired job's page, reached from the jobs page, shows its figures and logs from the history", async () => {
    const retired = (await t.cluster.client.list(true)).find((s) => s.name === 'slow-wordcount')!;
    assert.ok(
      !(await t.cluster.client.list()).some((s) => s.jobId === retired.jobId),
      "it has left the JobTracker's memory",
    );
    await page.goto(`${base}/jobs`);
    await page.click(`#finished-jobs a[href="/jobs/${retired.jobId}"]`);
    const s = await t.cluster.client.status(retired.jobId);
    assert.equal(await fieldText('state'), s.state);
    assert.deepEqual(
      [
        await fieldText('mapsCompleted'),
        await fieldText('mapsTotal'),
        await fieldText('reducesCompleted'),
        await fieldText('reducesTotal'),
      ],
      [s.mapsCompleted, s.mapsTotal, s.reducesCompleted, s.reducesTotal].map(String),
    );
    assert.equal(
      (await page.textContent('#job-counters tr[data-id="MAP_INPUT_RECORDS"] td.num'))?.trim(),
      String(s.counters.MAP_INPUT_RECORDS),
    );
    const reduce = (await t.cluster.client.attempts(retired.jobId)).find((a) => a.kind === 'reduce')!;
    await page.click(`tr[data-id="${reduce.attemptId}"] a.log-link:text("stderr")`);
    assert.equal(new URL(page.url()).pathname, `/attempts/${reduce.attemptId}/logs`);
    assert.equal(await fieldText('size'), String((await t.cluster.client.attemptLog(reduce.attemptId, 'stderr')).size));
  });

  it('the cluster, jobs, block store and scheduler pages load and agree with the cluster', async () => {
    await page.goto(`${base}/`);
    const info = await t.cluster.client.clusterInfo();
    assert.equal(await fieldText('workers'), String(info.workers.length));
    assert.equal(await page.locator('#workers tbody tr').count(), info.workers.length);
    await shot('ui-cluster');
    await page.goto(`${base}/jobs`);
    assert.equal(await page.locator('#finished-jobs tbody tr').count(), (await t.cluster.client.list(true)).length);
    await shot('ui-jobs');
    await page.goto(`${base}/fs?path=/in`);
    await page.click('a:text("text.txt")');
    assert.equal(await fieldText('bytes'), String(Buffer.byteLength(text)));
    assert.equal(await page.locator('#blocks tbody tr').count(), (await t.fs.getBlocks('/in/text.txt')).length);
    await shot('ui-block-store');
    await page.goto(`${base}/scheduler`);
    assert.match((await page.textContent('h1')) ?? '', /Scheduler: fair/);
    assert.ok((await page.textContent('body'))?.includes('research'), 'the pools of the FAIR policy are shown');
    await shot('ui-scheduler');
  });
});
