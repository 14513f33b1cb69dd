import { PostgresTableStore } from "./postgres-table-store";
import { SqliteTableStore } from "./sqlite-table-store";
import type { TableStore } from "./table-store";
import type { TableStoreConfig } from "./table-store-config";

/**
 * openTableStore opens the store the configuration names: Postgres when TABLE_STORE_URL is set,
 * else the SQLite file (its writes on a thread of their own; `inline` for a one-shot reader).
 */
export function openTableStore(c: TableStoreConfig, o: { readonly inline?: boolean } = {}): TableStore {
  if (c.tableStoreUrl.trim() !== "") {
    return new PostgresTableStore({
      url: c.tableStoreUrl.trim(),
      poolSize: c.tableStorePoolSize,
      statementTimeoutMs: c.tableStoreStatementTimeoutMs,
      idleInTransactionTimeoutMs: c.tableStoreIdleInTransactionTimeoutMs,
      connectTimeoutMs: c.tableStoreConnectTimeoutMs,
      reconnectMinMs: c.tableStoreReconnectMinMs,
      reconnectMaxMs: c.tableStoreReconnectMaxMs,
      deadlineMarginMs: c.tableStoreDeadlineMarginMs,
      tls: c.tableStoreTls,
      tlsCaFile: c.tableStoreTlsCa,
    });
  }
  return new SqliteTableStore(c.tableStorePath.trim(), { inline: o.inline ?? false, busyTimeoutMs: c.tableStoreStatementTimeoutMs });
}
