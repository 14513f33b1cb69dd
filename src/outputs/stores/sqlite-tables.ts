import { Database } from "bun:sqlite";
import { exactInt } from "../../common/json/exact-json";
import { parseExactJson } from "../../common/json/exact-json";
import {
  type BoundCell,
  bindRow,
  CALL_COLUMNS,
  callIndexName,
  checkColumnName,
  checkOrderColumn,
  checkScope,
  checkTableName,
  type ColumnKind,
  inferColumns,
  kindsText,
  parseTableMeta,
  checkReplaced,
  hiddenColumns,
  RUN_SEQ_COLUMN,
  SCOPE_COLUMNS,
  BLOCK_HASH_COLUMN,
  hiddenScopeValues,
  blockTableInfo,
  scopeCountOf,
  scopeIndexName,
  type TableInfo,
} from "./table-schema";
import { type CellValue, NO_OUTCOME, type ReadOptions, type ReplaceOutcome, type Row, TableStoreError, type TableWrite, type WrittenScope, type ScopeCount } from "./table-store";
import { callResult, type FencedWrites, type GroupCommitResult } from "./group-commit-queue";
import type { TableEngine } from "./table-thread-protocol";
import { type CallFence, fenceProblem, type RunClaim, type RunClaimRequest, type RunFence, type RunState } from "./run-fence";
import { LedgerEngine, SqliteRunLedger } from "./sqlite-run-ledger";
import { addOwnerColumn, checkSqliteOwner, ownerOfNewTable, type TableWriter } from "./table-owner";

/** A call's writes with their tables made and rows bound, ready to apply, and the call's fence. */
interface Prepared {
  readonly writes: readonly TableWrite[];
  readonly infos: (TableInfo | undefined)[];
  readonly bound: BoundCell[][][];
  readonly fence: CallFence | null;
  readonly issuedMs: number | undefined;
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
export class SqliteTables extends LedgerEngine implements TableEngine {
  private readonly db: Database;
  private readonly tables = new Map<string, TableInfo>();
  /** Runs, leases and claims (fencing), in the same file. */
  protected readonly runs: SqliteRunLedger;

  constructor(path: string, busyTimeoutMs = 10_000, nowMs: () => number = Date.now) {
    super();
    this.db = new Database(path, { create: true });
    // busy_timeout first: switching a fresh file to WAL takes a lock that another Worker
    // opening the same file at the same moment may hold (blockx dev starts several at once).
    this.db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_scope_spans (name TEXT PRIMARY KEY, max_span INTEGER NOT NULL)`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table INTEGER NOT NULL, owner TEXT)`);
    addOwnerColumn(this.db);
    this.runs = new SqliteRunLedger(this.db, nowMs);
  }

  /**
   * commit: every table first exists (own transactions), then all rows in one transaction, if the
   * fence holds: the run is current, its lease live when the commit was sent (`issuedMs`, as for
   * renewals: a commit that waited on a lock is not late; any run that took over since is caught by
   * its generation, and rows of a later run by their sequence).
   */
  commit(writes: readonly TableWrite[], fence: CallFence | null = null, issuedMs?: number): ReplaceOutcome[] {
    const once = () => {
      const prepared = this.prepare(writes, fence, issuedMs);
      let outcomes: ReplaceOutcome[] = [];
      this.db.transaction(() => (outcomes = this.apply(prepared))).immediate();
      return outcomes;
    };
    try {
      return once();
    } catch (e) {
      // A table dropped or restored behind the store's back: its cached shape is stale. Once, afresh.
      if (!isStaleShape(e)) throw e;
      this.refreshTables(writes.map((w) => w.table));
      return once();
    }
  }

  /** scopeCounts: see TableStore.scopeCounts (the scope index's range, grouped). */
  scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): ScopeCount[] {
    checkTableName(table);
    blockTableInfo(table, this.loadTable(table));
    return (
      this.db
        .query(
          `SELECT _scope_from AS f, _scope_to AS t, ${BLOCK_HASH_COLUMN} AS h, ${RUN_SEQ_COLUMN} AS s, COUNT(*) AS n FROM "${table}" ` +
            `WHERE _chain = ? AND _scope_from >= ? AND _scope_from <= ? GROUP BY _scope_from, _scope_to, ${BLOCK_HASH_COLUMN}, ${RUN_SEQ_COLUMN} ORDER BY _scope_from, _scope_to`,
        )
        .all(chain, fromBlock, toBlock) as { f: unknown; t: unknown; h: unknown; s: unknown; n: unknown }[]
    ).map(scopeCountOf);
  }

  /** scopeBounds: see TableStore.scopeBounds. */
  scopeBounds(table: string, chain: string): { fromBlock: number; toBlock: number } | null {
    checkTableName(table);
    blockTableInfo(table, this.loadTable(table));
    const r = this.db.query(`SELECT MIN(_scope_from) AS f, MAX(_scope_to) AS t FROM "${table}" WHERE _chain = ?`).get(chain) as { f: number | null; t: number | null };
    return r.f === null || r.t === null ? null : { fromBlock: r.f, toBlock: r.t };
  }

  /** wideScopes: scopes wider than one block overlapping from..to (see TableStore.wideScopes). */
  wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): WrittenScope[] {
    checkTableName(table);
    const info = this.loadTable(table);
    if (!info || !info.blockTable) return [];
    const span = this.maxScopeSpan(table);
    if (span === 0) return [];
    const rows = this.db
      .query(`SELECT DISTINCT _scope_from AS f, _scope_to AS t FROM "${table}" WHERE _chain = ? AND _scope_from >= ? AND _scope_from <= ? AND _scope_to >= ? AND _scope_to > _scope_from ORDER BY _scope_from LIMIT ?`)
      .all(chain, fromBlock - span, toBlock, fromBlock, limit + 1) as { f: number; t: number }[];
    if (rows.length > limit) throw new TableStoreError("INVALID_ARGUMENT", `table ${table} holds more than ${limit} multi-block scopes over blocks ${fromBlock}..${toBlock}: rerun a shorter range`);
    return rows.map((r) => ({ fromBlock: r.f, toBlock: r.t }));
  }

  /** check: one statement against the file. */
  check(): void {
    this.db.query(`SELECT 1`).get();
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
  commitGroup(groups: readonly FencedWrites[], classify: (e: unknown) => TableStoreError): GroupCommitResult[] {
    const stale = new Set<number>();
    const results = this.commitGroupOnce(groups, classify, stale);
    if (stale.size === 0) return results;
    // Calls that met a table dropped or restored behind the store's back (their cached shape is
    // stale): the tables' metadata is read again and those calls are committed once more, as a
    // group of their own (the others have committed).
    const again = [...stale];
    this.refreshTables(again.flatMap((i) => groups[i]!.writes.map((w) => w.table)));
    const retried = this.commitGroupOnce(again.map((i) => groups[i]!), classify, new Set());
    again.forEach((i, k) => (results[i] = retried[k]!));
    return results;
  }

  /** commitGroupOnce: one group transaction; the indexes of calls that failed on a stale table shape go into `stale`. */
  private commitGroupOnce(groups: readonly FencedWrites[], classify: (e: unknown) => TableStoreError, stale: Set<number>): GroupCommitResult[] {
    let current = -1;
    const own = (e: unknown): GroupCommitResult => {
      if (isStaleShape(e)) stale.add(current);
      const err = classify(e);
      if (err.code === "STORE_UNAVAILABLE") throw e;
      return callResult(err);
    };
    const results: GroupCommitResult[] = new Array(groups.length);
    const prepared: (Prepared | null)[] = groups.map((g, i) => {
      current = i;
      try {
        return this.prepare(g.writes, g.fence, g.issuedMs);
      } catch (e) {
        results[i] = own(e);
        return null;
      }
    });
    this.db
      .transaction(() => {
        prepared.forEach((p, i) => {
          if (!p) return;
          current = i;
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
  private prepare(writes: readonly TableWrite[], fence: CallFence | null, issuedMs?: number): Prepared {
    const infos = writes.map((w) => {
      checkTableName(w.table);
      if (w.kind === "replaceBlock") checkScope(w.scope);
      return this.ensureTable(w.table, w.rows, w.kind === "replaceBlock", fence?.writer);
    });
    const bound = writes.map((w, i) => (infos[i] ? w.rows.map((r, j) => bindRow(w.table, infos[i]!.columns, r, j)) : []));
    return { writes, infos, bound, fence, issuedMs };
  }

  /** apply writes one prepared call's rows, if its fence holds; inside a transaction. */
  private apply({ writes, infos, bound, fence, issuedMs }: Prepared): ReplaceOutcome[] {
    if (fence) {
      const problem = fenceProblem(fence, this.runs.runRow(fence.taskId, issuedMs));
      if (problem) throw new TableStoreError("STALE_RUN", problem);
    }
    writes.forEach((w, i) => infos[i] && checkSqliteOwner(this.db, w.table, fence?.writer));
    return writes.map((w, i) => {
      const info = infos[i];
      if (!info) return NO_OUTCOME; // no rows and no table yet: nothing to replace
      if (w.kind === "append") {
        // Under a fence, the rows this call of this task wrote before go first: a call's rows land once.
        if (fence) this.db.query(`DELETE FROM "${w.table}" WHERE _task_id = ? AND _call = ?`).run(fence.taskId, fence.callIndex);
        this.insert(w.table, info, bound[i]!, fence ? [fence.taskId, fence.callIndex] : [null, null]);
        return NO_OUTCOME;
      }
      return this.replace(w.table, info, w.scope, bound[i]!, fence);
    });
  }

  read(table: string, options: ReadOptions = {}): Record<string, CellValue>[] {
    try {
      return this.readOnce(table, options);
    } catch (e) {
      if (!isStaleShape(e)) throw e;
      this.refreshTables([table]);
      return this.readOnce(table, options);
    }
  }

  private readOnce(table: string, options: ReadOptions): Record<string, CellValue>[] {
    checkTableName(table);
    if (options.orderBy !== undefined) checkColumnName(options.orderBy);
    const info = this.loadTable(table);
    if (!info) throw new TableStoreError("NO_SUCH_TABLE", `no table ${JSON.stringify(table)}`);
    if (options.orderBy !== undefined) checkOrderColumn(table, info, options.orderBy);
    const limit = options.limit ?? 0;
    const cols = [...info.columns.keys()].map((c) => `"${c}"`).concat(info.blockTable ? [...SCOPE_COLUMNS, BLOCK_HASH_COLUMN] : []);
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

  /**
   * replace removes the rows of every scope overlapping `scope` and inserts the call's. It throws
   * (the caller's transaction or savepoint then undoes the delete) when a removed scope reaches
   * past `scope` (SCOPE_CONFLICT: its blocks outside would lose their rows) or, under a fence,
   * when a removed row was written by a run claimed after this one (STALE_RUN).
   */
  private replace(table: string, info: TableInfo, scope: { chain: string; fromBlock: number; toBlock: number; blockHash?: string | null }, rows: BoundCell[][], fence: CallFence | null): ReplaceOutcome {
    const span = this.maxScopeSpan(table);
    // Overlap: from <= scope.to and to >= scope.from; a scope is at most `span` wide, so its
    // start lies in [scope.from - span, scope.to] (the index's range).
    const overlap = `_chain = ? AND _scope_from >= ? AND _scope_from <= ? AND _scope_to >= ?`;
    const params = [scope.chain, scope.fromBlock - span, scope.toBlock, scope.fromBlock] as const;
    // One pass: the delete returns the scopes it removed (a row each; distinct below).
    const removed = this.db.query(`DELETE FROM "${table}" WHERE ${overlap} RETURNING _scope_from AS f, _scope_to AS t, ${RUN_SEQ_COLUMN} AS s`).all(...params) as { f: number; t: number; s: number | null }[];
    const outcome = checkReplaced(table, scope, removed, fence);
    this.insert(table, info, rows, hiddenScopeValues(scope, fence?.seq ?? 0));
    this.db.query(`UPDATE _blockx_scope_spans SET max_span = ? WHERE name = ? AND max_span < ?`).run(scope.toBlock - scope.fromBlock, table, scope.toBlock - scope.fromBlock);
    return outcome;
  }

  private insert(table: string, info: TableInfo, rows: BoundCell[][], hiddenValues: (string | number | null)[]): void {
    if (rows.length === 0) return;
    const all = [...info.columns.keys(), ...hiddenColumns(info)];
    const stmt = this.db.query(`INSERT INTO "${table}" (${all.map((c) => `"${c}"`).join(", ")}) VALUES (${all.map(() => "?").join(", ")})`);
    for (const cells of rows) stmt.run(...cells.map(bindCell), ...hiddenValues);
  }

  /**
   * refreshTables forgets the cached shape of `tables` and, for one whose metadata outlived the
   * table itself (an operator dropped it), removes that metadata: the next write makes the table
   * again from its rows, as the first write did. A table restored with other columns is read anew.
   */
  private refreshTables(tables: readonly string[]): void {
    for (const t of tables) this.tables.delete(t);
    this.db
      .transaction(() => {
        for (const t of new Set(tables)) {
          if (this.db.query(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(t) !== null) continue;
          this.db.query(`DELETE FROM _blockx_tables WHERE name = ?`).run(t);
          this.db.query(`DELETE FROM _blockx_scope_spans WHERE name = ?`).run(t);
        }
      })
      .immediate();
  }

  /** ensureTable: the table's info, creating it from `rows` (owned by `writer`) when it does not exist (undefined: no rows to infer from). */
  private ensureTable(table: string, rows: readonly Row[], blockTable: boolean, writer: TableWriter | null | undefined): TableInfo | undefined {
    let info = this.loadTable(table);
    if (!info) {
      // SQLite's table names ignore case: "STATS" is the table "stats". The metadata's must too, or
      // it would describe two tables where the file holds one (with the other's columns).
      const other = this.db.query(`SELECT name FROM _blockx_tables WHERE name = ? COLLATE NOCASE AND name <> ?`).get(table, table) as { name: string } | null;
      if (other) throw new TableStoreError("INVALID_ARGUMENT", `table ${JSON.stringify(table)}: the table ${JSON.stringify(other.name)} exists, and SQLite table names ignore case (use ${JSON.stringify(other.name)}, or another name)`);
      // Nothing to infer columns from: the table is created by the first call that has rows.
      if (rows.length === 0) return undefined;
      const columns = inferColumns(table, rows);
      const defs = [...columns].map(([c, k]) => `"${c}"${SQLITE_TYPE[k]}`);
      const hidden = blockTable
        ? [`_chain TEXT NOT NULL`, `_scope_from INTEGER NOT NULL`, `_scope_to INTEGER NOT NULL`, `${RUN_SEQ_COLUMN} INTEGER NOT NULL DEFAULT 0`, `${BLOCK_HASH_COLUMN} TEXT`]
        : [`_task_id TEXT`, `_call INTEGER`];
      this.db
        .transaction(() => {
          this.db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (${[...defs, ...hidden].join(", ")})`);
          if (blockTable) this.db.exec(`CREATE INDEX IF NOT EXISTS "${scopeIndexName(table)}" ON "${table}" (_chain, _scope_from, _scope_to)`);
          else this.db.exec(`CREATE INDEX IF NOT EXISTS "${callIndexName(table)}" ON "${table}" (_task_id, _call)`);
          this.db.query(`INSERT OR IGNORE INTO _blockx_tables (name, kinds, block_table, owner) VALUES (?, ?, ?, ?)`).run(table, kindsText(columns), blockTable ? 1 : 0, ownerOfNewTable(table, writer));
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
    this.addFenceColumns(table, info);
    this.tables.set(table, info);
    return info;
  }

  /** addFenceColumns gives a table made before fencing (or before block hashes) its hidden run and hash columns (once; another process may race: IF NOT EXISTS is emulated). */
  private addFenceColumns(table: string, info: TableInfo): void {
    const have = new Set((this.db.query(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name));
    const missing = info.blockTable
      ? [`${RUN_SEQ_COLUMN} INTEGER NOT NULL DEFAULT 0`, `${BLOCK_HASH_COLUMN} TEXT`].filter((def) => !have.has(def.split(" ")[0]!))
      : CALL_COLUMNS.filter((c) => !have.has(c)).map((c) => (c === "_call" ? `_call INTEGER` : `${c} TEXT`));
    if (missing.length === 0) return;
    this.db
      .transaction(() => {
        const now = new Set((this.db.query(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name));
        for (const def of missing) if (!now.has(def.split(" ")[0]!)) this.db.exec(`ALTER TABLE "${table}" ADD COLUMN ${def}`);
        if (!info.blockTable) this.db.exec(`CREATE INDEX IF NOT EXISTS "${callIndexName(table)}" ON "${table}" (_task_id, _call)`);
      })
      .immediate();
  }
}

/**
 * isStaleShape: an error that a stale cached table shape may explain (a table dropped, or restored
 * with other columns, behind the store's back): SQLite's words for a missing table or column, or a
 * row that does not fit the cached columns. Retried once after reading the metadata again; a row
 * that still does not fit is then the caller's ROW_MISMATCH.
 */
export function isStaleShape(e: unknown): boolean {
  if (e instanceof TableStoreError) return e.code === "ROW_MISMATCH";
  return /no such table|has no column named|no such column/.test((e as Error)?.message ?? "");
}
