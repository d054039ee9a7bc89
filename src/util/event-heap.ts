/**
 * A binary min-heap of events keyed by (time, sequence number). The sequence number is assigned at
 * insertion, so events at the same time come out in the order they were pushed: the simulation's
 * order never depends on how the heap happens to arrange equal keys.
 */
export interface HeapEntry<T> {
  readonly time: number;
  readonly seq: number;
  readonly value: T;
}

export class EventHeap<T> {
  private readonly items: Array<HeapEntry<T>> = [];
  private nextSeq = 0;

  get size(): number {
    return this.items.length;
  }

  push(time: number, value: T): HeapEntry<T> {
    if (!Number.isFinite(time)) throw new RangeError(`event time must be finite, got ${time}`);
    const entry: HeapEntry<T> = { time, seq: this.nextSeq++, value };
    const items = this.items;
    let i = items.length;
    items.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent]!;
      if (p.time < time || (p.time === time && p.seq < entry.seq)) break;
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
        let c = l;
        if (r < n) {
          const a = items[l]!;
          const b = items[r]!;
          if (b.time < a.time || (b.time === a.time && b.seq < a.seq)) c = r;
        }
        const child = items[c]!;
        if (last.time < child.time || (last.time === child.time && last.seq < child.seq)) break;
        items[i] = child;
        i = c;
      }
      items[i] = last;
    }
    return top;
  }
}
