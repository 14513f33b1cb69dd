/**
 * FollowerInstruction: what FollowerCore asks its adapter to do, in the imperative.
 * - `readHeaders`: read the canonical headers fromBlock..toBlock (one batch) and report headersRead;
 * - `writeRange`: run the function over fromBlock..toBlock into the table (a block_table task) and
 *   report rangeWritten once its rows and the follower's position are durable;
 * - `rewind`: the blocks orphanedFrom..orphanedTo were replaced by a reorganisation: the position
 *   goes back to forkBlock first (their rows are replaced by the next writeRange of the canonical blocks);
 * - `armTimer`: wake the core (timerFired) at atMs;
 * - `stop`: give up with the reason (a reorganisation deeper than the finality depth: never guessed).
 */
export type FollowerInstruction =
  | { readonly type: "readHeaders"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly type: "writeRange"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly type: "rewind"; readonly forkBlock: number; readonly orphanedFrom: number; readonly orphanedTo: number }
  | { readonly type: "armTimer"; readonly atMs: number }
  | { readonly type: "stop"; readonly reason: string };
