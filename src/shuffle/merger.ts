import { MinimrError } from '../errors.js';
import { effectiveComparator } from './bytes-compare.js';
import { createShuffleCounters } from './counters.js';
import type { KeyValue } from './record-format.js';
import type { BytesCombiner, KeyComparator, KeyGroup, ShuffleCounters } from './types.js';

/**
 * The Merger: k-way merge of sorted runs, grouping of a sorted stream by key, and the combiner pass.
 * All synchronous and lazy so the reduce side can pull one group at a time; the external-sort issue
 * feeds the same functions with runs read from spill files instead of in-memory segments.
 */


interface HeapEntry {
  key: Buffer;
  value: Buffer;
  readonly run: number;
  readonly it: Iterator<KeyValue>;
}

/**
 * Merges runs that are each sorted by `compare` into one sorted stream. Stable: records with equal
 * keys come out in run order (run 0 first), and within a run in their original order, because ties
 * in the heap are broken by run index.
 */
export function* mergeSortedRuns(
  runs: ReadonlyArray<Iterable<KeyValue>>,
  compareOption?: KeyComparator,
): IterableIterator<KeyValue> {
  const compare = effectiveComparator(compareOption);
  const heap: HeapEntry[] = [];
  const less = (a: HeapEntry, b: HeapEntry): boolean => {
    const c = compare(a.key, b.key);
    return c < 0 || (c === 0 && a.run < b.run);
  };
  const siftUp = (i: number): void => {
    const e = heap[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(e, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = e;
  };
  const siftDown = (i: number): void => {
    const n = heap.length;
    const e = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && less(heap[r]!, heap[l]!) ? r : l;
      if (!less(heap[child]!, e)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = e;
  };

  runs.forEach((run, index) => {
    const it = run[Symbol.iterator]();
    const first = it.next();
    if (!first.done) {
      heap.push({ key: first.value[0], value: first.value[1], run: index, it });
      siftUp(heap.length - 1);
    }
  });

  while (heap.length > 0) {
    const top = heap[0]!;
    const out: KeyValue = [top.key, top.value];
    const next = top.it.next();
    if (next.done) {
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        siftDown(0);
      }
    } else {
      // Reuse the entry: the run's next record replaces it at the top and sinks to its place.
      top.key = next.value[0];
      top.value = next.value[1];
      siftDown(0);
    }
    yield out;
  }
}

/**
 * Groups a stream sorted by `compare` into (key, values) groups, pulling records lazily. Each group's
 * `values` is single-pass and valid only until the next group is taken: values the caller did not
 * read are skipped when it moves on (as in Hadoop's reduce). `counters`, when given, counts
 * reduceInputGroups and reduceInputRecords (every record, read or skipped).
 */
export function* groupByKey(
  records: Iterable<KeyValue>,
  compareOption?: KeyComparator,
  counters?: ShuffleCounters,
): IterableIterator<KeyGroup> {
  const compare = effectiveComparator(compareOption);
  const it = records[Symbol.iterator]();
  let cur = it.next();
  while (!cur.done) {
    const key = cur.value[0];
    let open = true;
    const sameKey = (): boolean => !cur.done && compare(cur.value[0], key) === 0;
    const values: Iterable<Buffer> = {
      *[Symbol.iterator]() {
        while (open && !cur.done && sameKey()) {
          const value = cur.value[1];
          cur = it.next();
          if (counters) counters.reduceInputRecords++;
          yield value;
        }
      },
    };
    if (counters) counters.reduceInputGroups++;
    yield { key, values };
    open = false;
    while (sameKey()) {
      cur = it.next();
      if (counters) counters.reduceInputRecords++;
    }
  }
}

/**
 * Runs the combiner once per key group of a sorted stream and yields what it emits. The combiner must
 * keep the group's key (compare === 0): the output is written as one sorted segment, so a changed key
 * would silently break the reducer's merge. Counts combineInputRecords / combineOutputRecords.
 */
export function* applyCombiner(
  sortedRecords: Iterable<KeyValue>,
  combiner: BytesCombiner,
  compareOption?: KeyComparator,
  counters?: ShuffleCounters,
): IterableIterator<KeyValue> {
  const compare = effectiveComparator(compareOption);
  // groupByKey counts every record of a group, including those the combiner did not read.
  const seen = createShuffleCounters();
  let counted = 0;
  const syncCount = (): void => {
    if (counters) counters.combineInputRecords += seen.reduceInputRecords - counted;
    counted = seen.reduceInputRecords;
  };
  try {
    for (const group of groupByKey(sortedRecords, compare, seen)) {
      const emitted: KeyValue[] = [];
      combiner(group.key, group.values, (key, value) => {
        if (compare(key, group.key) !== 0) {
          throw new MinimrError('ETASK', 'combiner emitted a key different from its input key; a combiner must keep the key', {
            inputKey: group.key.toString('hex').slice(0, 64),
            emittedKey: key.toString('hex').slice(0, 64),
          });
        }
        emitted.push([key, value]);
      });
      if (counters) counters.combineOutputRecords += emitted.length;
      yield* emitted;
      syncCount();
    }
  } finally {
    syncCount();
  }
}
