/**
 * Progress reports change an attempt's view and its job's list of running attempt views in place
 * of building them again (src/books/attempt-views.ts). What a snapshot shows must still be each
 * running attempt as its record stands, in task order, with one shape of view; and no snapshot
 * handed out earlier may change.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Books, type AttemptRecord, type JobRecord } from '../../src/books/index.js';
import type { AttemptView, ClusterSnapshot, JobView } from '../../src/scheduler/index.js';
import { TICK, launch, workerShape } from '../helpers/books.js';

const ok = { inputBytes: 1000, outputBytes: 500 };

function books(freeze: boolean): Books {
  const b = new Books({ freeze });
  for (const id of ['w1', 'w2', 'w3']) b.workerJoined(workerShape(id, '/r1'), undefined, 0);
  return b;
}

function submit(b: Books, id: string, maps: number): JobRecord {
  return b.submit(
    {
      id,
      name: id,
      maps: Array.from({ length: maps }, () => ({
        memoryMb: 512,
        inputBytes: 1000,
        preferredWorkers: [],
        data: undefined,
      })),
      reduces: [],
      data: undefined,
    },
    0,
  ).job;
}

/** The view an attempt's record calls for, written out field by field. */
function expectedView(a: AttemptRecord): AttemptView {
  return {
    id: a.id,
    taskId: a.task.id,
    jobId: a.task.job.id,
    kind: a.task.kind,
    workerId: a.worker.shape.id,
    startTime: a.startTime,
    progress: a.progress,
    memoryMb: a.memoryMb,
    idealMemoryMb: a.task.memoryMb,
    elastic: a.elastic,
    locality: a.locality,
    inputWorkers: a.task.preferredWorkers,
    inputBytes: a.task.inputBytes,
  };
}

function jobOf(s: ClusterSnapshot, id: string): JobView {
  const job = s.jobs.find((j) => j.id === id);
  assert.ok(job, id);
  return job;
}

for (const freeze of [false, true]) {
  describe(`progress reports and the running attempts' views${freeze ? ' (frozen views)' : ''}`, () => {
    it('show every running attempt as it stands, and leave earlier snapshots as they were', () => {
      const b = books(freeze);
      const a = submit(b, 'job_a', 4);
      const other = submit(b, 'job_b', 2);
      const as = a.maps.map((t, i) => launch(b, t, i < 2 ? 'w1' : 'w2', 1));
      const bs = other.maps.map((t) => launch(b, t, 'w3', 1));
      const seen: Array<{ snapshot: ClusterSnapshot; copy: string }> = [];
      const take = (now: number): ClusterSnapshot => {
        const s = b.snapshot(TICK, now);
        seen.push({ snapshot: s, copy: JSON.stringify(s) });
        for (const [job, attempts] of [
          ['job_a', a.runningByTask],
          ['job_b', other.runningByTask],
        ] as const) {
          const views = jobOf(s, job).runningAttempts;
          assert.deepEqual(views, attempts.map(expectedView), `${job} at ${now}`);
          // One shape: the fields in the order of a view built in full.
          for (const v of views) assert.deepEqual(Object.keys(v), Object.keys(expectedView(as[0]!)));
          if (freeze) for (const v of views) assert.ok(Object.isFrozen(v) && Object.isFrozen(views));
        }
        return s;
      };
      const s0 = take(2);
      b.reportProgress(as[2]!, 0.3);
      b.reportProgress(as[0]!, 0.5);
      const s1 = take(3);
      assert.deepEqual(
        jobOf(s1, 'job_a').runningAttempts.map((v) => v.progress),
        [0.5, 0, 0.3, 0],
      );
      // The job whose attempts reported nothing keeps its very view.
      assert.equal(jobOf(s1, 'job_b'), jobOf(s0, 'job_b'));
      assert.equal(jobOf(s1, 'job_a').runningAttempts[1], jobOf(s0, 'job_a').runningAttempts[1]);
      // Progress, then an attempt ends before the next snapshot; then progress again.
      b.reportProgress(as[2]!, 0.6);
      b.attemptSucceeded(as[1]!, 4, ok);
      b.reportProgress(bs[1]!, 0.9);
      const s2 = take(5);
      assert.deepEqual(
        jobOf(s2, 'job_a').runningAttempts.map((v) => [v.id, v.progress]),
        [
          [as[0]!.id, 0.5],
          [as[2]!.id, 0.6],
          [as[3]!.id, 0],
        ],
      );
      b.reportProgress(as[3]!, 0.2);
      b.reportProgress(as[3]!, 0.25);
      take(6);
      // A task launched again in the same interval as a report (a new attempt among the old).
      b.attemptFailed(as[0]!, { code: 'ETASK', message: 'boom' }, 7);
      b.reportProgress(as[2]!, 0.7);
      take(7);
      launch(b, a.maps[0]!, 'w1', 8);
      b.reportProgress(as[3]!, 0.5);
      take(8);
      for (const [i, { snapshot, copy }] of seen.entries())
        assert.equal(JSON.stringify(snapshot), copy, `snapshot ${i} changed after it was handed out`);
    });
  });
}
