/** A block as the follower remembers it: its number and hash (and its parent's, as the chain gave it). */
export interface FollowedBlock {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
}

/**
 * FollowerEvent: what happened, in the past tense, fed to FollowerCore.handle. `headSeen` is a new
 * chain head; `headersRead` the answer to a readHeaders instruction (checked for parent links by
 * the reader); `readFailed`, `rangeWritten` and `rangeFailed` the outcomes of the instructions;
 * `timerFired` a retry's deadline.
 */
export type FollowerEvent =
  | { readonly type: "headSeen"; readonly head: number }
  | { readonly type: "headersRead"; readonly headers: readonly FollowedBlock[] }
  | { readonly type: "readFailed"; readonly why: string }
  | { readonly type: "rangeWritten"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly type: "rangeFailed"; readonly fromBlock: number; readonly toBlock: number; readonly why: string }
  | { readonly type: "timerFired" };
