/**
 * The books' rules, driven by posted events and no cluster (as Spark's DAGSchedulerSuite drives its
 * scheduler): each test sets up workers and a job, posts what a worker or a policy would report,
 * and checks the state and the effects the books hand the engine.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Books,
  MAX_FETCH_FAILURES_PER_REDUCE,
  type Effect,
  type JobRecord,
  type TaskRecord,
} from '../../src/books/index.js';
import type { Decision } from '../../src/scheduler/index.js';
import { CountMinSketch, sketchSeeds, type SketchWire } from '../../src/skew/index.js';
import { launch, TICK, workerShape } from '../helpers/books.js';

/** Books with workers w1, w2 (rack r1) and w3 (rack r2). */
function cluster(options: ConstructorParameters<typeof Books>[0] = {}): Books {
  const books = new Books(options);
  books.workerJoined(workerShape('w1', '/r1'), undefined, 0);
  books.workerJoined(workerShape('w2', '/r1'), undefined, 0);
  books.workerJoined(workerShape('w3', '/r2'), undefined, 0);
  return books;
}

function submit(
  books: Books,
  id: string,
  maps: readonly (readonly string[])[],
  reduces: number,
  now = 0,
  extra: {
    maxAttempts?: number;
    reduceSlowStart?: number;
    inputPlacement?: { replication: number; windowMs: number };
    skew?: { strategy: 'hash' | 'simple' | 'cms'; partitionFactor: number; sketch?: SketchWire };
  } = {},
): JobRecord {
  const { job } = books.submit(
    {
      id,
      name: id,
      ...extra,
      maps: maps.map((preferredWorkers) => ({ memoryMb: 512, inputBytes: 1000, preferredWorkers, data: undefined })),
      reduces: Array.from({ length: reduces }, () => ({
        memoryMb: 512,
        inputBytes: 0,
        preferredWorkers: [],
        data: undefined,
      })),
      data: undefined,
    },
    now,
  );
  return job;
}

const ok = { inputBytes: 1000, outputBytes: 500 };

function kinds(effects: readonly Effect[]): string[] {
  return effects.map((e) => e.kind);
}

function pendingIds(books: Books, now = 0): string[] {
  return books.snapshot(TICK, now).jobs.flatMap((j) => j.pendingTasks.map((t) => t.id));
}

describe('books: attempts and retries', () => {
  it('a failure counts toward maxAttempts and the task is retried, avoiding the worker it failed on', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0);
    const a = launch(books, job.maps[0]!, 'w1', 10);
    const effects = books.attemptFailed(a, { code: 'ETASK', message: 'boom' }, 20);
    assert.deepEqual(kinds(effects), ['attempt-ended']);
    assert.equal(a.state, 'failed');
    assert.equal(job.maps[0]!.state, 'pending');
    assert.equal(job.maps[0]!.failures, 1);
    assert.deepEqual(books.snapshot(TICK, 20).jobs[0]!.pendingTasks[0]!.failedOnWorkers, ['w1']);
    assert.equal(job.failedAttempts, 1);
  });

  it(
    'retries exhausted: the job fails with the user message, the ' +
      'task and the attempt, and its other attempts are killed',
    () => {
      const books = cluster();
      const job = submit(books, 'job_1', [['w1'], ['w2']], 1, 0, { maxAttempts: 2 });
      const other = launch(books, job.maps[1]!, 'w2', 5);
      let a = launch(books, job.maps[0]!, 'w1', 5);
      books.attemptFailed(a, { code: 'ETASK', message: 'first' }, 6);
      a = launch(books, job.maps[0]!, 'w3', 7);
      const effects = books.attemptFailed(a, { code: 'ETASK', message: 'division by zero' }, 8);
      assert.deepEqual(kinds(effects), ['attempt-ended', 'attempt-ended', 'job-ended']);
      const killed = effects[1] as Extract<Effect, { kind: 'attempt-ended' }>;
      assert.equal(killed.attempt, other);
      assert.equal(killed.tellWorker, true);
      assert.equal(other.state, 'killed');
      assert.equal(job.state, 'failed');
      assert.equal(job.finishTime, 8);
      assert.equal(job.error?.code, 'EJOBFAILED');
      assert.match(
        job.error!.message,
        /task task_1_m_000000 failed 2 times; last attempt attempt_1_m_000000_1 on w3: division by zero/,
      );
      assert.deepEqual(job.error?.details, {
        jobId: 'job_1',
        taskId: 'task_1_m_000000',
        attemptId: 'attempt_1_m_000000_1',
        cause: 'ETASK',
      });
      assert.equal(job.maps[0]!.state, 'failed');
      assert.equal(job.reduces[0]!.state, 'failed');
      assert.equal(books.active.length, 0);
      assert.equal(books.worker('w2')!.usedMap, 0, 'the killed attempt gave its slot back');
    },
  );

  it('kills by a policy and lost workers count nothing against the task', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0, 0, { maxAttempts: 1 });
    let a = launch(books, job.maps[0]!, 'w1', 1);
    const snap = books.snapshot(TICK, 2);
    assert.deepEqual(books.check(snap, [{ kind: 'kill', attemptId: a.id, reason: 'preempted' }]), []);
    const effects = books.apply([{ kind: 'kill', attemptId: a.id, reason: 'preempted' }], 2);
    assert.deepEqual(kinds(effects), ['attempt-ended']);
    assert.equal((effects[0] as Extract<Effect, { kind: 'attempt-ended' }>).tellWorker, true);
    assert.equal(a.error?.code, 'EKILLED');
    a = launch(books, job.maps[0]!, 'w1', 3);
    books.workerLost('w1', 4, 'no heartbeat');
    assert.equal(a.state, 'killed');
    assert.equal(a.error?.code, 'EWORKERLOST');
    assert.equal(job.maps[0]!.failures, 0);
    assert.equal(job.maps[0]!.state, 'pending');
    assert.equal(job.state, 'running');
    assert.equal(job.killedAttempts, 2);
  });

  it('a late report for an attempt that already ended changes nothing', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0);
    const a = launch(books, job.maps[0]!, 'w1', 1);
    books.attemptKilled(a, { code: 'EKILLED', message: 'x' }, 2, true);
    assert.deepEqual(books.attemptSucceeded(a, 3, ok), []);
    assert.deepEqual(books.attemptFailed(a, { code: 'ETASK', message: 'late' }, 3), []);
    assert.equal(job.maps[0]!.state, 'pending');
  });
});

describe('books: map outputs', () => {
  it('a lost worker holding finished map outputs: those maps re-run while a reduce still needs them', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w2'], ['w1']], 1);
    const done = [
      launch(books, job.maps[0]!, 'w1', 1),
      launch(books, job.maps[1]!, 'w2', 1),
      launch(books, job.maps[2]!, 'w3', 1),
    ];
    for (const a of done) books.attemptSucceeded(a, 5, ok);
    assert.equal(job.mapsDone, 3);
    assert.deepEqual(pendingIds(books, 5), ['task_1_r_000000']);
    const effects = books.workerLost('w1', 6, 'no heartbeat');
    assert.deepEqual(kinds(effects), ['map-rerun']);
    assert.equal((effects[0] as Extract<Effect, { kind: 'map-rerun' }>).task, job.maps[0]);
    assert.equal(job.mapsDone, 2);
    assert.equal(job.maps[0]!.successfulAttempt, null);
    assert.equal(job.maps[2]!.state, 'succeeded', 'the map that ran on w3 keeps its output');
    assert.deepEqual(pendingIds(books, 6), ['task_1_m_000000'], 'the reduce waits again for the re-run map');
  });

  it('map outputs are not re-run once every reduce is done, nor for a map-only job', () => {
    const books = cluster();
    const mapOnly = submit(books, 'job_1', [['w1'], ['w1']], 0);
    const a = launch(books, mapOnly.maps[0]!, 'w1', 1);
    books.attemptSucceeded(a, 2, ok);
    assert.deepEqual(kinds(books.workerLost('w1', 3, 'gone')), []);
    assert.equal(mapOnly.maps[0]!.state, 'succeeded');
  });

  it('a fetch failure re-runs the map it names and retries the reduce without counting it', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w2']], 1, 0, { maxAttempts: 1 });
    const m0 = launch(books, job.maps[0]!, 'w1', 1);
    books.attemptSucceeded(m0, 2, ok);
    books.attemptSucceeded(launch(books, job.maps[1]!, 'w2', 1), 2, ok);
    const r = launch(books, job.reduces[0]!, 'w3', 3);
    const effects = books.attemptFailed(
      r,
      { code: 'EFETCH', message: 'cannot fetch', details: { mapIndex: 0, attemptId: m0.id } },
      4,
    );
    assert.deepEqual(kinds(effects), ['attempt-ended', 'map-rerun']);
    assert.equal(job.maps[0]!.state, 'pending');
    assert.equal(job.reduces[0]!.state, 'pending');
    assert.equal(job.reduces[0]!.failures, 0);
    assert.equal(job.reduces[0]!.fetchFailures, 1);
    assert.equal(job.state, 'running', 'maxAttempts 1 and the job still runs: fetch failures do not count');
    assert.deepEqual(pendingIds(books, 4), ['task_1_m_000000']);
  });

  it('a fetch failure naming an older map attempt re-runs nothing', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 1);
    books.attemptSucceeded(launch(books, job.maps[0]!, 'w1', 1), 2, ok);
    const r = launch(books, job.reduces[0]!, 'w3', 3);
    const effects = books.attemptFailed(
      r,
      { code: 'EFETCH', message: 'stale', details: { mapIndex: 0, attemptId: 'attempt_1_m_000000_9' } },
      4,
    );
    assert.deepEqual(kinds(effects), ['attempt-ended']);
    assert.equal(job.maps[0]!.state, 'succeeded');
    assert.equal(job.reduces[0]!.state, 'pending');
  });

  it(`after ${MAX_FETCH_FAILURES_PER_REDUCE} fetch failures the next one counts as the reduce's own`, () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 1, 0, { maxAttempts: 1 });
    for (let i = 0; i <= MAX_FETCH_FAILURES_PER_REDUCE; i++) {
      if (job.maps[0]!.state === 'pending')
        books.attemptSucceeded(launch(books, job.maps[0]!, 'w1', i * 10), i * 10 + 1, ok);
      const r = launch(books, job.reduces[0]!, 'w3', i * 10 + 2);
      books.attemptFailed(r, { code: 'EFETCH', message: 'cannot fetch', details: { mapIndex: 0 } }, i * 10 + 3);
    }
    assert.equal(job.state, 'failed');
    assert.equal(job.error?.details?.taskId, 'task_1_r_000000');
  });
});

describe('books: commit', () => {
  function finishAll(books: Books, job: JobRecord, now: number): Effect[] {
    let effects: Effect[] = [];
    for (const t of job.maps) effects = books.attemptSucceeded(launch(books, t, 'w1', now), now + 1, ok);
    for (const t of job.reduces) effects = books.attemptSucceeded(launch(books, t, 'w2', now + 2), now + 3, ok);
    return effects;
  }

  it('the last task commits its output and then the job commits', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 1);
    const effects = finishAll(books, job, 1);
    assert.deepEqual(kinds(effects), ['attempt-ended', 'commit-task', 'commit-job']);
    assert.equal(job.state, 'committing');
    assert.equal(books.active.length, 0, 'a committing job offers the policy nothing');
    assert.deepEqual(kinds(books.jobCommitted(job, 9)), ['job-ended']);
    assert.equal(job.state, 'succeeded');
    assert.equal(job.finishTime, 9);
  });

  it('a map-only job commits each map output', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w2']], 0);
    const first = books.attemptSucceeded(launch(books, job.maps[0]!, 'w1', 1), 2, ok);
    assert.deepEqual(kinds(first), ['attempt-ended', 'commit-task']);
    const last = books.attemptSucceeded(launch(books, job.maps[1]!, 'w2', 3), 4, ok);
    assert.deepEqual(kinds(last), ['attempt-ended', 'maps-done', 'commit-task', 'commit-job']);
  });

  it('a kill during the commit wins: the job ends killed and what the commit wrote is discarded', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 1);
    finishAll(books, job, 1);
    assert.equal(job.state, 'committing');
    const killed = books.killJob(job, 10, { code: 'EJOBKILLED', message: 'killed on request' });
    assert.deepEqual(kinds(killed), ['job-ended']);
    assert.equal(job.state, 'killed');
    assert.deepEqual(kinds(books.jobCommitted(job, 11)), ['discard-output']);
    assert.equal(job.state, 'killed');
    assert.deepEqual(
      kinds(books.killJob(job, 12, { code: 'EJOBKILLED', message: 'again' })),
      [],
      'an ended job cannot end twice',
    );
  });

  it('a job with no tasks goes straight to its commit', () => {
    const books = cluster();
    const { job, effects } = books.submit({ id: 'job_9', name: 'empty', maps: [], reduces: [], data: undefined }, 0);
    assert.deepEqual(kinds(effects), ['commit-job']);
    assert.equal(job.state, 'committing');
  });
});

describe('books: decisions', () => {
  it('a decision for a task that already finished is refused, and so are double launches and over-allocation', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w1'], ['w1']], 0);
    const a = launch(books, job.maps[0]!, 'w1', 1);
    const stale = books.snapshot(TICK, 1);
    books.attemptSucceeded(a, 2, ok);
    const snap = books.snapshot(TICK, 2);
    const again: Decision = {
      kind: 'launch',
      taskId: job.maps[0]!.id,
      jobId: 'job_1',
      workerId: 'w1',
      locality: 'node',
    };
    assert.match(books.check(snap, [again]).join('\n'), /task task_1_m_000000 is not pending/);
    assert.ok(stale.jobs[0]!.pendingTasks.every((t) => t.id !== job.maps[0]!.id));
    const m1: Decision = { kind: 'launch', taskId: job.maps[1]!.id, jobId: 'job_1', workerId: 'w1', locality: 'node' };
    const m2: Decision = { kind: 'launch', taskId: job.maps[2]!.id, jobId: 'job_1', workerId: 'w1', locality: 'node' };
    const m3: Decision = { kind: 'launch', taskId: job.maps[1]!.id, jobId: 'job_1', workerId: 'w2', locality: 'rack' };
    assert.deepEqual(books.check(snap, [m1, m2]), []);
    assert.match(books.check(snap, [m1, m3]).join('\n'), /launched twice/);
    const small = new Books();
    small.workerJoined(workerShape('w1', '/r1', { mapSlots: 1 }), undefined, 0);
    const j2 = submit(small, 'job_2', [['w1'], ['w1']], 0);
    const s2 = small.snapshot(TICK, 0);
    const both = j2.maps.map(
      (t): Decision => ({ kind: 'launch', taskId: t.id, jobId: 'job_2', workerId: 'w1', locality: 'node' }),
    );
    assert.match(small.check(s2, both).join('\n'), /worker w1: 2 maps for 1 free map slots/);
  });

  it('migrations are recorded with their figures and change only the partition', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0);
    const effects = books.apply(
      [{ kind: 'migrate', jobId: 'job_1', toPartition: 2, partialSizeMs: 1500, timerMs: 1000 }],
      42,
    );
    assert.deepEqual(kinds(effects), ['migrated']);
    assert.deepEqual(job.migrations, [{ timeMs: 42, from: 0, to: 2, partialSizeMs: 1500, timerMs: 1000 }]);
    assert.equal(books.snapshot(TICK, 42).jobs[0]!.partition, 2);
    const a = launch(books, job.maps[0]!, 'w1', 43);
    assert.equal(a.partition, 2);
  });
});

describe('books: reduce slow start', () => {
  it('reduces are offered once the fraction of maps is done, and by default only after the last', () => {
    const books = cluster();
    const early = submit(books, 'job_1', [['w1'], ['w1'], ['w1'], ['w1']], 1, 0, { reduceSlowStart: 0.5 });
    books.attemptSucceeded(launch(books, early.maps[0]!, 'w1', 1), 2, ok);
    assert.ok(!pendingIds(books, 2).includes('task_1_r_000000'));
    const effects = books.attemptSucceeded(launch(books, early.maps[1]!, 'w1', 3), 4, ok);
    assert.ok(!kinds(effects).includes('maps-done'));
    assert.ok(pendingIds(books, 4).includes('task_1_r_000000'));
    const late = submit(books, 'job_2', [['w2'], ['w2']], 1, 5);
    books.attemptSucceeded(launch(books, late.maps[0]!, 'w2', 6), 7, ok);
    assert.ok(!pendingIds(books, 7).includes('task_2_r_000000'));
    assert.deepEqual(kinds(books.attemptSucceeded(launch(books, late.maps[1]!, 'w2', 8), 9, ok)), [
      'attempt-ended',
      'maps-done',
    ]);
    assert.ok(pendingIds(books, 9).includes('task_2_r_000000'));
  });
});

describe('books: owed replicas', () => {
  function placed(books: Books) {
    // One replica uploaded on w1 (/r1), one owed, window 1000 ms.
    return submit(books, 'job_1', [['w1'], ['w1']], 0, 0, { inputPlacement: { replication: 2, windowMs: 1000 } });
  }

  it('a policy places an owed replica: counted as placed when asked for, local once it lands', () => {
    const books = cluster();
    const job = placed(books);
    assert.equal(books.snapshot(TICK, 0).jobs[0]!.pendingTasks[0]!.unplacedReplicas, 1);
    const snap = books.snapshot(TICK, 1);
    const d: Decision = { kind: 'replicate', taskId: job.maps[0]!.id, jobId: 'job_1', workerId: 'w3' };
    assert.deepEqual(books.check(snap, [d]), []);
    const [effect] = books.apply([d], 1);
    assert.deepEqual(
      { ...effect, task: undefined },
      { kind: 'replicate', task: undefined, workerId: 'w3', cause: 'placed', crossRack: true },
    );
    assert.equal(books.snapshot(TICK, 1).jobs[0]!.pendingTasks[0]!.unplacedReplicas, undefined);
    assert.deepEqual(
      books.snapshot(TICK, 1).jobs[0]!.pendingTasks[0]!.preferredWorkers,
      ['w1'],
      'not local before it lands',
    );
    assert.deepEqual(kinds(books.apply([d], 2)), [], 'asking again while it is on its way copies nothing');
    books.replicaLanded(job.maps[0]!, 'w3');
    const task = books.snapshot(TICK, 3).jobs[0]!.pendingTasks[0]!;
    assert.deepEqual(task.preferredWorkers, ['w1', 'w3']);
    assert.deepEqual(task.preferredRacks, ['/r1', '/r2']);
    const extra = books.apply([{ kind: 'replicate', taskId: job.maps[0]!.id, jobId: 'job_1', workerId: 'w2' }], 4);
    assert.equal((extra[0] as Extract<Effect, { kind: 'replicate' }>).cause, 'extra');
  });

  it('when the window closes, the replicas no policy placed go on a rack-mate of a holder', () => {
    const books = cluster();
    const job = placed(books);
    books.apply([{ kind: 'replicate', taskId: job.maps[0]!.id, jobId: 'job_1', workerId: 'w3' }], 1);
    const effects = books.closePlacementWindow(job) as Extract<Effect, { kind: 'replicate' }>[];
    assert.deepEqual(
      effects.map((e) => [e.task.id, e.workerId, e.cause, e.crossRack]),
      [['task_1_m_000001', 'w2', 'completed', false]],
      'map 0 owes nothing more (its copy is on its way); map 1 gets w2, the rack-mate of w1',
    );
    assert.deepEqual(books.closePlacementWindow(job), [], 'a window closes once');
    assert.equal(
      books.snapshot(TICK, 2).jobs[0]!.pendingTasks.every((t) => t.unplacedReplicas === undefined),
      true,
    );
  });

  it('a copy that fails owes its replica again while the window is open, not after', () => {
    const books = cluster();
    const job = placed(books);
    books.apply([{ kind: 'replicate', taskId: job.maps[0]!.id, jobId: 'job_1', workerId: 'w3' }], 1);
    books.replicaFailed(job.maps[0]!, 'w3', 'placed');
    assert.equal(job.maps[0]!.unplacedReplicas, 1);
    books.closePlacementWindow(job);
    books.replicaFailed(job.maps[1]!, 'w2', 'completed');
    assert.equal(job.maps[1]!.unplacedReplicas, 0);
  });
});

describe('books: snapshots', () => {
  it('views that did not change are the same objects in the next snapshot', () => {
    const books = cluster();
    const j1 = submit(books, 'job_1', [['w1']], 0);
    submit(books, 'job_2', [['w2']], 0);
    const before = books.snapshot(TICK, 0);
    launch(books, j1.maps[0]!, 'w1', 1);
    const after = books.snapshot(TICK, 1);
    assert.notEqual(after.jobs[0], before.jobs[0]);
    assert.equal(after.jobs[1], before.jobs[1], 'job_2 did not change');
    assert.equal(after.workers[1], before.workers[1], 'w2 did not change');
    assert.notEqual(after.workers[0], before.workers[0]);
    assert.equal(after.workers[0]!.freeMapSlots, 1);
    assert.equal(after.workers[0]!.freeMemoryMb, 4096 - 512);
  });

  it('live workers are listed in id order; a lost one leaves, and comes back with its new shape', () => {
    const books = new Books();
    for (const id of ['w3', 'w1', 'w2']) books.workerJoined(workerShape(id, '/r1'), undefined, 0);
    assert.deepEqual(
      books.snapshot(TICK, 0).workers.map((w) => w.id),
      ['w1', 'w2', 'w3'],
    );
    books.workerLost('w2', 1, 'gone');
    assert.deepEqual(
      books.snapshot(TICK, 1).workers.map((w) => w.id),
      ['w1', 'w3'],
    );
    books.workerJoined(workerShape('w2', '/r9', { mapSlots: 5 }), undefined, 2);
    const w2 = books.snapshot(TICK, 2).workers[1]!;
    assert.deepEqual([w2.id, w2.rack, w2.mapSlots], ['w2', '/r9', 5]);
  });

  it('a frozen snapshot cannot be written to', () => {
    const books = cluster({ freeze: true });
    submit(books, 'job_1', [['w1']], 0);
    const snap = books.snapshot(TICK, 0);
    assert.throws(() => {
      (snap.jobs[0]!.pendingTasks as unknown as unknown[]).push(1);
    }, TypeError);
  });
});

describe('books: skew assignment', () => {
  /** Map `index` succeeds on `workerId` having read 1000 bytes in `taskMs`, writing `partitionBytes`. */
  function mapDone(
    books: Books,
    job: JobRecord,
    index: number,
    workerId: string,
    partitionBytes: number[],
    taskMs = 100,
  ): void {
    const a = launch(books, job.maps[index]!, workerId, 10);
    books.attemptSucceeded(a, 10 + taskMs, { inputBytes: 1000, outputBytes: 100, taskMs, partitionBytes });
  }

  it(
    "'simple': reduces wait for every map whatever the slow start, " +
      'then take partitions largest first (LPT), bound to the worker ' +
      'they were planned on',
    () => {
      const books = cluster();
      const job = submit(books, 'job_1', [['w1'], ['w2']], 2, 0, {
        reduceSlowStart: 0,
        skew: { strategy: 'simple', partitionFactor: 2 },
      });
      assert.deepEqual(pendingIds(books), ['task_1_m_000000', 'task_1_m_000001']);
      mapDone(books, job, 0, 'w1', [10, 40, 0, 0]);
      assert.deepEqual(pendingIds(books, 200), ['task_1_m_000001'], 'half the sizes are not enough to plan on');
      mapDone(books, job, 1, 'w2', [0, 0, 30, 20]);
      // Sizes [10, 40, 30, 20], equal speeds, reducer 0 planned on w1 and reducer 1 on w2 (reduce slots
      // dealt by worker id). By hand: 40 -> r0; 30 -> r1; 20 -> r1 (50 < 60); 10 -> r0 (50 < 60).
      const r0 = launch(books, job.reduces[0]!, 'w2', 300);
      assert.deepEqual(r0.reducePartitions, [2, 3], 'reduce 0 launched on w2 takes the group planned on w2');
      const r1 = launch(books, job.reduces[1]!, 'w1', 300);
      assert.deepEqual(r1.reducePartitions, [0, 1]);
      books.attemptFailed(r0, { code: 'ETASK', message: 'boom' }, 310);
      const again = launch(books, job.reduces[0]!, 'w3', 320);
      assert.deepEqual(again.reducePartitions, [2, 3], 'a task keeps its group on every attempt');
      books.attemptSucceeded(r1, 400, { inputBytes: 50, outputBytes: 5 });
      books.attemptSucceeded(again, 450, { inputBytes: 50, outputBytes: 5 });
      assert.deepEqual(
        job.skew!.counters,
        { REDUCE_PHASE_MS: 150, SKEW_ASSIGNMENT_MS: 0 },
        'first reduce launch (300) to last reduce success (450)',
      );
    },
  );

  it("'simple': a worker measured three times slower is given less to read", () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w2']], 2, 0, { skew: { strategy: 'simple', partitionFactor: 2 } });
    mapDone(books, job, 0, 'w1', [10, 40, 0, 0], 100);
    mapDone(books, job, 1, 'w2', [0, 0, 30, 20], 300);
    // Map rates 10 and 3.33 bytes/ms: relative speeds 1.5 (w1) and 0.5 (w2). By hand, estimated
    // time = bytes / speed: 40 -> r0 (26.7 < 80); 30 -> r0 (46.7 < 60); 20 -> r1 (40 < 60); 10 -> r0 (53.3 < 60).
    assert.deepEqual(launch(books, job.reduces[0]!, 'w1', 500).reducePartitions, [0, 1, 2]);
    assert.deepEqual(launch(books, job.reduces[1]!, 'w2', 500).reducePartitions, [3]);
  });

  it(
    "'hash': reduce i reads the partitions p with p mod R = i, " + 'wherever it runs, as soon as the slow start allows',
    () => {
      const books = cluster();
      const job = submit(books, 'job_1', [['w1'], ['w2']], 2, 0, {
        reduceSlowStart: 0.5,
        skew: { strategy: 'hash', partitionFactor: 3 },
      });
      mapDone(books, job, 0, 'w1', [1, 1, 1, 1, 1, 1]);
      assert.deepEqual(launch(books, job.reduces[1]!, 'w3', 200).reducePartitions, [1, 3, 5]);
      assert.deepEqual(launch(books, job.reduces[0]!, 'w1', 200).reducePartitions, [0, 2, 4]);
    },
  );

  it("'cms': assigned at submission from the sketch, so the maps know the chosen row's seed before they run", () => {
    const books = cluster();
    const sketch = new CountMinSketch(3, 4);
    for (let k = 0; k < 50; k++) sketch.add(Buffer.from(`key${k}`), 10, k < 5 ? 100 : 1);
    const job = submit(books, 'job_1', [['w1']], 2, 0, {
      skew: { strategy: 'cms', partitionFactor: 2, sketch: sketch.toWire() },
    });
    assert.equal(job.skew!.isPlanned, true);
    assert.equal(job.skew!.seed, sketchSeeds(3)[job.skew!.row!]);
    const chosen = job.skew!.rowMakespans!;
    assert.equal(chosen[job.skew!.row!], Math.min(...chosen), 'the row with the smallest estimated reduce phase');
  });
});

describe('books: memory', () => {
  const step = { kind: 'step', factor: 3, minFraction: 0.1 } as const;

  /** Books with w1 (4096 MB) and a job of two 2000 MB maps with a 3x step penalty and 60 s ideal duration. */
  function elasticJob(options: ConstructorParameters<typeof Books>[0] = {}): { books: Books; job: JobRecord } {
    const books = new Books(options);
    books.workerJoined(workerShape('w1', '/r1', { mapSlots: 4 }), undefined, 0);
    const map = {
      memoryMb: 2000,
      inputBytes: 0,
      preferredWorkers: [],
      idealDurationMs: 60_000,
      penalty: step,
      data: undefined,
    };
    const { job } = books.submit({ id: 'job_1', name: 'j', maps: [map, map], reduces: [], data: undefined }, 0);
    return { books, job };
  }

  function grant(task: TaskRecord, memoryMb: number | undefined, elastic?: boolean): Decision {
    return {
      kind: 'launch',
      taskId: task.id,
      jobId: task.job.id,
      workerId: 'w1',
      ...(memoryMb !== undefined ? { memoryMb } : {}),
      ...(elastic !== undefined ? { elastic } : {}),
      locality: 'any',
    };
  }

  it('a pending task shows its ideal memory, ideal duration and penalty model; the snapshot its memory step', () => {
    const { books } = elasticJob();
    const snap = books.snapshot(TICK, 0);
    const t = snap.jobs[0]!.pendingTasks[0]!;
    assert.deepEqual([t.memoryMb, t.idealDurationMs, t.penalty], [2000, 60_000, step]);
    assert.equal(snap.memoryStepMb, 100);
    assert.equal(elasticJob({ memoryStepMb: 64 }).books.snapshot(TICK, 0).memoryStepMb, 64);
    assert.throws(() => new Books({ memoryStepMb: 0 }), /EBADCONF|memoryStepMb/);
  });

  it("an elastic grant is carried into the attempt, its view and the worker's free memory", () => {
    const { books, job } = elasticJob();
    const decisions = [grant(job.maps[0]!, 300), grant(job.maps[1]!, undefined)];
    assert.deepEqual(books.check(books.snapshot(TICK, 0), decisions), []);
    const [e1, e2] = books.apply(decisions, 0) as Array<Extract<Effect, { kind: 'launch' }>>;
    assert.deepEqual([e1!.attempt.memoryMb, e1!.attempt.elastic], [300, true]);
    assert.deepEqual(
      [e2!.attempt.memoryMb, e2!.attempt.elastic],
      [2000, false],
      'a launch without a grant is regular, at ideal memory',
    );
    const snap = books.snapshot(TICK, 1);
    assert.equal(snap.workers[0]!.freeMemoryMb, 4096 - 2300);
    const views = snap.jobs[0]!.runningAttempts;
    assert.deepEqual(
      views.map((a) => [a.memoryMb, a.idealMemoryMb, a.elastic, a.idealDurationMs, a.penalty?.kind]),
      [
        [300, 2000, true, 60_000, 'step'],
        [2000, 2000, false, 60_000, 'step'],
      ],
    );
  });

  it(
    'refuses a grant below the minimum, above free memory, off the ' +
      'step, contradicting its flag, or for a task without a penalty ' +
      'model',
    () => {
      const { books, job } = elasticJob();
      const snap = books.snapshot(TICK, 0);
      const problems = (d: Decision[]) => books.check(snap, d).join('; ');
      const t = job.maps[0]!;
      assert.match(problems([grant(t, 100)]), /below its minimum 200 MB \(0\.1 of its ideal 2000 MB\)/);
      assert.match(problems([grant(t, 250)]), /not a whole number of 100 MB steps/);
      assert.match(problems([grant(t, 2000, true)]), /elastic with 2000 MB, not less than its ideal/);
      assert.match(problems([grant(t, 1000, false)]), /yet says it is not elastic/);
      assert.match(problems([grant(t, 2000), grant(job.maps[1]!, 2100)]), /w1: 4100 MB for 4096 MB free/);
      assert.deepEqual(
        books.check(snap, [grant(t, 200), grant(job.maps[1]!, 1900, true)]),
        [],
        'the minimum itself and whole steps are fine',
      );
      // A task without a penalty model (no profile) runs only with its ideal memory.
      const plain = submit(books, 'job_2', [[]], 0);
      assert.match(
        books.check(books.snapshot(TICK, 0), [grant(plain.maps[0]!, 500)]).join('; '),
        /has no penalty model/,
      );
      assert.deepEqual(
        books.check(books.snapshot(TICK, 0), [grant(plain.maps[0]!, 600)]),
        [],
        'more than ideal is a regular grant',
      );
    },
  );
});
