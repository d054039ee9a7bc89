/**
 * The rules of worker-health.ts, driven by posting events to the books (as the JobTracker and the
 * simulator do), and checked on what a policy is shown and what FIFO then decides.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import { Books, type JobRecord } from '../../src/books/index.js';
import { createPolicy, type Decision } from '../../src/scheduler/index.js';
import { launch, TICK, workerShape } from '../helpers/books.js';

function cluster(ids: readonly string[], options: ConstructorParameters<typeof Books>[0] = {}): Books {
  const books = new Books(options);
  for (const id of ids) books.workerJoined(workerShape(id, '/r1'), undefined, 0);
  return books;
}

function submit(books: Books, id: string, maps: number, now = 0): JobRecord {
  const { job } = books.submit(
    {
      id,
      name: id,
      maxAttempts: 100,
      maps: Array.from({ length: maps }, () => ({
        memoryMb: 512,
        inputBytes: 1000,
        preferredWorkers: [],
        data: undefined,
      })),
      reduces: [],
      data: undefined,
    },
    now,
  );
  return job;
}

const fail = { code: 'ETASK', message: 'boom' };

describe('books: workers whose attempts keep failing or vanishing', () => {
  it(
    '3 failures of a job on one worker blacklist it for that job: ' +
      'every task of the job avoids it, other jobs do not',
    () => {
      const books = cluster(['w1']);
      books.workerJoined(workerShape('w2', '/r1', { mapSlots: 4 }), undefined, 0);
      const job = submit(books, 'job_1', 4);
      const other = submit(books, 'job_2', 1);
      for (let i = 0; i < 2; i++) books.attemptFailed(launch(books, job.maps[i]!, 'w1', 10 + i), fail, 20 + i);
      assert.equal(books.health.isBlacklisted('job_1', 'w1'), false);
      assert.deepEqual(job.maps[3]!.failedOnWorkers, [], 'not yet');
      books.attemptFailed(launch(books, job.maps[2]!, 'w1', 30), fail, 31);
      assert.equal(books.health.isBlacklisted('job_1', 'w1'), true);
      const view = books.snapshot(TICK, 40).jobs.find((j) => j.id === 'job_1')!;
      for (const task of view.pendingTasks) assert.deepEqual(task.failedOnWorkers, ['w1'], task.id);
      assert.deepEqual(
        books.snapshot(TICK, 40).jobs.find((j) => j.id === 'job_2')!.pendingTasks[0]!.failedOnWorkers,
        [],
      );
      assert.equal(other.maps[0]!.failedOnWorkers.length, 0);
      // FIFO, filling w1's slots, sends the job's tasks to w2 while w2 has room for them.
      const decisions = createPolicy('fifo').schedule(books.snapshot({ kind: 'heartbeat', workerId: 'w1' }, 50));
      const forJob1 = decisions.filter((d) => d.kind === 'launch' && d.jobId === 'job_1');
      assert.ok(forJob1.length > 0);
      for (const d of forJob1) assert.equal(d.kind === 'launch' && d.workerId, 'w2');
    },
  );

  it('attempts that vanish count as failures of the worker, not of the task', () => {
    const books = cluster(['w1', 'w2', 'w3', 'w4']);
    const job = submit(books, 'job_1', 3);
    for (let i = 0; i < 3; i++)
      books.attemptWorkerFault(
        launch(books, job.maps[i]!, 'w1', 10),
        { code: 'EWORKERLOST', message: 'never heard of it' },
        20,
      );
    for (const task of job.maps) {
      assert.equal(task.failures, 0, 'the task is not to blame');
      assert.equal(task.state, 'pending');
    }
    assert.equal(books.health.isBlacklisted('job_1', 'w1'), true);
  });

  it(
    'a worker failing across jobs is graylisted: shown without free ' +
      'slots, so no policy gives it work, until the time runs out',
    () => {
      const books = cluster(['w1', 'w2', 'w3', 'w4'], { workerHealth: { graylistMs: 10_000 } });
      const jobs = ['job_1', 'job_2'].map((id) => submit(books, id, 3));
      let now = 10;
      for (const job of jobs)
        for (const task of job.maps) books.attemptFailed(launch(books, task, 'w1', now++), fail, now++);
      assert.equal(books.health.isGraylisted('w1'), true);
      const snap = books.snapshot({ kind: 'heartbeat', workerId: 'w1' }, now);
      const w1 = snap.workers.find((w) => w.id === 'w1')!;
      assert.equal(w1.freeMapSlots, 0);
      assert.equal(w1.freeReduceSlots, 0);
      const launchOnW1: Decision = {
        kind: 'launch',
        taskId: jobs[0]!.maps[0]!.id,
        jobId: 'job_1',
        workerId: 'w1',
        locality: 'any',
      };
      assert.ok(books.check(snap, [launchOnW1]).length > 0, 'a launch there is refused');
      const decisions = createPolicy('fifo').schedule(snap);
      assert.ok(decisions.length > 0);
      for (const d of decisions) assert.notEqual(d.kind === 'launch' && d.workerId, 'w1');
      // After graylistMs it is offered work again.
      assert.equal(books.snapshot(TICK, now + 10_000).workers.find((w) => w.id === 'w1')!.freeMapSlots, 2);
    },
  );

  it('six failures in a row, whatever the jobs, graylist a worker; a success in between clears the run', () => {
    const books = cluster(['w1', 'w2', 'w3', 'w4']);
    const job = submit(books, 'job_1', 12);
    let now = 10;
    for (let i = 0; i < 5; i++) books.attemptFailed(launch(books, job.maps[i]!, 'w2', now++), fail, now++);
    books.attemptSucceeded(launch(books, job.maps[5]!, 'w2', now++), now++, { inputBytes: 1, outputBytes: 1 });
    books.attemptFailed(launch(books, job.maps[6]!, 'w2', now++), fail, now++);
    assert.equal(books.health.isGraylisted('w2'), false, '5 failures, a success, 1 failure');
    for (let i = 7; i < 12; i++) books.attemptFailed(launch(books, job.maps[i]!, 'w2', now++), fail, now++);
    assert.equal(books.health.isGraylisted('w2'), true);
  });

  it('never more than half the live workers are graylisted', () => {
    const books = cluster(['w1', 'w2']);
    const job = submit(books, 'job_1', 12);
    let now = 10;
    for (let i = 0; i < 6; i++) books.attemptFailed(launch(books, job.maps[i]!, 'w1', now++), fail, now++);
    for (let i = 6; i < 12; i++) books.attemptFailed(launch(books, job.maps[i]!, 'w2', now++), fail, now++);
    assert.deepEqual([books.health.isGraylisted('w1'), books.health.isGraylisted('w2')], [true, false]);
  });

  it('a task that failed with EDISKFULL is retried on another worker', () => {
    const books = cluster(['w1', 'w2']);
    const job = submit(books, 'job_1', 1);
    books.attemptFailed(
      launch(books, job.maps[0]!, 'w1', 10),
      { code: 'EDISKFULL', message: 'no space left on device' },
      20,
    );
    const decisions = createPolicy('fifo').schedule(books.snapshot({ kind: 'heartbeat', workerId: 'w1' }, 30));
    assert.deepEqual(
      decisions.map((d) => d.kind === 'launch' && d.workerId),
      ['w2'],
    );
  });

  it('slot and memory claims above the configured maxima are refused with EBADCONF', () => {
    const books = new Books({ workerLimits: { maxMapSlots: 64, maxReduceSlots: 16, maxMemoryMb: 65_536 } });
    for (const over of [{ mapSlots: 1e9 }, { reduceSlots: 17 }, { memoryMb: 65_537 }]) {
      assert.throws(
        () => books.workerJoined(workerShape('rogue', '/r1', over), undefined, 0),
        (err) => isMinimrError(err, 'EBADCONF') && /maximum/.test(err.message),
      );
    }
    assert.equal(books.liveWorkerCount, 0);
    books.workerJoined(workerShape('w1', '/r1', { mapSlots: 64, reduceSlots: 16, memoryMb: 65_536 }), undefined, 0);
    assert.equal(books.liveWorkerCount, 1);
    // The default maxima refuse a billion slots too.
    assert.throws(
      () => new Books().workerJoined(workerShape('rogue', '/r1', { mapSlots: 1e9 }), undefined, 0),
      (err) => isMinimrError(err, 'EBADCONF'),
    );
  });
});
