import * as grpc from "@grpc/grpc-js";
import { addStrictService } from "../../common/grpc/malformed-requests";
import { announceTls, loadedServerCredentials } from "../../common/tls/grpc-tls";
import { requireClientCallers } from "../../common/tls/sub-identity";
import { bindGrpcServer, GRPC_SERVER_OPTIONS, shutdownGrpcServer } from "../../common/grpc/grpc-server";
import { HealthStatus, ServingStatus } from "../../common/grpc/health-service";
import { sdNotify } from "../../common/lifecycle/sd-notify";
import { onShutdownSignal } from "../../common/lifecycle/shutdown";
import { createLogger } from "../../common/logging/logger";
import { startMetricsServer } from "../../common/metrics/metrics-server";
import { MetricsRegistry } from "../../common/metrics/metrics";
import { registerProcessMetrics } from "../../common/metrics/process-metrics";
import { SyncInvokerServiceService } from "../../gen/syncinvoker/v1/sync_invoker";
import { ExecutorPool } from "../../runtime/executor/executor-pool";
import { resolvePython } from "../../runtime/executor/isolation";
import { functionsFromDir } from "../../runtime/functions/functions-dir";
import { FaultInjector } from "../../runtime/io/fault-injection";
import { buildBackendSet, buildIoSubsystem } from "../../runtime/io/io-assembly";
import { PrecheckRunner } from "../adapters/precheck-runner";
import { ReadOnlyIo } from "../adapters/read-only-io";
import { requestKey, SyncInvokerService } from "../adapters/sync-invoker-service";
import { startTrace } from "../../common/trace/trace-file";
import { tracedPool } from "../../runtime/calls/traced-pool";
import type { SyncInvokerConfig } from "./config";

/** A precheck process that has not answered by then is killed (a pathological source). */
const PRECHECK_TIMEOUT_MS = 10_000;

/**
 * runSyncInvoker assembles `blockx syncinvoker`: its own executor pool, the Function Code View
 * (FUNCTIONS_DIR), the Worker's IO subsystem in read-only mode over the Worker's backend set
 * (CHAINS_CONFIG: localtestservice, router, rpc, blockdb, meta), the precheck runner, and
 * syncinvoker.v1.SyncInvokerService with gRPC health and metrics. No slots, no Builder, no
 * Writers, no etcd. On SIGTERM: health NOT_SERVING, new requests refused (UNAVAILABLE),
 * running and queued calls finish within SYNCINVOKER_SHUTDOWN_GRACE_MS, then exit 0.
 */
export async function runSyncInvoker(config: SyncInvokerConfig): Promise<void> {
  const log = createLogger(config.logLevel, { role: "syncinvoker" });
  announceTls(log, config.tls);
  const registry = new MetricsRegistry();
  registerProcessMetrics(registry, "syncinvoker");

  const pool = await ExecutorPool.start(config.pool, log.child({ component: "executor-pool" }));
  const functions = functionsFromDir(config.functionsDir, log);
  const faults = new FaultInjector(config.localTestFaults, config.localTestFaultsFile, log.child({ component: "localtestservice" })).start();
  const { registry: backends, router, localTestChain } = buildBackendSet({
    chains: config.chains,
    localTestChain: config.localTestChain,
    rpcMaxAnswerBytes: config.rpcMaxAnswerBytes,
    faults,
    functions: () => functions.current(),
  });
  const io = buildIoSubsystem(backends, config.io, registry, log);
  const precheck = new PrecheckRunner({
    python: resolvePython(config.pool.python),
    pythonPath: pool.pythonPath,
    maxConcurrent: Math.max(2, config.pool.executorCount),
    timeoutMs: PRECHECK_TIMEOUT_MS,
  });
  const tracer = startTrace(config.trace, "syncinvoker", log);
  const svc = new SyncInvokerService({
    pool: tracedPool(pool, tracer, requestKey),
    tracer,
    functions: () => functions.current(),
    io: new ReadOnlyIo(io),
    precheck,
    capacity: config.maxRunning,
    queueMax: config.queueMax,
    defaultTimeoutMs: config.defaultTimeoutMs,
    log: log.child({ component: "syncinvoker" }),
    metrics: registry,
    tls: config.tls,
    maxSourceBytes: config.pool.maxSourceBytes,
    ownerWithoutIdentity: config.pool.ownerWithoutIdentity,
  });

  const grpcServer = new grpc.Server(GRPC_SERVER_OPTIONS);
  const health = new HealthStatus(["syncinvoker.v1.SyncInvokerService"]);
  health.register(grpcServer);
  addStrictService(grpcServer, SyncInvokerServiceService, requireClientCallers(config.tls, svc.handlers()));
  const boundAddr = await bindGrpcServer(grpcServer, config.listenAddr, await loadedServerCredentials(config.tls));
  const metricsServer = startMetricsServer(registry, config.prometheusListenAddr, config.prometheusPath, log);

  onShutdownSignal(log, config.shutdownGraceMs + 5_000, async () => {
    health.setAll(ServingStatus.NOT_SERVING);
    const drained = svc.drain().then(() => true);
    const timedOut = new Promise<boolean>((r) => setTimeout(() => r(false), config.shutdownGraceMs));
    if (!(await Promise.race([drained, timedOut]))) log.warn({ shutdownGraceMs: config.shutdownGraceMs }, "shutdown grace passed with calls still running");
    await shutdownGrpcServer(grpcServer, 1_000);
    await pool.close();
    functions.stop();
    faults.stop();
    localTestChain?.close();
    metricsServer?.stop();
  });

  health.setAll(ServingStatus.SERVING);
  log.info({ addr: boundAddr, executors: config.pool.executorCount, maxRunning: config.maxRunning, queueMax: config.queueMax, functionsDir: config.functionsDir || null }, "grpc listening");
  log.info(router.summary(), "chains");
  // A node of another chain is named at start (its client checks again on every reconnect).
  void router.checkChainIds().then((checks) => {
    for (const c of checks) if (!c.ok) log.error({ component: "chains", chain: c.chain }, `chain ${c.chain}: ${c.message}`);
  });
  sdNotify("READY=1"); // systemd Type=notify: serving
}
