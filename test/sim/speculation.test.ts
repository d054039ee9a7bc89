/**
 * Speculative execution in the simulator (the books' LATE rule, src/books/speculation.ts): on three
 * workers, one four times slower, a job's slow attempts get backups on the fast workers, the job ends
 * sooner than without, and every task succeeds exactly once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import { cluster, job, task, worker } from './helpers.js';

const TASK_MS = 10_000;
const workload = (speculative?: boolean) => ({
  name: 'one-job',
  jobs: [
    job(
      'j1',
      0,
      Array.from({ length: 12 }, () => task(TASK_MS)),
      Array.from({ length: 3 }, () => task(TASK_MS)),
      speculative !== undefined ? { speculative } : {},
    ),
  ],
});
const slowThird = cluster(worker('w1', '/r1'), worker('w2', '/r1'), worker('w3', '/r1', { cpuThrottle: 4 }));
const allFast = cluster(worker('w1', '/r1'), worker('w2', '/r1'), worker('w3', '/r1'));

function run(speculation: boolean, shape = slowThird, speculative?: boolean) {
  return simulate({
    workload: workload(speculative),
    cluster: shape,
    policy: new FifoPolicy(),
    seed: 1,
    speculation,
  }).run;
}

describe('simulator: speculative execution', () => {
  test('a slow worker: backups finish the job sooner, each task succeeds once, the losers are killed', () => {
    const without = run(false);
    const withSpeculation = run(true);
    const fast = run(false, allFast);
    const end = (r: typeof without) => r.jobs[0]!.finishMs!;
    // Without backups the last map (40 s on w3 from t=40 s) and a reduce on w3 (40 s) set the end:
    // 80 s + 40 s. With them, a fresh copy of each takes 10 s once a fast worker is free.
    assert.equal(end(without), 120_000);
    assert.equal(end(fast), 50_000);
    assert.ok(end(withSpeculation) < 0.75 * end(without), `${end(withSpeculation)} vs ${end(without)}`);
    assert.equal(without.attempts.filter((a) => a.speculative).length, 0);

    const attempts = withSpeculation.attempts;
    const backups = attempts.filter((a) => a.speculative);
    assert.ok(backups.length >= 2, `backups: ${backups.length}`);
    for (const b of backups) assert.notEqual(b.workerId, 'w3', 'no backup on the slow worker');
    const succeeded = new Map<string, number>();
    for (const a of attempts)
      if (a.outcome === 'succeeded') succeeded.set(a.taskId, (succeeded.get(a.taskId) ?? 0) + 1);
    assert.equal(succeeded.size, 15);
    for (const [taskId, n] of succeeded) assert.equal(n, 1, taskId);
    const losers = attempts.filter((a) => a.outcome === 'killed');
    assert.equal(losers.length, backups.length, 'each backup, or the attempt it backed up, was killed');
    for (const a of losers) assert.match(a.cause ?? '', /^speculation: attempt_\S+ of the same task finished first$/);
  });

  test('a job that says speculative=false gets no backup; one that says true gets them with the setting off', () => {
    assert.equal(run(true, slowThird, false).attempts.filter((a) => a.speculative).length, 0);
    assert.ok(run(false, slowThird, true).attempts.some((a) => a.speculative));
  });

  test('on equal workers nothing is backed up', () => {
    assert.equal(run(true, allFast).attempts.filter((a) => a.speculative).length, 0);
    assert.equal(run(true, allFast).jobs[0]!.finishMs, 50_000);
  });
});
