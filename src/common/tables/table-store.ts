import { Database } from "bun:sqlite";

export type CellValue = null | boolean | number | string | CellValue[] | { [key: string]: CellValue };
export type Row = Readonly<Record<string, CellValue>>;

/** The blocks a call covered: one block (block cluster) or one bundle (bundle cluster). */
export interface BlockScope {
  readonly chain: string;
  readonly fromBlock: number;
  readonly toBlock: number;
}

/**
 * TableStore is where Writer Plugins put rows. The embedded default is SQLite; the interface
 * lets a shared database back a multi-host cluster.
 */
/**
 * What a block-table write replaced. `uncovered` lists the earlier scopes that reached past the
 * new call's range: their rows were removed whole (rows carry no block of their own), so the
 * blocks of those scopes outside the new range have no rows until a call covers them again.
 */
export interface ReplaceOutcome {
  readonly replacedScopes: number;
  readonly uncovered: readonly BlockScope[];
}

export interface TableStore {
  /**
   * replaceBlockRows deletes every row of the scope's chain whose recorded scope overlaps the
   * scope's block range and inserts `rows` under the scope, in one transaction: a retried call,
   * a rerun, or a rerun with another start or bundle size never leaves two rows for a block.
   */
  replaceBlockRows(table: string, scope: BlockScope, rows: readonly Row[]): ReplaceOutcome;
  /** appendRows inserts rows, in one transaction. */
  appendRows(table: string, rows: readonly Row[]): void;
  close(): void;
}

export class TableStoreError extends Error {}

type ColumnKind = "INTEGER" | "REAL" | "TEXT" | "JSON";

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** Hidden columns of block tables: the scope of the call that wrote the row. */
const SCOPE_COLUMNS = ["_chain", "_scope_from", "_scope_to"] as const;

function kindOf(v: CellValue): ColumnKind | null {
  if (v === null) return null;
  if (typeof v === "boolean") return "INTEGER";
  if (typeof v === "number") return Number.isInteger(v) ? "INTEGER" : "REAL";
  if (typeof v === "string") return "TEXT";
  return "JSON";
}

function toSql(v: CellValue, kind: ColumnKind): string | number | null {
  if (v === null) return null;
  if (kind === "JSON") return JSON.stringify(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  return v as string | number;
}

interface TableInfo {
  readonly columns: Map<string, ColumnKind>;
  readonly blockTable: boolean;
}

/**
 * SqliteTableStore: embedded SQLite (bun:sqlite) in WAL mode with a busy timeout, so several
 * Worker processes on one host can write the same file. A table is created from the first rows
 * written to it (column kinds INTEGER, REAL, TEXT or JSON, inferred from the values); later
 * rows must fit: an unknown column or a value of another kind fails the write with a message
 * naming the table, the column and both kinds. Block tables carry the writing call's scope in
 * hidden columns, which is what makes a replacement exact; the widest scope written to each table
 * is kept in _blockx_scope_spans, so finding the scopes that overlap a range is an index range
 * scan (scopes starting at most that span before the range) rather than a scan of the table.
 */
export class SqliteTableStore implements TableStore {
  private readonly db: Database;
  private readonly tables = new Map<string, TableInfo>();

  constructor(path: string) {
    this.db = new Database(path, { create: true });
    // busy_timeout first: switching a fresh file to WAL takes a lock that another Worker
    // opening the same file at the same moment may hold (blockx dev starts several at once).
    this.db.exec("PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    // Once per open, not in every write transaction.
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_scope_spans (name TEXT PRIMARY KEY, max_span INTEGER NOT NULL)`);
  }

  replaceBlockRows(table: string, scope: BlockScope, rows: readonly Row[]): ReplaceOutcome {
    if (!Number.isSafeInteger(scope.fromBlock) || !Number.isSafeInteger(scope.toBlock) || scope.fromBlock < 0 || scope.toBlock < scope.fromBlock) {
      throw new TableStoreError(`block scope ${scope.fromBlock}..${scope.toBlock} is not a range of block numbers`);
    }
    const info = this.ensureTable(table, rows, true);
    // A block without rows before any block had some: no table yet, so nothing to replace.
    if (rows.length === 0 && !this.loadTable(table)) return { replacedScopes: 0, uncovered: [] };
    let outcome: ReplaceOutcome = { replacedScopes: 0, uncovered: [] };
    const tx = this.db.transaction(() => {
      const span = this.maxScopeSpan(table);
      // Overlap: from <= scope.to and to >= scope.from; a scope is at most `span` wide, so its
      // start lies in [scope.from - span, scope.to] (the index's range).
      const overlap = `_chain = ? AND _scope_from >= ? AND _scope_from <= ? AND _scope_to >= ?`;
      const params = [scope.chain, scope.fromBlock - span, scope.toBlock, scope.fromBlock] as const;
      // One pass: the delete returns the scopes it removed (a row each; distinct below).
      const removed = this.db.query(`DELETE FROM "${table}" WHERE ${overlap} RETURNING _scope_from AS f, _scope_to AS t`).all(...params) as { f: number; t: number }[];
      const scopes = [...new Map(removed.map((o) => [`${o.f}..${o.t}`, o])).values()].sort((a, b) => a.f - b.f || a.t - b.t);
      this.insert(table, info, rows, [scope.chain, scope.fromBlock, scope.toBlock]);
      this.recordScopeSpan(table, scope.toBlock - scope.fromBlock);
      const uncovered = scopes.filter((o) => o.f < scope.fromBlock || o.t > scope.toBlock).map((o) => ({ chain: scope.chain, fromBlock: o.f, toBlock: o.t }));
      outcome = { replacedScopes: scopes.length, uncovered };
    });
    tx.immediate();
    return outcome;
  }

  appendRows(table: string, rows: readonly Row[]): void {
    if (rows.length === 0) return;
    const info = this.ensureTable(table, rows, false);
    this.db.transaction(() => this.insert(table, info, rows, [])).immediate();
  }

  /** query reads rows back (tests, checkers, the `table` command): user columns only. */
  query(table: string, where = "", params: (string | number)[] = []): Record<string, unknown>[] {
    const info = this.loadTable(table);
    if (!info) throw new TableStoreError(`no table ${JSON.stringify(table)}`);
    const cols = [...info.columns.keys()];
    const out = this.db.query(`SELECT ${[...cols.map((c) => `"${c}"`), ...(info.blockTable ? SCOPE_COLUMNS : [])].join(", ")} FROM "${table}" ${where}`).all(...params) as Record<string, unknown>[];
    for (const r of out) for (const [c, k] of info.columns) if (k === "JSON" && typeof r[c] === "string") r[c] = JSON.parse(r[c] as string);
    return out;
  }

  close(): void {
    this.db.close();
  }

  private insert(table: string, info: TableInfo, rows: readonly Row[], scopeValues: (string | number)[]): void {
    const cols = [...info.columns.keys()];
    const all = [...cols, ...(info.blockTable ? SCOPE_COLUMNS : [])];
    const stmt = this.db.query(`INSERT INTO "${table}" (${all.map((c) => `"${c}"`).join(", ")}) VALUES (${all.map(() => "?").join(", ")})`);
    rows.forEach((row, i) => {
      for (const name of Object.keys(row)) {
        if (!info.columns.has(name)) {
          throw new TableStoreError(`row ${i}: column ${JSON.stringify(name)} is not in table ${table} (columns: ${cols.join(", ")})`);
        }
      }
      const values = cols.map((c) => {
        const v = row[c] ?? null;
        const want = info.columns.get(c)!;
        const got = kindOf(v);
        if (got !== null && got !== want && !(want === "REAL" && got === "INTEGER")) {
          throw new TableStoreError(`row ${i}: column ${JSON.stringify(c)} of table ${table} holds ${want}, got ${got} (${JSON.stringify(v).slice(0, 80)})`);
        }
        return toSql(v, want);
      });
      stmt.run(...values, ...scopeValues);
    });
  }

  private ensureTable(table: string, rows: readonly Row[], blockTable: boolean): TableInfo {
    if (!IDENT.test(table)) throw new TableStoreError(`table name ${JSON.stringify(table)} must be an identifier (letters, digits, _; at most 63)`);
    const existing = this.loadTable(table);
    if (existing) {
      if (existing.blockTable !== blockTable) {
        throw new TableStoreError(`table ${table} is a ${existing.blockTable ? "block" : "normal"} table; it cannot be written as a ${blockTable ? "block" : "normal"} table`);
      }
      return existing;
    }
    if (rows.length === 0) {
      // Nothing to infer columns from; the table is created by the first call that has rows.
      return { columns: new Map(), blockTable };
    }
    // A column's kind is that of its first non-null value; integers and reals mix as REAL; a
    // column that is null in every first row is TEXT. Rows that do not fit fail at insert.
    const inferred = new Map<string, ColumnKind | null>();
    for (const row of rows) {
      for (const [name, v] of Object.entries(row)) {
        if (!IDENT.test(name) || name.startsWith("_")) throw new TableStoreError(`column name ${JSON.stringify(name)} must be an identifier not starting with _`);
        const k = kindOf(v);
        const prev = inferred.get(name) ?? null;
        if (prev === null) inferred.set(name, k);
        else if (k !== null && prev !== k && (prev === "INTEGER" || prev === "REAL") && (k === "INTEGER" || k === "REAL")) inferred.set(name, "REAL");
      }
    }
    const columns = new Map<string, ColumnKind>([...inferred].map(([c, k]) => [c, k ?? "TEXT"]));
    const defs = [...columns].map(([c, k]) => `"${c}" ${k === "JSON" ? "TEXT" : k}`);
    const scope = blockTable ? [`_chain TEXT NOT NULL`, `_scope_from INTEGER NOT NULL`, `_scope_to INTEGER NOT NULL`] : [];
    const kinds = JSON.stringify(Object.fromEntries(columns));
    this.db.transaction(() => {
      this.db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (${[...defs, ...scope].join(", ")})`);
      if (blockTable) this.db.exec(`CREATE INDEX IF NOT EXISTS "${table}_scope" ON "${table}" (_chain, _scope_from, _scope_to)`);
      this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table INTEGER NOT NULL)`);
      this.db.query(`INSERT OR IGNORE INTO _blockx_tables (name, kinds, block_table) VALUES (?, ?, ?)`).run(table, kinds, blockTable ? 1 : 0);
    }).immediate();
    this.tables.delete(table);
    return this.loadTable(table)!;
  }

  /**
   * maxScopeSpan is the widest `_scope_to - _scope_from` ever written to a block table. A table
   * written before spans were kept gets its span computed once from its rows.
   */
  private maxScopeSpan(table: string): number {
    const kept = this.db.query(`SELECT max_span FROM _blockx_scope_spans WHERE name = ?`).get(table) as { max_span: number } | null;
    if (kept) return kept.max_span;
    const found = this.db.query(`SELECT COALESCE(MAX(_scope_to - _scope_from), 0) AS span FROM "${table}"`).get() as { span: number };
    this.db.query(`INSERT INTO _blockx_scope_spans (name, max_span) VALUES (?, ?)`).run(table, found.span);
    return found.span;
  }

  private recordScopeSpan(table: string, span: number): void {
    this.db.query(`UPDATE _blockx_scope_spans SET max_span = ? WHERE name = ? AND max_span < ?`).run(span, table, span);
  }

  /** loadTable reads the table's column kinds (another process may have created it). */
  private loadTable(table: string): TableInfo | undefined {
    const cached = this.tables.get(table);
    if (cached) return cached;
    const meta = this.db.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_blockx_tables'`).get();
    if (!meta) return undefined;
    const r = this.db.query(`SELECT kinds, block_table FROM _blockx_tables WHERE name = ?`).get(table) as { kinds: string; block_table: number } | null;
    if (!r) return undefined;
    const info: TableInfo = { columns: new Map(Object.entries(JSON.parse(r.kinds) as Record<string, ColumnKind>)), blockTable: r.block_table === 1 };
    this.tables.set(table, info);
    return info;
  }
}
