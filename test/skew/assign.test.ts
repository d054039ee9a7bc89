import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planReducerSlots, WorkerSpeedBook } from '../../src/books/index.js';
import {
  CountMinSketch,
  hashAssignment,
  partitionsByReducer,
  simpleAssignment,
  sketchAssignment,
} from '../../src/skew/index.js';
import { seededRandom } from '../../src/util/index.js';

/** Every partition exactly once, on an existing reducer; loads add up. */
function assertPartitionOfPartitions(reducerOf: readonly number[], partitions: number, reducers: number): void {
  assert.equal(reducerOf.length, partitions);
  const seen = new Set<number>();
  for (const list of partitionsByReducer([...reducerOf], reducers))
    for (const p of list) {
      assert.ok(!seen.has(p), `partition ${p} assigned twice`);
      seen.add(p);
    }
  assert.equal(seen.size, partitions, 'a partition was dropped');
  for (const r of reducerOf) assert.ok(Number.isInteger(r) && r >= 0 && r < reducers);
}

describe('partition assignment', () => {
  it('hash: partition p to reducer p mod R', () => {
    const a = hashAssignment([1, 2, 3, 4, 5, 6], [1, 1]);
    assert.deepEqual(a.reducerOf, [0, 1, 0, 1, 0, 1]);
    assert.deepEqual(a.loads, [9, 12]);
    assert.equal(a.makespan, 12);
  });

  it('simple, equal speeds (by hand): largest first onto the reducer that finishes first', () => {
    // Order 8 (p2), 5 (p0), 3 (p1), 1 (p3): p2->r0 (8); p0->r1 (5); p1: r0 11 vs r1 8 -> r1;
    // p3: r0 9 vs r1 9, a tie -> the lower reducer r0.
    const a = simpleAssignment([5, 3, 8, 1], [1, 1]);
    assert.deepEqual(a.reducerOf, [1, 1, 0, 0]);
    assert.deepEqual(a.loads, [9, 8]);
    assert.equal(a.makespan, 9);
  });

  it('simple, heterogeneous speeds (by hand): the slow worker gets less', () => {
    // Speeds 1 and 0.5, four partitions of 6: p0 -> r0 (6 vs 12); p1: r0 12 vs r1 12, tie -> r0;
    // p2: r0 18 vs r1 12 -> r1; p3: r0 18 vs r1 24 -> r0. Loads 18 and 6, both finish by 18 and 12.
    const a = simpleAssignment([6, 6, 6, 6], [1, 0.5]);
    assert.deepEqual(a.reducerOf, [0, 0, 1, 0]);
    assert.deepEqual(a.loads, [18, 6]);
    assert.deepEqual(a.times, [18, 12]);
    assert.equal(a.makespan, 18);
    // Three equal workers and one at half speed, 64 partitions of 10: every 7 partitions the fast
    // reducers take 2 each and the slow one 1 (all finishing together), so after 63: loads
    // 180, 180, 180, 90 (all at time 180); the 64th goes to r0 (190 against 200 on the slow one).
    const sizes = Array.from({ length: 64 }, () => 10);
    const b = simpleAssignment(sizes, [1, 1, 1, 0.5]);
    assert.deepEqual(b.loads, [190, 180, 180, 90]);
    assert.equal(b.makespan, 190);
  });

  it('simple and hash never assign a partition twice or drop one (random cases)', () => {
    const rnd = seededRandom(5);
    for (let c = 0; c < 200; c++) {
      const reducers = 1 + Math.floor(rnd() * 8);
      const partitions = reducers * (1 + Math.floor(rnd() * 6));
      const sizes = Array.from({ length: partitions }, () => (rnd() < 0.2 ? 0 : Math.floor(rnd() ** 3 * 1e6)));
      const speeds = Array.from({ length: reducers }, () => 0.25 + rnd() * 2);
      for (const a of [simpleAssignment(sizes, speeds), hashAssignment(sizes, speeds)]) {
        assertPartitionOfPartitions(a.reducerOf, partitions, reducers);
        assert.equal(
          a.loads.reduce((x, y) => x + y, 0),
          sizes.reduce((x, y) => x + y, 0),
        );
      }
      // LPT is never worse than hash's estimate by more than the largest partition over the slowest speed.
      const simple = simpleAssignment(sizes, speeds);
      const total = sizes.reduce((x, y) => x + y, 0);
      const lowerBound = Math.max(total / speeds.reduce((x, y) => x + y, 0), Math.max(...sizes) / Math.max(...speeds));
      assert.ok(simple.makespan >= lowerBound - 1e-6);
      assert.ok(simple.makespan <= lowerBound + Math.max(...sizes) / Math.min(...speeds) + 1e-6);
    }
  });

  it('cms (by hand): keeps the row whose Simple assignment has the lowest estimated time', () => {
    const sketch = new CountMinSketch(2, 4);
    sketch.bytes.set([10, 0, 0, 0], 0); // row 0: one hot partition
    sketch.bytes.set([3, 3, 2, 2], 4); // row 1: spread out
    // Row 0: makespan 10. Row 1: 3->r0, 3->r1, 2: 5 vs 5 -> r0, 2: 7 vs 5 -> r1: loads 5, 5.
    const chosen = sketchAssignment(sketch, [1, 1]);
    assert.equal(chosen.row, 1);
    assert.equal(chosen.seed, sketch.seeds[1]);
    assert.deepEqual(chosen.rowMakespans, [10, 5]);
    assert.deepEqual(chosen.assignment.reducerOf, [0, 1, 0, 1]);
    assertPartitionOfPartitions(chosen.assignment.reducerOf, 4, 2);
  });

  it('plans reducers on reduce slots round robin by worker id and measures speeds relative to the mean', () => {
    const slots = planReducerSlots(
      [
        { workerId: 'w-b', reduceSlots: 2 },
        { workerId: 'w-a', reduceSlots: 1 },
        { workerId: 'w-c', reduceSlots: 0 },
      ],
      5,
      (id) => (id === 'w-b' ? 0.5 : 1.5),
    );
    assert.deepEqual(
      slots.map((s) => s.workerId),
      ['w-a', 'w-b', 'w-b', 'w-a', 'w-b'],
    );
    assert.deepEqual(
      slots.map((s) => s.speed),
      [1.5, 0.5, 0.5, 1.5, 0.5],
    );
    const book = new WorkerSpeedBook();
    assert.deepEqual(
      [...book.relativeSpeeds(['x', 'y'])],
      [
        ['x', 1],
        ['y', 1],
      ],
    );
    book.record('x', 'map', 1000, 1000); // 1000 B/s
    book.record('y', 'map', 1000, 2000); // 500 B/s
    assert.deepEqual(
      [...book.relativeSpeeds(['x', 'y'])].map(([, s]) => Math.round(s * 1000) / 1000),
      [1.333, 0.667],
    );
    // Reduce rates win over map rates once measured; big tasks weigh more than small ones.
    book.record('x', 'reduce', 9000, 1000);
    book.record('x', 'reduce', 1000, 1000); // x: 10000 B in 2 s = 5000 B/s
    book.record('y', 'reduce', 5000, 2000); // y: 2500 B/s
    assert.deepEqual(
      [...book.relativeSpeeds(['x', 'y'])].map(([, s]) => Math.round(s * 1000) / 1000),
      [1.333, 0.667],
    );
    book.record('y', 'reduce', 15000, 2000); // y: 20000 B in 4 s = 5000 B/s
    assert.deepEqual(
      [...book.relativeSpeeds(['x', 'y'])].map(([, s]) => s),
      [1, 1],
    );
  });
});
