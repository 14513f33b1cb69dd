import { Database } from "bun:sqlite";
import { exactInt } from "../json/exact-json";
import { parseExactJson } from "../json/exact-json";
import { type BoundCell, bindRow, checkColumnName, checkOrderColumn, checkScope, checkTableName, type ColumnKind, inferColumns, kindsText, parseTableMeta, SCOPE_COLUMNS, scopeIndexName, type TableInfo } from "./table-schema";
import { type CellValue, NO_OUTCOME, type ReadOptions, type ReplaceOutcome, type Row, TableStoreError, type TableWrite } from "./table-store";
import { callResult, type GroupCommitResult } from "./group-commit-queue";

/** A call's writes with their tables made and rows bound, ready to apply. */
interface Prepared {
  readonly writes: readonly TableWrite[];
  readonly infos: (TableInfo | undefined)[];
  readonly bound: BoundCell[][][];
}

/** SQLite's declared type per kind. INTEGER columns have none (BLOB affinity): see bindCell. */
const SQLITE_TYPE: Record<ColumnKind, string> = { INTEGER: "", REAL: " REAL", TEXT: " TEXT", JSON: " TEXT" };

/**
 * bindCell: SQLite holds a safe integer as an integer and any other integer as its digits (text).
 * An INTEGER column has no declared type because SQLite's INTEGER or NUMERIC affinity would turn the
 * digits of an integer beyond 2^63 into a REAL and lose them; with none, text stays text.
 */
function bindCell(c: BoundCell): string | number | null {
  return c !== null && typeof c === "object" ? c.digits : c;
}

/**
 * SqliteTables is the SQLite table store's engine: synchronous bun:sqlite calls, run by
 * SqliteTableStore on a thread of its own (or inline). WAL mode with synchronous=FULL: a committed
 * write survives a power loss, and several Worker processes on one host can share the file (busy
 * timeout). Block tables carry the writing call's scope in hidden columns, which is what makes a
 * replacement exact; the widest scope written to each table is kept in _blockx_scope_spans, so
 * finding the scopes that overlap a range is an index range scan (scopes starting at most that span
 * before the range) rather than a scan of the table.
 */
export class SqliteTables {
  private readonly db: Database;
  private readonly tables = new Map<string, TableInfo>();

  constructor(path: string, busyTimeoutMs = 10_000) {
    this.db = new Database(path, { create: true });
    // busy_timeout first: switching a fresh file to WAL takes a lock that another Worker
    // opening the same file at the same moment may hold (blockx dev starts several at once).
    this.db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_scope_spans (name TEXT PRIMARY KEY, max_span INTEGER NOT NULL)`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table INTEGER NOT NULL)`);
  }

  /** commit: every table first exists (own transactions), then all rows in one transaction. */
  commit(writes: readonly TableWrite[]): ReplaceOutcome[] {
    const prepared = this.prepare(writes);
    let outcomes: ReplaceOutcome[] = [];
    this.db.transaction(() => (outcomes = this.apply(prepared))).immediate();
    return outcomes;
  }

  /**
   * commitGroup commits several calls' writes with one transaction and one fsync (group commit):
   * each call in a savepoint of its own, so a call that fails (rows that do not fit, a table that
   * cannot be made, a statement the database refuses for its data) gets its own error and writes
   * nothing, while the others commit. Every call's outcome is durable only with the group's COMMIT:
   * an error that means the store is not available now (`classify` says STORE_UNAVAILABLE: the
   * disk, a lock held past the busy timeout, the COMMIT itself) fails the whole group and writes
   * nothing of it; each call would have met it alone too.
   */
  commitGroup(groups: readonly (readonly TableWrite[])[], classify: (e: unknown) => TableStoreError): GroupCommitResult[] {
    const own = (e: unknown): GroupCommitResult => {
      const err = classify(e);
      if (err.code === "STORE_UNAVAILABLE") throw e;
      return callResult(err);
    };
    const results: GroupCommitResult[] = new Array(groups.length);
    const prepared: (Prepared | null)[] = groups.map((writes, i) => {
      try {
        return this.prepare(writes);
      } catch (e) {
        results[i] = own(e);
        return null;
      }
    });
    this.db
      .transaction(() => {
        prepared.forEach((p, i) => {
          if (!p) return;
          try {
            // A nested transaction is a savepoint: a failed call rolls back to it, alone.
            this.db.transaction(() => (results[i] = { ok: true, outcomes: this.apply(p) }))();
          } catch (e) {
            results[i] = own(e);
          }
        });
      })
      .immediate();
    return results;
  }

  /** prepare makes every table of one call's writes exist (own transactions) and binds its rows; a misfit throws before anything of the call is written. */
  private prepare(writes: readonly TableWrite[]): Prepared {
    const infos = writes.map((w) => {
      checkTableName(w.table);
      if (w.kind === "replaceBlock") checkScope(w.scope);
      return this.ensureTable(w.table, w.rows, w.kind === "replaceBlock");
    });
    const bound = writes.map((w, i) => (infos[i] ? w.rows.map((r, j) => bindRow(w.table, infos[i]!.columns, r, j)) : []));
    return { writes, infos, bound };
  }

  /** apply writes one prepared call's rows; inside a transaction. */
  private apply({ writes, infos, bound }: Prepared): ReplaceOutcome[] {
    return writes.map((w, i) => {
      const info = infos[i];
      if (!info) return NO_OUTCOME; // no rows and no table yet: nothing to replace
      if (w.kind === "append") {
        this.insert(w.table, info, bound[i]!, []);
        return NO_OUTCOME;
      }
      return this.replace(w.table, info, w.scope, bound[i]!);
    });
  }

  read(table: string, options: ReadOptions = {}): Record<string, CellValue>[] {
    checkTableName(table);
    if (options.orderBy !== undefined) checkColumnName(options.orderBy);
    const info = this.loadTable(table);
    if (!info) throw new TableStoreError("NO_SUCH_TABLE", `no table ${JSON.stringify(table)}`);
    if (options.orderBy !== undefined) checkOrderColumn(table, info, options.orderBy);
    const limit = options.limit ?? 0;
    const cols = [...info.columns.keys()].map((c) => `"${c}"`).concat(info.blockTable ? SCOPE_COLUMNS : []);
    const sql = `SELECT ${cols.join(", ")} FROM "${table}"${options.orderBy ? ` ORDER BY "${options.orderBy}"` : ""}${limit > 0 ? ` LIMIT ${Math.trunc(limit)}` : ""}`;
    const out = this.db.query(sql).all() as Record<string, CellValue>[];
    for (const r of out) {
      for (const [c, k] of info.columns) {
        const v = r[c];
        if (k === "JSON" && typeof v === "string") r[c] = parseExactJson(v) as CellValue;
        else if (k === "INTEGER" && typeof v === "string") r[c] = exactInt(v);
      }
    }
    return out;
  }

  close(): void {
    this.db.close();
  }

  private replace(table: string, info: TableInfo, scope: { chain: string; fromBlock: number; toBlock: number }, rows: BoundCell[][]): ReplaceOutcome {
    const span = this.maxScopeSpan(table);
    // Overlap: from <= scope.to and to >= scope.from; a scope is at most `span` wide, so its
    // start lies in [scope.from - span, scope.to] (the index's range).
    const overlap = `_chain = ? AND _scope_from >= ? AND _scope_from <= ? AND _scope_to >= ?`;
    const params = [scope.chain, scope.fromBlock - span, scope.toBlock, scope.fromBlock] as const;
    // One pass: the delete returns the scopes it removed (a row each; distinct below).
    const removed = this.db.query(`DELETE FROM "${table}" WHERE ${overlap} RETURNING _scope_from AS f, _scope_to AS t`).all(...params) as { f: number; t: number }[];
    const scopes = [...new Map(removed.map((o) => [`${o.f}..${o.t}`, o])).values()].sort((a, b) => a.f - b.f || a.t - b.t);
    this.insert(table, info, rows, [scope.chain, scope.fromBlock, scope.toBlock]);
    this.db.query(`UPDATE _blockx_scope_spans SET max_span = ? WHERE name = ? AND max_span < ?`).run(scope.toBlock - scope.fromBlock, table, scope.toBlock - scope.fromBlock);
    const uncovered = scopes.filter((o) => o.f < scope.fromBlock || o.t > scope.toBlock).map((o) => ({ chain: scope.chain, fromBlock: o.f, toBlock: o.t }));
    return { replacedScopes: scopes.length, uncovered };
  }

  private insert(table: string, info: TableInfo, rows: BoundCell[][], scopeValues: (string | number)[]): void {
    if (rows.length === 0) return;
    const all = [...info.columns.keys(), ...(info.blockTable ? SCOPE_COLUMNS : [])];
    const stmt = this.db.query(`INSERT INTO "${table}" (${all.map((c) => `"${c}"`).join(", ")}) VALUES (${all.map(() => "?").join(", ")})`);
    for (const cells of rows) stmt.run(...cells.map(bindCell), ...scopeValues);
  }

  /** ensureTable: the table's info, creating it from `rows` when it does not exist (undefined: no rows to infer from). */
  private ensureTable(table: string, rows: readonly Row[], blockTable: boolean): TableInfo | undefined {
    let info = this.loadTable(table);
    if (!info) {
      // Nothing to infer columns from: the table is created by the first call that has rows.
      if (rows.length === 0) return undefined;
      const columns = inferColumns(table, rows);
      const defs = [...columns].map(([c, k]) => `"${c}"${SQLITE_TYPE[k]}`);
      const scope = blockTable ? [`_chain TEXT NOT NULL`, `_scope_from INTEGER NOT NULL`, `_scope_to INTEGER NOT NULL`] : [];
      this.db
        .transaction(() => {
          this.db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (${[...defs, ...scope].join(", ")})`);
          if (blockTable) this.db.exec(`CREATE INDEX IF NOT EXISTS "${scopeIndexName(table)}" ON "${table}" (_chain, _scope_from, _scope_to)`);
          this.db.query(`INSERT OR IGNORE INTO _blockx_tables (name, kinds, block_table) VALUES (?, ?, ?)`).run(table, kindsText(columns), blockTable ? 1 : 0);
          if (blockTable) this.db.query(`INSERT OR IGNORE INTO _blockx_scope_spans (name, max_span) VALUES (?, 0)`).run(table);
        })
        .immediate();
      info = this.loadTable(table)!; // another process may have created it first, with its kinds
    }
    if (info.blockTable !== blockTable) {
      throw new TableStoreError("ROW_MISMATCH", `table ${table} is a ${info.blockTable ? "block" : "normal"} table; it cannot be written as a ${blockTable ? "block" : "normal"} table`);
    }
    return info;
  }

  /**
   * maxScopeSpan is the widest `_scope_to - _scope_from` ever written to a block table. A table
   * written before spans were kept gets its span computed once from its rows.
   */
  private maxScopeSpan(table: string): number {
    const kept = this.db.query(`SELECT max_span FROM _blockx_scope_spans WHERE name = ?`).get(table) as { max_span: unknown } | null;
    if (kept) {
      if (!Number.isSafeInteger(kept.max_span) || (kept.max_span as number) < 0) throw new TableStoreError("CORRUPT_METADATA", `the table store's scope span for ${table} is not valid: ${JSON.stringify(kept.max_span)}`);
      return kept.max_span as number;
    }
    const found = this.db.query(`SELECT COALESCE(MAX(_scope_to - _scope_from), 0) AS span FROM "${table}"`).get() as { span: number };
    this.db.query(`INSERT INTO _blockx_scope_spans (name, max_span) VALUES (?, ?)`).run(table, found.span);
    return found.span;
  }

  /** loadTable reads the table's column kinds (another process may have created it), validated. */
  private loadTable(table: string): TableInfo | undefined {
    const cached = this.tables.get(table);
    if (cached) return cached;
    const r = this.db.query(`SELECT kinds, block_table FROM _blockx_tables WHERE name = ?`).get(table) as { kinds: unknown; block_table: unknown } | null;
    if (!r) return undefined;
    const info = parseTableMeta(table, r.kinds, r.block_table);
    this.tables.set(table, info);
    return info;
  }
}
