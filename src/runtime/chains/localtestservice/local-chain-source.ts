import type { JsonValue } from "../../executor/protocol";
import { JsonRpcError } from "../rpc/json-rpc-error";
import { METHOD_NOT_FOUND, type ChainSource } from "../router/chain-source";
import type { EthLogFilter } from "./eth-types";
import { SyntheticChain } from "./synthetic-chain";

const INVALID_PARAMS = -32602;

/**
 * LocalChainSource answers the JSON-RPC methods a backfill needs (eth_blockNumber, eth_chainId,
 * eth_getBlockByNumber, eth_getBlockReceipts, eth_getLogs) from the synthetic chain, so the
 * local test chain is one more ChainSource behind the router. Other methods answer "method not
 * found", as a node without them would.
 */
export class LocalChainSource implements ChainSource {
  readonly kind = "localtestservice" as const;
  private readonly synthetic: SyntheticChain;

  constructor(
    readonly chain: string,
    opts: { head?: number } = {},
  ) {
    this.synthetic = new SyntheticChain(chain, opts.head === undefined ? {} : { head: opts.head });
  }

  async request(method: string, params: readonly JsonValue[]): Promise<JsonValue> {
    const where = `chain ${this.chain} (localtestservice)`;
    const tag = (v: JsonValue | undefined): number => {
      if (v === "latest" || v === "safe" || v === "finalized" || v === "pending" || v === undefined) return this.synthetic.head();
      if (v === "earliest") return 0;
      if (typeof v === "string" && /^0x[0-9a-f]+$/i.test(v)) return parseInt(v, 16);
      throw new JsonRpcError(INVALID_PARAMS, `invalid block tag ${JSON.stringify(v)}`, where);
    };
    switch (method) {
      case "eth_blockNumber":
        return "0x" + this.synthetic.head().toString(16);
      case "eth_chainId":
        return "0x" + this.synthetic.chainId.toString(16);
      case "eth_getBlockByNumber":
        return this.synthetic.block(tag(params[0]), params[1] === true) as unknown as JsonValue;
      case "eth_getBlockReceipts":
        return this.synthetic.blockReceipts(tag(params[0])) as unknown as JsonValue;
      case "eth_getLogs": {
        const f = (params[0] ?? {}) as Record<string, JsonValue>;
        const filter = { ...f, fromBlock: tag(f.fromBlock), toBlock: tag(f.toBlock) } as EthLogFilter;
        try {
          return this.synthetic.logs(filter) as unknown as JsonValue;
        } catch (e) {
          throw new JsonRpcError(INVALID_PARAMS, (e as Error).message, where);
        }
      }
      default:
        throw new JsonRpcError(METHOD_NOT_FOUND, `the method ${method} does not exist/is not available`, where);
    }
  }

  head(): number {
    return this.synthetic.head();
  }
}
