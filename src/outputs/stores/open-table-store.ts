import { KNOWN_SCHEMES, storeKindOf, type StoreOpenOptions } from "./store-kinds";
import { TableStoreError, type TableStore } from "./table-store";
import type { TableStoreConfig } from "./table-store-config";

/**
 * openTableStore opens the store the configuration names: the kind TABLE_STORE_URL's scheme names
 * (store-kinds.ts), or the SQLite file TABLE_STORE_PATH when it is empty (its writes on a thread of
 * their own; `inline` for a one-shot reader).
 */
export function openTableStore(c: TableStoreConfig, o: StoreOpenOptions = {}): TableStore {
  const url = c.tableStoreUrl.trim();
  const kind = storeKindOf(url);
  if (!kind) throw new TableStoreError("INVALID_ARGUMENT", `TABLE_STORE_URL: no table store has this URL's scheme (known: ${KNOWN_SCHEMES}; empty: the SQLite file TABLE_STORE_PATH)`);
  return kind.open(url, c, o);
}

/** describeTableStore: which variable names the store, and the store without its password, for messages. */
export function describeTableStore(c: TableStoreConfig): { readonly which: string; readonly shared: boolean } {
  const url = c.tableStoreUrl.trim();
  const kind = storeKindOf(url);
  if (url === "") return { which: `TABLE_STORE_PATH (${c.tableStorePath})`, shared: false };
  return { which: `TABLE_STORE_URL (${kind ? kind.describe(url) : "?"})`, shared: kind?.shared ?? false };
}
