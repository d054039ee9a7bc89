/**
 * A round of yarn-me must count every launch it made on a node when it later asks what runs there
 * (backfilling: when could the reserving job's task start?). Launches made before the round's
 * first look at what runs on nodes were once forgotten; here one is, by hand: the answer follows
 * from the snapshot alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPolicy, type Decision, type YarnMePolicy } from '../../src/scheduler/index.js';
import { mkAttempt } from '../helpers/books.js';
import { mkJob, mkSnapshot, mkTask, mkWorker } from './snapshot-driver.js';

function launches(decisions: readonly Decision[]): string[] {
  return decisions.flatMap((d) => (d.kind === 'launch' ? [d.taskId] : []));
}

test("backfilling counts the round's own earlier launch on the node", () => {
  // w1: 4096 MB, 4 map slots; "other" holds 1096 MB until 60 s: 3000 MB free at 0.
  const w1 = mkWorker('w1', 'r1', {
    memoryMb: 4096,
    freeMemoryMb: 3000,
    mapSlots: 4,
    freeMapSlots: 3,
    reduceSlots: 0,
    freeReduceSlots: 0,
    diskMBps: 100,
  });
  const other = mkJob('other', [], {
    runningAttempts: [
      mkAttempt('other', 'map', 0, 'w1', 0, { memoryMb: 1096, idealMemoryMb: 1096, idealDurationMs: 60_000 }),
    ],
  });
  // In queue order (none uses memory; by submission): A's 2000 MB, 10 s map fits and runs
  // regular: 1000 MB left. B's 2500 MB map (no penalty model: never elastic) does not fit and B
  // reserves w1. B's map can start when A's ends, at 10 s (1000 + 2000 MB free). C's 500 MB map
  // fits now but runs 30 s, past 10 s: no backfilling. (Forgetting A's launch, B's map could never
  // start on w1 as far as the round knew, 1000 + 1096 < 2500 MB, and C ran.)
  const a = mkJob('a', [mkTask('a', 'map', 0, { memoryMb: 2000, idealDurationMs: 10_000 })], { submitTime: 1 });
  const b = mkJob('b', [mkTask('b', 'map', 0, { memoryMb: 2500, idealDurationMs: 20_000 })], { submitTime: 2 });
  const c = mkJob('c', [mkTask('c', 'map', 0, { memoryMb: 500, idealDurationMs: 30_000 })], { submitTime: 3 });
  const snapshot = mkSnapshot([w1], [other, a, b, c], { trigger: { kind: 'heartbeat', workerId: 'w1' } });
  // The loop alone (no ApplicationMasters, no reservable-nodes guard), as yarn-me.test.ts's rounds.
  const policy = createPolicy('yarn-me', { amMb: 0, reservableNodes: 1 }) as YarnMePolicy;
  assert.deepEqual(launches(policy.schedule(snapshot)), ['a-m0']);
  assert.deepEqual(policy.reserved(), [['w1', 'b']]);
  // A 5 s map of C ends before 10 s: it is backfilled.
  const quick = mkJob('c', [mkTask('c', 'map', 0, { memoryMb: 500, idealDurationMs: 5_000 })], { submitTime: 3 });
  const again = createPolicy('yarn-me', { amMb: 0, reservableNodes: 1 }) as YarnMePolicy;
  assert.deepEqual(launches(again.schedule({ ...snapshot, jobs: [other, a, b, quick] })), ['a-m0', 'c-m0']);
});
