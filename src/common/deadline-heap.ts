/**
 * DeadlineHeap is a binary min-heap of (deadlineMs, item) pairs. CoordinatorCore keeps one entry
 * per breaker opening and deletes lazily: a popped entry whose item has since moved on (another
 * deadline, removed Worker) is simply ignored by the caller.
 */
export class DeadlineHeap<T> {
  private deadlines: number[] = [];
  private items: T[] = [];

  get size(): number {
    return this.deadlines.length;
  }

  clear(): void {
    this.deadlines = [];
    this.items = [];
  }

  push(deadlineMs: number, item: T): void {
    const d = this.deadlines;
    const it = this.items;
    let i = d.length;
    d.push(deadlineMs);
    it.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pd = d[parent] as number;
      if (pd <= deadlineMs) break;
      d[i] = pd;
      it[i] = it[parent] as T;
      i = parent;
    }
    d[i] = deadlineMs;
    it[i] = item;
  }

  /** peekDeadline is the smallest deadline, or +Infinity when empty. */
  peekDeadline(): number {
    return this.deadlines.length === 0 ? Number.POSITIVE_INFINITY : (this.deadlines[0] as number);
  }

  /** peekItem is the item with the smallest deadline (undefined when empty), left in place. */
  peekItem(): T | undefined {
    return this.items[0];
  }

  /** pop removes and returns the item with the smallest deadline (undefined when empty). */
  pop(): T | undefined {
    const d = this.deadlines;
    const it = this.items;
    if (d.length === 0) return undefined;
    const top = it[0] as T;
    const lastD = d.pop() as number;
    const lastItem = it.pop() as T;
    const n = d.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && (d[r] as number) < (d[l] as number) ? r : l;
        if ((d[c] as number) >= lastD) break;
        d[i] = d[c] as number;
        it[i] = it[c] as T;
        i = c;
      }
      d[i] = lastD;
      it[i] = lastItem;
    }
    return top;
  }

  /** entries lists every (deadline, item) pair in no particular order. */
  entries(): Array<[number, T]> {
    return this.deadlines.map((dl, i) => [dl, this.items[i] as T]);
  }
}
