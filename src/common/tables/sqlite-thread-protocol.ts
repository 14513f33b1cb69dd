import type { ReadOptions, TableStoreErrorCode } from "./table-store";

/** Messages to the SQLite thread; writes travel as JSON text so exact integers survive. */
export type SqliteThreadRequest =
  | { readonly id: number; readonly op: "open"; readonly path: string; readonly busyTimeoutMs: number }
  | { readonly id: number; readonly op: "commit"; readonly writes: string }
  /** Several calls' commits in one transaction (group commit); the answer is a JSON array of GroupCommitResult. */
  | { readonly id: number; readonly op: "commitGroup"; readonly groups: readonly string[] }
  | { readonly id: number; readonly op: "read"; readonly table: string; readonly options: ReadOptions }
  | { readonly id: number; readonly op: "close" };

/** The thread's answer to request `id`: a JSON text, or the TableStoreError it raised. */
export type SqliteThreadReply = { readonly id: number; readonly ok: true; readonly text: string } | { readonly id: number; readonly ok: false; readonly code: TableStoreErrorCode; readonly message: string };
