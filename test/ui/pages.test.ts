import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobStatus } from '../../src/runtime/index.js';
import { escapeHtml, html, jobPage, jobsPage, schedulerPage } from '../../src/ui/index.js';

const HOSTILE = `<script>alert("x")</script>&'`;

describe('web UI markup', () => {
  it('escapes every interpolated value, and keeps markup made by html``', () => {
    assert.equal(escapeHtml(HOSTILE), '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
    const inner = html`<b>${HOSTILE}</b>`;
    assert.equal(
      html`<p>${inner}${[HOSTILE, 1]}</p>`.value,
      `<p><b>${escapeHtml(HOSTILE)}</b>${escapeHtml(HOSTILE)}1</p>`,
    );
  });

  it('a job list and a policy state with hostile names render no markup of theirs', () => {
    const job: JobStatus = {
      jobId: 'job_1',
      name: HOSTILE,
      user: HOSTILE,
      pool: HOSTILE,
      state: 'running',
      submitTime: 0,
      mapsTotal: 2,
      mapsCompleted: 1,
      reducesTotal: 1,
      reducesCompleted: 0,
      mapProgress: 0.5,
      reduceProgress: 0,
      counters: {},
      outputPath: '/o',
      failedAttempts: 0,
      killedAttempts: 0,
      partition: 0,
      migrations: [],
      profile: { state: 'none' },
      elasticAttempts: 0,
    };
    for (const page of [
      jobsPage([job], { jobs: [{ ...job, jobId: 'job_2', state: 'succeeded', finishTime: 900 }], total: 1 }, 1000, {
        limit: 50,
      }),
      schedulerPage(
        HOSTILE,
        { notes: [HOSTILE], tables: [{ title: HOSTILE, columns: [HOSTILE], rows: [[HOSTILE]] }] },
        [job],
      ),
    ]) {
      assert.ok(!page.includes('<script'), 'no script element');
      assert.ok(page.includes(escapeHtml(HOSTILE)));
    }
  });

  it("a job's page shows where the user's code threw: the job's stack, and each failed attempt's folded", () => {
    const stack = `Error: ${HOSTILE}\n    at checkLine (lib/checks.mjs:4:11)\n    at Object.map (job.mjs:10:5)`;
    const error = {
      code: 'ETASK',
      message: `map threw: ${HOSTILE} (at lib/checks.mjs:4:11)`,
      details: { at: 'lib/checks.mjs:4:11', stack },
    };
    const job: JobStatus = {
      jobId: 'job_1',
      name: 'j',
      user: 'u',
      pool: 'default',
      state: 'failed',
      submitTime: 0,
      finishTime: 10,
      mapsTotal: 1,
      mapsCompleted: 0,
      reducesTotal: 0,
      reducesCompleted: 0,
      mapProgress: 0,
      reduceProgress: 0,
      counters: {},
      outputPath: '/o',
      error: { ...error, code: 'EJOBFAILED' },
      failedAttempts: 1,
      killedAttempts: 0,
      partition: 0,
      migrations: [],
      profile: { state: 'none' },
      elasticAttempts: 0,
    };
    const attempt = {
      attemptId: 'attempt_1_m_000000_0',
      taskId: 'task_1_m_000000',
      kind: 'map' as const,
      workerId: 'worker-0',
      state: 'failed' as const,
      startTime: 0,
      finishTime: 5,
      memoryMb: 256,
      idealMemoryMb: 256,
      elastic: false,
      locality: 'node' as const,
      inputBytes: 10,
      counters: {},
      error,
    };
    const tasks = [
      { taskId: attempt.taskId, kind: 'map' as const, index: 0, state: 'failed', inputBytes: 10, attempts: [attempt] },
    ];
    const page = jobPage(job, tasks, 20);
    assert.ok(!page.includes('<script'), 'no script element');
    assert.ok(page.includes(`<pre class="stack" data-field="errorStack">${escapeHtml(stack)}</pre>`), page);
    assert.ok(
      page.includes(
        `<details><summary>at lib/checks.mjs:4:11</summary><pre class="stack">${escapeHtml(stack)}</pre></details>`,
      ),
    );
  });
});
