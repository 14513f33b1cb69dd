/**
 * IoWindow bounds the backend requests one task has in flight: `acquire` grants a slot at once
 * or queues the waiter, and `release` hands the freed slot to the oldest waiter (FIFO). A task
 * that issues thousands of requests at once then cannot crowd out the other tasks at a backend.
 * `drain` empties the queue when the task ends.
 */
export class IoWindow<W> {
  private readonly queue: W[] = [];
  /** Index of the queue's head: shift() on a long array costs O(n). */
  private head = 0;
  private active = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`IoWindow: limit must be an integer >= 1, got ${limit}`);
  }

  /** acquire takes a slot (true) or queues the waiter behind the others (false). */
  acquire(waiter: W): boolean {
    if (this.active < this.limit && this.queued === 0) {
      this.active++;
      return true;
    }
    this.queue.push(waiter);
    return false;
  }

  /** release frees a slot; when a waiter is queued the slot passes to it and it is returned. */
  release(): W | undefined {
    if (this.queued > 0) {
      const w = this.queue[this.head]!;
      this.queue[this.head++] = undefined as W; // let it be collected
      if (this.head > 1024 && this.head * 2 > this.queue.length) this.compact();
      return w; // the slot stays taken, now by w
    }
    if (this.active === 0) throw new Error("IoWindow: release without acquire");
    this.active--;
    return undefined;
  }

  /** drain removes and returns every queued waiter (the task ended). */
  drain(): W[] {
    const out = this.queue.slice(this.head);
    this.queue.length = 0;
    this.head = 0;
    return out;
  }

  get inflight(): number {
    return this.active;
  }

  get queued(): number {
    return this.queue.length - this.head;
  }

  private compact(): void {
    this.queue.splice(0, this.head);
    this.head = 0;
  }
}
