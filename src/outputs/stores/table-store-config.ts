import { envVar, enumSchema, intSchema, stringSchema } from "../../common/config/env-config";

import { KNOWN_SCHEMES, storeKindOf } from "./store-kinds";

/** A URL with a scheme; which schemes name a store is store-kinds.ts' (tableStoreProblems). */
const STORE_URL = /^[a-z][a-z0-9+.-]*:[^\s]+$/i;

/**
 * tableStoreVars: where a Worker's rows go and how it talks to the store. The Worker, `blockx
 * table` and `blockx dev` read the same names, so one environment file serves all three.
 */
export const tableStoreVars = {
  tableStoreUrl: envVar(
    "TABLE_STORE_URL",
    "",
    "empty, postgres://user:password@host:port/database (also postgresql://; ?sslmode=... works), sqlite:///path, or parquet:///folder (parquet:folder: relative)",
    "the table store, by its URL's scheme: Postgres shared by every Worker host, a SQLite file, or a Parquet dataset folder any engine reads; empty: the SQLite file TABLE_STORE_PATH",
    stringSchema().refine((s) => s.trim() === "" || STORE_URL.test(s.trim())),
    { secret: "url" },
  ),
  tableStorePath: envVar(
    "TABLE_STORE_PATH",
    "blockx-tables.sqlite",
    "a file path",
    "embedded SQLite table store (when TABLE_STORE_URL is empty); Workers on one host may share it (WAL, synchronous=FULL)",
    stringSchema().refine((s) => s.trim() !== ""),
  ),
  tableStorePoolSize: envVar("TABLE_STORE_POOL_SIZE", "8", "an integer from 1 to 1000", "Postgres: connections per Worker", intSchema(1, 1000)),
  tableStoreStatementTimeoutMs: envVar(
    "TABLE_STORE_STATEMENT_TIMEOUT_MS",
    "30000",
    "an integer from 1 to 86400000",
    "Postgres: a statement running (or waiting for a lock) longer fails its call as STORE_UNAVAILABLE (retried); SQLite: the busy timeout",
    intSchema(1, 86_400_000),
  ),
  tableStoreIdleInTransactionTimeoutMs: envVar(
    "TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    "10000",
    "an integer from 100 to 86400000, below TABLE_STORE_STATEMENT_TIMEOUT_MS",
    "Postgres: the server ends a Worker's session that sits idle inside a transaction this long (a Worker frozen mid-write), releasing the table locks it held",
    intSchema(100, 86_400_000),
  ),
  tableStoreDeadlineMarginMs: envVar(
    "TABLE_STORE_DEADLINE_MARGIN_MS",
    "2000",
    "an integer from 100 to 600000",
    "Postgres: a statement or COMMIT with no answer for TABLE_STORE_STATEMENT_TIMEOUT_MS plus this long (a connection gone silent: the server cannot end it) has its pool's connections closed and replaced, and fails its calls as STORE_UNAVAILABLE (retried)",
    intSchema(100, 600_000),
  ),
  tableStoreConnectTimeoutMs: envVar("TABLE_STORE_CONNECT_TIMEOUT_MS", "10000", "an integer from 1000 to 600000", "Postgres: how long opening a connection may take", intSchema(1000, 600_000)),
  tableStoreReconnectMinMs: envVar("TABLE_STORE_RECONNECT_MIN_MS", "100", "an integer from 0 to 600000", "Postgres: first backoff after the database was unreachable (calls fail fast as STORE_UNAVAILABLE meanwhile)", intSchema(0, 600_000)),
  tableStoreReconnectMaxMs: envVar("TABLE_STORE_RECONNECT_MAX_MS", "5000", "an integer from 0 to 600000", "Postgres: the backoff doubles up to this", intSchema(0, 600_000)),
  tableStoreTls: envVar(
    "TABLE_STORE_TLS",
    "",
    "empty, disable, prefer, require, verify-ca or verify-full",
    "Postgres: TLS mode (empty: the URL's sslmode, else none)",
    enumSchema(["", "disable", "prefer", "require", "verify-ca", "verify-full"] as const),
  ),
  tableStoreTlsCa: envVar("TABLE_STORE_TLS_CA", "", "a PEM file path, or empty", "Postgres: CA certificate to verify the server against (implies verify-full)", stringSchema()),
};

/** TableStoreConfig: the compiled values of tableStoreVars. */
export interface TableStoreConfig {
  readonly tableStoreUrl: string;
  readonly tableStorePath: string;
  readonly tableStorePoolSize: number;
  readonly tableStoreStatementTimeoutMs: number;
  readonly tableStoreIdleInTransactionTimeoutMs: number;
  readonly tableStoreConnectTimeoutMs: number;
  readonly tableStoreReconnectMinMs: number;
  readonly tableStoreReconnectMaxMs: number;
  readonly tableStoreDeadlineMarginMs: number;
  readonly tableStoreTls: string;
  readonly tableStoreTlsCa: string;
}

/** tableStoreProblems: cross-variable rules, as ConfigError lines. */
export function tableStoreProblems(c: TableStoreConfig): string[] {
  const problems: string[] = [];
  if (!storeKindOf(c.tableStoreUrl)) problems.push(`TABLE_STORE_URL: no table store has this URL's scheme (known: ${KNOWN_SCHEMES}; empty: the SQLite file TABLE_STORE_PATH)`);
  if (c.tableStoreReconnectMaxMs < c.tableStoreReconnectMinMs) {
    problems.push(`TABLE_STORE_RECONNECT_MAX_MS: expected at least TABLE_STORE_RECONNECT_MIN_MS (${c.tableStoreReconnectMinMs}), got ${c.tableStoreReconnectMaxMs}`);
  }
  // Only Postgres has the setting; a writer waiting on a frozen session's lock must outlast it.
  if (storeKindOf(c.tableStoreUrl)?.schemes.includes("postgres:") && c.tableStoreIdleInTransactionTimeoutMs >= c.tableStoreStatementTimeoutMs) {
    problems.push(
      `TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS: expected less than TABLE_STORE_STATEMENT_TIMEOUT_MS (${c.tableStoreStatementTimeoutMs}), got ${c.tableStoreIdleInTransactionTimeoutMs}: writers waiting on a frozen Worker's lock would time out before the server frees it`,
    );
  }
  return problems;
}
