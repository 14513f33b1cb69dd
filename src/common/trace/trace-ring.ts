/**
 * TraceRing keeps the newest `capacity` items pushed into it and counts the ones it let go: a
 * trace of a long-lived process stays bounded in memory and in the file it becomes, and the file
 * says how much of the start is missing. Pure: no clock, no IO.
 */
export class TraceRing<T> {
  private readonly items: (T | undefined)[];
  /** Index of the oldest item kept. */
  private head = 0;
  private count = 0;
  /** Items pushed out by newer ones since the ring was made. */
  dropped = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`TraceRing: capacity must be an integer >= 1, got ${capacity}`);
    this.items = new Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** push keeps `item`; a full ring lets its oldest item go first (counted in `dropped`). */
  push(item: T): void {
    if (this.count < this.capacity) {
      this.items[(this.head + this.count) % this.capacity] = item;
      this.count++;
      return;
    }
    this.items[this.head] = item;
    this.head = (this.head + 1) % this.capacity;
    this.dropped++;
  }

  /** toArray: the items kept, oldest first. */
  toArray(): T[] {
    const out: T[] = new Array(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.items[(this.head + i) % this.capacity]!;
    return out;
  }
}
