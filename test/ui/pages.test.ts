import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobStatus } from '../../src/runtime/index.js';
import { escapeHtml, html, jobsPage, schedulerPage } from '../../src/ui/index.js';

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
});
