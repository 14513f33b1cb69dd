import * as grpc from "@grpc/grpc-js";
import { addStrictService } from "../../common/grpc/malformed-requests";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { announceEtcdAccess } from "../../common/etcd/etcd-access";
import { sdNotify } from "../../common/lifecycle/sd-notify";
import { announceTls, loadedServerCredentials } from "../../common/tls/grpc-tls";
import { bindGrpcServer, GRPC_SERVER_OPTIONS, shutdownGrpcServer } from "../../common/grpc/grpc-server";
import { HealthStatus, ServingStatus } from "../../common/grpc/health-service";
import { onShutdownSignal } from "../../common/lifecycle/shutdown";
import { createLogger, type Logger } from "../../common/logging/logger";
import { startMetricsServer } from "../../common/metrics/metrics-server";
import { MetricsRegistry } from "../../common/metrics/metrics";
import { registerProcessMetrics } from "../../common/metrics/process-metrics";
import { BundleCoordinatorServiceService } from "../../gen/bundlecoordinator/v1/bundle_coordinator";
import { CoordinatorServiceService } from "../../gen/coordinator/v1/coordinator";
import { CoordinatorServer } from "../adapters/coordinator-server";
import { EtcdWorkerWatcher, UPDATE_AGE_BUCKETS_SECONDS, type WorkerViewSink } from "../adapters/etcd-worker-watcher";
import { WorkerRPCClient } from "../adapters/worker-rpc-client";
import { CoordinatorCore } from "../core/coordinator-core";
import type { CoordinatorEvent } from "../core/coordinator-core-events";
import { CoreDriver } from "../../common/core/core-driver";
import type { CoordinatorRuntimeConfig } from "./config";
import { startTrace } from "../../common/trace/trace-file";

/** The process lifecycle; health follows it (NOT_SERVING from `draining` on). */
export type CoordinatorLifecycle = "starting" | "serving" | "draining" | "stopped";

/** How often Watch streams of the service's health hear about readiness changes (Check is always live). */
const READINESS_POLL_MS = 250;

/**
 * runCoordinator assembles one Coordinator process (the seed's `app.Run`): core, Worker RPC
 * client, orchestration server, gRPC server with health, etcd watcher, metrics; it returns
 * once serving, and stops on SIGINT/SIGTERM. Health: the server ("") is SERVING while the
 * process serves; the Coordinator service is SERVING only while the core is ready, so a probe
 * tells whether reservations can succeed.
 */
export async function runCoordinator(config: CoordinatorRuntimeConfig): Promise<void> {
  const role = config.profile.deployment === "block" ? "coordinator" : "bundle-coordinator";
  const log: Logger = createLogger(config.logLevel, { role });
  announceTls(log, config.tls);
  announceEtcdAccess(log, config.etcd);
  let lifecycle: CoordinatorLifecycle = "starting";

  const registry = new MetricsRegistry();
  registerProcessMetrics(registry, role);
  const metrics = {
    reservations: registry.counter("blockx_coordinator_reservations_total", "ReserveWorkerSlot requests by outcome.", ["outcome"]),
    reservationSeconds: registry.histogram(
      "blockx_coordinator_reservation_duration_seconds",
      "ReserveWorkerSlot latency by outcome.",
      ["outcome"],
    ),
    workerRpcs: registry.counter("blockx_coordinator_worker_rpcs_total", "RequestTaskSlot calls to Workers by result.", ["result"]),
    workerRpcSeconds: registry.histogram(
      "blockx_coordinator_worker_rpc_duration_seconds",
      "One RequestTaskSlot to a Worker, sent to answered (a first call to a Worker includes its connection set-up).",
      [],
      UPDATE_AGE_BUCKETS_SECONDS,
    ),
  };
  const watcherMetrics = {
    registryWorkers: registry.gauge("blockx_coordinator_registry_workers", "Workers seen in the etcd registry, by prefix format.", ["format"]),
    unparsableValues: registry.counter(
      "blockx_coordinator_registry_unparsable_values_total",
      "Registry values skipped because they are not a valid WorkerHeartbeat.",
      ["prefix"],
    ),
    watchConnected: registry.gauge("blockx_coordinator_registry_watch_connected", "1 while the prefix's watch is up.", ["prefix"]),
    watchEvents: registry.counter("blockx_coordinator_registry_events_total", "Registry watch events received, before coalescing.", ["prefix"]),
    updateAge: registry.histogram(
      "blockx_coordinator_registry_update_age_seconds",
      "Age of a watched heartbeat (now - lastHeartbeatMs) when it reaches the core: put, etcd and watch lag, plus clock offset.",
      [],
      UPDATE_AGE_BUCKETS_SECONDS,
    ),
  };

  const core = new CoordinatorCore(config.core);
  const viewWorkers = registry.gauge("blockx_coordinator_view_workers", "Workers in the Coordinator's view.");
  viewWorkers.onCollect(() => viewWorkers.set({}, core.workerCount()));
  const ready = registry.gauge("blockx_coordinator_ready", "1 when ReserveWorkerSlot can be served from a trusted view.");
  ready.onCollect(() => ready.set({}, core.isReady(Date.now()) ? 1 : 0));

  const workerRpc = new WorkerRPCClient(config.tls);
  // A channel (some tens of KB) per Worker called so far; a Worker without one pays a connection set-up on its next RequestTaskSlot.
  const workerChannels = registry.gauge("blockx_coordinator_worker_channels", "Channels held open to Workers (one per Worker called since it joined the view).");
  workerChannels.onCollect(() => workerChannels.set({}, workerRpc.cachedConnections));
  const server = new CoordinatorServer(
    core,
    workerRpc,
    config.handler,
    config.core.slotTtlMs,
    config.core.maxCandidates,
    log.child({ component: "reserve" }),
    metrics,
    Date.now,
    startTrace(config.trace, role, log),
  );

  const grpcServer = new grpc.Server(GRPC_SERVER_OPTIONS);
  const health = new HealthStatus([config.profile.service]);
  health.register(grpcServer);
  if (config.profile.deployment === "block") {
    addStrictService(grpcServer, CoordinatorServiceService, {
      reserveWorkerSlot: server.grpcHandler(config.tls),
      reserveWorkerSlots: server.grpcBatchHandler(config.tls),
      getReservationOutcomes: server.grpcOutcomesHandler(config.tls),
    });
  } else {
    addStrictService(grpcServer, BundleCoordinatorServiceService, {
      reserveWorkerSlot: server.grpcHandler(config.tls),
      reserveWorkerSlots: server.grpcBatchHandler(config.tls),
      getReservationOutcomes: server.grpcOutcomesHandler(config.tls),
    });
  }
  const boundAddr = await bindGrpcServer(grpcServer, config.listenAddr, await loadedServerCredentials(config.tls));

  const etcd = await createEtcdClient({ endpoints: config.watcher.endpoints, dialTimeoutMs: config.watcher.dialTimeoutMs, access: config.etcd });
  // The registry's events reach the core through its driver (the core asks for no work and no
  // wake-up: the driver only keeps its steps one at a time and logs their notes).
  const viewDriver = new CoreDriver<CoordinatorEvent, never>(core, { name: "coordinator", carryOut: () => {}, nowMs: Date.now, timeAdvanced: { type: "timeAdvanced" }, log });
  const view: WorkerViewSink = { handle: (event) => viewDriver.send(event) };
  const watcher = new EtcdWorkerWatcher(etcd, config.watcher, view, log.child({ component: "etcd-watcher" }), watcherMetrics, (addr) =>
    workerRpc.forget(addr),
  );
  const watching = watcher.run();

  const metricsServer = startMetricsServer(registry, config.prometheusListenAddr, config.prometheusPath, log);

  let readinessTimer: ReturnType<typeof setInterval> | undefined;
  // Installed before announcing the address, so that a signal right after start-up is graceful.
  onShutdownSignal(log, config.shutdownGraceMs + 5_000, async () => {
    lifecycle = "draining";
    clearInterval(readinessTimer);
    health.setAll(ServingStatus.NOT_SERVING);
    health.endWatches();
    watcher.stop();
    await shutdownGrpcServer(grpcServer, config.shutdownGraceMs);
    await watching.catch(() => {});
    etcd.close();
    workerRpc.close();
    metricsServer?.stop();
    lifecycle = "stopped";
  });

  lifecycle = "serving";
  health.set("", ServingStatus.SERVING);
  health.derive(config.profile.service, () =>
    lifecycle === "serving" && core.isReady(Date.now()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING,
  );
  readinessTimer = setInterval(() => health.refresh(), READINESS_POLL_MS);
  log.info(
    {
      addr: boundAddr,
      service: config.profile.service,
      prefixes: config.watcher.keyPrefixes,
      etcd: config.watcher.endpoints,
    },
    "grpc listening",
  );
  sdNotify("READY=1"); // systemd Type=notify: serving (routing waits for the registry view)
}
