/**
 * The journal's history of ended jobs read a page at a time: statuses by finish time, newest
 * first, and a history written before that index existed (records under `history!` only) indexed
 * once when the journal opens.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Level } from 'level';
import { Packr } from 'msgpackr';
import { JobJournal, type JobHistoryEntry } from '../../src/runtime/jobtracker/job-journal.js';
import type { JobStatus } from '../../src/runtime/index.js';

function status(jobId: string, finishTime: number): JobStatus {
  return {
    jobId,
    name: 'n',
    user: 'u',
    pool: 'default',
    state: 'succeeded',
    submitTime: finishTime - 10,
    startTime: finishTime - 9,
    finishTime,
    mapsTotal: 1,
    mapsCompleted: 1,
    reducesTotal: 0,
    reducesCompleted: 0,
    mapProgress: 1,
    reduceProgress: 1,
    counters: { MAP_INPUT_RECORDS: finishTime },
    outputPath: `/out/${jobId}`,
    failedAttempts: 0,
    killedAttempts: 0,
    partition: 0,
    migrations: [],
    profile: { state: 'none' },
    elasticAttempts: 0,
  };
}

describe('job journal: the history of ended jobs, newest first, a page at a time', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-journal-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('indexes an older history once at open, then pages it by finish time, with the jobs ended since', async () => {
    // A history as it was written before the index: `history!ID` records alone.
    const older = [
      status('job_b_0001', 3000),
      status('job_a_0009', 1000),
      status('job_a_0010', 2000),
      status('job_c_0001', 2000),
    ];
    const db = new Level<string, Buffer>(join(dir, 'jobs'), { valueEncoding: 'buffer' });
    const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
    await db.batch(
      older.map((s) => ({
        type: 'put' as const,
        key: `history!${s.jobId}`,
        value: packr.pack({ status: s, attempts: [] } satisfies JobHistoryEntry),
      })),
    );
    await db.close();

    const journal = new JobJournal(join(dir, 'jobs'));
    await journal.open();
    assert.equal(journal.historySize, 4);
    // Finish time, then id, newest first; jobs of equal finish time by id.
    const expected = ['job_b_0001', 'job_c_0001', 'job_a_0010', 'job_a_0009'];
    assert.deepEqual(
      (await journal.finishedPage(10)).map((s) => s.jobId),
      expected,
    );
    const first = await journal.finishedPage(2);
    assert.deepEqual(
      first.map((s) => s.jobId),
      expected.slice(0, 2),
    );
    const last = first.at(-1)!;
    const second = await journal.finishedPage(2, { finishTime: last.finishTime!, jobId: last.jobId });
    assert.deepEqual(
      second.map((s) => s.jobId),
      expected.slice(2),
    );
    assert.deepEqual(second[1], older[1], 'the status as recorded');

    const newer: JobHistoryEntry = {
      status: status('job_d_0001', 4000),
      attempts: [],
      tasks: [{ taskId: 'task_d_0001_m_000000', kind: 'map', index: 0, state: 'succeeded', inputBytes: 5 }],
    };
    await journal.jobEnded(newer);
    assert.equal(journal.historySize, 5);
    assert.deepEqual(
      (await journal.finishedPage(1)).map((s) => s.jobId),
      ['job_d_0001'],
    );
    assert.deepEqual(await journal.history('job_d_0001'), newer);
    assert.deepEqual(
      (await journal.historyStatuses()).map((s) => s.jobId),
      [...expected].reverse().concat('job_d_0001'),
      '`job list --all` reads the same, oldest first',
    );
    await journal.close();

    // Indexed once: a second open finds the same, without duplicates.
    const again = new JobJournal(join(dir, 'jobs'));
    await again.open();
    assert.equal(again.historySize, 5);
    assert.deepEqual(
      (await again.finishedPage(10)).map((s) => s.jobId),
      ['job_d_0001', ...expected],
    );
    await again.close();
  });
});
