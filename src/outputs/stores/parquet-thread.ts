/// <reference lib="webworker" />
import { ParquetTables, parquetStoreError } from "./parquet-tables";
import { serveTableEngine } from "./table-engine-thread";

// The Parquet dataset store's thread: one ParquetTables, one request at a time, in order.
type OpenArgs = { root: string; busyTimeoutMs: number };
serveTableEngine(
  (args) => `parquet:${(args as OpenArgs).root}`,
  (args) => new ParquetTables((args as OpenArgs).root, (args as OpenArgs).busyTimeoutMs),
  parquetStoreError,
);
