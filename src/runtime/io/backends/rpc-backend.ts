import { RawJson, type JsonValue } from "../../json/raw-json";
import type { ChainRouter } from "../../chains/router/chain-router";
import { type Backend, type CacheDeclaration } from "./backend-registry";
import { BackendError } from "../../backend-error";
import { chainParam, paramsObject, type Params } from "./backend-params";

/** Methods that change state or sign: only the write op `send` may carry them. */
const WRITE_METHOD = /^(eth_send|eth_sign|eth_submit|personal_|miner_|admin_|evm_|debug_set|anvil_|hardhat_)/;

/**
 * The read methods `call` passes to a node; any other is refused as PermissionDenied naming it.
 * An allowlist, not a denylist: a node's `debug_*` (tracing: costly, can stall it), `admin_*`,
 * `personal_*`, `clique_*`, `miner_*` and whatever a client adds tomorrow stay out of user code's
 * reach, on the read-only Sync Invoker too.
 */
export const READ_METHODS: ReadonlySet<string> = new Set([
  "eth_blockNumber",
  "eth_chainId",
  "eth_syncing",
  "eth_gasPrice",
  "eth_maxPriorityFeePerGas",
  "eth_blobBaseFee",
  "eth_feeHistory",
  "eth_call",
  "eth_estimateGas",
  "eth_createAccessList",
  "eth_getBalance",
  "eth_getCode",
  "eth_getStorageAt",
  "eth_getTransactionCount",
  "eth_getProof",
  "eth_getBlockByNumber",
  "eth_getBlockByHash",
  "eth_getBlockReceipts",
  "eth_getBlockTransactionCountByNumber",
  "eth_getBlockTransactionCountByHash",
  "eth_getTransactionByHash",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
  "eth_getTransactionReceipt",
  "eth_getUncleByBlockHashAndIndex",
  "eth_getUncleByBlockNumberAndIndex",
  "eth_getUncleCountByBlockHash",
  "eth_getUncleCountByBlockNumber",
  "eth_getLogs",
  "net_version",
  "net_listening",
  "web3_clientVersion",
  "web3_sha3",
]);

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
 * {chain, method, params} for reads (READ_METHODS only), `send` for methods that change state (a
 * write op, so the Sync Invoker refuses it; only on chains with `allowSend` in CHAINS_CONFIG). The
 * node's JSON-RPC error reaches the function as JsonRpcError.
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
          if (!READ_METHODS.has(r.method)) {
            throw new BackendError("PermissionDenied", `call: ${r.method} is not a read method rpc.call allows (debug_, admin_, personal_, clique_, miner_ and unknown methods are refused)`);
          }
          return new RawJson(JSON.stringify(await router.source(r.chain).request(r.method, r.params)));
        },
        cache: cacheOf,
      },
      send: {
        kind: "write",
        handle: async (params) => {
          const r = request(params, "send");
          // Sending is off unless the operator switched it on for this chain.
          if (!router.route(r.chain).allowSend) {
            throw new BackendError("PermissionDenied", `send: chain ${r.chain} does not allow rpc.send (${r.method}); set "allowSend": true for it in CHAINS_CONFIG`);
          }
          return router.source(r.chain).request(r.method, r.params);
        },
      },
    },
  };
}
