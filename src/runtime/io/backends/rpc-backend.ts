import { RawJson, type JsonValue } from "../../executor/protocol";
import type { ChainRouter } from "../../chains/router/chain-router";
import { BackendError, type Backend, type CacheDeclaration } from "./backend-registry";
import { chainParam, paramsObject, type Params } from "./backend-params";

/** Methods that change state or sign: only the write op `send` may carry them. */
const WRITE_METHOD = /^(eth_send|eth_sign|eth_submit|personal_|miner_|admin_|evm_|debug_set|anvil_|hardhat_)/;

/** Methods whose answer depends only on a block number given as their first parameter. */
const BY_BLOCK_NUMBER = new Set(["eth_getBlockByNumber", "eth_getBlockReceipts", "eth_getBlockTransactionCountByNumber", "eth_getUncleCountByBlockNumber"]);

function request(params: JsonValue, op: string): { chain: string; method: string; params: JsonValue[] } {
  const p: Params = paramsObject(params, op);
  if (typeof p.method !== "string" || !/^[A-Za-z][A-Za-z0-9_]*$/.test(p.method)) throw new BackendError("InvalidParams", `${op}: method must be a JSON-RPC method name, got ${JSON.stringify(p.method)}`);
  const list = p.params ?? [];
  if (!Array.isArray(list)) throw new BackendError("InvalidParams", `${op}: params must be a list (positional JSON-RPC parameters)`);
  return { chain: chainParam(p, op), method: p.method, params: list };
}

function cacheOf(params: JsonValue): CacheDeclaration | null {
  const r = request(params, "call");
  const first = r.params[0];
  if (!BY_BLOCK_NUMBER.has(r.method) || typeof first !== "string" || !/^0x[0-9a-f]+$/i.test(first)) return null;
  return { key: `rpc.call:${r.chain}:${r.method}:${JSON.stringify(r.params).toLowerCase()}`, chain: r.chain, block: parseInt(first, 16) };
}

/**
 * rpcBackend passes a JSON-RPC request to the chain's source (the router's choice): op `call`
 * {chain, method, params} for reads, `send` for methods that change state (a write op, so the
 * Sync Invoker refuses it). The node's JSON-RPC error reaches the function as JsonRpcError.
 */
export function rpcBackend(router: ChainRouter): Backend {
  return {
    name: "rpc",
    head: async (chain) => parseInt(String(await router.source(chain).request("eth_blockNumber", [])), 16),
    finalityDepth: (chain) => router.route(chain).finalityDepth,
    ops: {
      call: {
        kind: "read",
        handle: async (params) => {
          const r = request(params, "call");
          if (WRITE_METHOD.test(r.method)) throw new BackendError("PermissionDenied", `call: ${r.method} changes state or signs; use rpc.send`);
          return new RawJson(JSON.stringify(await router.source(r.chain).request(r.method, r.params)));
        },
        cache: cacheOf,
      },
      send: {
        kind: "write",
        handle: async (params) => {
          const r = request(params, "send");
          return router.source(r.chain).request(r.method, r.params);
        },
      },
    },
  };
}
