import { Database } from "bun:sqlite";

/**
 * RawTableReader reads a table store file with plain SQL, read-only: the tests' view of the rows,
 * independent of the writer under test (SqliteTableStore). Values come back as SQLite holds them
 * (a JSON cell is its text); the hidden scope columns (_chain, _scope_from, _scope_to) come too.
 */
export class RawTableReader {
  private readonly db: Database;

  constructor(path: string) {
    this.db = new Database(path, { readonly: true });
  }

  /** query: every column of `table`, filtered and ordered by the SQL text in `where`. */
  query(table: string, where = "", params: (string | number)[] = []): Record<string, unknown>[] {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new Error(`not a table name: ${JSON.stringify(table)}`);
    return this.db.query(`SELECT * FROM "${table}" ${where}`).all(...params) as Record<string, unknown>[];
  }

  close(): void {
    this.db.close();
  }
}
