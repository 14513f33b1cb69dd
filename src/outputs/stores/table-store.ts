import type { ExactInt } from "../../common/json/exact-json";
import type { CallFence, RunClaim, RunClaimRequest, RunFence, RunState } from "./run-fence";

/** A cell of a row: JSON values, with integers beyond 2^53 as ExactInt (see exact-json.ts). */
export type CellValue = null | boolean | number | string | ExactInt | CellValue[] | { [key: string]: CellValue };
export type Row = Readonly<Record<string, CellValue>>;

/** The blocks a call covered: one block (block cluster) or one bundle (bundle cluster). */
export interface BlockScope {
  readonly chain: string;
  readonly fromBlock: number;
  readonly toBlock: number;
  /** The hash of toBlock the rows were computed from (the hidden `_block_hash`); absent or null: not known. */
  readonly blockHash?: string | null;
}

/**
 * What a block-table write replaced: how many earlier scopes (each wholly inside the write's own:
 * a write that would cut one is refused with SCOPE_CONFLICT, since rows carry no block of their
 * own and the blocks outside it would be left without rows).
 */
export interface ReplaceOutcome {
  readonly replacedScopes: number;
}

/** A block table's scope written earlier (its rows' hidden columns), as `wideScopes` lists them. */
export interface WrittenScope {
  readonly fromBlock: number;
  readonly toBlock: number;
}

/**
 * ScopeCount: one written scope of a block table as `blockx verify` sees it: its blocks, the hash
 * its rows recorded (null: none), the run that wrote them, and how many rows. One entry per
 * distinct (scope, hash, run): a scope listed twice was written twice.
 */
export interface ScopeCount {
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly blockHash: string | null;
  readonly runSeq: number;
  readonly rows: number;
}

/**
 * TableWrite: one table's part of a call's output. A block table's write replaces every row of its
 * chain whose recorded scope overlaps the scope's block range (each such scope must lie inside
 * it); a normal table's write appends, and under a fence first removes the rows the same call of
 * the same task wrote before (a retry, a resubmission: a call's rows land once).
 */
export type TableWrite =
  | { readonly kind: "replaceBlock"; readonly table: string; readonly scope: BlockScope; readonly rows: readonly Row[] }
  | { readonly kind: "append"; readonly table: string; readonly rows: readonly Row[] };

/** ReadOptions: how `read` orders and limits a table's rows (limit 0: all). */
export interface ReadOptions {
  readonly orderBy?: string;
  readonly limit?: number;
}

/**
 * TableStore is where Writer Plugins put rows: embedded SQLite for one host, Postgres for a
 * cluster of hosts. Both keep the same contract (src/outputs/stores/table-store.contract.test.ts
 * runs one suite against both):
 * - `commit` writes every table of one call in one transaction, and resolves only once the rows
 *   are durable; a block table's write replaces every overlapping scope of its chain, so a
 *   retried, resubmitted or rerun call (another start, another bundle size, another host) never
 *   leaves two rows for a block;
 * - a table is created from the first rows written to it, with column kinds INTEGER (exact up to
 *   78 digits), REAL, TEXT or JSON; a row that does not fit fails with ROW_MISMATCH naming the
 *   table, the column and both kinds, and nothing of the call is written;
 * - a store that cannot be reached fails with STORE_UNAVAILABLE (retryable), never as the user's
 *   error; no call ever blocks the event loop;
 * - fencing (src/outputs/stores/run-fence.ts): runs are claimed, Worker epochs hold leases, and a
 *   commit under a fence whose run is no longer current is refused with STALE_RUN in the commit's
 *   own transaction, as is a block-table write over rows of a run claimed after its own;
 * - owners (table-owner.ts): a table records the writer that created it (the fence's `writer`),
 *   and a commit by another non-admin writer is refused with NOT_OWNER in the commit's own
 *   transaction, nothing of the call written.
 */
export interface TableStore {
  /** What the store is, for messages: `sqlite:/path` or the Postgres URL without its password. */
  readonly description: string;
  /**
   * commit writes one call's tables in one transaction; outcomes in the order of `writes`. Under a
   * fence, the call's run must be current when the transaction runs (else STALE_RUN, nothing written).
   */
  commit(writes: readonly TableWrite[], fence?: CallFence | null): Promise<ReplaceOutcome[]>;
  /** openEpoch starts a Worker incarnation's lease (`ttlMs` from now, by the store's clock). */
  openEpoch(epoch: string, workerAddr: string, ttlMs: number): Promise<void>;
  /** renewEpoch extends a live lease by `ttlMs` from now; false when it had expired (it stays expired). */
  renewEpoch(epoch: string, ttlMs: number): Promise<boolean>;
  /** claimRun: a run of a task for this epoch, or the refusal naming the current one (run-fence.ts decideClaim). */
  claimRun(req: RunClaimRequest): Promise<RunClaim>;
  /** endRun records how a run ended (a later claim may then take the id over unless it SUCCEEDED); a superseded run changes nothing. */
  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): Promise<void>;
  /**
   * wideScopes: the scopes wider than one block of a block table on `chain` that overlap
   * from..to, in order (none for a table that does not exist); more than `limit`: INVALID_ARGUMENT.
   */
  wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): Promise<WrittenScope[]>;
  /**
   * scopeCounts: the scopes of a block table on `chain` that start in fromBlock..toBlock, in order
   * (ScopeCount). NO_SUCH_TABLE for a table that does not exist, INVALID_ARGUMENT for a normal one.
   */
  scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): Promise<ScopeCount[]>;
  /** scopeBounds: the lowest and highest block of `chain` a block table holds rows of (null: none); errors as scopeCounts. */
  scopeBounds(table: string, chain: string): Promise<{ fromBlock: number; toBlock: number } | null>;
  /** check reaches the store with one round trip (a role's start-up check); STORE_UNAVAILABLE when it cannot. */
  check(): Promise<void>;
  /** read returns a table's rows: user columns, then the hidden scope columns and `_block_hash` of a block table. */
  read(table: string, options?: ReadOptions): Promise<Record<string, CellValue>[]>;
  close(): Promise<void>;
  /** commitCounts: calls' commits written so far and the transactions they went in (group commit). */
  commitCounts(): CommitCounts;
}

/** CommitCounts: how many calls' commits a store has written, in how many transactions. */
export interface CommitCounts {
  transactions: number;
  commits: number;
}

/** replaceBlockRows is a one-table commit of a block table's rows. */
export async function replaceBlockRows(store: TableStore, table: string, scope: BlockScope, rows: readonly Row[]): Promise<ReplaceOutcome> {
  return (await store.commit([{ kind: "replaceBlock", table, scope, rows }]))[0]!;
}

/** appendRows is a one-table commit of a normal table's rows. */
export async function appendRows(store: TableStore, table: string, rows: readonly Row[]): Promise<void> {
  await store.commit([{ kind: "append", table, rows }]);
}

/**
 * TableStoreErrorCode: ROW_MISMATCH and INVALID_ARGUMENT are the caller's fault (a row that does
 * not fit, a reserved table name); STORE_UNAVAILABLE is retryable (down, unreachable, timed out,
 * locked past the statement timeout); NO_SUCH_TABLE answers a read; STALE_RUN refuses a commit of
 * a run that is no longer current (or over a later run's rows) and SCOPE_CONFLICT a block write
 * that would cut an earlier scope, neither retryable; NOT_OWNER refuses a commit to a table that
 * belongs to another identity (table-owner.ts), not retryable; CORRUPT_METADATA and INTERNAL are
 * the store's own faults.
 */
export type TableStoreErrorCode = "ROW_MISMATCH" | "INVALID_ARGUMENT" | "STORE_UNAVAILABLE" | "NO_SUCH_TABLE" | "CORRUPT_METADATA" | "STALE_RUN" | "SCOPE_CONFLICT" | "NOT_OWNER" | "INTERNAL";

/** TableStoreError: the table stores' one error type; the code says whose fault it is. */
export class TableStoreError extends Error {
  constructor(
    readonly code: TableStoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "TableStoreError";
  }
}

export const NO_OUTCOME: ReplaceOutcome = Object.freeze({ replacedScopes: 0 });
