/**
 * Speculative execution in the books (LATE; src/books/speculation.ts), driven by posted events with
 * no cluster: which attempts get backups, where, how many, and that the first copy to finish is the
 * task's while the other is killed, so a task commits exactly once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Books, type AttemptRecord, type Effect, type JobRecord } from '../../src/books/index.js';
import { percentile, speculativeCap, timeLeftMs } from '../../src/books/index.js';
import { launch, workerShape } from '../helpers/books.js';

const ok = { inputBytes: 1000, outputBytes: 500 };

/** w1 and w2 on rack r1, w3 on r2, each 2 map slots and 1 reduce slot: 9 slots, so one backup at a time. */
function cluster(options: ConstructorParameters<typeof Books>[0] = {}): Books {
  const books = new Books(options);
  for (const [id, rack] of [
    ['w1', '/r1'],
    ['w2', '/r1'],
    ['w3', '/r2'],
  ] as const)
    books.workerJoined(workerShape(id, rack), undefined, 0);
  return books;
}

/** A map-only job of `maps` maps (input on w3 for the last two), or with reduces. */
function submit(books: Books, maps: number, reduces = 0, speculative?: boolean): JobRecord {
  return books.submit(
    {
      id: 'job_1',
      name: 'job_1',
      ...(speculative !== undefined ? { speculative } : {}),
      maps: Array.from({ length: maps }, (_, i) => ({
        memoryMb: 512,
        inputBytes: 1000,
        preferredWorkers: i >= maps - 2 ? ['w3'] : [],
        data: undefined,
      })),
      reduces: Array.from({ length: reduces }, () => ({
        memoryMb: 512,
        inputBytes: 0,
        preferredWorkers: [],
        data: undefined,
      })),
      data: undefined,
    },
    0,
  ).job;
}

function launched(effects: readonly Effect[]): AttemptRecord[] {
  return effects.flatMap((e) => (e.kind === 'launch' ? [e.attempt] : []));
}

/**
 * Six maps, two per worker, from t=0. At t=10 s w1's and w2's are done and w3's (the slow worker) are
 * at 20%: 40 s left each, against 10 s for a fresh copy.
 */
function slowWorkerJob(books: Books, speculative?: boolean) {
  const job = submit(books, 6, 0, speculative);
  const attempts = job.maps.map((t, i) => launch(books, t, `w${Math.floor(i / 2) + 1}`, 0));
  for (const a of attempts.slice(0, 4)) books.attemptSucceeded(a, 10_000, ok);
  for (const a of attempts.slice(4)) books.reportProgress(a, 0.2);
  return { job, attempts };
}

describe('speculation: the arithmetic', () => {
  it("LATE's time left, a percentile and the cap", () => {
    assert.equal(timeLeftMs(0.2, 10_000), 40_000);
    assert.equal(timeLeftMs(0, 10_000), Number.POSITIVE_INFINITY);
    assert.equal(timeLeftMs(1, 10_000), 0);
    assert.ok(Math.abs(percentile([0.4, 2, 2], 0.25) - 1.2) < 1e-12);
    assert.equal(percentile([5], 0.25), 5);
    assert.equal(speculativeCap(9, 0.1), 1);
    assert.equal(speculativeCap(40, 0.1), 4);
  });
});

describe('speculation in the books', () => {
  it("backs up the slow worker's attempts on fast workers, one at a time (10% of 9 slots, at least one)", () => {
    const books = cluster();
    const { job, attempts } = slowWorkerJob(books);
    const first = launched(books.speculate(10_000));
    assert.equal(first.length, 1);
    assert.equal(first[0]!.task, job.maps[4]);
    assert.equal(first[0]!.speculative, true);
    assert.notEqual(first[0]!.worker.shape.id, 'w3', 'never onto the slow worker');
    assert.deepEqual(launched(books.speculate(10_500)), [], 'looked again before the interval');
    assert.deepEqual(launched(books.speculate(11_000)), [], 'the cap: one backup runs already');
    assert.equal(job.maps[4]!.state, 'running');

    // The backup finishes first: it is the task's, the original is killed and its worker told.
    const effects = books.attemptSucceeded(first[0]!, 20_000, ok);
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['attempt-ended', 'attempt-ended', 'commit-task'],
    );
    assert.equal(job.maps[4]!.successfulAttempt, first[0]);
    assert.equal(attempts[4]!.state, 'killed');
    assert.equal(attempts[4]!.error?.details?.by, 'speculation');
    const killed = effects[1] as Extract<Effect, { kind: 'attempt-ended' }>;
    assert.equal(killed.attempt, attempts[4]);
    assert.equal(killed.tellWorker, true);
    assert.deepEqual(
      effects.filter((e) => e.kind === 'commit-task').map((e) => (e as { attempt: AttemptRecord }).attempt),
      [first[0]],
    );

    // The other slow map gets its backup now; this time the original finishes first.
    books.reportProgress(attempts[5]!, 0.45);
    const second = launched(books.speculate(21_000));
    assert.equal(second.length, 1);
    assert.equal(second[0]!.task, job.maps[5]);
    const late = books.attemptSucceeded(attempts[5]!, 22_000, ok);
    assert.equal(second[0]!.state, 'killed');
    assert.equal(late.filter((e) => e.kind === 'commit-task').length, 1);
    // The loser's own success report, arriving after, changes nothing.
    assert.deepEqual(books.attemptSucceeded(second[0]!, 22_100, ok), []);
    assert.equal(job.maps[5]!.successfulAttempt, attempts[5]);
    assert.equal(job.state, 'committing');
    assert.equal(job.killedAttempts, 2);
  });

  it('job.speculative=false: no backup', () => {
    const books = cluster();
    slowWorkerJob(books, false);
    assert.deepEqual(books.speculate(10_000), []);
  });

  it('books built with speculation off back up only jobs that ask', () => {
    const off = cluster({ speculation: { enabled: false } });
    slowWorkerJob(off);
    assert.deepEqual(off.speculate(10_000), []);
    const asked = cluster({ speculation: { enabled: false } });
    slowWorkerJob(asked, true);
    assert.equal(launched(asked.speculate(10_000)).length, 1);
  });

  it('no backup while the job has maps still to start, nor of an attempt younger than minRuntimeMs', () => {
    const books = cluster();
    const job = submit(books, 7);
    const attempts = job.maps.slice(0, 6).map((t, i) => launch(books, t, `w${Math.floor(i / 2) + 1}`, 0));
    for (const a of attempts.slice(0, 4)) books.attemptSucceeded(a, 10_000, ok);
    for (const a of attempts.slice(4)) books.reportProgress(a, 0.2);
    assert.deepEqual(books.speculate(10_000), [], 'map 6 is still pending');
    launch(books, job.maps[6]!, 'w1', 10_200);
    assert.deepEqual(books.speculate(10_500), [], 'a look within the interval');
    const backups = launched(books.speculate(11_000));
    assert.deepEqual(
      backups.map((a) => a.task),
      [job.maps[4]],
      'map 6, younger than 1 s and without progress, is not judged; the slow maps are',
    );
  });

  it('an attempt that has reported no progress has no estimate, and no backup', () => {
    const books = cluster();
    const { attempts } = slowWorkerJob(books);
    books.reportProgress(attempts[4]!, 0);
    books.reportProgress(attempts[5]!, 0);
    assert.deepEqual(books.speculate(30_000), []);
  });

  it('an attempt near its end, or as fast as its siblings, gets no backup', () => {
    const books = cluster();
    const { attempts } = slowWorkerJob(books);
    books.reportProgress(attempts[4]!, 0.95);
    books.reportProgress(attempts[5]!, 0.95);
    assert.deepEqual(books.speculate(10_000), [], '0.5 s left against 10 s for a copy');
  });

  it("no backup onto a worker in LATE's slowest quarter of total progress, even when only it has room", () => {
    const books = new Books();
    books.workerJoined(workerShape('w1', '/r1'), undefined, 0);
    books.workerJoined(workerShape('w2', '/r1'), undefined, 0);
    books.workerJoined(workerShape('w3', '/r2', { mapSlots: 3 }), undefined, 0);
    const job = submit(books, 6);
    const attempts = job.maps.map((t, i) => launch(books, t, `w${Math.floor(i / 2) + 1}`, 0));
    books.attemptSucceeded(attempts[1]!, 10_000, ok);
    books.attemptSucceeded(attempts[2]!, 10_000, ok);
    books.attemptSucceeded(attempts[3]!, 10_000, ok);
    // Map 0 is slow on w1; w3's maps are halfway, as fast as a fresh copy would be.
    books.reportProgress(attempts[0]!, 0.1);
    books.reportProgress(attempts[4]!, 0.5);
    books.reportProgress(attempts[5]!, 0.5);
    // Total progress: w1 1.1, w2 2, w3 1.0; the 25th percentile is 1.05, so w3 is slow.
    const other = books.submit(
      {
        id: 'job_2',
        name: 'job_2',
        maps: Array.from({ length: 2 }, () => ({
          memoryMb: 512,
          inputBytes: 1,
          preferredWorkers: [],
          data: undefined,
        })),
        reduces: [],
        data: undefined,
      },
      10_000,
    ).job;
    const fillers = other.maps.map((t) => launch(books, t, 'w2', 10_000));
    assert.deepEqual(books.speculate(10_000), [], "w1 runs the original and w3 is slow: w2's slots are taken");
    books.attemptSucceeded(fillers[0]!, 11_000, ok);
    books.reportProgress(fillers[1]!, 0.9);
    const [backup] = launched(books.speculate(11_000));
    assert.equal(backup?.task, job.maps[0]);
    assert.equal(backup!.worker.shape.id, 'w2');
  });

  it('while a backup runs, its original failing or lost leaves the task running, not pending', () => {
    const books = cluster();
    const { job, attempts } = slowWorkerJob(books);
    const [backup] = launched(books.speculate(10_000));
    const effects = books.attemptFailed(attempts[4]!, { code: 'ETASK', message: 'boom' }, 11_000);
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['attempt-ended'],
    );
    assert.equal(job.maps[4]!.state, 'running');
    assert.equal(job.maps[4]!.failures, 1);
    assert.ok(!job.pendingMaps.includes(job.maps[4]!));
    books.workerLost(backup!.worker.shape.id, 12_000, 'test');
    assert.equal(job.maps[4]!.state, 'pending', 'with no attempt left running, it runs again');
  });

  it('reduces are backed up as maps are, and commit once', () => {
    const books = cluster();
    const job = submit(books, 3, 3);
    job.maps.forEach((t, i) => books.attemptSucceeded(launch(books, t, `w${i + 1}`, 0), 1000, ok));
    const reduces = job.reduces.map((t, i) => launch(books, t, `w${i + 1}`, 1000));
    books.attemptSucceeded(reduces[0]!, 6000, ok);
    books.reportProgress(reduces[1]!, 0.9);
    books.reportProgress(reduces[2]!, 0.1);
    const [backup] = launched(books.speculate(6000));
    assert.equal(backup?.task, job.reduces[2]);
    assert.equal(backup!.worker.shape.id, 'w1', 'the worker with the most progress and a free reduce slot');
    books.attemptSucceeded(reduces[1]!, 6500, ok);
    const effects = books.attemptSucceeded(backup!, 11_000, ok);
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['attempt-ended', 'attempt-ended', 'commit-task', 'commit-job'],
    );
    assert.equal(reduces[2]!.state, 'killed');
  });
});
