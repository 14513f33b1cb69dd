import type { JsonValue } from "../executor/protocol";
import type { BlockTextStore } from "../backends/localtestservice/block-text-store";
import { SyntheticChain } from "../backends/localtestservice/synthetic-chain";
import { BackendError, type Backend, type BackendOp } from "./backend-registry";

function obj(params: JsonValue, op: string): Record<string, JsonValue> {
  if (params === null || typeof params !== "object" || Array.isArray(params)) throw new BackendError("InvalidParams", `${op}: params must be an object`);
  return params as Record<string, JsonValue>;
}

function blockNumber(p: Record<string, JsonValue>, op: string): number {
  const n = p.number;
  const v = typeof n === "string" && /^0x[0-9a-f]+$/i.test(n) ? parseInt(n, 16) : n;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new BackendError("InvalidParams", `${op}: number must be a block number (integer or 0x hex), got ${JSON.stringify(n)}`);
  return v;
}

function chainName(p: Record<string, JsonValue>, op: string): string {
  if (typeof p.chain !== "string" || p.chain === "") throw new BackendError("InvalidParams", `${op}: chain is required`);
  return p.chain;
}

/** cacheBlock reads a request's block for the cache declaration; null when the params are bad (the handler reports them). */
function cacheBlock(params: JsonValue, op: string): { chain: string; block: number } | null {
  try {
    const p = obj(params, op);
    return { chain: chainName(p, op), block: blockNumber(p, op) };
  } catch {
    return null;
  }
}

/**
 * localtestserviceBackend serves the deterministic synthetic chain with the JSON-RPC method
 * names as ops: eth_getBlockByNumber {chain, number, full}, eth_getBlockReceipts {chain,
 * number}, eth_getLogs {chain, fromBlock, toBlock, address, topics}, eth_blockNumber {chain}.
 * With a block text store, full blocks in its range are served as their stored text (RawJson)
 * instead of being generated. Blocks, receipts and logs by number declare themselves cacheable
 * (final below head - depth).
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
          const n = blockNumber(p, "eth_getBlockByNumber");
          if (store && p.full !== false && store.has(chain, n) && n <= chainOf(chain).head()) return store.read(n);
          return chainOf(chainName(p, "eth_getBlockByNumber")).block(blockNumber(p, "eth_getBlockByNumber"), p.full !== false) as unknown as JsonValue;
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
          return chainOf(chainName(p, "eth_getBlockReceipts")).blockReceipts(blockNumber(p, "eth_getBlockReceipts")) as unknown as JsonValue;
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
    },
  };
}
