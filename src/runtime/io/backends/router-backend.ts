import type { ChainRouter } from "../../chains/router/chain-router";
import type { Backend } from "./backend-registry";
import { chainParam, paramsObject } from "./backend-params";

/**
 * routerBackend shows the routing to user functions: op `chains` lists the configured chains
 * with their source, op `route {chain}` names the source of one chain (UnknownChain if none).
 */
export function routerBackend(router: ChainRouter): Backend {
  const describe = (chain: string) => {
    const r = router.route(chain);
    return { chain: r.chain, source: r.source.kind, finalityDepth: r.finalityDepth ?? null };
  };
  return {
    name: "router",
    ops: {
      chains: { kind: "read", handle: () => router.chains().map((r) => describe(r.chain)) },
      route: { kind: "read", handle: (params) => describe(chainParam(paramsObject(params, "route"), "route")) },
    },
  };
}
