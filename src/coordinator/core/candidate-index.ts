/**
 * RankedEntry is what CandidateIndex orders by: the rank key of candidateRanksBefore with the free
 * capacity precomputed. The index reads these fields when it places or finds an entry, so the
 * owner must remove an entry BEFORE changing any of them and insert it again afterwards.
 */
export interface RankedEntry {
  readonly free: number;
  readonly lastHeartbeatMs: number;
  readonly penalty: number;
  readonly workerAddr: string;
}

/**
 * entryRanksBefore is candidateRanksBefore on RankedEntry: larger free capacity first, then the
 * newer heartbeat, then the smaller penalty, then the smaller address (plain JS string `<`).
 * Addresses are unique, so two distinct entries never tie.
 */
export function entryRanksBefore(a: RankedEntry, b: RankedEntry): boolean {
  if (a.free !== b.free) return a.free > b.free;
  if (a.lastHeartbeatMs !== b.lastHeartbeatMs) return a.lastHeartbeatMs > b.lastHeartbeatMs;
  if (a.penalty !== b.penalty) return a.penalty < b.penalty;
  return a.workerAddr < b.workerAddr;
}

/** WalkVerdict is what a CandidateIndex.walk visitor says about one entry. */
export const WalkVerdict = {
  /** Stop here and return this entry. */
  ACCEPT: 0,
  /** Skip this entry and look at the next one. */
  SKIP: 1,
  /** Skip this entry and every later entry with the same free capacity (jump to the next group). */
  SKIP_GROUP: 2,
} as const;
export type WalkVerdict = (typeof WalkVerdict)[keyof typeof WalkVerdict];

/**
 * DEFAULT_CHUNK_LOAD: with `bun bench/coordinator/selection.ts --chunk-loads 64,128,256,512,1024`
 * loads 128..256 gave the best heartbeat throughput (larger chunks make each splice longer) and
 * selection cost was flat (33..46 ns) across all of them.
 */
export const DEFAULT_CHUNK_LOAD = 256;

/**
 * CandidateIndex keeps entries ordered by entryRanksBefore, best first, as a "sorted list of
 * chunks" (the layout of Python's sortedcontainers.SortedList): an array of sorted arrays of
 * about `load`..`2*load` entries, plus `lasts[i]`, the last (worst) entry of chunk i.
 *
 * - insert / remove: binary search over `lasts` to find the chunk, binary search inside it, one
 *   `splice` of at most 2*load slots. A chunk over 2*load is split in halves; an empty chunk is
 *   dropped and a chunk under load/4 is merged into a neighbour. Cost O(log n + load).
 * - walk: visits entries from the best; a SKIP_GROUP verdict jumps, by binary search, to the first
 *   entry with a smaller free capacity. Cost O(visited + jumps * log n).
 *
 * Why this and not a tree or a skip list: the arrays are contiguous, so a lookup costs a few cache
 * misses and a `splice` of a few hundred pointers is one memmove, while a linked structure pays a
 * pointer chase (and an allocation per insert) per level. Measured on this project's box (Bun
 * 1.4.4), re-keying entries (remove + change heartbeat/free + insert): this index 2.3M/s at 10,000
 * entries and 0.75M/s at 100,000; a plain skip list (p = 1/4) 0.46M/s and 0.17M/s.
 */
export class CandidateIndex<T extends RankedEntry> {
  private chunks: T[][] = [];
  private lasts: T[] = [];
  private count = 0;

  constructor(private readonly load: number = DEFAULT_CHUNK_LOAD) {
    if (!Number.isInteger(load) || load < 4) throw new Error(`CandidateIndex: load must be an integer >= 4, got ${load}`);
  }

  get size(): number {
    return this.count;
  }

  /** clear empties the index. */
  clear(): void {
    this.chunks = [];
    this.lasts = [];
    this.count = 0;
  }

  /** rebuild replaces the content with `entries` (any order; addresses must be unique). O(n log n). */
  rebuild(entries: T[]): void {
    const sorted = entries.slice().sort((a, b) => (entryRanksBefore(a, b) ? -1 : entryRanksBefore(b, a) ? 1 : 0));
    this.clear();
    for (let i = 0; i < sorted.length; i += this.load) {
      const chunk = sorted.slice(i, i + this.load);
      this.chunks.push(chunk);
      this.lasts.push(chunk[chunk.length - 1] as T);
    }
    this.count = sorted.length;
  }

  /** first returns the best entry, or undefined when empty. */
  first(): T | undefined {
    return this.chunks[0]?.[0];
  }

  /** insert adds `e`, which must not be in the index. */
  insert(e: T): void {
    const chunks = this.chunks;
    if (chunks.length === 0) {
      chunks.push([e]);
      this.lasts.push(e);
      this.count = 1;
      return;
    }
    let ci = this.chunkFor(e);
    if (ci === chunks.length) ci -= 1; // worse than everything: append to the last chunk
    const chunk = chunks[ci] as T[];
    const pos = lowerBound(chunk, e);
    if (pos === chunk.length) {
      chunk.push(e);
      this.lasts[ci] = e;
    } else {
      if (chunk[pos] === e) throw new Error(`CandidateIndex.insert: ${e.workerAddr} is already indexed`);
      chunk.splice(pos, 0, e);
    }
    this.count += 1;
    if (chunk.length > 2 * this.load) this.split(ci);
  }

  /**
   * remove takes `e` out. `e` must be in the index with the key it was inserted with; otherwise
   * this throws (a caller that changed a key field before removing has a bug).
   */
  remove(e: T): void {
    const ci = this.chunkFor(e);
    const chunk = this.chunks[ci];
    const pos = chunk === undefined ? -1 : lowerBound(chunk, e);
    if (chunk === undefined || chunk[pos] !== e) {
      throw new Error(`CandidateIndex.remove: ${e.workerAddr} is not indexed under its current key`);
    }
    chunk.splice(pos, 1);
    this.count -= 1;
    if (chunk.length === 0) {
      this.chunks.splice(ci, 1);
      this.lasts.splice(ci, 1);
      return;
    }
    if (pos === chunk.length) this.lasts[ci] = chunk[pos - 1] as T;
    if (chunk.length < this.load >> 2 && this.chunks.length > 1) this.mergeWithNeighbour(ci);
  }

  /**
   * walk visits entries from the best and returns the first one `visit` ACCEPTs (undefined if
   * none). A SKIP_GROUP verdict promises that every later entry with the same `free` would be
   * skipped too; walk then jumps over them without visiting.
   */
  walk(visit: (e: T) => WalkVerdict): T | undefined {
    const chunks = this.chunks;
    let ci = 0;
    let pos = 0;
    while (ci < chunks.length) {
      const chunk = chunks[ci] as T[];
      if (pos >= chunk.length) {
        ci += 1;
        pos = 0;
        continue;
      }
      const e = chunk[pos] as T;
      const verdict = visit(e);
      if (verdict === WalkVerdict.ACCEPT) return e;
      if (verdict === WalkVerdict.SKIP) {
        pos += 1;
        continue;
      }
      // SKIP_GROUP: the group of `e.free` may end in this chunk (the usual case) or further on.
      const free = e.free;
      const last = chunk[chunk.length - 1] as T;
      if (last.free < free) {
        pos = firstFreeBelow(chunk, free, pos + 1);
      } else {
        ci = this.firstChunkWithFreeBelow(free, ci + 1);
        pos = ci < chunks.length ? firstFreeBelow(chunks[ci] as T[], free, 0) : 0;
      }
    }
    return undefined;
  }

  /** entries yields every entry, best first. */
  *entries(): IterableIterator<T> {
    for (const chunk of this.chunks) yield* chunk;
  }

  /** checkInvariants lists broken structural rules (empty = consistent). For validateState. */
  checkInvariants(): string[] {
    const problems: string[] = [];
    let n = 0;
    let prev: T | undefined;
    if (this.chunks.length !== this.lasts.length) problems.push("chunks and lasts differ in length");
    this.chunks.forEach((chunk, ci) => {
      if (chunk.length === 0) problems.push(`chunk ${ci} is empty`);
      if (chunk.length > 2 * this.load) problems.push(`chunk ${ci} has ${chunk.length} > ${2 * this.load} entries`);
      if (this.lasts[ci] !== chunk[chunk.length - 1]) problems.push(`lasts[${ci}] is not the last entry of chunk ${ci}`);
      for (const e of chunk) {
        if (prev !== undefined && !entryRanksBefore(prev, e)) {
          problems.push(`entries out of order: ${prev.workerAddr} is not before ${e.workerAddr}`);
        }
        prev = e;
        n += 1;
      }
    });
    if (n !== this.count) problems.push(`size is ${this.count} but the chunks hold ${n}`);
    return problems;
  }

  /** chunkFor is the first chunk whose last entry does not rank before `e` (chunks.length if none). */
  private chunkFor(e: T): number {
    const lasts = this.lasts;
    let lo = 0;
    let hi = lasts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (entryRanksBefore(lasts[mid] as T, e)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** firstChunkWithFreeBelow is the first chunk at or after `from` whose last entry has free < `free`. */
  private firstChunkWithFreeBelow(free: number, from: number): number {
    const lasts = this.lasts;
    let lo = from;
    let hi = lasts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((lasts[mid] as T).free >= free) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private split(ci: number): void {
    const chunk = this.chunks[ci] as T[];
    const tail = chunk.splice(this.load);
    this.chunks.splice(ci + 1, 0, tail);
    this.lasts[ci] = chunk[chunk.length - 1] as T;
    this.lasts.splice(ci + 1, 0, tail[tail.length - 1] as T);
  }

  private mergeWithNeighbour(ci: number): void {
    const left = ci > 0 ? ci - 1 : ci;
    const a = this.chunks[left] as T[];
    const b = this.chunks[left + 1] as T[];
    for (const e of b) a.push(e);
    this.chunks.splice(left + 1, 1);
    this.lasts.splice(left + 1, 1);
    this.lasts[left] = a[a.length - 1] as T;
    if (a.length > 2 * this.load) this.split(left);
  }
}

/** lowerBound is the first position in `chunk` whose entry does not rank before `e`. */
function lowerBound<T extends RankedEntry>(chunk: readonly T[], e: T): number {
  let lo = 0;
  let hi = chunk.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entryRanksBefore(chunk[mid] as T, e)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** firstFreeBelow is the first position at or after `from` whose entry has free < `free`. */
function firstFreeBelow<T extends RankedEntry>(chunk: readonly T[], free: number, from: number): number {
  let lo = from;
  let hi = chunk.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((chunk[mid] as T).free >= free) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
