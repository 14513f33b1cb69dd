import type { ChainsConfig } from "../../common/config/chains-config";
import type { Logger } from "../../common/logging/logger";
import type { MetricsRegistry } from "../../common/metrics/metrics";
import type { BlockTextStore } from "../chains/localtestservice/block-text-store";
import { LocalTestChain, type LocalTestChainSettings } from "../chains/localtestservice/local-test-chain";
import { ChainRouter } from "../chains/router/chain-router";
import type { FunctionSnapshot } from "../functions/function-code-view";
import { BackendRegistry } from "./backends/backend-registry";
import { blockdbBackend } from "./backends/blockdb-backend";
import type { FaultInjector } from "./fault-injection";
import { registerIoMetrics } from "./io-metrics";
import { IoSubsystem, type IoConfig } from "./io-subsystem";
import { localtestserviceBackend, localtestserviceOffBackend } from "./backends/localtestservice-backend";
import { logicalTypesBackend } from "./backends/logical-types-backend";
import { metaBackend } from "./backends/meta-backend";
import { routerBackend } from "./backends/router-backend";
import { rpcBackend } from "./backends/rpc-backend";

export interface BackendSetOptions {
  readonly chains: ChainsConfig;
  /** Whether the synthetic chain is served, its head and its bounds (IoSettings.localTestChain). */
  readonly localTestChain: LocalTestChainSettings;
  /** RPC_MAX_ANSWER_BYTES (the client's default when absent). */
  readonly rpcMaxAnswerBytes?: number;
  /** Full blocks of the local test chain served as stored text (LOCALTESTSERVICE_BLOCK_STORE). */
  readonly blockStore?: BlockTextStore;
  /** Faults injected into the local test chain (tests, drills). */
  readonly faults: FaultInjector;
  /** The Function Code View for `meta` (null: functions by name are not configured). */
  readonly functions: () => FunctionSnapshot | null;
}

/**
 * buildBackendSet assembles the backends user functions reach through `ctx.io`, the same in
 * every process that runs them (Worker, Sync Invoker, blockx exec): localtestservice (behind the
 * fault injector; where the local test chain is off, a stand-in that says so), router, rpc,
 * blockdb and logicalTypes over the chains config, and meta. One LocalTestChain (one generator
 * thread) serves the backend and every chain routed to the local test chain.
 */
export function buildBackendSet(o: BackendSetOptions): { registry: BackendRegistry; router: ChainRouter; localTestChain: LocalTestChain | null } {
  const local = o.localTestChain.enabled ? new LocalTestChain(o.localTestChain) : null;
  const router = new ChainRouter(o.chains, { localTestChain: local, ...(o.rpcMaxAnswerBytes === undefined ? {} : { rpcMaxAnswerBytes: o.rpcMaxAnswerBytes }) });
  const registry = new BackendRegistry()
    .register(local ? o.faults.wrap(localtestserviceBackend({ chain: local, ...(o.blockStore ? { store: o.blockStore } : {}) })) : localtestserviceOffBackend())
    .register(routerBackend(router))
    .register(rpcBackend(router))
    .register(blockdbBackend(router))
    .register(logicalTypesBackend(router))
    .register(metaBackend(o.functions));
  return { registry, router, localTestChain: local };
}

/**
 * buildIoSubsystem puts the IO subsystem over the backends, with its metrics and each chain's own
 * finality depth; a head the head cache doubts or confirms after a doubt is logged (warn) when a logger is given.
 */
export function buildIoSubsystem(backends: BackendRegistry, config: IoConfig, metrics: MetricsRegistry, log?: Logger): IoSubsystem {
  const io: IoSubsystem = new IoSubsystem(backends, config, {
    observer: registerIoMetrics(metrics, () => io),
    finalityDepthOf: (backend, chain) => backends.get(backend)?.finalityDepth?.(chain),
    // A full collection (a few ms on the Worker's small heap) per 64+ MiB evicted keeps RSS near the bound.
    collectGarbage: () => Bun.gc(true),
    ...(log
      ? {
          onHeadVerdict: (backend, chain, v) => {
            if (v.type === "doubted") log.warn({ component: "io", backend, chain, ...v }, `chain ${chain}: head ${v.observed} doubted (${v.reason} from ${v.believed}; sighting ${v.seen})`);
            else if (v.type === "confirmed") log.warn({ component: "io", backend, chain, ...v }, `chain ${chain}: head ${v.to} confirmed after a doubt (was ${v.from})`);
          },
        }
      : {}),
  });
  return io;
}
