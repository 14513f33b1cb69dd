import type { Database } from "bun:sqlite";
import { TableStoreError } from "./table-store";

/**
 * Table owners: a table belongs to the identity whose call created it (its certificate's identity
 * key, with the sub-identity a proxy passed: `client/alice`, `proxy/gw1/uid:1000`); writing or
 * replacing it afterwards needs that identity or an admin's certificate. The rule lives here,
 * pure; every table store records the owner in its metadata (`_blockx_tables.owner`) and applies
 * `checkOwner` in the commit's own transaction, before any row of the call is written.
 *
 * - A table with no owner (made before owners existed, or by a writer without an identity under
 *   BLOCKX_INSECURE) is writable by anyone, and stays unowned: nobody claims it by writing. An
 *   operator gives it one by setting `owner` in the store's `_blockx_tables` (README, Security).
 * - A writer without an identity (BLOCKX_INSECURE: nobody is authenticated) is not checked: there
 *   is nobody to check, and ownership cannot be enforced.
 * - The store's own tables (the reserved `_blockx` namespace, which only the Worker writes, beside
 *   every task's rows) belong to nobody and are never checked.
 */

/** TableWriter: who commits a call's rows, as the Worker verified it (the task's requester). */
export interface TableWriter {
  /** The identity key, with any sub-identity: the owner a table made by this writer records. */
  readonly identity: string;
  /** An admin's certificate: may write every table. */
  readonly admin: boolean;
}

/** writerOf: the TableWriter of a task's requester; null when it has no identity (BLOCKX_INSECURE). */
export function writerOf(identity: string, admin: boolean): TableWriter | null {
  return identity === "" ? null : { identity, admin };
}

/** storeOwnTable: a table of the store's own reserved namespace (never owned). */
function storeOwnTable(table: string): boolean {
  return table.toLowerCase().startsWith("_blockx");
}

/** ownerOfNewTable: the owner `table`, created by `writer`, records (null: unowned). */
export function ownerOfNewTable(table: string, writer: TableWriter | null | undefined): string | null {
  return writer && !storeOwnTable(table) ? writer.identity : null;
}

/** ownerProblem: why `writer` may not write `table` owned by `owner`, or null when it may. */
export function ownerProblem(table: string, owner: string | null, writer: TableWriter | null | undefined): string | null {
  if (!writer || owner === null || writer.admin || writer.identity === owner || storeOwnTable(table)) return null;
  return `table ${table} belongs to ${owner}: ${writer.identity} may not write it (only its owner or an admin may)`;
}

/** checkOwner throws NOT_OWNER when `writer` may not write `table` (see ownerProblem). */
export function checkOwner(table: string, owner: string | null, writer: TableWriter | null | undefined): void {
  const problem = ownerProblem(table, owner, writer);
  if (problem) throw new TableStoreError("NOT_OWNER", problem);
}

/**
 * addOwnerColumn gives a SQLite catalog's `_blockx_tables` (the SQLite store's file, the Parquet
 * store's catalog) its `owner` column; tables listed before it are unowned (NULL).
 */
export function addOwnerColumn(db: Database): void {
  if ((db.query(`PRAGMA table_info(_blockx_tables)`).all() as { name: string }[]).some((c) => c.name === "owner")) return;
  try {
    db.exec(`ALTER TABLE _blockx_tables ADD COLUMN owner TEXT`);
  } catch (e) {
    if (!/duplicate column/i.test((e as Error).message)) throw e; // another process added it first
  }
}

/**
 * checkSqliteOwner reads `table`'s owner from a SQLite catalog inside the caller's transaction (never
 * from a cache: an operator may give a table an owner while the store runs) and applies checkOwner.
 */
export function checkSqliteOwner(db: Database, table: string, writer: TableWriter | null | undefined): void {
  if (!writer || writer.admin) return;
  const r = db.query(`SELECT owner FROM _blockx_tables WHERE name = ?`).get(table) as { owner: unknown } | null;
  checkOwner(table, typeof r?.owner === "string" ? r.owner : null, writer);
}
