import { parquetStore } from "./parquet-table-store";
import { postgresStore } from "./postgres-table-store";
import { sqliteStore } from "./sqlite-table-store";
import type { TableStore } from "./table-store";
import type { TableStoreConfig } from "./table-store-config";

/**
 * StoreKind: one kind of table store, chosen by the scheme of TABLE_STORE_URL. Adding a store is
 * its file (the TableStore, its StoreKind beside it) plus one line in STORE_KINDS; the table-store
 * contract test runs against every kind it is given.
 */
export interface StoreKind {
  /** The URL schemes that name it, with their colon (`postgres:`). */
  readonly schemes: readonly string[];
  /** Several hosts write one store: one this host cannot reach now may come back (a Worker starts without it). */
  readonly shared: boolean;
  /** The URL as messages and logs may show it (no password). */
  describe(url: string): string;
  open(url: string, c: TableStoreConfig, o: StoreOpenOptions): TableStore;
}

export interface StoreOpenOptions {
  /** One-shot readers (`blockx table`): no thread of the store's own. */
  readonly inline?: boolean;
}

/** The table stores: one line each. An empty TABLE_STORE_URL is the SQLite file TABLE_STORE_PATH. */
export const STORE_KINDS: readonly StoreKind[] = [sqliteStore, postgresStore, parquetStore];

/** storeKindOf: the kind a TABLE_STORE_URL names (empty: SQLite at TABLE_STORE_PATH), or null. */
export function storeKindOf(url: string): StoreKind | null {
  const u = url.trim();
  if (u === "") return sqliteStore;
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(u)?.[1]?.toLowerCase();
  return STORE_KINDS.find((k) => scheme !== undefined && k.schemes.includes(scheme)) ?? null;
}

/** KNOWN_SCHEMES: for messages (`postgres://, postgresql://, sqlite://`). */
export const KNOWN_SCHEMES = STORE_KINDS.flatMap((k) => k.schemes.map((s) => `${s}//`)).join(", ");
