import type { ReadOptions, TableStoreErrorCode } from "./table-store";

/** SqliteTables' methods the thread serves besides commits and reads (their arguments as JSON). */
export const SQLITE_THREAD_METHODS = ["openEpoch", "renewEpoch", "claimRun", "endRun", "wideScopes", "check"] as const;
export type SqliteThreadMethod = (typeof SQLITE_THREAD_METHODS)[number];

/** Messages to the SQLite thread; writes travel as JSON text so exact integers survive. */
export type SqliteThreadRequest =
  | { readonly id: number; readonly op: "open"; readonly path: string; readonly busyTimeoutMs: number }
  /** One call's commit: a JSON FencedWrites ({writes, fence}). */
  | { readonly id: number; readonly op: "commit"; readonly writes: string }
  /** Several calls' commits in one transaction (group commit), each a JSON FencedWrites; the answer is a JSON array of GroupCommitResult. */
  | { readonly id: number; readonly op: "commitGroup"; readonly groups: readonly string[] }
  | { readonly id: number; readonly op: "read"; readonly table: string; readonly options: ReadOptions }
  | { readonly id: number; readonly op: "call"; readonly method: SqliteThreadMethod; readonly args: readonly unknown[] }
  | { readonly id: number; readonly op: "close" };

/** The thread's answer to request `id`: a JSON text, or the TableStoreError it raised. */
export type SqliteThreadReply = { readonly id: number; readonly ok: true; readonly text: string } | { readonly id: number; readonly ok: false; readonly code: TableStoreErrorCode; readonly message: string };
