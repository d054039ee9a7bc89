/** YARN-ME's timeline generator against hand-computed schedules. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Timeline, runningInOrder, type TimelineJob, type TimelineNode } from '../../src/scheduler/index.js';

function node(id: string, memoryMb: number, freeMemoryMb = memoryMb, over: Partial<TimelineNode> = {}): TimelineNode {
  return { id, memoryMb, mapSlots: 4, reduceSlots: 0, freeMemoryMb, freeMapSlots: 4, freeReduceSlots: 0, ...over };
}

function job(
  id: string,
  count: number,
  memoryMb: number,
  durationMs: number,
  kind: 'map' | 'reduce' = 'map',
): TimelineJob {
  return { id, tasks: [{ kind, memoryMb, durationMs, count }] };
}

describe('timeline generator', () => {
  test('alike tasks run in waves on a node', () => {
    // 4096 MB: two 2048 MB tasks at 0 (end 10 s), the third at 10 s (end 20 s).
    const t = new Timeline(0, [node('n1', 4096)], [], [job('a', 3, 2048, 10_000)]);
    assert.equal(t.completionOf('a'), 20_000);
  });

  test('a queued task waits for a running attempt to give back its memory; the running job ends then', () => {
    const running = [{ nodeId: 'n1', jobId: 'b', kind: 'map' as const, memoryMb: 3000, endMs: 5_000 }];
    const t = new Timeline(0, [node('n1', 4000, 1000)], running, [job('a', 1, 2000, 10_000)]);
    assert.equal(t.completionOf('a'), 15_000);
    assert.equal(t.completionOf('b'), 5_000);
  });

  test('fair order: room goes to the job using the least memory; the first in line waits for its task to fit', () => {
    // n1 4000 free; n2 1000 free, 3000 back at 8 s. X's first task takes n1 at 0 (to 10 s); then
    // Y uses less memory (0 MB): its 1000 MB task takes n2 at 0 (to 5 s). X's second task waits:
    // n2 has 1000 MB back at 5 s, 4000 at 8 s: X runs 8-18 s.
    const nodes = [node('n1', 4000), node('n2', 4000, 1000)];
    const running = [{ nodeId: 'n2', jobId: 'z', kind: 'map' as const, memoryMb: 3000, endMs: 8_000 }];
    const t = new Timeline(0, nodes, running, [job('x', 2, 4000, 10_000), job('y', 1, 1000, 5_000)]);
    assert.equal(t.completionOf('x'), 18_000);
    assert.equal(t.completionOf('y'), 5_000);
    // Y already holding 8000 MB: X goes first and keeps the room; Y's task waits for n1 at 10 s.
    const busyY = new Timeline(
      0,
      nodes,
      running,
      [job('x', 2, 4000, 10_000), job('y', 1, 1000, 5_000)],
      new Map([['y', 8000]]),
    );
    assert.equal(busyY.completionOf('x'), 18_000);
    assert.equal(busyY.completionOf('y'), 15_000);
  });

  test('running attempts in the order they end: ties keep the given order; one on a node not in the picture frees nothing', () => {
    const running = [
      { nodeId: 'n1', jobId: 'late', kind: 'map' as const, memoryMb: 2000, endMs: 9_000 },
      { nodeId: 'gone', jobId: 'lost', kind: 'map' as const, memoryMb: 4000, endMs: 2_000 },
      { nodeId: 'n1', jobId: 'b', kind: 'map' as const, memoryMb: 1000, endMs: 4_000 },
      { nodeId: 'n1', jobId: 'c', kind: 'map' as const, memoryMb: 1000, endMs: 4_000 },
      { nodeId: 'n1', jobId: 'old', kind: 'map' as const, memoryMb: 500, endMs: 500 },
    ];
    const inOrder = runningInOrder(1_000, running);
    assert.deepEqual(
      inOrder.releases.map((r) => r.jobId),
      ['old', 'lost', 'b', 'c', 'late'],
    );
    assert.equal(inOrder.latestEndMs('late'), 9_000);
    assert.equal(inOrder.latestEndMs('a'), undefined);
    // n1: 4500 MB, all held: 500 back at 1 s (old, overdue), 2000 at 4 s (b, c), 2000 at 9 s. The lost
    // attempt's 4000 MB never come back here: a's 2500 MB task starts at 4 s and ends at 14 s.
    for (const given of [running, inOrder]) {
      const t = new Timeline(1_000, [node('n1', 4500, 0)], given, [job('a', 1, 2500, 10_000)]);
      assert.equal(t.completionOf('a'), 14_000);
      assert.equal(t.completionOf('lost'), 2_000, "its job's end still counts");
      assert.equal(t.completionOf('old'), 1_000, 'an overdue end is now');
    }
  });

  test('slots limit as memory does; times start at now and an overdue attempt is due now', () => {
    const nodes = [node('n1', 10_000, 10_000, { freeMapSlots: 1 })];
    const running = [{ nodeId: 'n1', jobId: 'old', kind: 'map' as const, memoryMb: 100, endMs: 500 }];
    // One free slot at 1 s: the first task 1-3 s; the second gets the overdue attempt's slot at 1 s.
    const t = new Timeline(1_000, nodes, running, [job('a', 3, 100, 2_000)]);
    assert.equal(t.completionOf('old'), 1_000);
    // Slots: one free now, one back "now" from the overdue attempt: two tasks 1-3 s, the third 3-5 s.
    assert.equal(t.completionOf('a'), 5_000);
  });

  test('a task bigger than any node, or of a kind no node runs, gets no end and holds nothing up', () => {
    const t = new Timeline(
      0,
      [node('n1', 4096)],
      [],
      [job('huge', 1, 8192, 1_000), job('reducer', 1, 100, 1_000, 'reduce'), job('a', 1, 1024, 3_000)],
    );
    assert.equal(t.completionOf('huge'), undefined);
    assert.equal(t.completionOf('reducer'), undefined);
    assert.equal(t.completionOf('a'), 3_000);
    assert.equal(t.completionOf('unknown'), undefined);
  });

  test(
    "withinJob: a task ending by the job's completion is within it, " +
      'one ending later is not; a job without an estimate takes any',
    () => {
      // 4096 MB: two 2048 MB tasks 0-10 s, the third 10-20 s.
      const t = new Timeline(0, [node('n1', 4096)], [], [job('a', 3, 2048, 10_000), job('huge', 1, 8192, 1_000)]);
      assert.equal(t.withinJob('a', 5_000), true);
      assert.equal(t.withinJob('a', 20_000), true);
      assert.equal(t.withinJob('a', 20_001), false);
      assert.equal(t.withinJob('huge', 1e9), true);
      assert.equal(t.withinJob('unknown', 1e9), true);
    },
  );

  test('answers do not depend on what was asked before or in which order', () => {
    // The fair-order case above: X ends at 18 s, Y at 5 s, however the questions come.
    const nodes = [node('n1', 4000), node('n2', 4000, 1000)];
    const running = [{ nodeId: 'n2', jobId: 'z', kind: 'map' as const, memoryMb: 3000, endMs: 8_000 }];
    const make = () => new Timeline(0, nodes, running, [job('x', 2, 4000, 10_000), job('y', 1, 1000, 5_000)]);
    const yFirst = make();
    assert.equal(yFirst.completionOf('y'), 5_000);
    assert.equal(yFirst.completionOf('x'), 18_000);
    const partly = make();
    // X's first task ends at 10 s: that already answers for an end at 10 s, before X's second is placed.
    assert.equal(partly.withinJob('x', 10_000), true);
    assert.equal(partly.withinJob('x', 18_001), false);
    assert.equal(partly.completionOf('x'), 18_000);
    assert.equal(partly.completionOf('y'), 5_000);
    assert.equal(partly.completionOf('z'), 8_000);
  });

  test(
    "a job's tasks are read only when it comes up in line: a " + 'question about the first leaves the last unread',
    () => {
      const read: string[] = [];
      const counted = (id: string, memoryMb: number): TimelineJob => ({
        id,
        get tasks() {
          read.push(id);
          return [{ kind: 'map' as const, memoryMb, durationMs: 1_000, count: 1 }];
        },
      });
      const t = new Timeline(0, [node('n1', 4096)], [], [counted('a', 1000), counted('b', 1000), counted('c', 1000)]);
      assert.equal(t.completionOf('a'), 1_000);
      assert.ok(!read.includes('c'), `read: ${read.join(', ')}`);
      // Asked about later, C is placed as if the whole queue had been placed at once: the fourth slot, 0-1 s.
      assert.equal(t.completionOf('c'), 1_000);
      assert.deepEqual([...new Set(read)].sort(), ['a', 'b', 'c']);
    },
  );
});
