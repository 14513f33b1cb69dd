import { HIDDEN, redactUrlCredentials } from "../../common/config/secret-text";
import { SQL, type TransactionSQL } from "bun";
import { exactInt, parseExactJson } from "../../common/json/exact-json";
import { callResult, type GroupCommitResult, GroupCommitQueue } from "./group-commit-queue";
import { ReconnectGate } from "./reconnect-gate";
import {
  type BoundCell,
  bindRow,
  CALL_COLUMNS,
  callIndexName,
  checkColumnName,
  checkOrderColumn,
  checkReplaced,
  checkScope,
  checkTableName,
  type ColumnKind,
  hiddenColumns,
  inferColumns,
  kindsText,
  parseTableMeta,
  RUN_SEQ_COLUMN,
  BLOCK_HASH_COLUMN,
  hiddenScopeValues,
  blockTableInfo,
  scopeCountOf,
  scopeIndexName,
  type TableInfo,
} from "./table-schema";
import { type BlockScope, type CellValue, NO_OUTCOME, type CommitCounts, type ReadOptions, type ReplaceOutcome, type Row, type TableStore, TableStoreError, type TableWrite, type WrittenScope, type ScopeCount } from "./table-store";
import type { StoreKind } from "./store-kinds";
import { type CallFence, decideClaim, fenceProblem, type RunClaim, type RunClaimRequest, type RunFence, type RunRow, type RunState } from "./run-fence";
import { ownerOfNewTable, ownerProblem, type TableWriter } from "./table-owner";

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
  /**
   * A statement (or a transaction's COMMIT) that has not answered this long after the statement
   * timeout is given up on here: the server cannot end a session it cannot reach, so the client
   * closes its connections (a silent one among them) and opens new ones.
   */
  readonly deadlineMarginMs: number;
  /** "" keeps what the URL says (sslmode=...); else disable, prefer, require, verify-ca or verify-full. */
  readonly tls: string;
  /** A CA certificate file to verify the server against ("" none). */
  readonly tlsCaFile: string;
  readonly nowMs?: () => number;
}

/** Postgres type per column kind: integers exact to 78 digits (2^256 − 1), JSON as jsonb. */
const PG_TYPE: Record<ColumnKind, string> = { INTEGER: "NUMERIC(78,0)", REAL: "DOUBLE PRECISION", TEXT: "TEXT", JSON: "JSONB" };
/** The server's TCP keepalive on a store connection: probe after 10 s idle, every 5 s, give up after 3 unanswered. */
export const TCP_KEEPALIVE = { idleS: 10, intervalS: 5, count: 3 } as const;
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

/** isStaleShape: a table (42P01) or column (42703) that is not what the cached metadata says (dropped, or restored with other columns), or a row that does not fit the cached columns. */
function isStaleShape(e: unknown): boolean {
  // As the server said it, or as postgresStoreError wrapped it (INTERNAL, with its SQLSTATE).
  // A row that does not fit the cached columns may fit the table's new ones: retried once after reloading.
  if (e instanceof TableStoreError) return e.code === "ROW_MISMATCH" || (e.code === "INTERNAL" && /\(SQLSTATE (42P01|42703)\)$/.test(e.message));
  const state = (e as { errno?: unknown })?.errno;
  return state === "42P01" || state === "42703";
}

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

/** postgresStore: TABLE_STORE_URL=postgres://... (one store every Worker host writes). */
export const postgresStore: StoreKind = {
  schemes: ["postgres:", "postgresql:"],
  shared: true,
  describe: (url) => redactUrl(url),
  open: (url, c) =>
    new PostgresTableStore({
      url,
      poolSize: c.tableStorePoolSize,
      statementTimeoutMs: c.tableStoreStatementTimeoutMs,
      idleInTransactionTimeoutMs: c.tableStoreIdleInTransactionTimeoutMs,
      connectTimeoutMs: c.tableStoreConnectTimeoutMs,
      reconnectMinMs: c.tableStoreReconnectMinMs,
      reconnectMaxMs: c.tableStoreReconnectMaxMs,
      deadlineMarginMs: c.tableStoreDeadlineMarginMs,
      tls: c.tableStoreTls,
      tlsCaFile: c.tableStoreTlsCa,
    }),
};

/** redactUrl: the URL without its password and secret query parameters, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = HIDDEN;
    return redactUrlCredentials(u.toString());
  } catch {
    return "postgres://?";
  }
}

function q(ident: string): string {
  return `"${ident}"`;
}

/** How a parameter of each kind is written: typed as text and cast, so Bun never guesses (it would send a JSON text to a jsonb column as a JSON string). */
const PG_PARAM: Record<ColumnKind | "HIDDEN_TEXT" | "HIDDEN_INT", (n: number) => string> = {
  INTEGER: (n) => `$${n}::text::numeric`,
  REAL: (n) => `$${n}::float8`,
  TEXT: (n) => `$${n}::text`,
  JSON: (n) => `$${n}::text::jsonb`,
  HIDDEN_TEXT: (n) => `$${n}::text`,
  HIDDEN_INT: (n) => `$${n}::text::bigint`,
};

/** A call's writes with their tables made and rows bound, ready to apply, and the call's fence. */
interface Prepared {
  readonly writes: readonly TableWrite[];
  readonly infos: (TableInfo | undefined)[];
  readonly bound: BoundCell[][][];
  readonly fence: CallFence | null;
}

/** One call's commit as it waits for its group. */
interface FencedWrites {
  readonly writes: readonly TableWrite[];
  readonly fence: CallFence | null;
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

/** The store's clock, in ms since the epoch: every host writing one database shares it. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::float8`;
/** The start of the current transaction (of a lone statement: when it was sent), in ms since the epoch. */
const TX_START_MS = `(extract(epoch from now()) * 1000)::float8`;
/**
 * A run row with whether its epoch's lease is live `at` (by the store's clock): claims ask now; a
 * commit asks as of its transaction's start (one that waited on a lock is not late; a run taken over
 * since is caught by its generation, rows of a later run by their sequence).
 */
const runRowSql = (at: string) => `SELECT r.task_id, r.generation::float8 AS generation, r.epoch, r.worker, r.state, r.seq::float8 AS seq, COALESCE(l.expires_ms > ${at}, false) AS live FROM _blockx_runs r LEFT JOIN _blockx_leases l ON l.epoch = r.epoch`;

interface RunRowSql {
  task_id: string;
  generation: number;
  epoch: string;
  worker: string;
  state: RunState;
  seq: number;
  live: boolean;
}

function runRowOf(r: RunRowSql): RunRow {
  return { taskId: r.task_id, generation: Number(r.generation), epoch: r.epoch, workerAddr: r.worker, state: r.state, seq: Number(r.seq), leaseLive: r.live === true };
}

/**
 * PostgresTableStore: the table store of a cluster of hosts (TABLE_STORE_URL=postgres://...), on
 * Bun's built-in SQL client. One call's tables commit in one transaction; a block-table write takes
 * a transaction-scoped advisory lock on (table, chain) before it deletes the overlapping scopes and
 * inserts, so two hosts replacing overlapping scopes at once never both keep their rows (READ
 * COMMITTED alone would let each miss the other's uncommitted insert). Tables and their metadata
 * are created under an advisory lock too, so Workers on several hosts creating one table at once
 * agree on its columns. Fencing (run-fence.ts): a group's transaction reads its calls' runs FOR
 * SHARE (a claim taking a run over waits for it, and it for the claim) and refuses each call whose
 * run is not current. A connection error, a statement timeout or a deadlock is STORE_UNAVAILABLE
 * (retryable); after one, calls fail fast until the reconnect backoff has passed. Every statement
 * and COMMIT has a deadline here too (statement timeout + margin): one that misses it has the pool's
 * connections closed and replaced, so a silent connection cannot hold the store (and every commit
 * queued behind it) for good.
 */
export class PostgresTableStore implements TableStore {
  readonly description: string;
  private sql: SQL;
  private readonly tables = new Map<string, TableInfo>();
  private readonly gate: ReconnectGate;
  private readonly nowMs: () => number;
  private metaReady: Promise<void> | undefined;
  /** Pools replaced after a missed deadline (metrics, tests). */
  private replaced = 0;
  /** What still waits on each pool's answers (bounded): given up on when that pool is replaced. */
  private readonly waiting = new Map<SQL, Set<(e: TableStoreError) => void>>();
  private closed = false;
  /** Sizes in rows. A group's rows go in one transaction: bounded well below what the statement timeout can write. */
  private readonly groups = new GroupCommitQueue<FencedWrites>((groups) => this.commitGroup(groups), { maxCalls: 256, maxSize: 50_000 });

  constructor(private readonly options: PostgresStoreOptions) {
    this.description = redactUrl(options.url);
    this.gate = new ReconnectGate(options.reconnectMinMs, options.reconnectMaxMs);
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.sql = this.openPool();
  }

  private openPool(): SQL {
    const o = this.options;
    const tls = o.tlsCaFile ? { ca: Bun.file(o.tlsCaFile) } : undefined;
    return new SQL(o.url, {
      max: o.poolSize,
      connectionTimeout: Math.max(1, Math.ceil(o.connectTimeoutMs / 1000)),
      idleTimeout: 60,
      // TCP keepalive on the server's side of each connection (Bun's client exposes no socket option):
      // a Worker that vanished (a dead host, a cut link) has its session ended and its locks freed
      // within about 25 s; a connection silent towards the Worker is ended by the Worker's deadline.
      connection: {
        statement_timeout: o.statementTimeoutMs,
        idle_in_transaction_session_timeout: o.idleInTransactionTimeoutMs,
        application_name: "blockx",
        tcp_keepalives_idle: TCP_KEEPALIVE.idleS,
        tcp_keepalives_interval: TCP_KEEPALIVE.intervalS,
        tcp_keepalives_count: TCP_KEEPALIVE.count,
      },
      ...(tls ? { tls } : o.tls ? { tls: o.tls as "disable" | "prefer" | "require" | "verify-ca" | "verify-full" } : {}),
    });
  }

  /** deadlineMs: how long one statement or COMMIT may go unanswered before its pool is replaced. */
  private get deadlineMs(): number {
    return this.options.statementTimeoutMs + this.options.deadlineMarginMs;
  }

  /** poolsReplaced: how many times a missed deadline closed and replaced the connections. */
  get poolsReplaced(): number {
    return this.replaced;
  }

  /**
   * bounded gives `work` (one statement, or the COMMIT of a transaction whose statements are each
   * bounded themselves) the deadline: past it, every connection of the pool is closed (the silent
   * one cannot be told apart) and a new pool takes the next calls; `work` fails STORE_UNAVAILABLE.
   */
  private async bounded<T>(work: Promise<T>, what: string): Promise<T> {
    const pool = this.sql;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let giveUp!: (e: TableStoreError) => void;
    const missed = new Promise<never>((_, reject) => {
      giveUp = reject;
      timer = setTimeout(() => {
        // Rejected first: closing the pool rejects `work` too, with the client's own "Connection closed".
        reject(new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} unavailable: ${what} had no answer within ${this.deadlineMs} ms (statement timeout + margin); its connections were closed and replaced`));
        // Only the pool it ran on: a statement of a pool replaced already says nothing of the new one.
        if (this.sql === pool) this.replacePool();
      }, this.deadlineMs);
    });
    const waiting = this.waiting.get(pool) ?? new Set<(e: TableStoreError) => void>();
    this.waiting.set(pool, waiting.add(giveUp));
    try {
      return await Promise.race([work, missed]);
    } finally {
      clearTimeout(timer);
      waiting.delete(giveUp);
      if (waiting.size === 0 && this.waiting.get(pool) === waiting) this.waiting.delete(pool);
    }
  }

  /**
   * replacePool swaps in a new pool and gives up at once on everything still waiting on the old
   * one (its other connections may be silent too: the client cannot tell which), rather than
   * leaving each to its own deadline.
   */
  private replacePool(): void {
    if (this.closed) return;
    const old = this.sql;
    this.replaced++;
    this.sql = this.openPool();
    this.metaReady = undefined;
    const given = new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} unavailable: another statement had no answer in time, so the connections this one waited on were closed and replaced`);
    for (const giveUp of this.waiting.get(old) ?? []) giveUp(given);
    this.waiting.delete(old);
    void old.close({ timeout: 0 }).catch(() => {});
  }

  /** run: one statement on `on` (the pool, or a transaction), bounded. */
  private run<T = Record<string, unknown>[]>(on: SQL, text: string, params?: unknown[]): Promise<T> {
    return this.bounded(on.unsafe(text, params) as Promise<T>, "a statement");
  }

  /**
   * transaction: `fn` in a transaction on the current pool, every step bounded: getting a connection
   * and its BEGIN, each statement of `fn` (through `run`), and the COMMIT once `fn` is done.
   */
  private async transaction<T>(fn: (tx: TransactionSQL) => Promise<T>): Promise<T> {
    let bodyStarted!: () => void;
    let bodyDone!: () => void;
    const started = new Promise<void>((r) => (bodyStarted = r));
    const body = new Promise<void>((r) => (bodyDone = r));
    const tx = this.sql.begin(async (t) => {
      bodyStarted();
      const out = await fn(t);
      bodyDone();
      return out;
    });
    const ended = tx.then(
      () => {},
      () => {},
    );
    await this.bounded(Promise.race([ended, started]), "a BEGIN");
    // While the body runs, its statements bound themselves; from then on the COMMIT is bounded.
    await Promise.race([ended, body]);
    return this.bounded(tx as Promise<T>, "a COMMIT");
  }

  /**
   * commit: calls arriving while a group is being written wait and go together as the next group
   * (GroupCommitQueue): one transaction, one durable COMMIT, each call in a savepoint of its own. A
   * block table's advisory lock serialises every call writing it, through its COMMIT: one call per
   * transaction wrote one call per fsync, whatever the pool's size.
   */
  async commit(writes: readonly TableWrite[], fence: CallFence | null = null): Promise<ReplaceOutcome[]> {
    for (const w of writes) {
      checkTableName(w.table);
      if (w.kind === "replaceBlock") checkScope(w.scope);
    }
    return this.groups.commit({ writes, fence }, writes.reduce((n, w) => n + w.rows.length, 0));
  }

  commitCounts(): CommitCounts {
    return { ...this.groups.sent };
  }

  async openEpoch(epoch: string, workerAddr: string, ttlMs: number): Promise<void> {
    await this.guarded(() =>
      this.run(
        this.sql,
        `INSERT INTO _blockx_leases (epoch, worker, expires_ms) VALUES ($1, $2, ${NOW_MS} + $3::float8) ON CONFLICT (epoch) DO UPDATE SET expires_ms = EXCLUDED.expires_ms WHERE _blockx_leases.expires_ms > ${NOW_MS}`,
        [epoch, workerAddr, ttlMs],
      ),
    );
  }

  async renewEpoch(epoch: string, ttlMs: number): Promise<boolean> {
    // Live when the renewal was sent (a renewal waiting on a lock is not late), extended from when it is written.
    const rows = await this.guarded(() => this.run<unknown[]>(this.sql, `UPDATE _blockx_leases SET expires_ms = ${NOW_MS} + $2::float8 WHERE epoch = $1 AND expires_ms > ${TX_START_MS} RETURNING 1`, [epoch, ttlMs]));
    return rows.length === 1;
  }

  /** claimRun: under an advisory lock on the task id (two first claims cannot both insert), the run row FOR UPDATE, decided by decideClaim. */
  async claimRun(req: RunClaimRequest): Promise<RunClaim> {
    return this.guarded(() =>
      this.transaction(async (tx) => {
        await this.run(tx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["run", req.taskId])]);
        const own = await this.run<{ live: boolean }[]>(tx, `SELECT expires_ms > ${NOW_MS} AS live FROM _blockx_leases WHERE epoch = $1`, [req.epoch]);
        const found = await this.run<RunRowSql[]>(tx, `${runRowSql(NOW_MS)} WHERE r.task_id = $1 FOR UPDATE OF r`, [req.taskId]);
        const row = found[0] ? runRowOf(found[0]) : null;
        const d = decideClaim(req, row, own[0]?.live === true);
        if (d.kind === "leaseLost") return { kind: "leaseLost" } as const;
        if (d.kind === "refuse") return { kind: "refused", current: row! } as const;
        if (d.kind === "mine") return { kind: "claimed", fence: d.fence, tookOver: null } as const;
        const generation = d.kind === "insert" ? 1 : d.generation;
        const seq = await this.run<{ seq: number }[]>(
          tx,
          `INSERT INTO _blockx_runs (task_id, generation, epoch, worker, state, seq, updated_ms) VALUES ($1, $2, $3, $4, 'RUNNING', nextval('_blockx_run_seq'), ${NOW_MS}) ` +
            `ON CONFLICT (task_id) DO UPDATE SET generation = EXCLUDED.generation, epoch = EXCLUDED.epoch, worker = EXCLUDED.worker, state = 'RUNNING', seq = EXCLUDED.seq, updated_ms = EXCLUDED.updated_ms RETURNING seq::float8 AS seq`,
          [req.taskId, generation, req.epoch, req.workerAddr],
        );
        return { kind: "claimed", fence: { taskId: req.taskId, generation, epoch: req.epoch, seq: Number(seq[0]!.seq) }, tookOver: row } as const;
      }),
    );
  }

  async endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): Promise<void> {
    await this.guarded(() =>
      this.run(this.sql, `UPDATE _blockx_runs SET state = $1, updated_ms = ${NOW_MS} WHERE task_id = $2 AND generation = $3 AND epoch = $4 AND state = 'RUNNING'`, [state, fence.taskId, fence.generation, fence.epoch]),
    );
  }

  async scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): Promise<ScopeCount[]> {
    checkTableName(table);
    return this.guarded(async () => {
      blockTableInfo(table, await this.loadTable(table));
      const rows = await this.run<{ f: unknown; t: unknown; h: unknown; s: unknown; n: unknown }[]>(
        this.sql,
        `SELECT _scope_from::float8 AS f, _scope_to::float8 AS t, ${BLOCK_HASH_COLUMN} AS h, ${RUN_SEQ_COLUMN}::float8 AS s, COUNT(*)::float8 AS n FROM ${q(table)} ` +
          `WHERE _chain = $1 AND _scope_from >= $2 AND _scope_from <= $3 GROUP BY _scope_from, _scope_to, ${BLOCK_HASH_COLUMN}, ${RUN_SEQ_COLUMN} ORDER BY 1, 2`,
        [chain, fromBlock, toBlock],
      );
      return rows.map(scopeCountOf);
    });
  }

  async scopeBounds(table: string, chain: string): Promise<{ fromBlock: number; toBlock: number } | null> {
    checkTableName(table);
    return this.guarded(async () => {
      blockTableInfo(table, await this.loadTable(table));
      const r = await this.run<{ f: number | null; t: number | null }[]>(this.sql, `SELECT MIN(_scope_from)::float8 AS f, MAX(_scope_to)::float8 AS t FROM ${q(table)} WHERE _chain = $1`, [chain]);
      const b = r[0];
      return !b || b.f === null || b.t === null ? null : { fromBlock: Number(b.f), toBlock: Number(b.t) };
    });
  }

  async wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): Promise<WrittenScope[]> {
    checkTableName(table);
    return this.guarded(async () => {
      const info = await this.loadTable(table);
      if (!info || !info.blockTable) return [];
      const spanRows = await this.run<{ s: unknown }[]>(this.sql, `SELECT max_span::float8 AS s FROM _blockx_scope_spans WHERE name = $1`, [table]);
      const span = Number(spanRows[0]?.s ?? 0);
      if (!(span > 0)) return [];
      const rows = await this.run<{ f: number; t: number }[]>(
        this.sql,
        `SELECT DISTINCT _scope_from::float8 AS f, _scope_to::float8 AS t FROM ${q(table)} WHERE _chain = $1 AND _scope_from >= $2 AND _scope_from <= $3 AND _scope_to >= $4 AND _scope_to > _scope_from ORDER BY 1 LIMIT $5`,
        [chain, fromBlock - span, toBlock, fromBlock, limit + 1],
      );
      if (rows.length > limit) throw new TableStoreError("INVALID_ARGUMENT", `table ${table} holds more than ${limit} multi-block scopes over blocks ${fromBlock}..${toBlock}: rerun a shorter range`);
      return rows.map((r) => ({ fromBlock: Number(r.f), toBlock: Number(r.t) }));
    });
  }

  async check(): Promise<void> {
    await this.guarded(() => this.run(this.sql, `SELECT 1`));
  }

  /**
   * commitGroup writes a group: every call's tables made and rows bound first (a misfit is that
   * call's error), then one transaction taking every block table's lock in one order (two hosts'
   * groups cannot deadlock), reading the calls' runs FOR SHARE, each call in a savepoint. A call
   * whose run is not current gets STALE_RUN and writes nothing; a call whose statements the server
   * refuses for their data gets that error alone; an error that means the store is not available
   * now (the connection, a timeout, a deadlock, the COMMIT) fails the whole group, as it would each
   * call alone.
   */
  private async commitGroup(groups: readonly FencedWrites[]): Promise<GroupCommitResult[]> {
    const stale = new Set<number>();
    let results: GroupCommitResult[];
    try {
      results = await this.commitGroupOnce(groups, stale);
    } catch (e) {
      // A lone call writes without a savepoint: its error ends the transaction and comes here.
      if (groups.length !== 1 || !isStaleShape(e)) throw e;
      stale.add(0);
      results = new Array(1);
    }
    if (stale.size === 0) return results;
    // Calls that met a table dropped or restored behind the store's back (their cached shape is
    // stale): its metadata is read again and those calls are committed once more, as a group of
    // their own (the others have committed). Before, every later write was INTERNAL until restart.
    const again = [...stale];
    await this.refreshTables(again.flatMap((i) => groups[i]!.writes.map((w) => w.table)));
    const retried = await this.commitGroupOnce(again.map((i) => groups[i]!), new Set());
    again.forEach((i, k) => (results[i] = retried[k]!));
    return results;
  }

  /**
   * refreshTables forgets the cached shape of `tables` and, for one whose metadata outlived the
   * table itself (an operator dropped it), removes that metadata (under the table's create lock):
   * the next write makes the table again from its rows. A table restored with other columns is read anew.
   */
  private async refreshTables(tables: readonly string[]): Promise<void> {
    for (const t of tables) this.tables.delete(t);
    await this.guarded(() =>
      this.transaction(async (tx) => {
        for (const t of [...new Set(tables)].sort()) {
          await this.run(tx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["create", t])]);
          const there = await this.run<{ r: unknown }[]>(tx, `SELECT to_regclass($1) AS r`, [q(t)]);
          if (there[0]?.r !== null && there[0]?.r !== undefined) continue;
          await this.run(tx, `DELETE FROM _blockx_tables WHERE name = $1`, [t]);
          await this.run(tx, `DELETE FROM _blockx_scope_spans WHERE name = $1`, [t]);
        }
      }),
    );
  }

  /** commitGroupOnce: one group transaction; the indexes of calls that failed on a stale table shape go into `stale`. */
  private commitGroupOnce(groups: readonly FencedWrites[], stale: Set<number>): Promise<GroupCommitResult[]> {
    let current = -1;
    const own = (e: unknown): GroupCommitResult => {
      if (isStaleShape(e)) stale.add(current);
      const err = postgresStoreError(e, this.description);
      if (err.code === "STORE_UNAVAILABLE") throw e;
      return callResult(err);
    };
    return this.guarded(async () => {
      const results: GroupCommitResult[] = new Array(groups.length);
      const prepared: (Prepared | null)[] = [];
      for (let i = 0; i < groups.length; i++) {
        current = i;
        try {
          prepared.push(await this.prepare(groups[i]!.writes, groups[i]!.fence));
        } catch (e) {
          results[i] = own(e);
          prepared.push(null);
        }
      }
      if (!prepared.some((p) => p)) return results; // every call failed on its own: no transaction to make
      const lockKeys = [...new Set(prepared.flatMap((p) => (p ? lockKeysOf(p) : [])))].sort();
      const fenced = [...new Set(prepared.flatMap((p) => (p?.fence ? [p.fence.taskId] : [])))];
      await this.transaction(async (tx) => {
        for (const key of lockKeys) await this.run(tx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [key]);
        const runs = new Map<string, RunRow>();
        if (fenced.length > 0) {
          for (const r of await this.run<RunRowSql[]>(tx, `${runRowSql(TX_START_MS)} WHERE r.task_id = ANY($1::text[]) FOR SHARE OF r`, [fenced])) runs.set(r.task_id, runRowOf(r));
        }
        const owners = await this.ownersOf(tx, prepared);
        for (let i = 0; i < prepared.length; i++) {
          const p = prepared[i];
          if (!p) continue;
          const stale = p.fence ? fenceProblem(p.fence, runs.get(p.fence.taskId) ?? null) : null;
          if (stale) {
            results[i] = { ok: false, code: "STALE_RUN", message: stale };
            continue;
          }
          const notOwner = p.writes.map((w, k) => (p.infos[k] ? ownerProblem(w.table, owners.get(w.table) ?? null, p.fence?.writer) : null)).find((m) => m !== null);
          if (notOwner) {
            results[i] = { ok: false, code: "NOT_OWNER", message: notOwner };
            continue;
          }
          if (groups.length === 1) {
            results[i] = { ok: true, outcomes: await this.apply(tx, p) }; // alone: no savepoint needed
            continue;
          }
          current = i;
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

  /**
   * ownersOf reads, inside the group's transaction, the owner of every table its checked writers
   * write (never from a cache: an operator may give a table an owner while the store runs).
   */
  private async ownersOf(tx: SQL, prepared: readonly (Prepared | null)[]): Promise<Map<string, string | null>> {
    const tables = [...new Set(prepared.flatMap((p) => (p?.fence?.writer && !p.fence.writer.admin ? p.writes.map((w) => w.table) : [])))];
    const owners = new Map<string, string | null>();
    if (tables.length === 0) return owners;
    for (const r of await this.run<{ name: string; owner: string | null }[]>(tx, `SELECT name, owner FROM _blockx_tables WHERE name = ANY($1::text[])`, [tables])) owners.set(r.name, r.owner);
    return owners;
  }

  /** prepare makes every table of one call's writes exist and binds its rows (a misfit throws: nothing of the call is written). */
  private async prepare(writes: readonly TableWrite[], fence: CallFence | null): Promise<Prepared> {
    const infos: (TableInfo | undefined)[] = [];
    for (const w of writes) infos.push(await this.ensureTable(w.table, w.rows, w.kind === "replaceBlock", fence?.writer));
    const bound = writes.map((w, i) => (infos[i] ? w.rows.map((r, j) => bindRow(w.table, infos[i]!.columns, r, j)) : []));
    return { writes, infos, bound, fence };
  }

  /** apply writes one prepared call's rows inside a transaction (or savepoint) holding its locks. */
  private async apply(tx: SQL, { writes, infos, bound, fence }: Prepared): Promise<ReplaceOutcome[]> {
    const out: ReplaceOutcome[] = [];
    for (let i = 0; i < writes.length; i++) {
      const w = writes[i]!;
      const info = infos[i];
      if (!info) out.push(NO_OUTCOME);
      else if (w.kind === "append") {
        // Under a fence, the rows this call of this task wrote before go first: a call's rows land once.
        if (fence) await this.run(tx, `DELETE FROM ${q(w.table)} WHERE _task_id = $1 AND _call = $2`, [fence.taskId, fence.callIndex]);
        await this.insert(tx, w.table, info, bound[i]!, fence ? [fence.taskId, fence.callIndex] : [null, null]);
        out.push(NO_OUTCOME);
      } else out.push(await this.replace(tx, w.table, info, w.scope, bound[i]!, fence));
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
      const cols = [...info.columns].map(([c, k]) => (k === "INTEGER" || k === "JSON" ? `${q(c)}::text AS ${q(c)}` : q(c))).concat(info.blockTable ? [`_chain`, `_scope_from::float8 AS _scope_from`, `_scope_to::float8 AS _scope_to`, BLOCK_HASH_COLUMN] : []);
      const limit = options.limit ?? 0;
      const text = `SELECT ${cols.join(", ")} FROM ${q(table)}${options.orderBy ? ` ORDER BY ${q(options.orderBy)}` : ""}${limit > 0 ? ` LIMIT ${Math.trunc(limit)}` : ""}`;
      const rows = await this.run<Record<string, CellValue>[]>(this.sql, text);
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
    this.closed = true;
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

  /** ensureMeta creates the store's own tables once per pool (again after a failure). */
  private ensureMeta(): Promise<void> {
    this.metaReady ??= this.transaction(async (tx) => {
      await this.run(tx, `SELECT pg_advisory_xact_lock(hashtextextended('_blockx_meta', 7))`);
      await this.run(tx, `CREATE TABLE IF NOT EXISTS _blockx_tables (name TEXT PRIMARY KEY, kinds TEXT NOT NULL, block_table BOOLEAN NOT NULL, owner TEXT)`);
      // Tables listed before owners existed are unowned (looked up first: ALTER TABLE locks the table even when it adds nothing).
      const owner = await this.run<unknown[]>(tx, `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '_blockx_tables' AND column_name = 'owner'`);
      if (owner.length === 0) await this.run(tx, `ALTER TABLE _blockx_tables ADD COLUMN IF NOT EXISTS owner TEXT`);
      await this.run(tx, `CREATE TABLE IF NOT EXISTS _blockx_scope_spans (name TEXT PRIMARY KEY, max_span BIGINT NOT NULL)`);
      await this.run(
        tx,
        `CREATE TABLE IF NOT EXISTS _blockx_runs (task_id TEXT PRIMARY KEY, generation BIGINT NOT NULL, epoch TEXT NOT NULL, worker TEXT NOT NULL, state TEXT NOT NULL, seq BIGINT NOT NULL, updated_ms DOUBLE PRECISION NOT NULL)`,
      );
      await this.run(tx, `CREATE TABLE IF NOT EXISTS _blockx_leases (epoch TEXT PRIMARY KEY, worker TEXT NOT NULL, expires_ms DOUBLE PRECISION NOT NULL)`);
      await this.run(tx, `CREATE SEQUENCE IF NOT EXISTS _blockx_run_seq`);
    })
      .then(() => {})
      .catch((e: unknown) => {
        this.metaReady = undefined;
        throw e;
      });
    return this.metaReady;
  }

  /**
   * replace removes the rows of every scope overlapping `scope` and inserts the call's; checkReplaced
   * throws (the transaction or savepoint then undoes the delete) when a removed scope reaches past
   * `scope` or, under a fence, was written by a run claimed after this one.
   */
  private async replace(tx: SQL, table: string, info: TableInfo, scope: BlockScope, rows: BoundCell[][], fence: CallFence | null): Promise<ReplaceOutcome> {
    const spanRows = await this.run<{ s: unknown }[]>(tx, `SELECT max_span::float8 AS s FROM _blockx_scope_spans WHERE name = $1`, [table]);
    const span = spanRows[0]?.s;
    if (!Number.isSafeInteger(span) || (span as number) < 0) throw new TableStoreError("CORRUPT_METADATA", `the table store's scope span for ${table} is not valid: ${JSON.stringify(span)}`);
    // Overlap: from <= scope.to and to >= scope.from; a scope starts at most `span` before the range.
    const removed = await this.run<{ f: number; t: number; s: number | null }[]>(
      tx,
      `DELETE FROM ${q(table)} WHERE _chain = $1 AND _scope_from >= $2 AND _scope_from <= $3 AND _scope_to >= $4 RETURNING _scope_from::float8 AS f, _scope_to::float8 AS t, ${RUN_SEQ_COLUMN}::float8 AS s`,
      [scope.chain, scope.fromBlock - (span as number), scope.toBlock, scope.fromBlock],
    );
    const outcome = checkReplaced(table, scope, removed, fence);
    await this.insert(tx, table, info, rows, hiddenScopeValues(scope, fence?.seq ?? 0));
    const width = scope.toBlock - scope.fromBlock;
    if (width > (span as number)) await this.run(tx, `UPDATE _blockx_scope_spans SET max_span = $1 WHERE name = $2 AND max_span < $1`, [width, table]);
    return outcome;
  }

  /** insert: multi-row INSERTs, as many rows per statement as the parameter limit allows; `hiddenValues` fill the hidden columns. */
  private async insert(tx: SQL, table: string, info: TableInfo, rows: BoundCell[][], hiddenValues: (string | number | null)[]): Promise<void> {
    if (rows.length === 0) return;
    const hidden = hiddenColumns(info);
    const cols = [...info.columns.keys(), ...hidden];
    const kinds = [...info.columns.values()];
    const paramOf = [...kinds.map((k) => PG_PARAM[k]), ...hidden.map((c) => (c === "_chain" || c === "_task_id" || c === BLOCK_HASH_COLUMN ? PG_PARAM.HIDDEN_TEXT : PG_PARAM.HIDDEN_INT))];
    const perRow = cols.length;
    const chunk = Math.max(1, Math.floor(MAX_PARAMS / perRow));
    for (let start = 0; start < rows.length; start += chunk) {
      const part = rows.slice(start, start + chunk);
      const params: (string | number | null)[] = [];
      const tuples = part.map((cells) => {
        const base = params.length;
        cells.forEach((c, k) => params.push(bindPg(c, kinds[k]!)));
        params.push(...hiddenValues.map((v) => (v === null ? null : String(v))));
        return `(${paramOf.map((p, k) => p(base + k + 1)).join(", ")})`;
      });
      await this.run(tx, `INSERT INTO ${q(table)} (${cols.map(q).join(", ")}) VALUES ${tuples.join(", ")}`, params);
    }
  }

  private async ensureTable(table: string, rows: readonly Row[], blockTable: boolean, writer: TableWriter | null | undefined): Promise<TableInfo | undefined> {
    let info = await this.loadTable(table);
    if (!info) {
      if (rows.length === 0) return undefined; // created by the first call that has rows
      const columns = inferColumns(table, rows);
      await this.transaction(async (tx) => {
        await this.run(tx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["create", table])]);
        const exists = await this.run<unknown[]>(tx, `SELECT 1 FROM _blockx_tables WHERE name = $1`, [table]);
        if (exists.length > 0) return; // another host created it first, with its kinds
        const defs = [...columns].map(([c, k]) => `${q(c)} ${PG_TYPE[k]}`);
        const hidden = blockTable ? [`_chain TEXT NOT NULL`, `_scope_from BIGINT NOT NULL`, `_scope_to BIGINT NOT NULL`, `${RUN_SEQ_COLUMN} BIGINT NOT NULL DEFAULT 0`, `${BLOCK_HASH_COLUMN} TEXT`] : [`_task_id TEXT`, `_call BIGINT`];
        await this.run(tx, `CREATE TABLE ${q(table)} (${[...defs, ...hidden].join(", ")})`);
        if (blockTable) {
          await this.run(tx, `CREATE INDEX ${q(scopeIndexName(table))} ON ${q(table)} (_chain, _scope_from, _scope_to)`);
          await this.run(tx, `INSERT INTO _blockx_scope_spans (name, max_span) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, [table]);
        } else {
          await this.run(tx, `CREATE INDEX ${q(callIndexName(table))} ON ${q(table)} (_task_id, _call)`);
        }
        await this.run(tx, `INSERT INTO _blockx_tables (name, kinds, block_table, owner) VALUES ($1, $2, $3, $4)`, [table, kindsText(columns), blockTable, ownerOfNewTable(table, writer)]);
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
    const r = await this.run<{ kinds: unknown; block_table: unknown }[]>(this.sql, `SELECT kinds, block_table FROM _blockx_tables WHERE name = $1`, [table]);
    if (r.length === 0) return undefined;
    const info = parseTableMeta(table, r[0]!.kinds, r[0]!.block_table);
    await this.addFenceColumns(table, info);
    this.tables.set(table, info);
    return info;
  }

  /** addFenceColumns gives a table made before fencing its hidden run columns (looked up first: ALTER TABLE locks the table even when it adds nothing). */
  private async addFenceColumns(table: string, info: TableInfo): Promise<void> {
    const want = info.blockTable ? [RUN_SEQ_COLUMN, BLOCK_HASH_COLUMN] : [...CALL_COLUMNS];
    const have = await this.run<{ column_name: string }[]>(this.sql, `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = ANY($2::text[])`, [table, want]);
    if (have.length === want.length) return;
    await this.transaction(async (tx) => {
      if (info.blockTable) await this.run(tx, `ALTER TABLE ${q(table)} ADD COLUMN IF NOT EXISTS ${RUN_SEQ_COLUMN} BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS ${BLOCK_HASH_COLUMN} TEXT`);
      else {
        await this.run(tx, `ALTER TABLE ${q(table)} ADD COLUMN IF NOT EXISTS _task_id TEXT, ADD COLUMN IF NOT EXISTS _call BIGINT`);
        await this.run(tx, `CREATE INDEX IF NOT EXISTS ${q(callIndexName(table))} ON ${q(table)} (_task_id, _call)`);
      }
    });
  }
}
