import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyCombiner,
  createShuffleCounters,
  groupByKey,
  mergeSortedRuns,
  SegmentReader,
  type KeyValue,
} from '../../src/shuffle/index.js';
import { isMinimrError } from '../../src/errors.js';
import { buildSegment, hex, randomBytes, rng, u32 } from './support.js';

function randomRuns(seed: number, numRuns: number, compare: (a: Buffer, b: Buffer) => number): KeyValue[][] {
  const rand = rng(seed);
  const runs: KeyValue[][] = [];
  for (let r = 0; r < numRuns; r++) {
    const n = Math.floor(rand() * 400);
    const run: KeyValue[] = [];
    // Values carry (run, position) so the test can see where each record came from.
    for (let i = 0; i < n; i++) run.push([randomBytes(rand, 3, 5), Buffer.concat([u32(r), u32(i)])]);
    run.sort((a, b) => compare(a[0], b[0]));
    runs.push(run);
  }
  return runs;
}

/** Reference for a stable merge: runs concatenated in order, then a stable sort. */
function referenceMerge(runs: KeyValue[][], compare: (a: Buffer, b: Buffer) => number): KeyValue[] {
  return runs.flat().sort((a, b) => compare(a[0], b[0]));
}

test('mergeSortedRuns equals a stable sort of the concatenated runs', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const runs = randomRuns(seed, 1 + (seed % 9), Buffer.compare);
    assert.deepEqual(hex(mergeSortedRuns(runs)), hex(referenceMerge(runs, Buffer.compare)), `seed ${seed}`);
  }
});

test('mergeSortedRuns takes SegmentReaders and a custom comparator', () => {
  const reverse = (a: Buffer, b: Buffer): number => Buffer.compare(b, a);
  const runs = randomRuns(99, 6, reverse);
  const readers = runs.map((run) => new SegmentReader(buildSegment(run)));
  assert.deepEqual(hex(mergeSortedRuns(readers, reverse)), hex(referenceMerge(runs, reverse)));
  assert.deepEqual([...mergeSortedRuns([])], []);
  assert.deepEqual([...mergeSortedRuns([[], []])], []);
});

test('groupByKey matches a Map-based reference, lazily and with counters', () => {
  const runs = randomRuns(5, 4, Buffer.compare);
  const sorted = referenceMerge(runs, Buffer.compare);
  const reference = new Map<string, string[]>();
  for (const [k, v] of sorted) {
    const list = reference.get(k.toString('hex')) ?? [];
    list.push(v.toString('hex'));
    reference.set(k.toString('hex'), list);
  }
  const counters = createShuffleCounters();
  const got = new Map<string, string[]>();
  for (const group of groupByKey(mergeSortedRuns(runs), Buffer.compare, counters)) {
    got.set(
      group.key.toString('hex'),
      [...group.values].map((v) => v.toString('hex')),
    );
  }
  assert.deepEqual([...got.keys()], [...reference.keys()], 'groups in key order');
  assert.deepEqual(got, reference);
  assert.equal(counters.reduceInputGroups, reference.size);
  assert.equal(counters.reduceInputRecords, sorted.length);

  // Values the reducer does not read are skipped, and a stale group's values are empty.
  const skipCounters = createShuffleCounters();
  const firstValues: string[] = [];
  const groups = [];
  for (const group of groupByKey(sorted, Buffer.compare, skipCounters)) {
    groups.push(group);
    const first = group.values[Symbol.iterator]().next();
    assert.equal(first.done, false);
    firstValues.push((first.value as Buffer).toString('hex'));
  }
  assert.deepEqual(
    firstValues,
    [...reference.values()].map((vs) => vs[0]),
  );
  assert.equal(skipCounters.reduceInputRecords, sorted.length);
  assert.deepEqual([...groups[0]!.values], []);
});

test('groupByKey pulls records lazily', () => {
  let pulled = 0;
  function* source(): Generator<KeyValue> {
    for (const k of ['a', 'a', 'b', 'c', 'c', 'c']) {
      pulled++;
      yield [Buffer.from(k), Buffer.from(String(pulled))];
    }
  }
  const it = groupByKey(source())[Symbol.iterator]();
  const g1 = it.next();
  assert.equal(pulled, 1);
  assert.equal(g1.done, false);
  it.next();
  assert.ok(pulled <= 3, `pulled ${pulled}`);
});

test('applyCombiner combines each key group and refuses a changed key', () => {
  const records: KeyValue[] = ['a', 'a', 'b', 'c', 'c', 'c'].map((k) => [Buffer.from(k), u32(2)]);
  const counters = createShuffleCounters();
  const out = [
    ...applyCombiner(
      records,
      (key, values, emit) => {
        let n = 0;
        for (const v of values) n += v.readUInt32BE(0);
        if (key.toString() !== 'b') emit(key, u32(n));
      },
      Buffer.compare,
      counters,
    ),
  ];
  assert.deepEqual(
    out.map(([k, v]) => `${k}=${v.readUInt32BE(0)}`),
    ['a=4', 'c=6'],
  );
  assert.equal(counters.combineInputRecords, 6);
  assert.equal(counters.combineOutputRecords, 2);
  assert.throws(
    () => [...applyCombiner(records, (key, _v, emit) => emit(Buffer.from('zz'), key))],
    (e: unknown) => isMinimrError(e, 'EBADJOB'),
  );
});

test('merge and grouping under the default order agree with Buffer.compare on tricky keys', () => {
  const rand = rng(77);
  const runs: KeyValue[][] = [];
  for (let r = 0; r < 5; r++) {
    const run: KeyValue[] = [];
    for (let i = 0; i < 200; i++) {
      // Long shared prefixes and zero bytes, so both the JS and the native compare paths are taken.
      const prefix = Buffer.alloc(rand() < 0.5 ? 0 : 80, 0x61);
      run.push([Buffer.concat([prefix, randomBytes(rand, 3, 2)]), u32(i)]);
    }
    run.sort((a, b) => Buffer.compare(a[0], b[0]));
    runs.push(run);
  }
  assert.deepEqual(hex(mergeSortedRuns(runs)), hex(referenceMerge(runs, Buffer.compare)));
  assert.deepEqual(hex(mergeSortedRuns(runs, Buffer.compare)), hex(referenceMerge(runs, Buffer.compare)));
});
