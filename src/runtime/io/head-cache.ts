/**
 * HeadCache remembers each chain's head for a short TTL so that the finality rule costs no
 * backend request per IO request. It never fetches: `lookup` says when a refresh is due and the
 * adapter fetches in the background and reports back. Meanwhile the last head is used: a stale
 * head is lower than the true one, so it can only make the cache more careful, never wrong.
 */
export class HeadCache {
  private readonly heads = new Map<string, { head: number | undefined; fetchedAtMs: number; refreshing: boolean }>();

  constructor(readonly ttlMs: number) {}

  /** lookup gives the known head (undefined before the first fetch) and whether the caller must start a refresh now. */
  lookup(chain: string, nowMs: number): { head: number | undefined; refresh: boolean } {
    let h = this.heads.get(chain);
    if (!h) this.heads.set(chain, (h = { head: undefined, fetchedAtMs: -Infinity, refreshing: false }));
    if (h.refreshing || nowMs - h.fetchedAtMs < this.ttlMs) return { head: h.head, refresh: false };
    h.refreshing = true;
    return { head: h.head, refresh: true };
  }

  /** refreshed records a fetched head; a head never moves backwards here (a lagging node's answer is ignored). */
  refreshed(chain: string, head: number, nowMs: number): void {
    const h = this.heads.get(chain);
    if (!h) return;
    h.head = h.head === undefined ? head : Math.max(h.head, head);
    h.fetchedAtMs = nowMs;
    h.refreshing = false;
  }

  /** refreshFailed keeps the old head and allows the next lookup after the TTL to try again. */
  refreshFailed(chain: string, nowMs: number): void {
    const h = this.heads.get(chain);
    if (!h) return;
    h.fetchedAtMs = nowMs;
    h.refreshing = false;
  }
}
