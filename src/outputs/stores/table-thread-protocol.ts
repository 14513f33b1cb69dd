import type { FencedWrites, GroupCommitResult } from "./group-commit-queue";
import type { CallFence, RunClaim, RunClaimRequest, RunFence, RunState } from "./run-fence";
import type { CellValue, ReadOptions, ReplaceOutcome, ScopeCount, TableStoreError, TableStoreErrorCode, TableWrite, WrittenScope } from "./table-store";

/**
 * TableEngine: a table store's synchronous (or, for reads, asynchronous) engine, which
 * ThreadTableStore runs on a thread of its own (or inline): SqliteTables, ParquetTables. Values
 * cross the thread as JSON text, parsed exactly.
 */
export interface TableEngine {
  commit(writes: readonly TableWrite[], fence?: CallFence | null, issuedMs?: number): ReplaceOutcome[];
  /** commitGroup: several calls' commits at once (group commit), each call's result its own. */
  commitGroup(groups: readonly FencedWrites[], classify: (e: unknown) => TableStoreError): GroupCommitResult[];
  openEpoch(epoch: string, workerAddr: string, ttlMs: number): void;
  renewEpoch(epoch: string, ttlMs: number, issuedMs?: number): boolean;
  claimRun(req: RunClaimRequest): RunClaim;
  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): void;
  wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): WrittenScope[];
  scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): ScopeCount[];
  scopeBounds(table: string, chain: string): { fromBlock: number; toBlock: number } | null;
  check(): void;
  read(table: string, options?: ReadOptions): Record<string, CellValue>[] | Promise<Record<string, CellValue>[]>;
  close(): void;
}

/** The engine's methods the thread serves besides commits and reads (their arguments as JSON). */
export const TABLE_THREAD_METHODS = ["openEpoch", "renewEpoch", "claimRun", "endRun", "wideScopes", "scopeCounts", "scopeBounds", "check"] as const;
export type TableThreadMethod = (typeof TABLE_THREAD_METHODS)[number];

/** Messages to a table store's thread; writes travel as JSON text so exact integers survive. */
export type TableThreadRequest =
  /** Open the engine: `args` are what the store's thread module's opener takes. */
  | { readonly id: number; readonly op: "open"; readonly args: unknown }
  /** One call's commit: a JSON FencedWrites ({writes, fence}). */
  | { readonly id: number; readonly op: "commit"; readonly writes: string }
  /** Several calls' commits in one transaction (group commit), each a JSON FencedWrites; the answer is a JSON array of GroupCommitResult. */
  | { readonly id: number; readonly op: "commitGroup"; readonly groups: readonly string[] }
  | { readonly id: number; readonly op: "read"; readonly table: string; readonly options: ReadOptions }
  | { readonly id: number; readonly op: "call"; readonly method: TableThreadMethod; readonly args: readonly unknown[] }
  | { readonly id: number; readonly op: "close" };

/** The thread's answer to request `id`: a JSON text, or the TableStoreError it raised. */
export type TableThreadReply = { readonly id: number; readonly ok: true; readonly text: string } | { readonly id: number; readonly ok: false; readonly code: TableStoreErrorCode; readonly message: string };
