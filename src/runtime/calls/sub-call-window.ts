/**
 * SubCallWindow bounds the sub-calls one call has in flight (ctx.call_many of 100,000 functions
 * must not start 100,000 calls at once): past `size` per parent, a sub-call waits until one of its
 * parent's others ends, first come first served. Waiting cannot deadlock: a waiter waits only for
 * its siblings, which hold no place a deeper sub-call needs (each parent has its own window).
 */
export class SubCallWindow {
  private readonly parents = new Map<string, { inflight: number; readonly waiters: (() => void)[] }>();

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`SubCallWindow: size must be a positive integer, got ${size}`);
  }

  /** enter resolves once `parentCallId` has a free place; every enter is matched by one leave. */
  enter(parentCallId: string): Promise<void> {
    const p = this.parents.get(parentCallId);
    if (!p) {
      this.parents.set(parentCallId, { inflight: 1, waiters: [] });
      return Promise.resolve();
    }
    if (p.inflight < this.size) {
      p.inflight++;
      return Promise.resolve();
    }
    return new Promise((resolve) => p.waiters.push(resolve));
  }

  /** leave frees a place: the next waiter of the parent takes it over. */
  leave(parentCallId: string): void {
    const p = this.parents.get(parentCallId);
    if (!p) return;
    const next = p.waiters.shift();
    if (next) return next(); // the place passes on: inflight stays
    if (--p.inflight === 0) this.parents.delete(parentCallId);
  }

  /** inflight: sub-calls of the parent holding a place now (tests). */
  inflight(parentCallId: string): number {
    return this.parents.get(parentCallId)?.inflight ?? 0;
  }
}
