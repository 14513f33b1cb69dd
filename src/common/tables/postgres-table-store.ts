import { SQL } from "bun";
import { exactInt, parseExactJson } from "../json/exact-json";
import { callResult, type GroupCommitResult, GroupCommitQueue } from "./group-commit-queue";
import { ReconnectGate } from "./reconnect-gate";
import { type BoundCell, bindRow, checkColumnName, checkOrderColumn, checkScope, checkTableName, type ColumnKind, inferColumns, kindsText, parseTableMeta, SCOPE_COLUMNS, scopeIndexName, type TableInfo } from "./table-schema";
import { type BlockScope, type CellValue, NO_OUTCOME, type CommitCounts, type ReadOptions, type ReplaceOutcome, type Row, type TableStore, TableStoreError, type TableWrite } from "./table-store";

/** PostgresStoreOptions: the pool and its timeouts (TABLE_STORE_* variables). */
export interface PostgresStoreOptions {
  readonly url: string;
  readonly poolSize: number;
  readonly statementTimeoutMs: number;
  /**
   * The server ends a session of this store that sits inside a transaction, doing nothing, for this
   * long, and so releases its locks: a Worker frozen mid-write (SIGSTOP, a paused VM) cannot hold a
   * table's lock from every other host until it thaws. Below statementTimeoutMs, so that a writer
   * waiting on that lock outlasts it.
   */
  readonly idleInTransactionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** "" keeps what the URL says (sslmode=...); else disable, prefer, require, verify-ca or verify-full. */
  readonly tls: string;
  /** A CA certificate file to verify the server against ("" none). */
  readonly tlsCaFile: string;
  readonly nowMs?: () => number;
}

/** Postgres type per column kind: integers exact to 78 digits (2^256 − 1), JSON as jsonb. */
const PG_TYPE: Record<ColumnKind, string> = { INTEGER: "NUMERIC(78,0)", REAL: "DOUBLE PRECISION", TEXT: "TEXT", JSON: "JSONB" };
/** Postgres takes at most 65535 parameters per statement. */
const MAX_PARAMS = 60_000;
/** SQLSTATE classes that mean "not now": connection (08), resources (53), operator intervention and statement timeout (57), system (58), rollback (40: serialization, deadlock). */
const UNAVAILABLE_CLASSES = new Set(["08", "53", "57", "58", "40"]);
/**
 * Single SQLSTATEs that mean "not now" too: 25P03, the server ended this session for sitting idle
 * inside a transaction (a Worker frozen mid-write, TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS);
 * the transaction was rolled back, so the write can be retried.
 */
const UNAVAILABLE_STATES = new Set(["25P03"]);

/** postgresStoreError maps what Bun's SQL client throws to a TableStoreError with a code (by SQLSTATE). */
export function postgresStoreError(e: unknown, description: string): TableStoreError {
  if (e instanceof TableStoreError) return e;
  const err = e as { errno?: unknown; code?: unknown; message?: string };
  const state = typeof err.errno === "string" ? err.errno : "";
  const message = err.message ?? String(e);
  // No SQLSTATE: Bun's own error (refused, closed, timed out, TLS): the database was not reached.
  if (state === "" || UNAVAILABLE_CLASSES.has(state.slice(0, 2)) || UNAVAILABLE_STATES.has(state)) {
    return new TableStoreError("STORE_UNAVAILABLE", `table store ${description} unavailable: ${message}${state ? ` (SQLSTATE ${state})` : ""}`);
  }
  if (state === "22003") return new TableStoreError("ROW_MISMATCH", `table store ${description}: ${message}`);
  return new TableStoreError("INTERNAL", `table store ${description}: ${message} (SQLSTATE ${state})`);
}

/** redactUrl: the URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "postgres://?";
  }
}

function q(ident: string): string {
  return `"${ident}"`;
}

/** How a parameter of each kind is written: typed as text and cast, so Bun never guesses (it would send a JSON text to a jsonb column as a JSON string). */
const PG_PARAM: Record<ColumnKind | "SCOPE_TEXT" | "SCOPE_INT", (n: number) => string> = {
  INTEGER: (n) => `$${n}::text::numeric`,
  REAL: (n) => `$${n}::float8`,
  TEXT: (n) => `$${n}::text`,
  JSON: (n) => `$${n}::text::jsonb`,
  SCOPE_TEXT: (n) => `$${n}::text`,
  SCOPE_INT: (n) => `$${n}::text::bigint`,
};

/** A call's writes with their tables made and rows bound, ready to apply. */
interface Prepared {
  readonly writes: readonly TableWrite[];
  readonly infos: (TableInfo | undefined)[];
  readonly bound: BoundCell[][][];
}

/** lockKeysOf: the advisory locks a call's block-table writes take, (table, chain) each. */
function lockKeysOf(p: Prepared): string[] {
  return p.writes.flatMap((w, i) => (w.kind === "replaceBlock" && p.infos[i] ? [JSON.stringify([w.table, w.scope.chain])] : []));
}

function bindPg(c: BoundCell, kind: ColumnKind): string | number | null {
  if (c === null) return null;
  if (typeof c === "object") return c.digits;
  return kind === "INTEGER" ? String(c) : c;
}

/**
 * PostgresTableStore: the table store of a cluster of hosts (TABLE_STORE_URL=postgres://...), on
 * Bun's built-in SQL client. One call's tables commit in one transaction; a block-table write takes
 * a transaction-scoped advisory lock on (table, chain) before it deletes the overlapping scopes and
 * inserts, so two hosts replacing overlapping scopes at once never both keep their rows (READ
 * COMMITTED alone would let each miss the other's uncommitted insert). Tables and their metadata
 * are created under an advisory lock too, so Workers on several hosts creating one table at once
 * agree on its columns. A connection error, a statement timeout or a deadlock is STORE_UNAVAILABLE
 * (retryable); after one, calls fail fast until the reconnect backoff has passed.
 */
export class PostgresTableStore implements TableStore {
  readonly description: string;
  private readonly sql: SQL;
  private readonly tables = new Map<string, TableInfo>();
  private readonly gate: ReconnectGate;
  private readonly nowMs: () => number;
  private metaReady: Promise<void> | undefined;
  /** Sizes in rows. A group's rows go in one transaction: bounded well below what the statement timeout can write. */
  private readonly groups = new GroupCommitQueue<readonly TableWrite[]>((groups) => this.commitGroup(groups), { maxCalls: 256, maxSize: 50_000 });

  constructor(private readonly options: PostgresStoreOptions) {
    this.description = redactUrl(options.url);
    this.gate = new ReconnectGate(options.reconnectMinMs, options.reconnectMaxMs);
    this.nowMs = options.nowMs ?? (() => performance.now());
    const tls = options.tlsCaFile ? { ca: Bun.file(options.tlsCaFile) } : undefined;
    this.sql = new SQL(options.url, {
      max: options.poolSize,
      connectionTimeout: Math.max(1, Math.ceil(options.connectTimeoutMs / 1000)),
      idleTimeout: 60,
      connection: { statement_timeout: options.statementTimeoutMs, idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs, application_name: "blockx" },
      ...(tls ? { tls } : options.tls ? { tls: options.tls as "disable" | "prefer" | "require" | "verify-ca" | "verify-full" } : {}),
    });
  }

  /**
   * commit: calls arriving while a group is being written wait and go together as the next group
   * (GroupCommitQueue): one transaction, one durable COMMIT, each call in a savepoint of its own. A
   * block table's advisory lock serialises every call writing it, through its COMMIT: one call per
   * transaction wrote one call per fsync, whatever the pool's size.
   */
  async commit(writes: readonly TableWrite[]): Promise<ReplaceOutcome[]> {
    for (const w of writes) {
      checkTableName(w.table);
      if (w.kind === "replaceBlock") checkScope(w.scope);
    }
    return this.groups.commit(writes, writes.reduce((n, w) => n + w.rows.length, 0));
  }

  commitCounts(): CommitCounts {
    return { ...this.groups.sent };
  }

  /**
   * commitGroup writes a group: every call's tables made and rows bound first (a misfit is that
   * call's error), then one transaction taking every block table's lock in one order (two hosts'
   * groups cannot deadlock), each call in a savepoint. A call whose statements the server refuses
   * for their data gets that error alone; an error that means the store is not available now (the
   * connection, a timeout, a deadlock, the COMMIT) fails the whole group, as it would each call alone.
   */
  private commitGroup(groups: readonly (readonly TableWrite[])[]): Promise<GroupCommitResult[]> {
    const own = (e: unknown): GroupCommitResult => {
      const err = postgresStoreError(e, this.description);
      if (err.code === "STORE_UNAVAILABLE") throw e;
      return callResult(err);
    };
    return this.guarded(async () => {
      const results: GroupCommitResult[] = new Array(groups.length);
      const prepared: (Prepared | null)[] = [];
      for (let i = 0; i < groups.length; i++) {
        try {
          prepared.push(await this.prepare(groups[i]!));
        } catch (e) {
          results[i] = own(e);
          prepared.push(null);
        }
      }
      if (!prepared.some((p) => p)) return results; // every call failed on its own: no transaction to make
      const lockKeys = [...new Set(prepared.flatMap((p) => (p ? lockKeysOf(p) : [])))].sort();
      await this.sql.begin(async (tx) => {
        for (const key of lockKeys) await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [key]);
        for (let i = 0; i < prepared.length; i++) {
          const p = prepared[i];
          if (!p) continue;
          if (groups.length === 1) {
            results[i] = { ok: true, outcomes: await this.apply(tx, p) }; // alone: no savepoint needed
            continue;
          }
          try {
            results[i] = { ok: true, outcomes: await tx.savepoint((sp) => this.apply(sp, p)) };
          } catch (e) {
            results[i] = own(e);
          }
        }
      });
      return results;
    });
  }

  /** prepare makes every table of one call's writes exist and binds its rows (a misfit throws: nothing of the call is written). */
  private async prepare(writes: readonly TableWrite[]): Promise<Prepared> {
    const infos: (TableInfo | undefined)[] = [];
    for (const w of writes) infos.push(await this.ensureTable(w.table, w.rows, w.kind === "replaceBlock"));
    const bound = writes.map((w, i) => (infos[i] ? w.rows.map((r, j) => bindRow(w.table, infos[i]!.columns, r, j)) : []));
    return { writes, infos, bound };
  }

  /** apply writes one prepared call's rows inside a transaction (or savepoint) holding its locks. */
  private async apply(tx: SQL, { writes, infos, bound }: Prepared): Promise<ReplaceOutcome[]> {
    const out: ReplaceOutcome[] = [];
    for (let i = 0; i < writes.length; i++) {
      const w = writes[i]!;
      const info = infos[i];
      if (!info) out.push(NO_OUTCOME);
      else if (w.kind === "append") {
        await this.insert(tx, w.table, info, bound[i]!, []);
        out.push(NO_OUTCOME);
      } else out.push(await this.replace(tx, w.table, info, w.scope, bound[i]!));
    }
    return out;
  }

  async read(table: string, options: ReadOptions = {}): Promise<Record<string, CellValue>[]> {
    checkTableName(table);
    if (options.orderBy !== undefined) checkColumnName(options.orderBy);
    return this.guarded(async () => {
      const info = await this.loadTable(table);
      if (!info) throw new TableStoreError("NO_SUCH_TABLE", `no table ${JSON.stringify(table)}`);
      if (options.orderBy !== undefined) checkOrderColumn(table, info, options.orderBy);
      // NUMERIC and jsonb as text: parsed here, exactly (Bun would parse jsonb with JSON.parse).
      const cols = [...info.columns].map(([c, k]) => (k === "INTEGER" || k === "JSON" ? `${q(c)}::text AS ${q(c)}` : q(c))).concat(info.blockTable ? [`_chain`, `_scope_from::float8 AS _scope_from`, `_scope_to::float8 AS _scope_to`] : []);
      const limit = options.limit ?? 0;
      const text = `SELECT ${cols.join(", ")} FROM ${q(table)}${options.orderBy ? ` ORDER BY ${q(options.orderBy)}` : ""}${limit > 0 ? ` LIMIT ${Math.trunc(limit)}` : ""}`;
      const rows = (await this.sql.unsafe(text)) as Record<string, CellValue>[];
      return rows.map((r) => {
        const out: Record<string, CellValue> = { ...r };
        for (const [c, k] of info.columns) {
          const v = out[c];
          if (typeof v !== "string") continue;
          if (k === "INTEGER") out[c] = exactInt(v);
          else if (k === "JSON") out[c] = parseExactJson(v) as CellValue;
        }
        return out;
      });
    });
  }

  async close(): Promise<void> {
    await this.sql.close({ timeout: 5 });
  }

  /** guarded: fail fast while the reconnect backoff runs; classify what the database said. */
  private async guarded<T>(f: () => Promise<T>): Promise<T> {
    const waitMs = this.gate.mayTry(this.nowMs());
    if (waitMs > 0) throw new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} unavailable (reconnecting in ${Math.ceil(waitMs)} ms after ${this.gate.consecutiveFailures} failures)`);
    try {
      await this.ensureMeta();
      const out = await f();
      this.gate.succeeded();
      return out;
    } catch (e) {
      const err = postgresStoreError(e, this.description);
      if (err.code === "STORE_UNAVAILABLE") this.gate.failed(this.nowMs());
      throw err;
    }
  }

  /** ensureMeta creates the store's own tables once per store (again after a failure). */
  private ensureMeta(): Promise<void> {
    this.metaReady ??= this.sql
      .begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended('_blockx_meta', 7))`);
        await tx.unsafe(`CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table BOOLEAN NOT NULL)`);
        await tx.unsafe(`CREATE TABLE IF NOT EXISTS _blockx_scope_spans (name TEXT PRIMARY KEY, max_span BIGINT NOT NULL)`);
      })
      .then(() => {})
      .catch((e: unknown) => {
        this.metaReady = undefined;
        throw e;
      });
    return this.metaReady;
  }

  private async replace(tx: SQL, table: string, info: TableInfo, scope: BlockScope, rows: BoundCell[][]): Promise<ReplaceOutcome> {
    const spanRows = (await tx.unsafe(`SELECT max_span::float8 AS s FROM _blockx_scope_spans WHERE name = $1`, [table])) as { s: unknown }[];
    const span = spanRows[0]?.s;
    if (!Number.isSafeInteger(span) || (span as number) < 0) throw new TableStoreError("CORRUPT_METADATA", `the table store's scope span for ${table} is not valid: ${JSON.stringify(span)}`);
    // Overlap: from <= scope.to and to >= scope.from; a scope starts at most `span` before the range.
    const removed = (await tx.unsafe(
      `DELETE FROM ${q(table)} WHERE _chain = $1 AND _scope_from >= $2 AND _scope_from <= $3 AND _scope_to >= $4 RETURNING _scope_from::float8 AS f, _scope_to::float8 AS t`,
      [scope.chain, scope.fromBlock - (span as number), scope.toBlock, scope.fromBlock],
    )) as { f: number; t: number }[];
    const scopes = [...new Map(removed.map((o) => [`${o.f}..${o.t}`, { f: Number(o.f), t: Number(o.t) }])).values()].sort((a, b) => a.f - b.f || a.t - b.t);
    await this.insert(tx, table, info, rows, [scope.chain, scope.fromBlock, scope.toBlock]);
    const width = scope.toBlock - scope.fromBlock;
    if (width > (span as number)) await tx.unsafe(`UPDATE _blockx_scope_spans SET max_span = $1 WHERE name = $2 AND max_span < $1`, [width, table]);
    const uncovered = scopes.filter((o) => o.f < scope.fromBlock || o.t > scope.toBlock).map((o) => ({ chain: scope.chain, fromBlock: o.f, toBlock: o.t }));
    return { replacedScopes: scopes.length, uncovered };
  }

  /** insert: multi-row INSERTs, as many rows per statement as the parameter limit allows. */
  private async insert(tx: SQL, table: string, info: TableInfo, rows: BoundCell[][], scopeValues: (string | number)[]): Promise<void> {
    if (rows.length === 0) return;
    const cols = [...info.columns.keys(), ...(info.blockTable ? SCOPE_COLUMNS : [])];
    const kinds = [...info.columns.values()];
    const paramOf = [...kinds.map((k) => PG_PARAM[k]), ...(info.blockTable ? [PG_PARAM.SCOPE_TEXT, PG_PARAM.SCOPE_INT, PG_PARAM.SCOPE_INT] : [])];
    const perRow = cols.length;
    const chunk = Math.max(1, Math.floor(MAX_PARAMS / perRow));
    for (let start = 0; start < rows.length; start += chunk) {
      const part = rows.slice(start, start + chunk);
      const params: (string | number | null)[] = [];
      const tuples = part.map((cells) => {
        const base = params.length;
        cells.forEach((c, k) => params.push(bindPg(c, kinds[k]!)));
        params.push(...scopeValues.map(String));
        return `(${paramOf.map((p, k) => p(base + k + 1)).join(", ")})`;
      });
      await tx.unsafe(`INSERT INTO ${q(table)} (${cols.map(q).join(", ")}) VALUES ${tuples.join(", ")}`, params);
    }
  }

  private async ensureTable(table: string, rows: readonly Row[], blockTable: boolean): Promise<TableInfo | undefined> {
    let info = await this.loadTable(table);
    if (!info) {
      if (rows.length === 0) return undefined; // created by the first call that has rows
      const columns = inferColumns(table, rows);
      await this.sql.begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["create", table])]);
        const exists = (await tx.unsafe(`SELECT 1 FROM _blockx_tables WHERE name = $1`, [table])) as unknown[];
        if (exists.length > 0) return; // another host created it first, with its kinds
        const defs = [...columns].map(([c, k]) => `${q(c)} ${PG_TYPE[k]}`);
        const scope = blockTable ? [`_chain TEXT NOT NULL`, `_scope_from BIGINT NOT NULL`, `_scope_to BIGINT NOT NULL`] : [];
        await tx.unsafe(`CREATE TABLE ${q(table)} (${[...defs, ...scope].join(", ")})`);
        if (blockTable) {
          await tx.unsafe(`CREATE INDEX ${q(scopeIndexName(table))} ON ${q(table)} (_chain, _scope_from, _scope_to)`);
          await tx.unsafe(`INSERT INTO _blockx_scope_spans (name, max_span) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, [table]);
        }
        await tx.unsafe(`INSERT INTO _blockx_tables (name, kinds, block_table) VALUES ($1, $2, $3)`, [table, kindsText(columns), blockTable]);
      });
      info = await this.loadTable(table);
      if (!info) throw new TableStoreError("INTERNAL", `table ${table} was created but its metadata is missing`);
    }
    if (info.blockTable !== blockTable) {
      throw new TableStoreError("ROW_MISMATCH", `table ${table} is a ${info.blockTable ? "block" : "normal"} table; it cannot be written as a ${blockTable ? "block" : "normal"} table`);
    }
    return info;
  }

  private async loadTable(table: string): Promise<TableInfo | undefined> {
    const cached = this.tables.get(table);
    if (cached) return cached;
    const r = (await this.sql.unsafe(`SELECT kinds, block_table FROM _blockx_tables WHERE name = $1`, [table])) as { kinds: unknown; block_table: unknown }[];
    if (r.length === 0) return undefined;
    const info = parseTableMeta(table, r[0]!.kinds, r[0]!.block_table);
    this.tables.set(table, info);
    return info;
  }
}
