/**
 * A binary min-heap of events keyed by (time, rank, sequence number). The sequence number is
 * assigned at insertion, so events at the same time and rank come out in the order they were pushed:
 * the simulation's order never depends on how the heap happens to arrange equal keys. The rank
 * (0 unless given) orders events of one instant by something other than when they were pushed.
 */
export interface HeapEntry<T> {
  readonly time: number;
  readonly rank: number;
  readonly seq: number;
  readonly value: T;
}

function before<T>(a: HeapEntry<T>, b: HeapEntry<T>): boolean {
  if (a.time !== b.time) return a.time < b.time;
  if (a.rank !== b.rank) return a.rank < b.rank;
  return a.seq < b.seq;
}

export class EventHeap<T> {
  private readonly items: Array<HeapEntry<T>> = [];
  private nextSeq = 0;

  get size(): number {
    return this.items.length;
  }

  push(time: number, value: T, rank = 0): HeapEntry<T> {
    if (!Number.isFinite(time)) throw new RangeError(`event time must be finite, got ${time}`);
    const entry: HeapEntry<T> = { time, rank, seq: this.nextSeq++, value };
    const items = this.items;
    let i = items.length;
    items.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (before(p, entry)) break;
      items[i] = p;
      i = parent;
    }
    items[i] = entry;
    return entry;
  }

  peek(): HeapEntry<T> | undefined {
    return this.items[0];
  }

  pop(): HeapEntry<T> | undefined {
    const items = this.items;
    const top = items[0];
    if (top === undefined) return undefined;
    const last = items.pop()!;
    const n = items.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && before(items[r]!, items[l]!) ? r : l;
        const child = items[c]!;
        if (before(last, child)) break;
        items[i] = child;
        i = c;
      }
      items[i] = last;
    }
    return top;
  }
}
