import type { JsonValue } from "../../json/raw-json";
import { BackendError } from "../../backend-error";

/**
 * Checks of a node's answers about blocks (pure: answers in, a BackendError out). A node is not
 * trusted blindly: behind a load balancer one request may reach a lagging node, a node of another
 * chain, or one in the middle of a reorg. Every failure here is retryable (another node, or the
 * same one a moment later, may answer right) and, being an error, is never cached:
 * - BlockUnavailable: the node has no such block (it answered null): never an empty block;
 * - NodeAnswerMismatch: the answer is not about what was asked (another number or hash), or its
 *   parts disagree (receipts of two blocks, a broken parent link within a range).
 */

const HASH = /^0x[0-9a-f]{64}$/;

/** BlockHeader: what a range of headers gives per block (blockdb.headers, blockx verify). */
export interface BlockHeader {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
}

function quantity(v: unknown): number | undefined {
  return typeof v === "string" && /^0x[0-9a-f]+$/i.test(v) ? parseInt(v, 16) : undefined;
}

function field(o: JsonValue, name: string): unknown {
  return o !== null && typeof o === "object" && !Array.isArray(o) ? (o as Record<string, JsonValue>)[name] : undefined;
}

function mismatch(chain: string, what: string): BackendError {
  return new BackendError("NodeAnswerMismatch", `chain ${chain}: ${what}; the answer is not used or cached (retry: another node or a moment later may answer right)`, { retryable: true });
}

function unavailable(chain: string, what: string): BackendError {
  return new BackendError("BlockUnavailable", `chain ${chain}: the node has no ${what} (it answered null: past its head, or not synced there); retry later`, { retryable: true });
}

/** checkBlock: a block answer asked by number (or tag: then only its shape), or by hash. */
export function checkBlock(chain: string, answer: JsonValue, asked: { number?: number; hash?: string; tag?: string }): JsonValue {
  const what = asked.number !== undefined ? `block ${asked.number}` : asked.hash !== undefined ? `block ${asked.hash}` : `${asked.tag} block`;
  if (answer === null) throw unavailable(chain, what);
  const n = quantity(field(answer, "number"));
  const hash = field(answer, "hash");
  if (n === undefined || typeof hash !== "string" || !HASH.test(hash)) throw mismatch(chain, `the answer for ${what} has no number or hash (${JSON.stringify(answer).slice(0, 120)})`);
  if (asked.number !== undefined && n !== asked.number) throw mismatch(chain, `asked for block ${asked.number}, the node answered block ${n}`);
  if (asked.hash !== undefined && hash !== asked.hash.toLowerCase()) throw mismatch(chain, `asked for block ${asked.hash}, the node answered block ${hash}`);
  return answer;
}

/**
 * checkReceipts: every receipt is of the block asked (its number) and of one block (one hash,
 * the block's own when known: receipts gathered per transaction may straddle a reorg).
 */
export function checkReceipts(chain: string, answer: JsonValue, asked: { number?: number; blockHash?: string; tag?: string }): JsonValue {
  const what = asked.number !== undefined ? `receipts of block ${asked.number}` : `receipts of the ${asked.tag} block`;
  if (answer === null) throw unavailable(chain, what);
  if (!Array.isArray(answer)) throw mismatch(chain, `the ${what} are not a list`);
  let hash = asked.blockHash;
  for (const [i, r] of answer.entries()) {
    if (r === null) throw unavailable(chain, `receipt ${i} of ${what.replace("receipts of ", "")}`);
    const n = quantity(field(r, "blockNumber"));
    const h = field(r, "blockHash");
    if (asked.number !== undefined && n !== asked.number) throw mismatch(chain, `asked for the receipts of block ${asked.number}, receipt ${i} is of block ${n}`);
    if (typeof h !== "string") throw mismatch(chain, `receipt ${i} of ${what} has no blockHash`);
    if (hash === undefined) hash = h;
    else if (h !== hash) throw mismatch(chain, `receipt ${i} of ${what} is of block ${h}, not ${hash} (a reorg between the reads, or two nodes)`);
  }
  return answer;
}

/** checkLogs: every log lies in the range asked, and the logs of one block number agree on its hash. */
export function checkLogs(chain: string, answer: JsonValue, fromBlock: number, toBlock: number): JsonValue {
  if (answer === null) throw unavailable(chain, `logs of blocks ${fromBlock}..${toBlock}`);
  if (!Array.isArray(answer)) throw mismatch(chain, `the logs of blocks ${fromBlock}..${toBlock} are not a list`);
  const hashes = new Map<number, unknown>();
  for (const [i, l] of answer.entries()) {
    const n = quantity(field(l, "blockNumber"));
    if (n === undefined || n < fromBlock || n > toBlock) throw mismatch(chain, `asked for the logs of blocks ${fromBlock}..${toBlock}, log ${i} is of block ${n}`);
    const h = field(l, "blockHash");
    const had = hashes.get(n);
    if (had === undefined) hashes.set(n, h);
    else if (had !== h) throw mismatch(chain, `logs of block ${n} name two block hashes (${String(had)}, ${String(h)})`);
  }
  return answer;
}

/**
 * checkHeaders: the blocks of fromBlock..toBlock, in order, each the number asked, each linked to
 * the one before by its parentHash. A broken link is a reorg under the reads (or two nodes).
 */
export function checkHeaders(chain: string, answers: readonly JsonValue[], fromBlock: number, linked = true): BlockHeader[] {
  const out: BlockHeader[] = [];
  for (const [i, a] of answers.entries()) {
    const n = fromBlock + i;
    checkBlock(chain, a, { number: n });
    const parentHash = field(a, "parentHash");
    if (typeof parentHash !== "string" || !HASH.test(parentHash)) throw mismatch(chain, `block ${n} has no parentHash`);
    const h: BlockHeader = { number: n, hash: field(a, "hash") as string, parentHash };
    const prev = out[out.length - 1];
    if (linked && prev !== undefined && h.parentHash !== prev.hash) throw mismatch(chain, `block ${n}'s parent is ${h.parentHash}, but block ${prev.number} is ${prev.hash}: the parent link is broken (a reorg under the reads, or two nodes)`);
    out.push(h);
  }
  return out;
}
