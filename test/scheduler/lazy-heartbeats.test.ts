/**
 * DSS's lazy node heartbeats (lazy-heartbeats.ts), rule by rule, against DSS's
 * should_generate_next_heartbeat and the events that call generate_next_heartbeat
 * (events/yarn/yarn.py).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LazyHeartbeats } from '../../src/scheduler/lazy-heartbeats.js';
import type { WorkerView } from '../../src/scheduler/index.js';
import { mkWorker } from './snapshot-driver.js';

/** A 16-core node with `used` cores busy. */
const node = (used: number): WorkerView =>
  mkWorker('n1', 'r1', { mapSlots: 16, reduceSlots: 0, freeMapSlots: 16 - used, memoryMb: 10_000 });

const nothing = { allocated: false, reserved: false, reservedFailed: false, headJobId: 'j1' } as const;

describe("DSS's lazy heartbeats", () => {
  test('a reserved node whose job did not fit is silent until a container ends on it', () => {
    const lazy = new LazyHeartbeats();
    lazy.after(node(10), 1000, { ...nothing, reserved: true, reservedFailed: true });
    assert.equal(lazy.heartbeats(node(10), 2000), false);
    assert.equal(lazy.heartbeats(node(10), 3000), false);
    assert.equal(lazy.heartbeats(node(9), 4000), true, 'a container ended: it heartbeats again');
    assert.equal(lazy.heartbeats(node(9), 5000), true);
  });

  test('an unreserved node that allocated nothing heartbeats once more per new queue head', () => {
    const lazy = new LazyHeartbeats();
    lazy.after(node(16), 1000, nothing);
    assert.equal(lazy.heartbeats(node(16), 2000), true, 'the head j1 is new to it');
    lazy.after(node(16), 2000, nothing);
    assert.equal(lazy.heartbeats(node(16), 3000), false, 'the same head: silent');
    lazy.jobArrived(3500);
    assert.equal(lazy.heartbeats(node(16), 4000), true, 'a job arrived: every node wakes');
    lazy.after(node(16), 4000, { ...nothing, headJobId: 'j2' });
    assert.equal(lazy.heartbeats(node(16), 5000), true);
    lazy.after(node(16), 5000, { ...nothing, headJobId: 'j2' });
    lazy.amStarts(5500);
    assert.equal(lazy.heartbeats(node(16), 6000), true, 'an AM started: every node wakes');
  });

  test('a node with a container still to start heartbeats on, unless its reserving job did not fit', () => {
    const lazy = new LazyHeartbeats();
    lazy.containerEvent('n1', 2500);
    lazy.after(node(1), 1000, { ...nothing, reserved: true });
    assert.equal(lazy.heartbeats(node(1), 2000), true, 'the container allocated at 1000 starts at 2500');
    lazy.after(node(1), 2000, { ...nothing, reserved: true, reservedFailed: true });
    assert.equal(lazy.heartbeats(node(1), 2400), false);
    assert.equal(lazy.heartbeats(node(1), 3000), true, 'the start at 2500 woke it');
  });

  test('an empty queue silences every node that heartbeats', () => {
    const lazy = new LazyHeartbeats();
    lazy.after(node(0), 1000, { ...nothing, headJobId: undefined });
    assert.equal(lazy.heartbeats(node(0), 2000), false);
    lazy.jobArrived(2500);
    assert.equal(lazy.heartbeats(node(0), 3000), true);
  });
});
