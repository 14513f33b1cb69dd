import * as grpc from "@grpc/grpc-js";
import { chmodSync, chownSync, existsSync, readFileSync, unlinkSync } from "node:fs";
import { ConfigError } from "../../common/config/env-config";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { announceEtcdAccess } from "../../common/etcd/etcd-access";
import { RegisteredWorkers } from "../adapters/registered-workers";
import { connect } from "node:net";
import { resolve } from "node:path";
import { announceTls } from "../../common/tls/grpc-tls";
import { GRPC_SERVER_OPTIONS, bindGrpcServer, shutdownGrpcServer } from "../../common/grpc/grpc-server";
import { HealthStatus, ServingStatus } from "../../common/grpc/health-service";
import { sdNotify } from "../../common/lifecycle/sd-notify";
import { onShutdownSignal } from "../../common/lifecycle/shutdown";
import { createLogger } from "../../common/logging/logger";
import { startMetricsServer } from "../../common/metrics/metrics-server";
import { MetricsRegistry } from "../../common/metrics/metrics";
import { registerProcessMetrics } from "../../common/metrics/process-metrics";
import { BundleCoordinatorServiceService } from "../../gen/bundlecoordinator/v1/bundle_coordinator";
import { CoordinatorServiceService } from "../../gen/coordinator/v1/coordinator";
import { SyncInvokerServiceService } from "../../gen/syncinvoker/v1/sync_invoker";
import { WorkerServiceService } from "../../gen/worker/v1/worker";
import { PassThrough, type ProxiedMethod } from "../adapters/pass-through";
import { ProxyRouter } from "../core/proxy-router";
import type { ProxyConfig } from "./config";

const PROXIED_SERVICES = [CoordinatorServiceService, BundleCoordinatorServiceService, SyncInvokerServiceService, WorkerServiceService];

/** A socket file nobody listens on is left over from a crash: remove it. A live one is an error. */
async function clearStaleSocket(path: string): Promise<void> {
  if (!existsSync(path)) return;
  const live = await new Promise<boolean>((done) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      done(true);
    });
    s.once("error", () => done(false));
  });
  if (live) throw new Error(`PROXY_SOCKET_PATH ${path}: another process is listening there`);
  unlinkSync(path);
}

/** groupId: PROXY_SOCKET_GROUP as a gid (a number, or a name looked up in /etc/group). */
function groupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  const line = readFileSync("/etc/group", "utf8")
    .split("\n")
    .find((l) => l.split(":")[0] === group);
  if (!line) throw new ConfigError([`PROXY_SOCKET_GROUP: expected a group name in /etc/group or a gid, got ${JSON.stringify(group)}`]);
  return Number(line.split(":")[2]);
}

/** runProxy serves the UDS proxy until SIGTERM/SIGINT, then drains and removes the socket file. */
export async function runProxy(config: ProxyConfig): Promise<void> {
  const log = createLogger(config.logLevel, { role: "proxy" });
  announceTls(log, config.tls);
  if (config.tls.kind === "mtls" && config.tls.identity.role !== "proxy") {
    log.warn(
      { identity: `${config.tls.identity.role}/${config.tls.identity.name}` },
      "this proxy's certificate is not a proxy's (blockx certs --role proxy --name NAME): every Unix user of its socket acts upstream as this one identity, sharing its tasks, tables and warm executors",
    );
  }
  announceEtcdAccess(log, config.etcd);
  const socketPath = resolve(config.socketPath);
  const registry = new MetricsRegistry();
  registerProcessMetrics(registry, "proxy");
  const calls = registry.counter("blockx_proxy_calls_total", "Calls relayed by the proxy, by service and final status.", ["service", "code"]);

  const router = new ProxyRouter({
    blockCoordinators: config.coordinatorAddrs,
    bundleCoordinators: config.bundleCoordinatorAddrs,
    syncInvoker: config.syncInvokerAddr,
  });
  const etcd = await createEtcdClient({ endpoints: config.etcdEndpoints, dialTimeoutMs: 5_000, access: config.etcd });
  const workers = new RegisteredWorkers(etcd, log.child({ component: "registry" }));
  await workers.read();
  const passThrough = new PassThrough(router, log.child({ component: "pass-through" }), calls, config.tls, (addr) => workers.has(addr), config.upstreamIdleMs);
  const server = new grpc.Server(GRPC_SERVER_OPTIONS);
  const health = new HealthStatus([]);
  health.register(server);
  const methods: ProxiedMethod[] = PROXIED_SERVICES.flatMap((svc) => Object.values(svc));
  passThrough.register(server, methods);

  await clearStaleSocket(socketPath);
  // The socket hop is local: who may use it is the socket file's mode and group. The umask keeps
  // the file private from bind until chmod/chown, so no one else connects in between.
  const gid = config.socketGroup === "" ? -1 : groupId(config.socketGroup);
  const umask = process.umask(0o177);
  try {
    await bindGrpcServer(server, `unix:${socketPath}`, grpc.ServerCredentials.createInsecure());
  } finally {
    process.umask(umask);
  }
  if (gid !== -1) chownSync(socketPath, -1, gid);
  chmodSync(socketPath, config.socketMode);
  const metricsServer = startMetricsServer(registry, config.prometheusListenAddr, config.prometheusPath, log);

  onShutdownSignal(log, config.shutdownGraceMs + 5_000, async () => {
    health.setAll(ServingStatus.NOT_SERVING);
    health.endWatches();
    await shutdownGrpcServer(server, config.shutdownGraceMs);
    passThrough.close();
    workers.close();
    etcd.close();
    metricsServer?.stop();
    if (existsSync(socketPath)) unlinkSync(socketPath);
  });
  health.setAll(ServingStatus.SERVING);
  log.info(
    { addr: `unix:${socketPath}`, coordinators: config.coordinatorAddrs, bundleCoordinators: config.bundleCoordinatorAddrs, syncInvoker: config.syncInvokerAddr },
    "grpc listening",
  );
  sdNotify("READY=1"); // systemd Type=notify: the socket accepts calls
}
