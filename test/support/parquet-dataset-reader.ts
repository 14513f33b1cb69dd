import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseExactJson } from "../../src/common/json/exact-json";
import { parquetRootOf } from "../../src/outputs/stores/parquet-layout";

/**
 * The tests' readers of a Parquet dataset store that are not the store: DuckDB (`@duckdb/node-api`,
 * reading local Parquet with no extension) lists and reads the files as any engine would, by glob;
 * the store's catalog is read with plain SQL only to learn which tables exist and their kinds.
 */
type DuckConnection = Awaited<ReturnType<Awaited<ReturnType<typeof import("@duckdb/node-api").DuckDBInstance.create>>["connect"]>>;
let connection: Promise<DuckConnection> | undefined;

async function duck(): Promise<DuckConnection> {
  connection ??= (async () => {
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const db = await DuckDBInstance.create(":memory:");
    return db.connect();
  })();
  return connection;
}

/** duckQuery runs one statement and gives its rows as JS values (BIGINT as bigint, VARCHAR and JSON as text). */
export async function duckQuery(sql: string): Promise<Record<string, unknown>[]> {
  const c = await duck();
  const r = await c.runAndReadAll(sql);
  return r.getRowObjectsJS() as Record<string, unknown>[];
}

/** tableGlob: the glob a reader of one table uses. */
export function tableGlob(url: string, table: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table name: ${JSON.stringify(table)}`);
  return join(parquetRootOf(url), table, "**", "*.parquet").replaceAll("'", "''");
}

/** duckRows: every row of `table` as DuckDB reads the dataset by glob (no files: none), filtered and ordered by the SQL text in `where`. */
export async function duckRows(url: string, table: string, where = "", columns = "*"): Promise<Record<string, unknown>[]> {
  try {
    return await duckQuery(`SELECT ${columns} FROM read_parquet('${tableGlob(url, table)}', union_by_name = true, hive_partitioning = false, filename = true) ${where}`);
  } catch (e) {
    if (/No files found/.test(String((e as Error).message))) return [];
    throw e;
  }
}

/** catalogTables: the tables the store's catalog names, with their kinds (null when the metadata is not valid JSON). */
export function catalogTables(url: string): { name: string; kinds: Record<string, string> | null; block: boolean }[] {
  const file = join(parquetRootOf(url), "_blockx", "catalog.sqlite");
  if (!existsSync(file)) return [];
  const db = new Database(file, { readonly: true });
  try {
    return (db.query(`SELECT name, kinds, block_table FROM _blockx_tables ORDER BY name`).all() as { name: string; kinds: string; block_table: number }[]).map((r) => {
      let kinds: Record<string, string> | null = null;
      try {
        kinds = JSON.parse(r.kinds) as Record<string, string>;
        if (Object.values(kinds).some((k) => !["INTEGER", "REAL", "TEXT", "JSON"].includes(k))) kinds = null;
      } catch {
        kinds = null;
      }
      return { name: r.name, kinds, block: r.block_table === 1 };
    });
  } finally {
    db.close();
  }
}

/** canonicalRow: a row as text for comparison across readers: integers as digits, JSON re-serialised exactly, scope columns as numbers. */
export function canonicalRow(kinds: Record<string, string>, block: boolean, row: Record<string, unknown>): string {
  const out: Record<string, unknown> = {};
  for (const [c, k] of Object.entries(kinds)) {
    const v = row[c] ?? null;
    if (v === null) out[c] = null;
    else if (k === "INTEGER") out[c] = typeof v === "object" && v !== null && "rawJSON" in v ? String((v as { rawJSON: string }).rawJSON) : String(v);
    else if (k === "JSON") out[c] = JSON.stringify(typeof v === "string" ? parseExactJson(v) : v);
    else if (k === "REAL") out[c] = Number(v);
    else out[c] = v;
  }
  if (block) {
    for (const c of ["_chain", "_scope_from", "_scope_to"]) out[c] = c === "_chain" ? String(row[c]) : Number(row[c]);
    out._block_hash = typeof row._block_hash === "string" ? row._block_hash : null;
  }
  return JSON.stringify(out);
}
