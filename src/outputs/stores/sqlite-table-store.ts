import { redactUrlCredentials } from "../../common/config/secret-text";
import { threadEntry } from "../../common/threads/thread-entry";
import { SqliteTables } from "./sqlite-tables";
import type { StoreKind } from "./store-kinds";
import { TableStoreError } from "./table-store";
import { ThreadTableStore } from "./thread-table-store";

/** SQLite result codes that mean "not now" (locked, busy, out of disk, unreadable): retryable. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM)/;

/**
 * isSqliteLockContention: a SQLite store's unavailable error (its message, as a Worker's health
 * reason carries it) that says another connection holds the file locked: transient, unlike a file
 * that cannot be opened (CANTOPEN, a missing folder), which will not come back by itself.
 */
export function isSqliteLockContention(reason: string): boolean {
  return /database is locked|database table is locked|SQLITE_(BUSY|LOCKED)/i.test(reason);
}

/** storeErrorOf maps what bun:sqlite throws to a TableStoreError with a code. */
export function sqliteStoreError(e: unknown, description: string): TableStoreError {
  if (e instanceof TableStoreError) return e;
  const code = String((e as { code?: unknown }).code ?? "");
  const message = (e as Error).message ?? String(e);
  if (UNAVAILABLE.test(code) || /database is locked/.test(message)) return new TableStoreError("STORE_UNAVAILABLE", `table store ${description} unavailable: ${message}`);
  return new TableStoreError("INTERNAL", `table store ${description}: ${message}`);
}

/**
 * sqliteStore: the embedded file of one host. TABLE_STORE_URL=sqlite:///abs/path.sqlite (or
 * sqlite:relative/path.sqlite) names it; an empty TABLE_STORE_URL is the file TABLE_STORE_PATH.
 */
export const sqliteStore: StoreKind = {
  schemes: ["sqlite:"],
  shared: false,
  describe: (url) => redactUrlCredentials(url),
  open: (url, c, o) => new SqliteTableStore(url === "" ? c.tableStorePath.trim() : sqlitePathOf(url), { inline: o.inline ?? false, busyTimeoutMs: c.tableStoreStatementTimeoutMs }),
};

/** sqlitePathOf: the file of a sqlite: URL (`sqlite:///srv/t.sqlite` is /srv/t.sqlite, `sqlite:t.sqlite` relative). */
export function sqlitePathOf(url: string): string {
  const rest = url.trim().slice("sqlite:".length);
  return rest.startsWith("//") ? decodeURIComponent(rest.slice(2)) : decodeURIComponent(rest);
}

/**
 * SqliteTableStore: the embedded table store for one host (TABLE_STORE_PATH). Its SQLite calls
 * run on a thread of their own (a Bun Worker holding a SqliteTables), so a write waiting on another
 * process's lock (up to the busy timeout) or an fsync never stalls the Worker's event loop:
 * heartbeats, executor pings and gRPC go on. `inline` runs them on the calling thread instead
 * (`blockx table`, tests of the engine). Values cross the thread as JSON text, parsed exactly.
 */
export class SqliteTableStore extends ThreadTableStore {
  constructor(path: string, options: { readonly inline?: boolean; readonly busyTimeoutMs?: number; readonly nowMs?: () => number } = {}) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    super(
      `sqlite:${path}`,
      options.inline
        ? { inline: () => new SqliteTables(path, busyTimeoutMs, options.nowMs) }
        : { thread: threadEntry(import.meta.url, "outputs/stores/sqlite-thread", new URL("./sqlite-thread.ts", import.meta.url)), args: { path, busyTimeoutMs } },
      sqliteStoreError,
    );
  }
}
