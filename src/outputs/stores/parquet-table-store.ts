import { redactUrlCredentials } from "../../common/config/secret-text";
import { threadEntry } from "../../common/threads/thread-entry";
import { parquetRootOf } from "./parquet-layout";
import { ParquetTables, parquetStoreError } from "./parquet-tables";
import type { StoreKind } from "./store-kinds";
import { ThreadTableStore } from "./thread-table-store";

/**
 * parquetStore: a Parquet dataset in a local (or mounted) folder that DuckDB, Spark, Trino, Polars
 * or pandas read directly. TABLE_STORE_URL=parquet:///srv/tables (absolute) or parquet:tables
 * (relative to the process's working folder). Workers on one host (or hosts sharing a filesystem
 * with POSIX locks and renameat2) share it through its catalog and writer lock.
 */
export const parquetStore: StoreKind = {
  schemes: ["parquet:"],
  shared: false,
  describe: (url) => redactUrlCredentials(url),
  open: (url, c, o) => new ParquetTableStore(parquetRootOf(url), { inline: o.inline ?? false, busyTimeoutMs: c.tableStoreStatementTimeoutMs }),
};

/**
 * ParquetTableStore: the Parquet dataset store (ParquetTables: its layout, catalog and commit
 * steps), on a thread of its own like SQLite's (encoding Parquet and fsyncing files never stalls
 * the Worker's event loop), or inline for a one-shot reader (`blockx table`).
 */
export class ParquetTableStore extends ThreadTableStore {
  constructor(root: string, options: { readonly inline?: boolean; readonly busyTimeoutMs?: number; readonly nowMs?: () => number } = {}) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    super(
      `parquet:${root}`,
      options.inline
        ? { inline: () => new ParquetTables(root, busyTimeoutMs, options.nowMs) }
        : { thread: threadEntry(import.meta.url, "outputs/stores/parquet-thread", new URL("./parquet-thread.ts", import.meta.url)), args: { root, busyTimeoutMs } },
      parquetStoreError,
    );
  }
}
