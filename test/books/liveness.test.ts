/**
 * The books' rules for silent workers (suspect, task expiry) and for full disks (a task that failed
 * with EDISKFULL avoids that worker), driven by posted events and a real policy, no cluster.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Books, type Effect, type JobRecord } from '../../src/books/index.js';
import { createPolicy, type Decision } from '../../src/scheduler/index.js';
import { launch, TICK, workerShape } from '../helpers/books.js';

/** Books with workers w1, w2 (rack r1) and w3 (rack r2), 2 map and 1 reduce slot each. */
function cluster(): Books {
  const books = new Books();
  books.workerJoined(workerShape('w1', '/r1'), undefined, 0);
  books.workerJoined(workerShape('w2', '/r1'), undefined, 0);
  books.workerJoined(workerShape('w3', '/r2'), undefined, 0);
  return books;
}

function submit(books: Books, id: string, maps: readonly (readonly string[])[], reduces: number, now = 0): JobRecord {
  return books.submit(
    {
      id,
      name: id,
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
  ).job;
}

const ok = { inputBytes: 1000, outputBytes: 500 };

/** One round as an engine runs it: snapshot, the policy's decisions, check, apply; returns the launches. */
function scheduleRound(books: Books, policy = createPolicy('fifo'), now = 0): Extract<Effect, { kind: 'launch' }>[] {
  const snap = books.snapshot(TICK, now);
  const decisions = policy.schedule(snap);
  assert.deepEqual(books.check(snap, decisions), []);
  return books.apply(decisions, now).filter((e): e is Extract<Effect, { kind: 'launch' }> => e.kind === 'launch');
}

describe('books: suspect workers', () => {
  it('a suspect worker shows no free slot, so no policy gives it an attempt; heard from again, it takes work', () => {
    const books = cluster();
    books.workerSuspect('w1', 100);
    assert.equal(books.isSuspect('w1'), true);
    const view = books.snapshot(TICK, 100).workers.find((w) => w.id === 'w1')!;
    assert.equal(view.freeMapSlots, 0);
    assert.equal(view.freeReduceSlots, 0);
    // Every map's input is on w1 alone: the best place is the suspect worker, and nothing goes there.
    const job = submit(books, 'job_1', [['w1'], ['w1'], ['w1'], ['w1']], 0, 100);
    for (const name of ['fifo', 'fair']) {
      const policy = createPolicy(name);
      const snap = books.snapshot(TICK, 100);
      const launches = policy
        .schedule(snap)
        .filter((d): d is Extract<Decision, { kind: 'launch' }> => d.kind === 'launch');
      assert.ok(!launches.some((d) => d.workerId === 'w1'), `${name} launches nothing on the suspect worker`);
    }
    const launched = scheduleRound(books, createPolicy('fifo'), 100);
    assert.equal(launched.length, 4, 'the two other workers take every map');
    assert.ok(launched.every((e) => e.attempt.worker.shape.id !== 'w1'));
    // A suspect worker is still live: it is neither lost nor are its slots forgotten.
    assert.equal(books.liveWorkerCount, 3);
    assert.equal(books.workerHeard('w1', 200), true);
    assert.equal(books.isSuspect('w1'), false);
    assert.equal(books.snapshot(TICK, 200).workers.find((w) => w.id === 'w1')!.freeMapSlots, 2);
    assert.equal(job.state, 'running');
  });

  it('past the task expiry its attempts end lost (not counted), run again elsewhere, and its map outputs re-run', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w2']], 1);
    const doneMap = launch(books, job.maps[0]!, 'w1', 10);
    books.attemptSucceeded(doneMap, 20, ok);
    const running = launch(books, job.maps[1]!, 'w1', 30);
    // Suspect only: nothing it runs or holds is given up.
    books.workerSuspect('w1', 40);
    assert.equal(running.state, 'running');
    assert.equal(job.maps[0]!.state, 'succeeded');
    const { effects, expired } = books.workerTasksExpired('w1', 100, 'silent 60 s');
    assert.deepEqual(
      expired.map((a) => a.id),
      [running.id],
    );
    assert.equal(running.state, 'killed');
    assert.equal(running.error?.code, 'EWORKERLOST');
    assert.equal(job.maps[1]!.failures, 0, 'a lost attempt does not count against its task');
    assert.equal(job.maps[1]!.state, 'pending');
    assert.equal(job.maps[0]!.state, 'pending', 'the reduce still needs the map output held on w1: it re-runs');
    assert.deepEqual(
      effects.map((e) => e.kind),
      ['attempt-ended', 'map-rerun'],
    );
    const ended = effects[0] as Extract<Effect, { kind: 'attempt-ended' }>;
    assert.equal(ended.tellWorker, false, 'a silent worker hears of it when it is back');
    // Once only; the worker stays live and suspect.
    assert.deepEqual(books.workerTasksExpired('w1', 200, 'again').expired, []);
    assert.equal(books.isSuspect('w1'), true);
    assert.equal(books.liveWorkerCount, 3);
    const relaunched = scheduleRound(books, createPolicy('fifo'), 200);
    assert.deepEqual(relaunched.map((e) => e.attempt.task.index).sort(), [0, 1]);
    assert.ok(
      relaunched.every((e) => e.attempt.worker.shape.id !== 'w1'),
      'both maps run elsewhere',
    );
  });

  it('task expiry does nothing to a worker that is not suspect, and loss clears suspicion', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0);
    const a = launch(books, job.maps[0]!, 'w1', 10);
    assert.deepEqual(books.workerTasksExpired('w1', 100, 'x').expired, []);
    assert.equal(a.state, 'running');
    books.workerSuspect('w1', 100);
    books.workerLost('w1', 150, 'connection closed');
    assert.equal(books.isSuspect('w1'), false);
    books.workerJoined(workerShape('w1', '/r1'), undefined, 200);
    assert.equal(books.snapshot(TICK, 200).workers.find((w) => w.id === 'w1')!.freeMapSlots, 2);
  });
});

describe('books: a full disk', () => {
  const diskFull = { code: 'EDISKFULL', message: 'no space left on device' } as const;

  it('a task that failed with EDISKFULL is launched on another worker even when the policy picks the full one', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1']], 0);
    const first = launch(books, job.maps[0]!, 'w1', 10);
    books.attemptFailed(first, diskFull, 20);
    assert.deepEqual(job.maps[0]!.diskFullOnWorkers, ['w1']);
    // A policy that insists on the full worker (its input is there) is overruled by the books.
    const decision: Decision = {
      kind: 'launch',
      taskId: job.maps[0]!.id,
      jobId: job.id,
      workerId: 'w1',
      locality: 'node',
    };
    const snap = books.snapshot(TICK, 30);
    assert.deepEqual(books.check(snap, [decision]), []);
    const [effect] = books.apply([decision], 30);
    assert.equal(effect?.kind, 'launch');
    const second = (effect as Extract<Effect, { kind: 'launch' }>).attempt;
    assert.equal(second.worker.shape.id, 'w2', 'a rack-mate of the input, the best placed worker with room');
    assert.equal(second.locality, 'rack');
  });

  it('with every other worker busy it waits for one rather than run on the full disk again', () => {
    const books = cluster();
    const busy = submit(books, 'job_busy', [[], [], [], []], 0);
    const job = submit(books, 'job_1', [['w1']], 0);
    const first = launch(books, job.maps[0]!, 'w1', 10);
    for (const [i, w] of [
      [0, 'w2'],
      [1, 'w2'],
      [2, 'w3'],
      [3, 'w3'],
    ] as const)
      launch(books, busy.maps[i]!, w, 10);
    books.attemptFailed(first, diskFull, 20);
    // The full worker is the only one with free slots: FIFO puts the task there, the books hold it back.
    assert.deepEqual(scheduleRound(books, createPolicy('fifo'), 30), []);
    assert.equal(job.maps[0]!.state, 'pending');
    // A slot frees on w3: the next round runs it there.
    books.attemptSucceeded(busy.running.find((a) => a.worker.shape.id === 'w3')!, 40, ok);
    const launched = scheduleRound(books, createPolicy('fifo'), 40);
    assert.deepEqual(
      launched.map((e) => [e.attempt.task.id, e.attempt.worker.shape.id]),
      [[job.maps[0]!.id, 'w3']],
    );
  });

  it('driven by FIFO until it succeeds, no attempt runs twice on the full worker; other failures keep the soft rule', () => {
    const books = cluster();
    const job = submit(books, 'job_1', [['w1'], ['w1'], ['w1'], ['w1'], ['w1'], ['w1']], 0);
    const onFull = new Map<string, number>();
    for (let now = 10; job.mapsDone < job.maps.length && now < 1000; now += 10) {
      scheduleRound(books, createPolicy('fifo'), now);
      for (const a of [...job.running]) {
        if (a.worker.shape.id === 'w1') {
          onFull.set(a.task.id, (onFull.get(a.task.id) ?? 0) + 1);
          books.attemptFailed(a, diskFull, now + 5);
        } else books.attemptSucceeded(a, now + 5, ok);
      }
    }
    assert.equal(job.state, 'committing');
    assert.ok(
      [...onFull.values()].every((n) => n === 1),
      `each task ran on the full worker at most once: ${JSON.stringify([...onFull])}`,
    );
    // A task's own failure (not EDISKFULL) still may run where it failed when that is where the room is.
    const other = submit(books, 'job_2', [['w1']], 0, 1000);
    const a = launch(books, other.maps[0]!, 'w1', 1000);
    books.attemptFailed(a, { code: 'ETASK', message: 'boom' }, 1010);
    assert.deepEqual(other.maps[0]!.diskFullOnWorkers, []);
  });

  it('with no other worker that could run it, it runs on the full one again', () => {
    const books = new Books();
    books.workerJoined(workerShape('w1', '/r1'), undefined, 0);
    const job = submit(books, 'job_1', [['w1']], 0);
    books.attemptFailed(launch(books, job.maps[0]!, 'w1', 10), diskFull, 20);
    const again = launch(books, job.maps[0]!, 'w1', 30);
    assert.equal(again.worker.shape.id, 'w1');
  });
});
