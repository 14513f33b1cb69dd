import { Database } from "bun:sqlite";

/**
 * RawTableReader reads a table store file with plain SQL, read-only: the tests' view of the rows,
 * independent of the writer under test (SqliteTableStore). Values come back as SQLite holds them
 * (a JSON cell is its text; an integer beyond 2^53 its digits); the hidden scope columns
 * (_chain, _scope_from, _scope_to) come too. PostgresRawReader is the same for a Postgres store.
 */
export class RawTableReader {
  private readonly db: Database;

  constructor(path: string) {
    this.db = new Database(path, { readonly: true });
  }

  /** query: every column of `table`, filtered and ordered by the SQL text in `where`. */
  query(table: string, where = "", params: (string | number)[] = []): Record<string, unknown>[] {
    checkName(table);
    return this.db.query(`SELECT * FROM "${table}" ${where}`).all(...params) as Record<string, unknown>[];
  }

  /** hasTable: whether `table` exists (a table is made by its first write). */
  hasTable(table: string): boolean {
    checkName(table);
    return this.db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== null;
  }

  close(): void {
    this.db.close();
  }
}

function checkName(table: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table name: ${JSON.stringify(table)}`);
}

/**
 * PostgresRawReader reads a Postgres table store with plain SQL: NUMERIC columns come back as
 * Postgres prints them (text digits; an ORDER BY on one sorts as text), jsonb as its text; scope
 * columns as numbers.
 */
export class PostgresRawReader {
  private readonly sql: import("bun").SQL;

  constructor(url: string) {
    const { SQL } = require("bun") as typeof import("bun");
    this.sql = new SQL(url, { max: 2 });
  }

  /** query: every column of `table` (numeric and jsonb as text), filtered and ordered by `where`. */
  async query(table: string, where = "", params: (string | number)[] = []): Promise<Record<string, unknown>[]> {
    checkName(table);
    const cols = (await this.sql.unsafe(`SELECT column_name AS c, data_type AS t FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`, [table])) as { c: string; t: string }[];
    if (cols.length === 0) throw new Error(`no table ${table}`);
    const select = cols.map(({ c, t }) => (c === "_scope_from" || c === "_scope_to" ? `"${c}"::float8 AS "${c}"` : t === "numeric" || t === "jsonb" ? `"${c}"::text AS "${c}"` : `"${c}"`)).join(", ");
    return (await this.sql.unsafe(`SELECT ${select} FROM "${table}" ${where}`, params)) as Record<string, unknown>[];
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 0 });
  }
}

/** rawRows reads a table from any store kind: a file path (SQLite), a postgres:// URL, or a parquet: dataset (read by DuckDB, by glob). */
export async function rawRows(store: string, table: string, where = ""): Promise<Record<string, unknown>[]> {
  if (store.startsWith("parquet:")) {
    const { duckRows } = await import("./parquet-dataset-reader");
    return duckRows(store, table, where);
  }
  if (/^postgres(ql)?:\/\//.test(store)) {
    const r = new PostgresRawReader(store);
    try {
      return await r.query(table, where);
    } finally {
      await r.close();
    }
  }
  const r = new RawTableReader(store);
  try {
    return r.query(table, where);
  } finally {
    r.close();
  }
}
