import { checkTableName } from "./table-schema";
import { TableStoreError } from "./table-store";

/**
 * The Parquet dataset's layout, pure: where a scope's or a call's rows lie, and the bounds that keep
 * every name a safe path part. A reader selects a table and a chain by path:
 *
 *   <root>/<table>/chain=<chain>/<from>-<to>.parquet       a block table's (or bundle's) scope
 *   <root>/<table>/task=<task id>/call=<n>.parquet         a normal table's rows of one call of a task
 *   <root>/<table>/task=~unfenced/<n>.parquet              a normal table's rows written without a run
 *   <root>/_blockx/...                                     the store's own (catalog, staging): readers skip `_` folders
 *
 * so `<root>/<table>/**\/*.parquet` is a table, and `<root>/<table>/chain=eth/*.parquet` its rows of one chain.
 */

/** The store's own folder inside the dataset (Spark, Hive, DuckDB's hive readers skip `_` folders). */
export const OWN_DIR = "_blockx";
/** A chain's folder name part: a safe path part on every filesystem. */
export const CHAIN_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** At most this many tables (one file each) in one call's commit. */
export const MAX_FILES_PER_COMMIT = 64;
/** At most this many bytes (cells' text and numbers, about what Parquet stores before compression) in one row. */
export const MAX_ROW_BYTES = 16 << 20;
/** At most this many bytes in one table's rows of one call (one file). */
export const MAX_FILE_BYTES = 512 << 20;
/** The task part of a folder name stays under NAME_MAX (255 bytes) with room for `task=`. */
export const MAX_TASK_PART_BYTES = 200;
/** The folder of rows appended without a run (tests, tools): `~` never appears in an encoded task id. */
export const UNFENCED_PART = "task=~unfenced";

/** checkParquetTableName: a user table name (table-schema's rules) that is also a folder readers do not skip. */
export function checkParquetTableName(table: string): void {
  checkTableName(table);
  if (table.startsWith("_")) throw new TableStoreError("INVALID_ARGUMENT", `table name: a Parquet table is a folder, and readers skip folders starting with _, got ${JSON.stringify(table)}`);
}

/** chainPart: the folder of a chain's scopes in a block table; INVALID_ARGUMENT for a name that is not a safe path part. */
export function chainPart(chain: string): string {
  if (!CHAIN_NAME.test(chain)) {
    throw new TableStoreError("INVALID_ARGUMENT", `chain name: a Parquet dataset's folder part (a letter or digit, then letters, digits, _ . -; at most 64), got ${JSON.stringify(chain.slice(0, 80))}`);
  }
  return `chain=${chain}`;
}

/** taskPart: the folder of a task's calls in a normal table: the id with every byte outside [A-Za-z0-9_.-] as %XX. */
export function taskPart(taskId: string): string {
  const enc = [...new TextEncoder().encode(taskId)].map((b) => (/[A-Za-z0-9_.-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`)).join("");
  if (enc.length === 0 || enc.length > MAX_TASK_PART_BYTES) {
    throw new TableStoreError("INVALID_ARGUMENT", `task id: a Parquet dataset's folder part of 1 to ${MAX_TASK_PART_BYTES} bytes once encoded, got ${enc.length}`);
  }
  return `task=${enc}`;
}

/** scopeFileName: a block scope's file; the same scope always has the same name (a rewrite renames over it). */
export function scopeFileName(fromBlock: number, toBlock: number): string {
  return `${fromBlock}-${toBlock}.parquet`;
}

/** callFileName: a call's file in its task's folder. */
export function callFileName(callIndex: number): string {
  if (!Number.isSafeInteger(callIndex) || callIndex < 0) throw new TableStoreError("INVALID_ARGUMENT", `call index ${callIndex} is not a call's index`);
  return `call=${callIndex}.parquet`;
}

/** parquetRootOf: the folder of a parquet: URL (`parquet:///srv/tables` absolute, `parquet:tables` relative to the working folder). */
export function parquetRootOf(url: string): string {
  const rest = url.trim().slice("parquet:".length);
  if (rest.startsWith("//") && !rest.startsWith("///")) {
    throw new TableStoreError("INVALID_ARGUMENT", "TABLE_STORE_URL: a parquet: URL names a local folder (parquet:///absolute/path or parquet:relative/path), not a host");
  }
  const path = decodeURIComponent(rest.startsWith("//") ? rest.slice(2) : rest);
  if (path === "") throw new TableStoreError("INVALID_ARGUMENT", "TABLE_STORE_URL: a parquet: URL needs a folder");
  return path;
}
