import type { RawJson } from "../json/raw-json";

/**
 * Bytes charged per entry on top of its key and text: the Map slot and the RawJson object, so
 * that a flood of tiny answers cannot outgrow the bound unseen.
 */
export const ENTRY_OVERHEAD_BYTES = 64;

/** isFinal is the immutability rule: a block at or below head - finalityDepth can no longer change. */
export function isFinal(block: number, head: number, finalityDepth: number): boolean {
  return block <= head - finalityDepth;
}

/**
 * ReadCache is the Worker's cache of immutable backend answers, bounded in bytes and evicting
 * the least recently used. Values are RawJson: a hit is spliced into the executor frame as is,
 * and its byte length is its cost (key length + UTF-8 bytes + ENTRY_OVERHEAD_BYTES; the JSON
 * the backends send is ASCII, so characters are bytes). The caller decides what may enter
 * (isFinal); the cache only bounds and orders. A max of 0 disables it.
 */
export class ReadCache {
  private readonly entries = new Map<string, RawJson>();
  private used = 0;
  hits = 0;
  misses = 0;
  evictions = 0;
  /**
   * Bytes that every value evicted or replaced so far held in memory (what the owner may want
   * reclaimed): a final block served by span from the block store holds none, though it is charged
   * its length against the bound (its bytes may yet be read into it).
   */
  evictedBytes = 0;

  constructor(readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }

  /** get returns the value and marks it most recently used. */
  get(key: string): RawJson | undefined {
    const v = this.entries.get(key);
    if (v === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Map keeps insertion order: re-inserting moves the entry to the young end.
    this.entries.delete(key);
    this.entries.set(key, v);
    return v;
  }

  /** put stores a value (replacing one under the same key), evicting the oldest until it fits; false when it alone is too big. */
  put(key: string, value: RawJson): boolean {
    const cost = costOf(key, value);
    if (cost > this.maxBytes) return false;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.used -= costOf(key, old);
      this.evictedBytes += old.residentBytes;
    }
    while (this.used + cost > this.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      const gone = this.entries.get(oldest)!;
      this.used -= costOf(oldest, gone);
      this.entries.delete(oldest);
      this.evictions++;
      this.evictedBytes += gone.residentBytes;
    }
    this.entries.set(key, value);
    this.used += cost;
    return true;
  }
}

function costOf(key: string, value: RawJson): number {
  return key.length + value.byteLength + ENTRY_OVERHEAD_BYTES;
}
