/**
 * `sumValues`: the combiner and reducer that add a key's numbers (Hadoop's IntSumReducer and
 * LongSumReducer, Spark's `reduceByKey(_ + _)`). Written as a job's own `sum` would be, with one
 * difference the engine can use: it is known. A map-side hash table whose job combines with it adds
 * each number to its key's running sum as it is emitted, instead of keeping the values for a
 * `combine` call (src/shuffle/hash-combiner.ts), which is most of WordCount's map CPU otherwise.
 *
 * The sum is a left fold of `+` from the first value, the same numbers in the same order either
 * way, so outputs are the same bytes with and without the table. Numbers only: a value of any other
 * type is EBADJOB naming the key (JavaScript's `+` would concatenate strings without a word).
 */
import { MinimrError } from '../errors.js';
import { describeKey } from '../util/text.js';

export function sumValues<K>(key: K, values: Iterable<number>, ctx: { emit(key: K, value: number): void }): void {
  let sum: number | undefined;
  for (const v of values) {
    if (typeof v !== 'number')
      throw new MinimrError(
        'EBADJOB',
        `sumValues adds numbers, but key ${describeKey(key)} has a value of type ${v === null ? 'null' : typeof v}: ` +
          'emit numbers, or combine and reduce with a function of your own',
        { key: describeKey(key) },
      );
    sum = sum === undefined ? v : sum + v;
  }
  ctx.emit(key, sum ?? 0);
}
