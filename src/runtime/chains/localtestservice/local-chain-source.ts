import type { JsonValue } from "../../json/raw-json";
import { BackendError } from "../../backend-error";
import { JsonRpcError } from "../rpc/json-rpc-error";
import { METHOD_NOT_FOUND, type ChainSource } from "../router/chain-source";
import type { EthLogFilter } from "./eth-types";
import type { LocalTestChain } from "./local-test-chain";

const INVALID_PARAMS = -32602;

/**
 * LocalChainSource answers the JSON-RPC methods a backfill needs (eth_blockNumber, eth_chainId,
 * eth_getBlockByNumber, eth_getBlockReceipts, eth_getLogs) from the synthetic chain (the
 * process's LocalTestChain: generated off the main thread, log ranges bounded), so the local test
 * chain is one more ChainSource behind the router. Other methods answer "method not found", as a
 * node without them would; a request the chain refuses is a JSON-RPC invalid-params error.
 */
export class LocalChainSource implements ChainSource {
  readonly kind = "localtestservice" as const;
  /** The synthetic chain's parent links break every PARENT_LINK_RUN blocks by design (synthetic-chain.ts): not checked. */
  readonly linkedParents = false;
  /** A block of the synthetic chain is a function of its number: it never reorganises. */
  readonly fixed = true;

  constructor(
    readonly chain: string,
    private readonly local: LocalTestChain,
  ) {}

  async request(method: string, params: readonly JsonValue[]): Promise<JsonValue> {
    const where = `chain ${this.chain} (localtestservice)`;
    const tag = (v: JsonValue | undefined): number => {
      if (v === "latest" || v === "safe" || v === "finalized" || v === "pending" || v === undefined) return this.local.head;
      if (v === "earliest") return 0;
      if (typeof v === "string" && /^0x[0-9a-f]+$/i.test(v)) return parseInt(v, 16);
      throw new JsonRpcError(INVALID_PARAMS, `invalid block tag ${JSON.stringify(v)}`, where);
    };
    try {
      switch (method) {
        case "eth_blockNumber":
          return "0x" + this.local.head.toString(16);
        case "eth_chainId":
          return "0x" + (await this.local.chainId(this.chain)).toString(16);
        case "eth_getBlockByNumber":
          return (await this.local.block(this.chain, tag(params[0]), params[1] === true)).parse();
        case "eth_getBlockReceipts":
          return (await this.local.receipts(this.chain, tag(params[0]))).parse();
        case "eth_getLogs": {
          const f = (params[0] ?? {}) as Record<string, JsonValue>;
          const filter = { ...f, fromBlock: tag(f.fromBlock), toBlock: tag(f.toBlock) } as EthLogFilter;
          return (await this.local.logs(this.chain, filter)).parse();
        }
        default:
          throw new JsonRpcError(METHOD_NOT_FOUND, `the method ${method} does not exist/is not available`, where);
      }
    } catch (e) {
      // What the chain refuses is the caller's request: a node says so as invalid params.
      if (e instanceof BackendError && e.type === "InvalidParams") throw new JsonRpcError(INVALID_PARAMS, e.message, where);
      throw e;
    }
  }

  head(): number {
    return this.local.head;
  }
}
