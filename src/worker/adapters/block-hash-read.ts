import { RawJson, type JsonValue } from "../../runtime/json/raw-json";
import type { BlockScope } from "../../outputs/stores/table-store";
import type { IoAnswer } from "../../runtime/calls/call";

/** BlockHashRead: the hash of a call's last block, or why it could not be read. */
export type BlockHashRead = { readonly ok: true; readonly hash: string | null } | { readonly ok: false; readonly message: string; readonly retryable: boolean };

/** What reading a hash needs of the task's IO handle. */
export interface HashIo {
  call(backend: string, op: string, params: JsonValue): Promise<{ answer: IoAnswer }>;
}

/**
 * Errors that mean the Worker has no chain to ask (no route for it, the local test chain off): the
 * rows record no hash (null) rather than failing a function that may never read the chain.
 */
const NO_CHAIN = new Set(["UnknownChain", "BackendDisabled", "UnknownBackend"]);

/**
 * readBlockHash asks the task's IO (blockdb.headers of the scope's last block: through its window,
 * cache and admission like the calls' own reads) for the hash of the block a block-table call
 * covers last. A block table records it per row (`_block_hash`); the last block's hash commits
 * to every block of a bundle through the parent links.
 */
export async function readBlockHash(io: HashIo, scope: BlockScope): Promise<BlockHashRead> {
  const { answer } = await io.call("blockdb", "headers", { chain: scope.chain, fromBlock: scope.toBlock, toBlock: scope.toBlock });
  if (!answer.ok) {
    if (NO_CHAIN.has(answer.error.type)) return { ok: true, hash: null };
    return { ok: false, message: `reading the hash of block ${scope.toBlock} of chain ${scope.chain}: ${answer.error.type}: ${answer.error.message}`, retryable: answer.error.retryable === true };
  }
  const v = answer.value instanceof RawJson ? answer.value.parse() : answer.value;
  const hash = Array.isArray(v) ? (v[0] as { hash?: unknown } | undefined)?.hash : undefined;
  if (typeof hash !== "string") return { ok: false, message: `reading the hash of block ${scope.toBlock} of chain ${scope.chain}: the answer has none`, retryable: true };
  return { ok: true, hash };
}

/**
 * blockHashToRecord: what a block-table call's rows record, from the hash read when the call was
 * launched and the one read when it finished. Different hashes mean a reorganisation replaced the
 * block while the call ran (its reads may mix both chains): the call is retried rather than written.
 */
export function blockHashToRecord(scope: BlockScope, atStart: BlockHashRead, atEnd: BlockHashRead): BlockHashRead {
  if (!atStart.ok) return atStart;
  if (!atEnd.ok) return atEnd;
  if (atStart.hash !== atEnd.hash) {
    return {
      ok: false,
      message: `block ${scope.toBlock} of chain ${scope.chain} changed while the call ran (hash ${atStart.hash}, then ${atEnd.hash}: a reorganisation); the call is retried`,
      retryable: true,
    };
  }
  return atEnd;
}
