import type { JsonValue } from "../executor/protocol";
import type { BlockTextStore } from "../backends/localtestservice/block-text-store";
import { SyntheticChain } from "../backends/localtestservice/synthetic-chain";
import { BackendError, type Backend } from "./backend-registry";
import { blockNumberParam, chainParam as chainName, paramsObject as obj } from "./backend-params";

/**
 * localtestserviceBackend serves the deterministic synthetic chain with the JSON-RPC method
 * names as ops: eth_getBlockByNumber {chain, number, full}, eth_getBlockReceipts {chain,
 * number}, eth_getLogs {chain, fromBlock, toBlock, address, topics}, eth_blockNumber {chain};
 * eth_sendRawTransaction (a write: always refused). With a block text store, full blocks in its
 * range are served as their stored text (RawJson) instead of being generated.
 */
export function localtestserviceBackend(opts: { head?: number; store?: BlockTextStore } = {}): Backend {
  const { store } = opts;
  const chains = new Map<string, SyntheticChain>();
  const chainOf = (name: string) => {
    let c = chains.get(name);
    if (!c) chains.set(name, (c = new SyntheticChain(name, opts.head === undefined ? {} : { head: opts.head })));
    return c;
  };
  return {
    name: "localtestservice",
    ops: {
      eth_getBlockByNumber: {
        kind: "read",
        handle: (params) => {
          const p = obj(params, "eth_getBlockByNumber");
          const chain = chainName(p, "eth_getBlockByNumber");
          const n = blockNumberParam(p, "number", "eth_getBlockByNumber");
          if (store && p.full !== false && store.has(chain, n) && n <= chainOf(chain).head()) return store.read(n);
          return chainOf(chain).block(n, p.full !== false) as unknown as JsonValue;
        },
      },
      eth_getBlockReceipts: {
        kind: "read",
        handle: (params) => {
          const p = obj(params, "eth_getBlockReceipts");
          return chainOf(chainName(p, "eth_getBlockReceipts")).blockReceipts(blockNumberParam(p, "number", "eth_getBlockReceipts")) as unknown as JsonValue;
        },
      },
      eth_getLogs: {
        kind: "read",
        handle: (params) => {
          const p = obj(params, "eth_getLogs");
          try {
            return chainOf(chainName(p, "eth_getLogs")).logs(p as never) as unknown as JsonValue;
          } catch (e) {
            throw new BackendError("InvalidParams", (e as Error).message);
          }
        },
      },
      eth_blockNumber: {
        kind: "read",
        handle: (params) => "0x" + chainOf(chainName(obj(params, "eth_blockNumber"), "eth_blockNumber")).head().toString(16),
      },
      // The one write of the JSON-RPC surface. The synthetic chain is immutable, so it always
      // fails; it exists so that read-only IO (the Sync Invoker) has a write op to refuse.
      eth_sendRawTransaction: {
        kind: "write",
        handle: () => {
          throw new BackendError("Unsupported", "eth_sendRawTransaction: the synthetic test chain accepts no transactions");
        },
      },
    },
  };
}
