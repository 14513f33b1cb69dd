import type { ExactInt } from "../json/exact-json";

/** A cell of a row: JSON values, with integers beyond 2^53 as ExactInt (see exact-json.ts). */
export type CellValue = null | boolean | number | string | ExactInt | CellValue[] | { [key: string]: CellValue };
export type Row = Readonly<Record<string, CellValue>>;

/** The blocks a call covered: one block (block cluster) or one bundle (bundle cluster). */
export interface BlockScope {
  readonly chain: string;
  readonly fromBlock: number;
  readonly toBlock: number;
}

/**
 * What a block-table write replaced. `uncovered` lists the earlier scopes that reached past the
 * new call's range: their rows were removed whole (rows carry no block of their own), so the
 * blocks of those scopes outside the new range have no rows until a call covers them again.
 */
export interface ReplaceOutcome {
  readonly replacedScopes: number;
  readonly uncovered: readonly BlockScope[];
}

/**
 * TableWrite: one table's part of a call's output. A block table's write replaces every row of its
 * chain whose recorded scope overlaps the scope's block range; a normal table's write appends.
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
 * cluster of hosts. Both keep the same contract (src/common/tables/table-store.contract.test.ts
 * runs one suite against both):
 * - `commit` writes every table of one call in one transaction, and resolves only once the rows
 *   are durable; a block table's write replaces every overlapping scope of its chain, so a
 *   retried, resubmitted or rerun call (another start, another bundle size, another host) never
 *   leaves two rows for a block;
 * - a table is created from the first rows written to it, with column kinds INTEGER (exact up to
 *   78 digits), REAL, TEXT or JSON; a row that does not fit fails with ROW_MISMATCH naming the
 *   table, the column and both kinds, and nothing of the call is written;
 * - a store that cannot be reached fails with STORE_UNAVAILABLE (retryable), never as the user's
 *   error; no call ever blocks the event loop.
 */
export interface TableStore {
  /** What the store is, for messages: `sqlite:/path` or the Postgres URL without its password. */
  readonly description: string;
  /** commit writes one call's tables in one transaction; outcomes in the order of `writes`. */
  commit(writes: readonly TableWrite[]): Promise<ReplaceOutcome[]>;
  /** read returns a table's rows: user columns, then the hidden scope columns of a block table. */
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
 * locked past the statement timeout); NO_SUCH_TABLE answers a read; CORRUPT_METADATA and INTERNAL
 * are the store's own faults.
 */
export type TableStoreErrorCode = "ROW_MISMATCH" | "INVALID_ARGUMENT" | "STORE_UNAVAILABLE" | "NO_SUCH_TABLE" | "CORRUPT_METADATA" | "INTERNAL";

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

export const NO_OUTCOME: ReplaceOutcome = Object.freeze({ replacedScopes: 0, uncovered: [] });
