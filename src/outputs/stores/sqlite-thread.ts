/// <reference lib="webworker" />
import { sqliteStoreError } from "./sqlite-table-store";
import { SqliteTables } from "./sqlite-tables";
import { serveTableEngine } from "./table-engine-thread";

// The SQLite table store's thread: one SqliteTables, one request at a time, in order.
type OpenArgs = { path: string; busyTimeoutMs: number };
serveTableEngine(
  (args) => `sqlite:${(args as OpenArgs).path}`,
  (args) => new SqliteTables((args as OpenArgs).path, (args as OpenArgs).busyTimeoutMs),
  sqliteStoreError,
);
