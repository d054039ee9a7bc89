import { MinimrError } from '../errors.js';
import { effectiveComparator } from './bytes-compare.js';
import { createShuffleCounters } from './counters.js';
import { MinHeap } from './min-heap.js';
import type { KeyValue } from './record-format.js';
import type { BytesCombiner, KeyComparator, KeyGroup, ShuffleCounters } from './types.js';

/**
 * The Merger: k-way merge of sorted runs, grouping of a sorted stream by key, and the combiner pass.
 * All synchronous and lazy so the reduce side can pull one group at a time; the external-sort issue
 * feeds the same functions with runs read from spill files instead of in-memory segments.
 */

interface RunHead {
  key: Buffer;
  value: Buffer;
  readonly run: number;
  readonly it: Iterator<KeyValue>;
}

/**
 * Merges runs that are each sorted by `compare` into one sorted stream. Stable: records with equal
 * keys come out in run order (run 0 first), and within a run in their original order, because ties
 * in the heap are broken by run index. A plain iterator (not a generator): it runs once per record.
 */
export function mergeSortedRuns(
  runs: ReadonlyArray<Iterable<KeyValue>>,
  compareOption?: KeyComparator,
): IterableIterator<KeyValue> {
  return new KWayMerge(runs, effectiveComparator(compareOption));
}

class KWayMerge implements IterableIterator<KeyValue> {
  private readonly heap: MinHeap<RunHead>;

  constructor(runs: ReadonlyArray<Iterable<KeyValue>>, compare: KeyComparator) {
    this.heap = new MinHeap<RunHead>((a, b) => {
      const c = compare(a.key, b.key);
      return c < 0 || (c === 0 && a.run < b.run);
    });
    runs.forEach((run, index) => {
      const it = run[Symbol.iterator]();
      const first = it.next();
      if (!first.done) this.heap.push({ key: first.value[0], value: first.value[1], run: index, it });
    });
  }

  [Symbol.iterator](): IterableIterator<KeyValue> {
    return this;
  }

  next(): IteratorResult<KeyValue> {
    const heap = this.heap;
    if (heap.size === 0) return { done: true, value: undefined };
    const top = heap.peek();
    const out: KeyValue = [top.key, top.value];
    const next = top.it.next();
    if (next.done) heap.pop();
    else {
      // The run's next record takes the entry's place; with one run left there is nothing to order.
      top.key = next.value[0];
      top.value = next.value[1];
      if (heap.size > 1) heap.replaceTop(top);
    }
    return { done: false, value: out };
  }

  /** Closes the runs' iterators (file readers release their descriptors) when a consumer stops early. */
  return(): IteratorResult<KeyValue> {
    for (const e of this.heap.drain()) e.it.return?.();
    return { done: true, value: undefined };
  }
}

/**
 * Groups a stream sorted by `compare` into (key, values) groups, pulling records lazily. Each group's
 * `values` is single-pass and valid only until the next group is taken: values the caller did not
 * read are skipped when it moves on (as in Hadoop's reduce). `counters`, when given, counts
 * reduceInputGroups and reduceInputRecords (every record, read or skipped).
 *
 * Plain iterator objects rather than generators: this runs once per record of every reduce, and a
 * generator per group (plus one per group's values) cost more than the user's reduce in TeraSort.
 */
export function groupByKey(
  records: Iterable<KeyValue>,
  compareOption?: KeyComparator,
  counters?: ShuffleCounters,
): IterableIterator<KeyGroup> {
  return new KeyGrouper(records[Symbol.iterator](), effectiveComparator(compareOption), counters);
}

class KeyGrouper implements IterableIterator<KeyGroup> {
  cur: IteratorResult<KeyValue>;
  key: Buffer | undefined;
  /** Bumped per group, so a stale group's values iterator stops instead of reading the next group. */
  group = 0;
  /**
   * Whether the current record belongs to the current group, once known: each record is compared
   * with the group's key at most once (the values iterator and the next group both ask; a group's
   * first record needs no compare at all). In TeraSort, where every key is its own group, this was
   * three key compares per record.
   */
  private known = false;
  private same = false;

  constructor(
    private readonly it: Iterator<KeyValue>,
    readonly compare: KeyComparator,
    private readonly counters: ShuffleCounters | undefined,
  ) {
    this.cur = it.next();
  }

  [Symbol.iterator](): IterableIterator<KeyGroup> {
    return this;
  }

  /** True while the current record belongs to the current group. */
  inGroup(): boolean {
    if (this.cur.done) return false;
    if (!this.known) {
      this.same = this.compare(this.cur.value[0], this.key!) === 0;
      this.known = true;
    }
    return this.same;
  }

  advance(): void {
    this.cur = this.it.next();
    this.known = false;
    if (this.counters) this.counters.reduceInputRecords++;
  }

  next(): IteratorResult<KeyGroup> {
    if (this.key !== undefined) while (this.inGroup()) this.advance();
    if (this.cur.done) return { done: true, value: undefined };
    this.key = this.cur.value[0];
    this.known = true;
    this.same = true;
    this.group++;
    if (this.counters) this.counters.reduceInputGroups++;
    return { done: false, value: { key: this.key, values: new GroupValues(this, this.group) } };
  }
}

class GroupValues implements IterableIterator<Buffer> {
  constructor(
    private readonly grouper: KeyGrouper,
    private readonly group: number,
  ) {}

  [Symbol.iterator](): IterableIterator<Buffer> {
    return this;
  }

  next(): IteratorResult<Buffer> {
    const g = this.grouper;
    if (g.group !== this.group || !g.inGroup()) return { done: true, value: undefined };
    const value = (g.cur as IteratorYieldResult<KeyValue>).value[1];
    g.advance();
    return { done: false, value };
  }
}

/**
 * Runs the combiner once per key group of a sorted stream and yields what it emits. The combiner must
 * keep the group's key (compare === 0), else EBADJOB: the output is written as one sorted segment, so a
 * changed key would silently break the reducer's merge. Counts combineInputRecords / combineOutputRecords.
 * With `passSingleRecords`, a group of one record passes as it is (counted in and out): for merges of
 * runs that were combined already, where a key found in one run has nothing left to combine with.
 */
export function* applyCombiner(
  sortedRecords: Iterable<KeyValue>,
  combiner: BytesCombiner,
  compareOption?: KeyComparator,
  counters?: ShuffleCounters,
  passSingleRecords = false,
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
      let values: Iterable<Buffer> = group.values;
      if (passSingleRecords) {
        const it = group.values[Symbol.iterator]();
        const first = it.next();
        const second = first.done ? first : it.next();
        if (second.done) {
          if (!first.done) {
            if (counters) counters.combineOutputRecords++;
            yield [group.key, first.value];
          }
          syncCount();
          continue;
        }
        values = new ValuesAfter(first.value, second.value, it);
      }
      const emitted: KeyValue[] = [];
      combiner(group.key, values, (key, value) => {
        if (compare(key, group.key) !== 0) {
          throw new MinimrError(
            'EBADJOB',
            'the combiner emitted a key different from its input key; a combiner must keep its key',
            {
              inputKey: group.key.toString('hex').slice(0, 64),
              emittedKey: key.toString('hex').slice(0, 64),
            },
          );
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

/** A group's values once its first two were read (to tell it from a single record). */
class ValuesAfter implements IterableIterator<Buffer> {
  private taken = 0;

  constructor(
    private readonly first: Buffer,
    private readonly second: Buffer,
    private readonly rest: Iterator<Buffer>,
  ) {}

  [Symbol.iterator](): IterableIterator<Buffer> {
    return this;
  }

  next(): IteratorResult<Buffer> {
    const n = this.taken++;
    if (n === 0) return { done: false, value: this.first };
    if (n === 1) return { done: false, value: this.second };
    return this.rest.next();
  }
}
