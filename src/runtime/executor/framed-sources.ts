import { RawJson } from "../json/raw-json";

/** Sources at least this long are encoded once and shared (smaller ones cost less to encode per frame than to track). */
export const SHARED_SOURCE_MIN_CHARS = 64 * 1024;

/**
 * FramedSources keeps the JSON encoding of each large function source while calls of it are in
 * the pool, so that the ExecuteCall carrying it to each executor refers to one encoding instead of
 * making its own: a 30 MiB source sent to 4 executors cost the Worker ~90 MiB per executor
 * (the JSON text, its UTF-8, the frame). An encoding lives until the last call holding its
 * digest ends.
 */
export class FramedSources {
  private readonly entries = new Map<string, { json: RawJson | null; holders: number }>();

  constructor(private readonly minChars = SHARED_SOURCE_MIN_CHARS) {}

  /** hold: a call of this source entered the pool. */
  hold(digest: string, source: string): void {
    if (source.length < this.minChars) return;
    const entry = this.entries.get(digest);
    if (entry) entry.holders++;
    else this.entries.set(digest, { json: null, holders: 1 });
  }

  /** release: a call that held this digest ended. */
  release(digest: string): void {
    const entry = this.entries.get(digest);
    if (!entry) return;
    if (--entry.holders === 0) this.entries.delete(digest);
  }

  /** sourceField: what an ExecuteCall carries as its source: the shared encoding of a held large source (made on first use), else the text. */
  sourceField(digest: string, source: string): string | RawJson {
    const entry = this.entries.get(digest);
    if (!entry) return source;
    return (entry.json ??= new RawJson(Buffer.from(JSON.stringify(source), "utf8")));
  }

  /** Sources held (tests, stats). */
  get size(): number {
    return this.entries.size;
  }
}
