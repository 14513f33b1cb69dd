/**
 * HeadVerdict: what HeadCache made of one fetched head, for the adapter to log.
 * - `accepted`: plausible after the believed head (or the first head seen);
 * - `doubted`: it went backwards, or jumped further than the chain can have grown since the
 *   believed head was seen; not believed (a wrong answer from one node behind a load balancer,
 *   a lagging or misconfigured endpoint) until confirmed;
 * - `confirmed`: a doubted head was seen again, consistently, `confirmations` times in a row,
 *   and is believed now (the chain really rolled back, or the node really caught up).
 */
export type HeadVerdict =
  | { readonly type: "accepted"; readonly head: number }
  | { readonly type: "doubted"; readonly reason: "backwards" | "jump"; readonly believed: number; readonly observed: number; readonly seen: number }
  | { readonly type: "confirmed"; readonly from: number; readonly to: number };

export interface HeadCacheOptions {
  /** How long a fetched head is used before a background refresh. */
  readonly ttlMs: number;
  /** Consecutive consistent sightings that make a doubted head believed (the first one included). */
  readonly confirmations?: number;
  /** The fastest a chain grows: a head further above the believed one than this rate allows since it was seen is a jump. */
  readonly maxBlocksPerSecond?: number;
  /** Blocks a head may always move up by, whatever the time (clock granularity, a node just catching up). */
  readonly jumpSlack?: number;
}

/**
 * Defaults: 3 sightings (a wrong node behind a load balancer of N is hit 3 times in a row with
 * probability 1/N^3); 10 blocks/s (Arbitrum One, the fastest common EVM chain, makes about 4);
 * 64 blocks of slack.
 */
export const DEFAULT_HEAD_CONFIRMATIONS = 3;
export const DEFAULT_MAX_BLOCKS_PER_SECOND = 10;
export const DEFAULT_HEAD_JUMP_SLACK = 64;

interface Sighting {
  readonly head: number;
  readonly atMs: number;
}

interface ChainHead {
  believed: Sighting | undefined;
  /** A doubted head and how many consistent sightings it has had in a row. */
  doubt: (Sighting & { seen: number }) | null;
  fetchedAtMs: number;
  refreshing: boolean;
}

/**
 * HeadCache remembers each chain's head for a short TTL so that the finality rule costs no
 * backend request per IO request, and decides which heads to believe. It never fetches and never
 * reads a clock: `lookup` says when a refresh is due, the adapter fetches in the background and
 * reports back with `refreshed` (or `refreshFailed`), each with the time.
 *
 * Trust: the first head seen is believed. After that a head that goes backwards, or that jumps
 * further than `maxBlocksPerSecond` since the believed head was seen (plus `jumpSlack`), is
 * doubted: not believed until `confirmations` consecutive sightings agree with it (each plausible
 * after the previous one). A plausible head meanwhile is believed and clears the doubt.
 *
 * `lookup` gives the head the finality rule may use: the believed head, or a lower doubted one
 * while the doubt stands. Both doubts err on the careful side: a jump never makes more blocks
 * final, and a head that went backwards makes fewer final until it is refuted. (The earlier
 * `max(old, new)` kept one wrong high head forever, making blocks final that were not.)
 */
export class HeadCache {
  private readonly heads = new Map<string, ChainHead>();
  readonly ttlMs: number;
  private readonly confirmations: number;
  private readonly maxBlocksPerSecond: number;
  private readonly jumpSlack: number;

  constructor(opts: HeadCacheOptions | number) {
    const o = typeof opts === "number" ? { ttlMs: opts } : opts;
    this.ttlMs = o.ttlMs;
    this.confirmations = Math.max(1, o.confirmations ?? DEFAULT_HEAD_CONFIRMATIONS);
    this.maxBlocksPerSecond = o.maxBlocksPerSecond ?? DEFAULT_MAX_BLOCKS_PER_SECOND;
    this.jumpSlack = o.jumpSlack ?? DEFAULT_HEAD_JUMP_SLACK;
  }

  /** lookup gives the head for the finality rule (undefined before the first fetch) and whether the caller must start a refresh now. */
  lookup(chain: string, nowMs: number): { head: number | undefined; refresh: boolean } {
    let h = this.heads.get(chain);
    if (!h) this.heads.set(chain, (h = { believed: undefined, doubt: null, fetchedAtMs: -Infinity, refreshing: false }));
    const head = this.carefulHead(h);
    if (h.refreshing || nowMs - h.fetchedAtMs < this.ttlMs) return { head, refresh: false };
    h.refreshing = true;
    return { head, refresh: true };
  }

  /** believed: the chain's believed head (doubts aside), for status and tests. */
  believed(chain: string): number | undefined {
    return this.heads.get(chain)?.believed?.head;
  }

  /** refreshed records a fetched head and says what was made of it. */
  refreshed(chain: string, head: number, nowMs: number): HeadVerdict {
    let h = this.heads.get(chain);
    if (!h) this.heads.set(chain, (h = { believed: undefined, doubt: null, fetchedAtMs: -Infinity, refreshing: false }));
    h.fetchedAtMs = nowMs;
    h.refreshing = false;
    const seen: Sighting = { head, atMs: nowMs };
    if (h.believed === undefined || this.plausibleAfter(h.believed, seen)) {
      h.believed = seen;
      h.doubt = null;
      return { type: "accepted", head };
    }
    const count = h.doubt !== null && this.plausibleAfter(h.doubt, seen) ? h.doubt.seen + 1 : 1;
    if (count >= this.confirmations) {
      const from = h.believed.head;
      h.believed = seen;
      h.doubt = null;
      return { type: "confirmed", from, to: head };
    }
    h.doubt = { ...seen, seen: count };
    return { type: "doubted", reason: head < h.believed.head ? "backwards" : "jump", believed: h.believed.head, observed: head, seen: count };
  }

  /** refreshFailed keeps what is known and allows the next lookup after the TTL to try again. */
  refreshFailed(chain: string, nowMs: number): void {
    const h = this.heads.get(chain);
    if (!h) return;
    h.fetchedAtMs = nowMs;
    h.refreshing = false;
  }

  /** plausibleAfter: `next` may follow `prev`: not lower, and no higher than the chain can have grown meanwhile. */
  private plausibleAfter(prev: Sighting, next: Sighting): boolean {
    if (next.head < prev.head) return false;
    const grown = (Math.max(0, next.atMs - prev.atMs) / 1000) * this.maxBlocksPerSecond;
    return next.head - prev.head <= Math.ceil(grown) + this.jumpSlack;
  }

  private carefulHead(h: ChainHead): number | undefined {
    if (h.believed === undefined) return undefined;
    return h.doubt !== null && h.doubt.head < h.believed.head ? h.doubt.head : h.believed.head;
  }
}
