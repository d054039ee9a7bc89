import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codecs, sumValues } from '../../src/api/index.js';
import { isMinimrError } from '../../src/errors.js';
import { createShuffleCounters, HashCombiner, type ValueCombiner } from '../../src/shuffle/index.js';
import { keyHash, murmur3_32, seededRandom } from '../../src/util/index.js';

interface Passed {
  partition: number;
  key: string;
  value: unknown;
}

const sum: ValueCombiner = (key, values, emit) => {
  let n = 0;
  for (const v of values) n += v as number;
  emit(key, n);
};

function table(budgetBytes: number, combine: ValueCombiner, valueCodec = codecs.msgpack(), sumsNumbers = false) {
  const passed: Passed[] = [];
  const counters = createShuffleCounters();
  const combiner = new HashCombiner({
    sumsNumbers,
    budgetBytes,
    keyCodec: codecs.text as never,
    valueCodec: valueCodec as never,
    combine,
    partitionOf: (key) => murmur3_32(key) % 3,
    collect: (partition, key, value) =>
      passed.push({ partition, key: key.toString('utf8'), value: valueCodec.decode(Buffer.from(value)) }),
    counters,
  });
  return { combiner, passed, counters };
}

/** Words with a Zipf-like skew over `distinct` keys. */
function skewedWords(n: number, distinct: number, seed: number): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: n }, () => `w${Math.floor(distinct * random() ** 3)}`);
}

describe('HashCombiner: map-side combining by hash', () => {
  it('sums like a Map whatever the budget, each key passed on with the partition of its bytes', () => {
    const words = skewedWords(200_000, 5000, 1);
    const want = new Map<string, number>();
    for (const w of words) want.set(w, (want.get(w) ?? 0) + 1);
    for (const budget of [64 << 10, 256 << 10, 8 << 20]) {
      const { combiner, passed, counters } = table(budget, sum);
      for (const w of words) combiner.add(w, 1);
      combiner.flush();
      const got = new Map<string, number>();
      for (const p of passed) {
        got.set(p.key, (got.get(p.key) ?? 0) + (p.value as number));
        assert.equal(p.partition, murmur3_32(Buffer.from(p.key)) % 3);
      }
      assert.deepEqual([...got].sort(), [...want].sort(), `budget ${budget}`);
      assert.equal(counters.hashCombineInputRecords, words.length);
      assert.equal(counters.hashCombineOutputRecords, passed.length);
      assert.ok(combiner.peakBytes <= budget, `peak ${combiner.peakBytes} of ${budget}`);
      if (budget === 8 << 20) assert.equal(passed.length, want.size, 'a table with room passes each key once');
      else
        assert.ok(
          counters.hashCombineFlushes > 1 && passed.length < words.length * 0.9,
          `budget ${budget}: ${counters.hashCombineFlushes} flushes, ${passed.length} passed`,
        );
    }
  });

  it('takes keys as encoded bytes (emitKeyBytes) and as strings alike', () => {
    const { combiner, passed } = table(1 << 20, sum);
    const line = Buffer.from('xx Straße yy Straße');
    combiner.addBytes(line, 3, 10, 1);
    combiner.add('Straße', 2);
    combiner.addBytes(line, 14, 21, 3);
    // With the key hash the caller worked out: the same entry.
    combiner.addBytes(line, 14, 21, 4, keyHash(Buffer.from('Straße')));
    combiner.flush();
    assert.deepEqual(passed, [{ partition: murmur3_32(Buffer.from('Straße')) % 3, key: 'Straße', value: 10 }]);
  });

  it("keeps each key's values in emission order through flushes (a combiner that joins strings)", () => {
    const join: ValueCombiner = (key, values, emit) => emit(key, [...values].join(''));
    const { combiner, passed, counters } = table(64 << 10, join);
    const want = new Map<string, string>();
    const random = seededRandom(3);
    for (let i = 0; i < 60_000; i++) {
      const key = `k${Math.floor(random() * 3000)}`;
      const value = String.fromCharCode(97 + (i % 26));
      combiner.add(key, value);
      want.set(key, (want.get(key) ?? '') + value);
    }
    combiner.flush();
    assert.ok(counters.hashCombineFlushes > 1);
    const got = new Map<string, string>();
    for (const p of passed) got.set(p.key, (got.get(p.key) ?? '') + (p.value as string));
    assert.deepEqual(got, want);
    assert.ok(combiner.peakBytes <= (64 << 10) + 64, `peak ${combiner.peakBytes}`);
  });

  it('copies an object value when it is emitted: a map that changes it afterwards changes nothing', () => {
    const merge: ValueCombiner = (key, values, emit) => {
      const all: number[] = [];
      for (const v of values) all.push(...(v as { seen: number[] }).seen);
      emit(key, { seen: all });
    };
    const { combiner, passed } = table(1 << 20, merge);
    const reused = { seen: [0] };
    for (let i = 1; i <= 5; i++) {
      reused.seen[0] = i;
      combiner.add('k', reused);
    }
    combiner.flush();
    assert.deepEqual(
      passed.map((p) => p.value),
      [{ seen: [1, 2, 3, 4, 5] }],
    );
  });

  it('a combiner that changes the key is EBADJOB, found when it runs', () => {
    const { combiner } = table(1 << 20, (key, values, emit) => emit(`${key as string}!`, [...values].length));
    combiner.add('a', 1);
    combiner.add('b', 1);
    assert.doesNotThrow(() => combiner.add('a', 1));
    assert.throws(
      () => combiner.flush(),
      (err: unknown) =>
        isMinimrError(err, 'EBADJOB') && /emitted the key "a!" for the key "a"/.test((err as Error).message),
    );
  });

  it('a combiner that emits several values passes them on, in order; one that emits none drops the key', () => {
    const identity: ValueCombiner = (key, values, emit) => {
      for (const v of values) if ((v as number) >= 0) emit(key, v);
    };
    const { combiner, passed } = table(1 << 20, identity);
    for (const v of [1, 2, -1, 3]) combiner.add('k', v);
    for (const v of [-1, -2]) combiner.add('gone', v);
    combiner.flush();
    assert.deepEqual(
      passed.map((p) => `${p.key}=${p.value as number}`),
      ['k=1', 'k=2', 'k=3'],
    );
  });

  it("a key over the table's limit goes straight on, without waiting for a flush", () => {
    const { combiner, passed } = table(1 << 20, sum);
    const big = 'b'.repeat(200_000);
    combiner.add('small', 1);
    combiner.add(big, 1);
    assert.deepEqual(
      passed.map((p) => p.key.length),
      [200_000],
    );
    combiner.add(big, 1);
    combiner.flush();
    assert.deepEqual(
      passed.map((p) => [p.key.length, p.value]),
      [
        [200_000, 1],
        [200_000, 1],
        [5, 1],
      ],
    );
  });

  it('turns itself off once a flush shows that nearly every key is distinct', () => {
    const { combiner, passed, counters } = table(64 << 10, sum);
    for (let i = 0; i < 50_000; i++) combiner.add(`distinct-${i}`, 1);
    combiner.flush();
    assert.equal(counters.hashCombineFlushes, 1);
    assert.equal(passed.length, 50_000);
    assert.equal(counters.hashCombineOutputRecords, 50_000);
  });

  it("adds sumValues' numbers in place, to the same bytes as its combine calls give, floats and -0 included", () => {
    const random = seededRandom(7);
    const words = skewedWords(100_000, 3000, 3);
    const values = words.map((_, i) =>
      i % 5 === 0 ? random() * 1e6 - 5e5 : i % 7 === 0 ? -0 : i % 11 === 0 ? 2 ** 52 : Math.floor(random() * 9),
    );
    let calls = 0;
    const asCombiner: ValueCombiner = (key, vs, emit) => {
      calls++;
      sumValues(key, vs as Iterable<number>, { emit });
    };
    for (const budget of [64 << 10, 8 << 20]) {
      const runs = [false, true].map((inPlace) => {
        calls = 0;
        const { combiner, passed } = table(budget, asCombiner, codecs.msgpack(), inPlace);
        words.forEach((w, i) => combiner.add(w, values[i]));
        combiner.flush();
        assert.ok(inPlace ? calls === 0 : calls > 1000, `${calls} combine calls, in place: ${inPlace}`);
        return passed;
      });
      // Object.is: -0 and 0 differ, and every float must be the same float.
      assert.equal(runs[1]!.length, runs[0]!.length, `budget ${budget}`);
      runs[0]!.forEach((p, i) => {
        const q = runs[1]![i]!;
        assert.ok(p.key === q.key && p.partition === q.partition && Object.is(p.value, q.value), `${p.key} at ${i}`);
      });
    }
  });

  it('adds a number in place only while nothing is pending before it, as the table grows and drains', () => {
    // Objects go pending; a number after one must wait for it, or the floats' sum changes with the
    // order. Within one flush every key's values are folded left in emission order, as here.
    const random = seededRandom(11);
    const words = skewedWords(60_000, 4000, 5);
    const values = words.map(() => (random() < 0.1 ? { n: random() * 1e6 } : random() * 1e6));
    const numberOf = (v: unknown): number => (typeof v === 'number' ? v : (v as { n: number }).n);
    const want = new Map<string, number>();
    words.forEach((w, i) => want.set(w, want.has(w) ? want.get(w)! + numberOf(values[i]) : numberOf(values[i])));
    const foldSum: ValueCombiner = (key, vs, emit) => {
      let total = 0;
      let first = true;
      for (const v of vs) {
        total = first ? numberOf(v) : total + numberOf(v);
        first = false;
      }
      emit(key, total);
    };
    // 1 MiB: the pending buffer (2048 values) drains many times; both budgets grow the table from 1024 entries.
    for (const budget of [1 << 20, 8 << 20]) {
      for (const inPlace of [false, true]) {
        const { combiner, passed, counters } = table(budget, foldSum, codecs.msgpack(), inPlace);
        words.forEach((w, i) => combiner.add(w, values[i]));
        combiner.flush();
        assert.equal(counters.hashCombineFlushes, 1);
        assert.equal(passed.length, want.size);
        // Object.is: every float must be the same float.
        for (const p of passed)
          assert.ok(Object.is(numberOf(p.value), want.get(p.key)), `${p.key}, in place: ${inPlace}`);
      }
    }
  });

  it('sumValues refuses a value that is not a number, in place or not', () => {
    const asCombiner: ValueCombiner = (key, vs, emit) => sumValues(key, vs as Iterable<number>, { emit });
    for (const inPlace of [false, true]) {
      const { combiner } = table(8 << 20, asCombiner, codecs.msgpack(), inPlace);
      combiner.add('w', 1);
      combiner.add('w', '2');
      assert.throws(
        () => combiner.flush(),
        (err: unknown) =>
          isMinimrError(err, 'EBADJOB') && /key "w" has a value of type string/.test((err as Error).message),
      );
    }
    const emitted: [string, number][] = [];
    sumValues('k', [0.1, 0.2, -0.3], { emit: (k, v) => emitted.push([k, v]) });
    assert.deepEqual(emitted, [['k', 0.1 + 0.2 - 0.3]]);
  });

  it('release passes everything on, gives its memory up, and refuses a later record with ETASK', () => {
    const words = skewedWords(20_000, 3000, 9);
    const { combiner, passed } = table(1 << 20, sum);
    for (const w of words) combiner.add(w, 1);
    assert.ok(combiner.usedBytes > 64 << 10);
    combiner.release();
    assert.equal(combiner.usedBytes, 0);
    const got = new Map<string, number>();
    for (const p of passed) got.set(p.key, (got.get(p.key) ?? 0) + (p.value as number));
    const want = new Map<string, number>();
    for (const w of words) want.set(w, (want.get(w) ?? 0) + 1);
    assert.deepEqual([...got].sort(), [...want].sort());
    assert.throws(
      () => combiner.add('late', 1),
      (err: unknown) => isMinimrError(err, 'ETASK') && /after it ended/.test((err as Error).message),
    );
  });

  it('refuses a budget too small to be a table', () => {
    assert.throws(
      () => table(1000, sum),
      (err: unknown) => isMinimrError(err, 'EBADJOB'),
    );
  });
});
