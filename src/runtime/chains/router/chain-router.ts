import type { ChainConfig, ChainsConfig } from "../../../common/config/chains-config";
import { BackendError } from "../../backend-error";
import { knownFinalityDepth } from "../../../common/config/finality-defaults";
import { LocalChainSource } from "../localtestservice/local-chain-source";
import { LOCAL_TEST_CHAIN_OFF, type LocalTestChain } from "../localtestservice/local-test-chain";
import { JsonRpcClient } from "../rpc/json-rpc-client";
import type { ChainSource } from "./chain-source";

export interface ChainRoute {
  readonly chain: string;
  readonly source: ChainSource;
  /** From the chains config, else the default for its chainId (finality-defaults.ts); undefined = the Worker's IO_FINALITY_DEPTH. */
  readonly finalityDepth: number | undefined;
  /** CHAINS_CONFIG's per-chain switch for rpc.send (off unless set). */
  readonly allowSend: boolean;
}

export interface ChainRouterOptions {
  /** The process's synthetic chain, or null where it is off (production roles unless configured). */
  readonly localTestChain: LocalTestChain | null;
  /** RPC_MAX_ANSWER_BYTES: the most bytes one JSON-RPC answer of a node may have (the client's default when absent). */
  readonly rpcMaxAnswerBytes?: number;
}

/** What opening a chain's source may use. */
interface SourceContext extends ChainRouterOptions {
  /** The synthetic chain's source for `chain` (throws where the process did not start it). */
  local(chain: string): ChainSource;
}

/**
 * The chain sources, by the chains config's `source`: one line each. A new source is its client
 * (a ChainSource), its case in the chains config's schema, and its line here.
 */
const CHAIN_SOURCES: { readonly [K in ChainConfig["source"]]: (chain: string, c: Extract<ChainConfig, { source: K }>, ctx: SourceContext) => ChainSource } = {
  rpc: (chain, c, ctx) => new JsonRpcClient(chain, { ...c, ...(ctx.rpcMaxAnswerBytes === undefined ? {} : { maxAnswerBytes: ctx.rpcMaxAnswerBytes }) }),
  localtestservice: (chain, _c, ctx) => ctx.local(chain),
};

function openSource(chain: string, c: ChainConfig, ctx: SourceContext): ChainSource {
  return (CHAIN_SOURCES[c.source] as (chain: string, c: ChainConfig, ctx: SourceContext) => ChainSource)(chain, c, ctx);
}

/**
 * ChainRouter says which source serves which chain, from the chains config. With no config
 * every chain name is served by the local test chain (the synthetic chain accepts any name)
 * when it is on, and no chain exists when it is off; with a config, only the configured chains
 * exist. Another name is an UnknownChain error saying what to configure.
 */
export class ChainRouter {
  private readonly routes = new Map<string, ChainRoute>();
  private readonly localTestChain: LocalTestChain | null;

  constructor(
    private readonly config: ChainsConfig,
    opts: ChainRouterOptions,
  ) {
    this.localTestChain = opts.localTestChain;
    const ctx: SourceContext = { ...opts, local: (chain) => this.local(chain) };
    for (const [chain, c] of Object.entries(config.chains ?? {})) {
      const source = openSource(chain, c, ctx);
      this.routes.set(chain, { chain, source, finalityDepth: c.finalityDepth ?? knownFinalityDepth(c.source === "rpc" ? c.chainId : undefined), allowSend: c.allowSend === true });
    }
  }

  route(chain: string): ChainRoute {
    const r = this.routes.get(chain);
    if (r) return r;
    if (this.config.chains !== null) {
      throw new BackendError("UnknownChain", `no chain ${JSON.stringify(chain)} in CHAINS_CONFIG (have: ${[...this.routes.keys()].join(", ") || "none"})`);
    }
    if (this.localTestChain === null) {
      throw new BackendError("UnknownChain", `no chain ${JSON.stringify(chain)}: CHAINS_CONFIG is empty (name the chain's node there), and ${LOCAL_TEST_CHAIN_OFF}`);
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

  /**
   * checkChainIds asks every configured node with a `chainId` for its chain id once (at a process's
   * start), through its client, so that a node of another chain is named in the start-up log rather
   * than at the first call: the answers, one per chain ("ok", or the error's message). Never throws;
   * a node that is down now is checked again by its client before its first request.
   */
  async checkChainIds(): Promise<{ chain: string; ok: boolean; message: string }[]> {
    const checked = this.chains().filter((r) => r.source.kind === "rpc" && (this.config.chains?.[r.chain] as { chainId?: number } | undefined)?.chainId !== undefined);
    return Promise.all(
      checked.map((r) =>
        r.source.request("eth_chainId", []).then(
          () => ({ chain: r.chain, ok: true, message: "ok" }),
          (e: unknown) => ({ chain: r.chain, ok: false, message: e instanceof BackendError ? `${e.type}: ${e.message}` : String(e) }),
        ),
      ),
    );
  }

  /** reorganises: whether a chain's blocks may change (false for a fixed source, and for a chain this router does not know: no hash to read). */
  reorganises(chain: string): boolean {
    try {
      return this.route(chain).source.fixed !== true;
    } catch {
      return false;
    }
  }

  /** summary is what a process logs at start: each chain's source, or that every chain is the local test chain. */
  summary(): { chains: string[]; unconfigured?: string } {
    const chains = this.chains().map((r) => `${r.chain}=${r.source.kind}`);
    if (this.config.chains !== null) return { chains };
    return { chains, unconfigured: this.localTestChain ? "every chain is the local test chain" : "no chain: CHAINS_CONFIG is empty and the local test chain is off" };
  }

  private local(chain: string): LocalChainSource {
    // ioSettingsFrom turns the local test chain on when CHAINS_CONFIG names it: only a caller that skipped it gets here.
    if (this.localTestChain === null) throw new Error(`chain ${chain}: CHAINS_CONFIG names the local test chain, which this process did not start`);
    return new LocalChainSource(chain, this.localTestChain);
  }
}
