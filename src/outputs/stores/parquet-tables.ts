import { Database } from "bun:sqlite";
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { isExactInt } from "../../common/json/exact-json";
import { callResult, type FencedWrites, type GroupCommitResult } from "./group-commit-queue";
import { checkSizes, decodeRows, encodeRows } from "./parquet-codec";
import { type OpHooks, type ParquetOp, runOps, writeDurable } from "./parquet-files";
import { callFileName, chainPart, checkParquetTableName, MAX_FILES_PER_COMMIT, OWN_DIR, scopeFileName, taskPart, UNFENCED_PART } from "./parquet-layout";
import { type CallFence, fenceProblem, type RunClaim, type RunClaimRequest, type RunFence, type RunState } from "./run-fence";
import { LedgerEngine, SqliteRunLedger } from "./sqlite-run-ledger";
import { addOwnerColumn, checkSqliteOwner, ownerOfNewTable, type TableWriter } from "./table-owner";
import { sqliteStoreError } from "./sqlite-table-store";
import { bindRow, blockTableInfo, checkColumnName, checkOrderColumn, checkReplaced, checkScope, inferColumns, kindsText, parseTableMeta, scopeCountOf, type TableInfo } from "./table-schema";
import { type CellValue, NO_OUTCOME, type ReadOptions, type ReplaceOutcome, TableStoreError, type TableWrite, type WrittenScope, type ScopeCount } from "./table-store";
import type { TableEngine } from "./table-thread-protocol";

/** A call's writes checked, their rows encoded and staged (a durable file each under _blockx/staging), ready to plan. */
interface Staged {
  readonly group: FencedWrites;
  readonly infos: (TableInfo | undefined)[];
  /** Per write: its staged file (relative to the root), or null when it has no rows. */
  readonly files: (string | null)[];
}

/** File errors that mean "not now" (the disk full, failing, read-only, unreadable): retryable. */
const FS_UNAVAILABLE = new Set(["EIO", "ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EMFILE", "ENFILE", "EBUSY", "ENOENT"]);

/** parquetStoreError maps what the catalog (bun:sqlite) or the filesystem throws to a TableStoreError with a code. */
export function parquetStoreError(e: unknown, description: string): TableStoreError {
  if (e instanceof TableStoreError) return e;
  const code = String((e as { code?: unknown }).code ?? "");
  if (FS_UNAVAILABLE.has(code)) return new TableStoreError("STORE_UNAVAILABLE", `table store ${description} unavailable: ${(e as Error).message ?? String(e)}`);
  return sqliteStoreError(e, description);
}

/** Staged files older than this with no intent naming them are a crashed process's: removed at open. */
const ORPHAN_STAGING_MS = 10 * 60_000;

/**
 * ParquetTables is the Parquet dataset store's engine (run by ParquetTableStore on a thread of its
 * own, or inline). The dataset is plain Parquet files (parquet-layout.ts); what is where, and
 * fencing's runs, leases and claims, are kept in a catalog, `_blockx/catalog.sqlite` (WAL,
 * synchronous=FULL), which readers of the files never need.
 *
 * A commit (or a group of calls' commits) goes:
 * 1. each table's rows are encoded and written to a staging file under `_blockx/staging` and
 *    fsynced (outside any lock: several processes encode at once);
 * 2. the dataset's writer lock is taken (`_blockx/writer.lock`, a SQLite database held in an
 *    exclusive transaction: released by the kernel when its process dies), and any intent a dead
 *    writer left is carried out first;
 * 3. one catalog transaction checks each call's fence (STALE_RUN) and its scopes against the
 *    catalog (SCOPE_CONFLICT, STALE_RUN over a later run's rows: table-schema's checkReplaced),
 *    records the new files and records the *intent*: the file operations below. Committing it is
 *    the commit point: from then on the write happens, now or at the next writer's recovery;
 * 4. the operations run, each one step for a reader that lists the dataset: a staged file renamed
 *    into place (over the same scope's or call's earlier file), one file unlinked, or, when a write
 *    replaces several files at once, the chain's folder exchanged with a copy built beside it
 *    (hard links; renameat2 RENAME_EXCHANGE); then the folders are fsynced and the intent removed.
 *
 * A Worker killed at any point leaves either nothing visible (before 3; its staged files are
 * removed later) or an intent that the next writer, reader or opening completes: never a partial
 * file (files are complete before they are named in the dataset), never a scope twice or a removed
 * scope's file (each visible change is one rename, unlink or exchange).
 */
export class ParquetTables extends LedgerEngine implements TableEngine {
  readonly root: string;
  private readonly db: Database;
  private readonly lock: Database;
  protected readonly runs: SqliteRunLedger;
  private readonly tables = new Map<string, TableInfo>();
  /** Tests stop a commit between its steps through these (a crash); nothing else sets them. */
  hooks: OpHooks & { afterStage?: () => void; afterIntent?: () => void } = {};

  constructor(root: string, busyTimeoutMs = 10_000, nowMs: () => number = Date.now) {
    super();
    this.root = resolve(root);
    mkdirSync(join(this.root, OWN_DIR, "staging"), { recursive: true });
    mkdirSync(join(this.root, OWN_DIR, "swap"), { recursive: true });
    this.db = new Database(join(this.root, OWN_DIR, "catalog.sqlite"), { create: true });
    this.db.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;`);
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table INTEGER NOT NULL, owner TEXT)`);
    addOwnerColumn(this.db);
    this.db.exec(
      `CREATE TABLE IF NOT EXISTS _blockx_files (tbl TEXT NOT NULL, part TEXT NOT NULL, name TEXT NOT NULL, scope_from INTEGER, scope_to INTEGER, seq INTEGER NOT NULL, rows INTEGER NOT NULL, PRIMARY KEY (tbl, part, name))`,
    );
    this.db.exec(`CREATE INDEX IF NOT EXISTS _blockx_files_scope ON _blockx_files (tbl, part, scope_to)`);
    // A catalog made before block hashes were recorded gets the column (its files' scopes read null).
    if (!(this.db.query(`PRAGMA table_info(_blockx_files)`).all() as { name: string }[]).some((c) => c.name === "block_hash")) {
      try {
        this.db.exec(`ALTER TABLE _blockx_files ADD COLUMN block_hash TEXT`);
      } catch (e) {
        if (!/duplicate column/i.test((e as Error).message)) throw e; // another process added it first
      }
    }
    this.db.exec(`CREATE TABLE IF NOT EXISTS _blockx_intents (id INTEGER PRIMARY KEY, ops TEXT NOT NULL)`);
    this.runs = new SqliteRunLedger(this.db, nowMs);
    this.lock = new Database(join(this.root, OWN_DIR, "writer.lock"), { create: true });
    this.lock.exec(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}; PRAGMA journal_mode = DELETE;`);
    this.locked(() => {
      this.recover();
      this.removeOrphanStaging();
    });
  }

  commit(writes: readonly TableWrite[], fence: CallFence | null = null, issuedMs?: number): ReplaceOutcome[] {
    const [r] = this.commitGroup([{ writes, fence, issuedMs }], (e) => parquetStoreError(e, `parquet:${this.root}`), true);
    if (!r!.ok) throw new TableStoreError(r!.code, r!.message);
    return r!.outcomes;
  }

  /**
   * commitGroup commits several calls' writes under one lock, one catalog transaction (each call in
   * a savepoint of its own: a call refused or misfit writes nothing and fails no other) and one
   * pass of file operations and fsyncs. An error of the store itself (the disk, the lock held past
   * the busy timeout) fails the whole group.
   */
  commitGroup(groups: readonly FencedWrites[], classify: (e: unknown) => TableStoreError, single = false): GroupCommitResult[] {
    const own = (e: unknown): GroupCommitResult => {
      const err = classify(e);
      if (err.code === "STORE_UNAVAILABLE" && !single) throw e;
      return callResult(err);
    };
    const results: GroupCommitResult[] = new Array(groups.length);
    const staged: (Staged | null)[] = groups.map((g, i) => {
      try {
        return this.stage(g);
      } catch (e) {
        results[i] = own(e);
        return null;
      }
    });
    this.hooks.afterStage?.();
    const kept = new Set<string>();
    try {
      this.locked(() => {
        this.recover();
        const ops: ParquetOp[] = [];
        let intent = 0;
        this.db
          .transaction(() => {
            staged.forEach((s, i) => {
              if (!s) return;
              try {
                const mine: ParquetOp[] = [];
                this.db.transaction(() => (results[i] = { ok: true, outcomes: this.plan(s, mine) }))();
                ops.push(...mine);
                for (const f of s.files) if (f) kept.add(f);
              } catch (e) {
                results[i] = own(e);
              }
            });
            if (ops.length > 0) intent = (this.db.query(`INSERT INTO _blockx_intents (ops) VALUES (?) RETURNING id`).get(JSON.stringify(ops)) as { id: number }).id;
          })
          .immediate();
        if (intent === 0) return;
        this.hooks.afterIntent?.();
        runOps(this.root, ops, this.hooks);
        this.db.query(`DELETE FROM _blockx_intents WHERE id = ?`).run(intent);
      });
    } finally {
      // Staged files of calls that wrote nothing (refused, misfit, the group failed before its intent).
      for (const s of staged) for (const f of s?.files ?? []) if (f && !kept.has(f)) rmSync(join(this.root, f), { force: true });
    }
    return results;
  }

  /** wideScopes: scopes wider than one block overlapping from..to (see TableStore.wideScopes), from the catalog. */
  wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): WrittenScope[] {
    checkParquetTableName(table);
    const part = chainPart(chain);
    const info = this.loadTable(table);
    if (!info || !info.blockTable) return [];
    const rows = this.db
      .query(`SELECT scope_from AS f, scope_to AS t FROM _blockx_files WHERE tbl = ? AND part = ? AND scope_to >= ? AND scope_from <= ? AND scope_to > scope_from ORDER BY scope_from LIMIT ?`)
      .all(table, part, fromBlock, toBlock, limit + 1) as { f: number; t: number }[];
    if (rows.length > limit) throw new TableStoreError("INVALID_ARGUMENT", `table ${table} holds more than ${limit} multi-block scopes over blocks ${fromBlock}..${toBlock}: rerun a shorter range`);
    return rows.map((r) => ({ fromBlock: r.f, toBlock: r.t }));
  }

  /** scopeCounts: see TableStore.scopeCounts, from the catalog (one file per scope, its rows counted there). */
  scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): ScopeCount[] {
    checkParquetTableName(table);
    blockTableInfo(table, this.loadTable(table));
    return (
      this.db
        .query(`SELECT scope_from AS f, scope_to AS t, block_hash AS h, seq AS s, rows AS n FROM _blockx_files WHERE tbl = ? AND part = ? AND scope_from >= ? AND scope_from <= ? ORDER BY scope_from, scope_to`)
        .all(table, chainPart(chain), fromBlock, toBlock) as { f: unknown; t: unknown; h: unknown; s: unknown; n: unknown }[]
    ).map(scopeCountOf);
  }

  /** scopeBounds: see TableStore.scopeBounds, from the catalog. */
  scopeBounds(table: string, chain: string): { fromBlock: number; toBlock: number } | null {
    checkParquetTableName(table);
    blockTableInfo(table, this.loadTable(table));
    const r = this.db.query(`SELECT MIN(scope_from) AS f, MAX(scope_to) AS t FROM _blockx_files WHERE tbl = ? AND part = ?`).get(table, chainPart(chain)) as { f: number | null; t: number | null };
    return r.f === null || r.t === null ? null : { fromBlock: r.f, toBlock: r.t };
  }

  check(): void {
    this.db.query(`SELECT 1`).get();
  }

  /**
   * read: a table's rows from its files. The file list is taken and the files' bytes read under
   * the writer lock (after completing a dead writer's intent), so the rows are one committed state.
   */
  async read(table: string, options: ReadOptions = {}): Promise<Record<string, CellValue>[]> {
    checkParquetTableName(table);
    if (options.orderBy !== undefined) checkColumnName(options.orderBy);
    const info = this.loadTable(table);
    if (!info) throw new TableStoreError("NO_SUCH_TABLE", `no table ${JSON.stringify(table)}`);
    if (options.orderBy !== undefined) checkOrderColumn(table, info, options.orderBy);
    const files = this.locked(() => {
      this.recover();
      const listed = this.db.query(`SELECT part, name FROM _blockx_files WHERE tbl = ? ORDER BY part, scope_from, name`).all(table) as { part: string; name: string }[];
      return listed.map((f) => readFileSync(join(this.root, table, f.part, f.name)));
    });
    const rows: Record<string, CellValue>[] = [];
    for (const bytes of files) rows.push(...(await decodeRows(info, bytes)));
    if (options.orderBy !== undefined) {
      const c = options.orderBy;
      rows.sort((a, b) => compareCells(a[c] ?? null, b[c] ?? null));
    }
    const limit = Math.trunc(options.limit ?? 0);
    return limit > 0 ? rows.slice(0, limit) : rows;
  }

  close(): void {
    this.db.close();
    this.lock.close();
  }

  /** stage checks one call's writes, makes their tables exist (catalog transactions of their own), and writes each table's rows to a durable staging file. */
  private stage(group: FencedWrites): Staged {
    const { writes, fence } = group;
    if (writes.length > MAX_FILES_PER_COMMIT) throw new TableStoreError("INVALID_ARGUMENT", `a call's commit writes at most ${MAX_FILES_PER_COMMIT} tables (a Parquet file each), got ${writes.length}`);
    const infos = writes.map((w) => {
      checkParquetTableName(w.table);
      if (w.kind === "replaceBlock") {
        checkScope(w.scope);
        chainPart(w.scope.chain);
      } else if (fence) {
        taskPart(fence.taskId);
        callFileName(fence.callIndex);
      }
      return this.ensureTable(w.table, w.rows, w.kind === "replaceBlock", fence?.writer);
    });
    const bound = writes.map((w, i) => (infos[i] ? w.rows.map((r, j) => bindRow(w.table, infos[i]!.columns, r, j)) : []));
    bound.forEach((rows, i) => checkSizes(writes[i]!.table, rows));
    const files: (string | null)[] = [];
    try {
      writes.forEach((w, i) => {
        if (!infos[i] || bound[i]!.length === 0) return files.push(null);
        const bytes = encodeRows(
          infos[i]!,
          bound[i]!,
          w.kind === "replaceBlock" ? { chain: w.scope.chain, fromBlock: w.scope.fromBlock, toBlock: w.scope.toBlock, runSeq: fence?.seq ?? 0, blockHash: w.scope.blockHash ?? null } : { taskId: fence?.taskId ?? null, callIndex: fence?.callIndex ?? null },
        );
        const rel = join(OWN_DIR, "staging", `${randomUUID()}.parquet.tmp`);
        writeDurable(join(this.root, rel), bytes);
        files.push(rel);
      });
    } catch (e) {
      for (const f of files) if (f) rmSync(join(this.root, f), { force: true });
      throw e;
    }
    return { group, infos, files };
  }

  /** plan checks one staged call against the catalog (inside the commit's transaction), records its files, and adds the file operations it needs to `ops`. */
  private plan({ group: { writes, fence, issuedMs }, infos, files }: Staged, ops: ParquetOp[]): ReplaceOutcome[] {
    if (fence) {
      const problem = fenceProblem(fence, this.runs.runRow(fence.taskId, issuedMs));
      if (problem) throw new TableStoreError("STALE_RUN", problem);
    }
    writes.forEach((w, i) => infos[i] && checkSqliteOwner(this.db, w.table, fence?.writer));
    const record = this.db.query(`INSERT INTO _blockx_files (tbl, part, name, scope_from, scope_to, seq, rows, block_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    return writes.map((w, i) => {
      if (!infos[i]) return NO_OUTCOME; // no rows and no table yet: nothing to replace
      const staged = files[i]!;
      if (w.kind === "append") {
        const part = fence ? taskPart(fence.taskId) : UNFENCED_PART;
        const name = fence ? callFileName(fence.callIndex) : `${this.runs.nextSeq("parquet_unfenced")}.parquet`;
        // Under a fence, the call's earlier file is replaced (a call's rows land once).
        const had = this.db.query(`DELETE FROM _blockx_files WHERE tbl = ? AND part = ? AND name = ? RETURNING name`).all(w.table, part, name).length > 0;
        if (staged) {
          record.run(w.table, part, name, null, null, fence?.seq ?? 0, w.rows.length, null);
          ops.push({ op: "place", from: staged, to: join(w.table, part, name) });
        } else if (had) ops.push({ op: "remove", path: join(w.table, part, name) });
        return NO_OUTCOME;
      }
      const part = chainPart(w.scope.chain);
      const removed = this.db
        .query(`DELETE FROM _blockx_files WHERE tbl = ? AND part = ? AND scope_to >= ? AND scope_from <= ? RETURNING name, scope_from AS f, scope_to AS t, seq AS s`)
        .all(w.table, part, w.scope.fromBlock, w.scope.toBlock) as { name: string; f: number; t: number; s: number }[];
      const outcome = checkReplaced(w.table, w.scope, removed, fence);
      const name = scopeFileName(w.scope.fromBlock, w.scope.toBlock);
      if (staged) record.run(w.table, part, name, w.scope.fromBlock, w.scope.toBlock, fence?.seq ?? 0, w.rows.length, w.scope.blockHash ?? null);
      // The same scope's earlier file is replaced by the rename itself; any other is removed.
      const gone = removed.map((r) => r.name).filter((n) => !(staged && n === name));
      const dir = join(w.table, part);
      if (gone.length === 0) {
        if (staged) ops.push({ op: "place", from: staged, to: join(dir, name) });
      } else if (gone.length === 1 && !staged) {
        ops.push({ op: "remove", path: join(dir, gone[0]!) });
      } else {
        const id = randomUUID();
        ops.push({ op: "swap", dir, via: join(OWN_DIR, "swap", id), remove: gone, add: staged ? { from: staged, name } : null, marker: `.blockx-swap-${id}` });
        if (staged) ops.push({ op: "drop", path: staged });
      }
      return outcome;
    });
  }

  /** recover carries out the intents of writers that died after their commit point (under the lock: no live writer has one). */
  private recover(): void {
    const intents = this.db.query(`SELECT id, ops FROM _blockx_intents ORDER BY id`).all() as { id: number; ops: string }[];
    for (const i of intents) {
      runOps(this.root, JSON.parse(i.ops) as ParquetOp[]);
      this.db.query(`DELETE FROM _blockx_intents WHERE id = ?`).run(i.id);
    }
  }

  /** removeOrphanStaging removes staged files a crashed process left before its commit point (old enough that no live commit is still writing them). */
  private removeOrphanStaging(): void {
    const dir = join(this.root, OWN_DIR, "staging");
    const now = Date.now();
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      try {
        if (now - statSync(p).mtimeMs > ORPHAN_STAGING_MS) rmSync(p, { force: true });
      } catch {
        // gone meanwhile
      }
    }
  }

  /** locked runs `f` holding the dataset's writer lock (every process's writers and readers take it). */
  private locked<T>(f: () => T): T {
    this.lock.exec(`BEGIN EXCLUSIVE`);
    try {
      return f();
    } finally {
      this.lock.exec(`ROLLBACK`);
    }
  }

  /** ensureTable: the table's info, creating it from `rows` when it does not exist (undefined: no rows to infer from). */
  private ensureTable(table: string, rows: readonly Record<string, CellValue>[], blockTable: boolean, writer: TableWriter | null | undefined): TableInfo | undefined {
    let info = this.loadTable(table);
    if (!info) {
      if (rows.length === 0) return undefined;
      const columns = inferColumns(table, rows);
      this.db.query(`INSERT OR IGNORE INTO _blockx_tables (name, kinds, block_table, owner) VALUES (?, ?, ?, ?)`).run(table, kindsText(columns), blockTable ? 1 : 0, ownerOfNewTable(table, writer));
      info = this.loadTable(table)!; // another process may have created it first, with its kinds
    }
    if (info.blockTable !== blockTable) {
      throw new TableStoreError("ROW_MISMATCH", `table ${table} is a ${info.blockTable ? "block" : "normal"} table; it cannot be written as a ${blockTable ? "block" : "normal"} table`);
    }
    return info;
  }

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

/** compareCells orders a column's values as SQL does: nulls first, integers exactly, then numbers, then text. */
function compareCells(a: CellValue, b: CellValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  const num = (v: CellValue) => (typeof v === "number" ? v : isExactInt(v) ? BigInt(v.rawJSON) : undefined);
  const [x, y] = [num(a), num(b)];
  if (x !== undefined && y !== undefined) {
    if (typeof x === "bigint" || typeof y === "bigint") {
      const [bx, by] = [typeof x === "bigint" ? x : BigInt(Math.trunc(x)), typeof y === "bigint" ? y : BigInt(Math.trunc(y))];
      return bx < by ? -1 : bx > by ? 1 : 0;
    }
    return x - y;
  }
  const [sa, sb] = [String(a), String(b)];
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}
