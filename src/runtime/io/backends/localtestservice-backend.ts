import type { JsonValue } from "../../json/raw-json";
import type { BlockTextStore } from "../../chains/localtestservice/block-text-store";
import type { EthLogFilter } from "../../chains/localtestservice/eth-types";
import { LOCAL_TEST_CHAIN_OFF, LocalTestChain } from "../../chains/localtestservice/local-test-chain";
import { type Backend, type BackendOp } from "./backend-registry";
import { BackendError } from "../../backend-error";
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
 * themselves cacheable (final below head - depth). Generation runs on the LocalTestChain's thread
 * (never on the caller's), and an eth_getLogs range is bounded (LOCALTESTSERVICE_MAX_LOG_BLOCKS).
 * With a block text store, full blocks in its range are served as their stored text (RawJson)
 * instead of being generated. Without `chain`, it makes its own from `head` (tests, tools).
 */
export function localtestserviceBackend(opts: { chain?: LocalTestChain; head?: number; store?: BlockTextStore } = {}): Backend {
  const { store } = opts;
  const local = opts.chain ?? new LocalTestChain(opts.head === undefined ? {} : { head: opts.head });
  return {
    name: "localtestservice",
    head: async () => local.head,
    ops: {
      eth_getBlockByNumber: {
        kind: "read",
        handle: (params) => {
          const p = obj(params, "eth_getBlockByNumber");
          const chain = chainName(p, "eth_getBlockByNumber");
          const n = blockNumberParam(p, "number", "eth_getBlockByNumber");
          if (store && p.full !== false && store.has(chain, n) && n <= local.head) return store.read(n);
          return local.block(chain, n, p.full !== false);
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
          return local.receipts(chainName(p, "eth_getBlockReceipts"), blockNumberParam(p, "number", "eth_getBlockReceipts"));
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
          const filter = { ...p, fromBlock: blockNumberParam(p, "fromBlock", "eth_getLogs"), toBlock: blockNumberParam(p, "toBlock", "eth_getLogs") };
          delete (filter as { chain?: unknown }).chain;
          return local.logs(chainName(p, "eth_getLogs"), filter as unknown as EthLogFilter);
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
        handle: (params) => {
          chainName(obj(params, "eth_blockNumber"), "eth_blockNumber");
          return "0x" + local.head.toString(16);
        },
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

/**
 * localtestserviceOffBackend stands in for the synthetic chain where it is off (production roles
 * unless configured): the same ops, each failing with a BackendDisabled that says how to turn it
 * on, so a function that reaches it is told why instead of "no backend".
 */
export function localtestserviceOffBackend(): Backend {
  const ops: Record<string, BackendOp> = {};
  for (const [name, op] of Object.entries(localtestserviceBackend().ops)) {
    ops[name] = {
      kind: op.kind,
      handle: () => {
        throw new BackendError("BackendDisabled", LOCAL_TEST_CHAIN_OFF);
      },
    };
  }
  return { name: "localtestservice", ops };
}
