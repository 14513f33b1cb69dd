import type { JsonValue } from "../../executor/protocol";
import type { BlockTextStore } from "../../chains/localtestservice/block-text-store";
import { SyntheticChain } from "../../chains/localtestservice/synthetic-chain";
import { BackendError, type Backend } from "./backend-registry";
import { blockNumberParam, chainParam as chainName, paramsObject as obj } from "./backend-params";

/** cacheBlock reads a request's block for the cache declaration; null when the params are bad (the handler reports them). */
function cacheBlock(params: JsonValue, op: string): { chain: string; block: number } | null {
  try {
    const p = obj(params, op);
    return { chain: chainName(p, op), block: blockNumberParam(p, "number", op) };
  } catch {
    return null;
  }
}

/**
 * localtestserviceBackend serves the deterministic synthetic chain with the JSON-RPC method
 * names as ops: eth_getBlockByNumber {chain, number, full}, eth_getBlockReceipts {chain,
 * number}, eth_getLogs {chain, fromBlock, toBlock, address, topics}, eth_blockNumber {chain};
 * eth_sendRawTransaction (a write: always refused). Blocks, receipts and logs by number declare
 * themselves cacheable (final below head - depth). With a block text store, full blocks in its
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
    head: async (chain) => chainOf(chain).head(),
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
        cache: (params) => {
          const c = cacheBlock(params, "eth_getBlockByNumber");
          return c && { ...c, key: `${c.chain}:${c.block}:${(params as Record<string, JsonValue>).full !== false}` };
        },
      },
      eth_getBlockReceipts: {
        kind: "read",
        handle: (params) => {
          const p = obj(params, "eth_getBlockReceipts");
          return chainOf(chainName(p, "eth_getBlockReceipts")).blockReceipts(blockNumberParam(p, "number", "eth_getBlockReceipts")) as unknown as JsonValue;
        },
        cache: (params) => {
          const c = cacheBlock(params, "eth_getBlockReceipts");
          return c && { ...c, key: `${c.chain}:${c.block}` };
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
        cache: (params) => {
          if (params === null || typeof params !== "object" || Array.isArray(params)) return null;
          const { chain, fromBlock, toBlock, address, topics } = params;
          if (typeof chain !== "string" || !Number.isSafeInteger(fromBlock) || !Number.isSafeInteger(toBlock)) return null;
          return { chain, block: toBlock as number, key: JSON.stringify([chain, fromBlock, toBlock, address ?? null, topics ?? null]) };
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
