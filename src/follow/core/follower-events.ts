/** A block as the follower remembers it: its number and hash (and its parent's, as the chain gave it). */
export interface FollowedBlock {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
}

/** A block the table holds, as its scope ledger recorded it (the hash the Worker computed the rows from; null: none recorded). */
export interface WrittenBlock {
  readonly number: number;
  readonly hash: string | null;
}

/**
 * FollowerEvent: what happened, in the past tense, fed to FollowerCore.handle. `headSeen` is a
 * chain head the node gave; `headersRead` the answer to readHeaders (parent links checked by the
 * reader); `rangeWritten` a writeRange's task succeeded, with the blocks as the table's scope ledger
 * now records them (read back after the task, in the rows' own transaction's words); `rewound` the
 * rewind is durable; `readFailed`, `rangeFailed` and `rewindFailed` the failures; `timeAdvanced`
 * the clock reached the wake-up the core asked for.
 */
export type FollowerEvent =
  | { readonly type: "headSeen"; readonly head: number }
  | { readonly type: "headersRead"; readonly headers: readonly FollowedBlock[] }
  | { readonly type: "readFailed"; readonly why: string }
  | { readonly type: "rangeWritten"; readonly blocks: readonly WrittenBlock[] }
  | { readonly type: "rangeFailed"; readonly fromBlock: number; readonly toBlock: number; readonly why: string }
  | { readonly type: "rewound"; readonly forkBlock: number }
  | { readonly type: "rewindFailed"; readonly why: string }
  | { readonly type: "timeAdvanced" };
