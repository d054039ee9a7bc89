/**
 * The combiner the shuffle runs (per key group, at map spills and in a reduce's merges) for a job
 * that combines with the API's `sumValues`: each value is decoded and added as it comes, and the
 * key's bytes go on as they came, as the map-side hash table passes them. The generic combiner
 * decodes the key into a JS value and the group's values into an iterator, calls `combine`, and
 * encodes the key again: over a million keys (a Zipf WordCount's reduce) that garbage grew the JS
 * heap from 10 to 23-38 MiB during the shuffle (docs/performance-notes.md). The same numbers are
 * added in the same order (a left fold from the first value), so the sums are the same; a value that
 * is not a number is sumValues' own EBADJOB, naming the key.
 */
import { sumValues, type Codec } from '../../api/index.js';
import type { BytesCombiner } from '../../shuffle/index.js';

export function summingCombiner(keyCodec: Codec<unknown>, valueCodec: Codec<unknown>): BytesCombiner {
  return (key, values, emit) => {
    let sum = 0;
    let first = true;
    for (const bytes of values) {
      const v = valueCodec.decode(bytes);
      // sumValues words the error (the key decoded, the value's type): it throws for this value.
      if (typeof v !== 'number') sumValues(keyCodec.decode(key), [v as number], { emit: () => undefined });
      sum = first ? (v as number) : sum + (v as number);
      first = false;
    }
    emit(key, valueCodec.encode(sum));
  };
}
