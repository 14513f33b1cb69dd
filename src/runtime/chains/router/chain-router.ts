import type { ChainsConfig } from "../../../common/config/chains-config";
import { BackendError } from "../../io/backends/backend-registry";
import { LocalChainSource } from "../localtestservice/local-chain-source";
import { JsonRpcClient } from "../rpc/json-rpc-client";
import type { ChainSource } from "./chain-source";

export interface ChainRoute {
  readonly chain: string;
  readonly source: ChainSource;
  /** From the chains config; undefined = the Worker's IO_FINALITY_DEPTH. */
  readonly finalityDepth: number | undefined;
  /** CHAINS_CONFIG's per-chain switch for rpc.send (off unless set). */
  readonly allowSend: boolean;
}

/**
 * ChainRouter says which source serves which chain, from the chains config. With no config
 * every chain name is served by the local test chain (the synthetic chain accepts any name);
 * with one, only the configured chains exist and another name is an UnknownChain error.
 */
export class ChainRouter {
  private readonly routes = new Map<string, ChainRoute>();

  constructor(
    private readonly config: ChainsConfig,
    private readonly localTestChainHead?: number,
  ) {
    for (const [chain, c] of Object.entries(config.chains ?? {})) {
      const source = c.source === "rpc" ? new JsonRpcClient(chain, c) : this.local(chain);
      this.routes.set(chain, { chain, source, finalityDepth: c.finalityDepth, allowSend: c.allowSend === true });
    }
  }

  route(chain: string): ChainRoute {
    const r = this.routes.get(chain);
    if (r) return r;
    if (this.config.chains !== null) {
      throw new BackendError("UnknownChain", `no chain ${JSON.stringify(chain)} in CHAINS_CONFIG (have: ${[...this.routes.keys()].join(", ") || "none"})`);
    }
    const created: ChainRoute = { chain, source: this.local(chain), finalityDepth: undefined, allowSend: false };
    this.routes.set(chain, created);
    return created;
  }

  source(chain: string): ChainSource {
    return this.route(chain).source;
  }

  /** chains lists the configured chains (with no config: the ones used so far). */
  chains(): readonly ChainRoute[] {
    return [...this.routes.values()];
  }

  /** summary is what a process logs at start: each chain's source, or that every chain is the local test chain. */
  summary(): { chains: string[]; unconfigured?: string } {
    const chains = this.chains().map((r) => `${r.chain}=${r.source.kind}`);
    return this.config.chains === null ? { chains, unconfigured: "every chain is the local test chain" } : { chains };
  }

  private local(chain: string): LocalChainSource {
    return new LocalChainSource(chain, this.localTestChainHead === undefined ? {} : { head: this.localTestChainHead });
  }
}
