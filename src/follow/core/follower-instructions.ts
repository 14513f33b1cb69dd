/**
 * FollowerInstruction: what FollowerCore asks its adapter to do, in the imperative.
 * - `readHeaders`: read the canonical headers fromBlock..toBlock (one batch) and report headersRead;
 * - `writeRange`: run the function over fromBlock..toBlock into the table (a block_table task on the
 *   block cluster) and, once it succeeded, report rangeWritten with the blocks the table's scope
 *   ledger records (written in the same transaction as each block's rows);
 * - `rewind`: a reorganisation orphaned blocks orphanedFrom..orphanedTo: remove their rows and
 *   ledger entries in one transaction (the table then ends at forkBlock, never a mix of orphaned
 *   and canonical blocks), report rewound; the canonical blocks are written after it;
 * - `stop`: give up with the reason (a reorganisation deeper than the finality depth: never guessed).
 */
export type FollowerInstruction =
  | { readonly type: "readHeaders"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly type: "writeRange"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly type: "rewind"; readonly forkBlock: number; readonly orphanedFrom: number; readonly orphanedTo: number }
  | { readonly type: "stop"; readonly reason: string };
