/**
 * A binary min-heap ordered by `less`: the k-way merges of the map side, the reduce side and the
 * reducer's final merge all pull from one. `replaceTop` is what a merge does per record (the run
 * that gave the smallest record offers its next one), so it sifts down once instead of pop + push.
 */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  /** The smallest item (the heap must not be empty). */
  peek(): T {
    return this.items[0]!;
  }

  push(item: T): void {
    const items = this.items;
    let i = items.length;
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(item, items[parent]!)) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  /** Replaces the smallest item and restores the order. */
  replaceTop(item: T): void {
    this.items[0] = item;
    this.siftDown();
  }

  /** Removes the smallest item. */
  pop(): T {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      this.siftDown();
    }
    return top;
  }

  /** Every item, in no particular order (to close what they hold). */
  drain(): T[] {
    return this.items.splice(0);
  }

  private siftDown(): void {
    const items = this.items;
    const n = items.length;
    const e = items[0]!;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && this.less(items[r]!, items[l]!) ? r : l;
      if (!this.less(items[child]!, e)) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = e;
  }
}
