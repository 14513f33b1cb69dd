import { z } from "zod";
import { type ExactInt, isExactInt, MAX_EXACT_DIGITS } from "../../common/json/exact-json";
import { type CellValue, type ReplaceOutcome, type Row, TableStoreError } from "./table-store";
import { cutScopeProblem, newerRowsProblem, type RunFence } from "./run-fence";

/**
 * The pure part of every table store: names, column kinds, and whether a row fits its table.
 * SqliteTableStore and PostgresTableStore both use it, which is what makes a row that one store
 * takes also fit the other and a misfit fail with the same ROW_MISMATCH message on both.
 */

/** ColumnKind: what a column holds. INTEGER is exact at any size up to 78 digits (2^256 − 1). */
export type ColumnKind = "INTEGER" | "REAL" | "TEXT" | "JSON";
export const COLUMN_KINDS = ["INTEGER", "REAL", "TEXT", "JSON"] as const satisfies readonly ColumnKind[];

export const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** Name prefixes of the stores' own tables and indexes and of the databases' catalogs. */
export const RESERVED_TABLE_PREFIXES = ["_blockx", "sqlite_", "pg_"] as const;
/** Hidden columns of block tables: the scope of the call that wrote the row. */
export const SCOPE_COLUMNS = ["_chain", "_scope_from", "_scope_to"] as const;
/** Hidden column of block tables: the claim sequence of the run that wrote the row (0: written unfenced). */
export const RUN_SEQ_COLUMN = "_run_seq";
/**
 * Hidden column of block tables: the hash of the scope's last block as it was when the row was
 * computed (null: written before hashes were recorded, or by a writer that knew none). The last
 * block's hash commits to every block of the scope through the parent links, so one hash per scope
 * says which chain the rows were computed from; `blockx verify` compares it with the canonical one.
 */
export const BLOCK_HASH_COLUMN = "_block_hash";
const BLOCK_HASH = /^0x[0-9a-f]{64}$/;
/** Hidden columns of normal tables: the task and call that wrote the row (null: written unfenced). */
export const CALL_COLUMNS = ["_task_id", "_call"] as const;

/** tableNameProblem says why a name cannot be a user table's (undefined: it can). */
export function tableNameProblem(name: string): string | undefined {
  if (!IDENT.test(name)) return `an identifier (letters, digits, _; at most 63), got ${JSON.stringify(name.slice(0, 80))}`;
  const lower = name.toLowerCase();
  const reserved = RESERVED_TABLE_PREFIXES.find((p) => lower.startsWith(p));
  if (reserved) return `names starting with ${reserved} are reserved for the table store, got ${JSON.stringify(name)}`;
  return undefined;
}

/**
 * The scope ledger of a block table: a block table of its own, written in the same transaction as
 * every call's rows, with one row per written scope ({rows: how many the call wrote}) and the same
 * hidden scope, run and `_block_hash` columns. It records what the table's rows cannot: a scope
 * whose function returned no rows was written (`blockx verify` tells it from a missing one), and
 * which blocks a follower has written, with their hashes (`blockx follow` resumes from it).
 */
export const SCOPE_LEDGER_PREFIX = "_blockx_scopes_";
/** The ledger's one user column: how many rows the scope's call wrote to the table. */
export const SCOPE_LEDGER_ROWS_COLUMN = "row_count";

/**
 * scopeLedgerName: the ledger of `table`, at most 63 characters (Postgres' identifier limit): the
 * prefix and the name, or for a long name its first 39 characters and 8 hex digits of its SHA-256.
 */
export function scopeLedgerName(table: string): string {
  const whole = SCOPE_LEDGER_PREFIX + table;
  if (whole.length <= 63) return whole;
  const digest = new Bun.CryptoHasher("sha256").update(table).digest("hex").slice(0, 8);
  return `${SCOPE_LEDGER_PREFIX}${table.slice(0, 39)}_${digest}`;
}

/** isScopeLedgerName: a name of the stores' scope ledgers (written by block-table writers, never named by users). */
export function isScopeLedgerName(name: string): boolean {
  return name.startsWith(SCOPE_LEDGER_PREFIX) && IDENT.test(name) && name.length > SCOPE_LEDGER_PREFIX.length;
}

/** checkTableName throws INVALID_ARGUMENT for a name a table of the store may not have: a user table's, or a scope ledger's. */
export function checkTableName(name: string): void {
  if (isScopeLedgerName(name)) return;
  const problem = tableNameProblem(name);
  if (problem) throw new TableStoreError("INVALID_ARGUMENT", `table name: ${problem}`);
}

export function kindOf(v: CellValue): ColumnKind | null {
  if (v === null) return null;
  if (typeof v === "boolean") return "INTEGER";
  if (typeof v === "number") return Number.isInteger(v) ? "INTEGER" : "REAL";
  if (typeof v === "string") return "TEXT";
  if (isExactInt(v)) return "INTEGER";
  return "JSON";
}

/**
 * inferColumns: the columns of a table created from `rows`. A column's kind is that of its first
 * non-null value; integers and reals mix as REAL; a column null in every row is TEXT.
 */
export function inferColumns(table: string, rows: readonly Row[]): Map<string, ColumnKind> {
  const inferred = new Map<string, ColumnKind | null>();
  for (const row of rows) {
    for (const [name, v] of Object.entries(row)) {
      if (!IDENT.test(name) || name.startsWith("_")) throw new TableStoreError("ROW_MISMATCH", `table ${table}: column name ${JSON.stringify(name.slice(0, 80))} must be an identifier not starting with _`);
      const k = kindOf(v);
      const prev = inferred.get(name) ?? null;
      if (prev === null) inferred.set(name, k);
      else if (k !== null && prev !== k && (prev === "INTEGER" || prev === "REAL") && (k === "INTEGER" || k === "REAL")) inferred.set(name, "REAL");
    }
  }
  return new Map([...inferred].map(([c, k]) => [c, k ?? "TEXT"]));
}

/** A cell as a store binds it: exact integers as digits, JSON as its text, booleans as 0/1. */
export type BoundCell = null | number | string | { readonly digits: string };

function exactDigitsOk(digits: string): boolean {
  return digits.replace("-", "").length <= MAX_EXACT_DIGITS;
}

/**
 * bindRow checks that a row fits the table's columns and returns its cells in column order.
 * A misfit throws ROW_MISMATCH naming the row, table, column and both kinds.
 */
export function bindRow(table: string, columns: ReadonlyMap<string, ColumnKind>, row: Row, i: number): BoundCell[] {
  for (const name of Object.keys(row)) {
    if (!columns.has(name)) throw new TableStoreError("ROW_MISMATCH", `row ${i}: column ${JSON.stringify(name)} is not in table ${table} (columns: ${[...columns.keys()].join(", ")})`);
  }
  const out: BoundCell[] = [];
  for (const [c, want] of columns) {
    const v = row[c] ?? null;
    const got = kindOf(v);
    const mismatch = () => new TableStoreError("ROW_MISMATCH", `row ${i}: column ${JSON.stringify(c)} of table ${table} holds ${want}, got ${got} (${JSON.stringify(v).slice(0, 80)})`);
    if (got === null) {
      out.push(null);
    } else if (want === "INTEGER") {
      if (got !== "INTEGER") throw mismatch();
      if (typeof v === "boolean") out.push(v ? 1 : 0);
      else if (typeof v === "number") out.push(v);
      else {
        const digits = (v as ExactInt).rawJSON;
        if (!exactDigitsOk(digits)) throw new TableStoreError("ROW_MISMATCH", `row ${i}: column ${JSON.stringify(c)} of table ${table} holds integers of at most ${MAX_EXACT_DIGITS} digits, got ${digits.length} digits`);
        out.push({ digits });
      }
    } else if (want === "REAL") {
      // An integer beyond 2^53 would lose digits in a REAL column.
      if (got === "INTEGER" && typeof v !== "boolean" && typeof v === "number") out.push(v);
      else if (got === "REAL") out.push(v as number);
      else throw mismatch();
    } else if (want === "TEXT") {
      if (got !== "TEXT") throw mismatch();
      out.push(v as string);
    } else {
      if (got !== "JSON") throw mismatch();
      out.push(JSON.stringify(v));
    }
  }
  return out;
}

/** TableInfo: a table's columns and whether it is a block table (hidden scope columns). */
export interface TableInfo {
  readonly columns: ReadonlyMap<string, ColumnKind>;
  readonly blockTable: boolean;
}

const kindsSchema = z.record(z.string().regex(IDENT), z.enum(COLUMN_KINDS));

/**
 * parseTableMeta validates a row of the store's own `_blockx_tables` as it is read: a metadata row
 * that someone edited into nonsense fails the write with CORRUPT_METADATA instead of being trusted.
 */
export function parseTableMeta(table: string, kinds: unknown, blockTable: unknown): TableInfo {
  let parsed: unknown;
  try {
    parsed = typeof kinds === "string" ? JSON.parse(kinds) : kinds;
  } catch {
    parsed = undefined;
  }
  const k = kindsSchema.safeParse(parsed);
  const b = z.union([z.boolean(), z.literal(0), z.literal(1)]).safeParse(blockTable);
  if (!k.success || !b.success) {
    throw new TableStoreError("CORRUPT_METADATA", `the table store's metadata for ${table} is not valid (kinds ${JSON.stringify(kinds).slice(0, 120)}, block_table ${JSON.stringify(blockTable)})`);
  }
  return { columns: new Map(Object.entries(k.data)), blockTable: b.data === true || b.data === 1 };
}

/** kindsText is the metadata form of a table's columns. */
export function kindsText(columns: ReadonlyMap<string, ColumnKind>): string {
  return JSON.stringify(Object.fromEntries(columns));
}

/** checkScope: a block scope must be a range of block numbers, its block hash (when given) a 32-byte lowercase 0x hash. */
export function checkScope(scope: { fromBlock: number; toBlock: number; blockHash?: string | null }): void {
  if (!Number.isSafeInteger(scope.fromBlock) || !Number.isSafeInteger(scope.toBlock) || scope.fromBlock < 0 || scope.toBlock < scope.fromBlock) {
    throw new TableStoreError("INVALID_ARGUMENT", `block scope ${scope.fromBlock}..${scope.toBlock} is not a range of block numbers`);
  }
  if (scope.blockHash !== undefined && scope.blockHash !== null && !BLOCK_HASH.test(scope.blockHash)) {
    throw new TableStoreError("INVALID_ARGUMENT", `block scope ${scope.fromBlock}..${scope.toBlock}: block hash ${JSON.stringify(scope.blockHash.slice(0, 80))} is not a 32-byte lowercase 0x hash`);
  }
}

/** hiddenScopeValues: the hidden columns' values of a block-table write, in hiddenColumns' order. */
export function hiddenScopeValues(scope: { chain: string; fromBlock: number; toBlock: number; blockHash?: string | null }, runSeq: number): (string | number | null)[] {
  return [scope.chain, scope.fromBlock, scope.toBlock, runSeq, scope.blockHash ?? null];
}

/** scopeIndexName: the index of a block table's scope columns, in the reserved namespace. */
export function scopeIndexName(table: string): string {
  return `_blockx_scope_${new Bun.CryptoHasher("sha256").update(table).digest("hex").slice(0, 24)}`;
}

/** callIndexName: the index of a normal table's call columns, in the reserved namespace. */
export function callIndexName(table: string): string {
  return `_blockx_call_${new Bun.CryptoHasher("sha256").update(table).digest("hex").slice(0, 24)}`;
}

/** blockTableInfo: a table verification may read: a block table (NO_SUCH_TABLE, or INVALID_ARGUMENT for a normal table). */
export function blockTableInfo(table: string, info: TableInfo | undefined): TableInfo {
  if (!info) throw new TableStoreError("NO_SUCH_TABLE", `no table ${JSON.stringify(table)}`);
  if (!info.blockTable) throw new TableStoreError("INVALID_ARGUMENT", `table ${table} is a normal table; only block tables record blocks`);
  return info;
}

/** scopeCountOf: a store's row of a scope query as a ScopeCount (numbers may arrive as text or floats). */
export function scopeCountOf(r: { f: unknown; t: unknown; h: unknown; s: unknown; n: unknown }): { fromBlock: number; toBlock: number; blockHash: string | null; runSeq: number; rows: number } {
  return { fromBlock: Number(r.f), toBlock: Number(r.t), blockHash: typeof r.h === "string" ? r.h : null, runSeq: Number(r.s ?? 0), rows: Number(r.n) };
}

/** checkOrderColumn: a reader sorts by one of the table's columns (its scope columns included). */
export function checkOrderColumn(table: string, info: TableInfo, column: string): void {
  if (info.columns.has(column) || (info.blockTable && ([...SCOPE_COLUMNS, BLOCK_HASH_COLUMN] as readonly string[]).includes(column))) return;
  throw new TableStoreError("INVALID_ARGUMENT", `table ${table} has no column ${JSON.stringify(column)} to order by (columns: ${[...info.columns.keys()].join(", ")})`);
}

/** checkColumnName: a column name a reader may sort by. */
export function checkColumnName(name: string): void {
  if (!IDENT.test(name)) throw new TableStoreError("INVALID_ARGUMENT", `not a column name: ${JSON.stringify(name.slice(0, 80))}`);
}

/** hiddenColumns: what a store writes beside a row's own columns: the scope and run of a block table, the task and call of a normal one. */
export function hiddenColumns(info: TableInfo): readonly string[] {
  return info.blockTable ? [...SCOPE_COLUMNS, RUN_SEQ_COLUMN, BLOCK_HASH_COLUMN] : CALL_COLUMNS;
}

/**
 * checkReplaced: what a block-table write removed, checked (both stores): a scope reaching past the
 * write's own is SCOPE_CONFLICT, a row of a run claimed after the writing one STALE_RUN; else the
 * outcome. Rows written before fencing (seq null) count as 0.
 */
export function checkReplaced(table: string, scope: { fromBlock: number; toBlock: number }, removed: readonly { f: number; t: number; s: number | null }[], fence: RunFence | null): ReplaceOutcome {
  const distinct = new Map<string, { f: number; t: number; s: number }>();
  for (const o of removed) {
    const key = `${o.f}..${o.t}`;
    const s = Number(o.s ?? 0);
    const had = distinct.get(key);
    if (!had || s > had.s) distinct.set(key, { f: Number(o.f), t: Number(o.t), s });
  }
  const scopes = [...distinct.values()].sort((a, b) => a.f - b.f || a.t - b.t);
  const cut = scopes.find((o) => o.f < scope.fromBlock || o.t > scope.toBlock);
  if (cut) throw new TableStoreError("SCOPE_CONFLICT", cutScopeProblem(table, scope, { from: cut.f, to: cut.t }));
  if (fence) {
    const newer = scopes.find((o) => o.s > fence.seq);
    if (newer) throw new TableStoreError("STALE_RUN", newerRowsProblem(table, fence, { seq: newer.s, from: newer.f, to: newer.t }));
  }
  return { replacedScopes: scopes.length };
}
