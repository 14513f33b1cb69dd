import type { JsonValue } from "../../json/raw-json";

/**
 * ChainSource answers Ethereum JSON-RPC requests for one chain: a node over HTTP (rpc) or the
 * synthetic local test chain. blockdb and rpc reach every chain through this one interface,
 * so a function reads the same shapes from either.
 */
export interface ChainSource {
  readonly chain: string;
  /** kind names the source in messages and in the router's listing (the chains config's `source`). */
  readonly kind: string;
  /**
   * fixed: true for a source whose blocks never change (the synthetic chain: a block is a function of
   * its number). Its block tables record no block hash: reading one would cost a block's generation
   * per call, for a hash that can never go stale.
   */
  readonly fixed?: boolean;
  /** linkedParents: false for a source whose blocks are not all linked by parentHash (the synthetic chain); absent: they are, and ranges are checked. */
  readonly linkedParents?: boolean;
  /** request sends one JSON-RPC request; a node's error rejects with BackendError("JsonRpcError"). */
  request(method: string, params: readonly JsonValue[]): Promise<JsonValue>;
}

/** The JSON-RPC error code of "method not found" (EIP-1474). */
export const METHOD_NOT_FOUND = -32601;
