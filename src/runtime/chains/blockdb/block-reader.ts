import type { JsonValue } from "../../json/raw-json";
import { BackendError } from "../../backend-error";
import { hexQuantity, type BlockTag } from "../block-ref";
import { JsonRpcError } from "../rpc/json-rpc-error";
import { METHOD_NOT_FOUND, type ChainSource } from "../router/chain-source";
import type { ChainRouter } from "../router/chain-router";
import { normalizeEth } from "./normalize";
import { checkBlock, checkHeaders, checkLogs, checkReceipts, type BlockHeader } from "./answer-checks";

/** The most blocks one headers request may span (one JSON-RPC batch per maxBatchSize of them). */
export const MAX_HEADER_RANGE = 10_000;

function asked(ref: number | BlockTag): { number: number } | { tag: string } {
  return typeof ref === "number" ? { number: ref } : { tag: ref };
}

export interface LogQuery {
  readonly fromBlock: number;
  readonly toBlock: number;
  /** Lowercase addresses (any of them); empty = every address. */
  readonly address: readonly string[];
  /** Positional; null = any, a list = any of its topics. */
  readonly topics: readonly (readonly string[] | null)[];
}

/** The most blocks one logs query may span (as most public nodes limit eth_getLogs). */
export const MAX_LOG_RANGE = 10_000;

function tagOrHex(ref: number | BlockTag): string {
  return typeof ref === "number" ? hexQuantity(ref) : ref;
}

/** Nodes that lack eth_getBlockReceipts (ganache, older clients) answer "method not found" or a variant. */
function isMissingMethod(e: unknown): boolean {
  return e instanceof JsonRpcError && (e.code === METHOD_NOT_FOUND || /does not exist|not available|not supported|method not found/i.test(e.nodeMessage));
}

/**
 * BlockReader reads blocks, receipts and logs of any routed chain in one normalized shape.
 * Receipts come from eth_getBlockReceipts, or, on a node without it (remembered per chain),
 * from eth_getTransactionReceipt of each transaction, sent as one batch. Every answer is checked
 * (answer-checks.ts): a null block is BlockUnavailable, an answer about another block, receipts of
 * two blocks or a broken parent link NodeAnswerMismatch, both retryable and never cached.
 */
export class BlockReader {
  private readonly noBlockReceipts = new Set<string>();

  constructor(private readonly router: ChainRouter) {}

  async block(chain: string, ref: number | BlockTag, full: boolean): Promise<JsonValue> {
    const answer = normalizeEth(await this.router.source(chain).request("eth_getBlockByNumber", [tagOrHex(ref), full]));
    return checkBlock(chain, answer, asked(ref));
  }

  /** headers: blocks fromBlock..toBlock without transactions (number, hash, parentHash), parent links checked; one batch. */
  async headers(chain: string, fromBlock: number, toBlock: number): Promise<BlockHeader[]> {
    if (toBlock < fromBlock) throw new BackendError("InvalidParams", `headers: fromBlock ${fromBlock} is after toBlock ${toBlock}`);
    if (toBlock - fromBlock + 1 > MAX_HEADER_RANGE) throw new BackendError("InvalidParams", `headers: at most ${MAX_HEADER_RANGE} blocks per request, asked ${toBlock - fromBlock + 1}`);
    const source = this.router.source(chain);
    const answers = await Promise.all(Array.from({ length: toBlock - fromBlock + 1 }, (_, i) => source.request("eth_getBlockByNumber", [hexQuantity(fromBlock + i), false])));
    return checkHeaders(chain, answers.map(normalizeEth), fromBlock, source.linkedParents !== false);
  }

  async receipts(chain: string, ref: number | BlockTag): Promise<JsonValue> {
    const source = this.router.source(chain);
    if (!this.noBlockReceipts.has(chain)) {
      try {
        return checkReceipts(chain, normalizeEth(await source.request("eth_getBlockReceipts", [tagOrHex(ref)])), asked(ref));
      } catch (e) {
        if (!isMissingMethod(e)) throw e;
        this.noBlockReceipts.add(chain);
      }
    }
    const { block, receipts } = await this.receiptsByTransaction(source, ref);
    return checkReceipts(chain, normalizeEth(receipts), { ...asked(ref), blockHash: block.hash as string });
  }

  async logs(chain: string, q: LogQuery): Promise<JsonValue> {
    if (q.toBlock < q.fromBlock) throw new BackendError("InvalidParams", `logs: fromBlock ${q.fromBlock} is after toBlock ${q.toBlock}`);
    if (q.toBlock - q.fromBlock + 1 > MAX_LOG_RANGE) throw new BackendError("InvalidParams", `logs: at most ${MAX_LOG_RANGE} blocks per query, asked ${q.toBlock - q.fromBlock + 1}`);
    const filter: Record<string, JsonValue> = { fromBlock: hexQuantity(q.fromBlock), toBlock: hexQuantity(q.toBlock) };
    if (q.address.length > 0) filter.address = q.address.length === 1 ? q.address[0]! : [...q.address];
    if (q.topics.length > 0) filter.topics = q.topics.map((t) => (t === null ? null : t.length === 1 ? t[0]! : [...t]));
    return checkLogs(chain, normalizeEth(await this.router.source(chain).request("eth_getLogs", [filter])), q.fromBlock, q.toBlock);
  }

  async head(chain: string): Promise<number> {
    const v = await this.router.source(chain).request("eth_blockNumber", []);
    if (typeof v !== "string" || !/^0x[0-9a-f]+$/i.test(v)) throw new BackendError("BackendUnavailable", `chain ${chain}: eth_blockNumber answered ${JSON.stringify(v)}`, { retryable: true });
    return parseInt(v, 16);
  }

  private async receiptsByTransaction(source: ChainSource, ref: number | BlockTag): Promise<{ block: Record<string, JsonValue>; receipts: JsonValue }> {
    const block = checkBlock(source.chain, normalizeEth(await source.request("eth_getBlockByNumber", [tagOrHex(ref), false])), asked(ref)) as Record<string, JsonValue>;
    const hashes = block.transactions;
    if (!Array.isArray(hashes)) throw new BackendError("BackendUnavailable", `chain ${source.chain}: block ${tagOrHex(ref)} has no transaction list`, { retryable: true });
    // One tick: the client sends all of them as one JSON-RPC batch.
    return { block, receipts: await Promise.all(hashes.map((h) => source.request("eth_getTransactionReceipt", [h]))) };
  }
}
