import * as grpc from "@grpc/grpc-js";
import { addStrictService } from "../../common/grpc/malformed-requests";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ConfigError } from "../../common/config/env-config";
import { startClockMonitor } from "../../common/clock/clock-monitor";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { announceEtcdAccess } from "../../common/etcd/etcd-access";
import { sdNotify } from "../../common/lifecycle/sd-notify";
import { announceTls, loadedServerCredentials } from "../../common/tls/grpc-tls";
import { bindGrpcServer, grpcError, GRPC_SERVER_OPTIONS, shutdownGrpcServer } from "../../common/grpc/grpc-server";
import { HealthStatus, ServingStatus } from "../../common/grpc/health-service";
import { onShutdownSignal } from "../../common/lifecycle/shutdown";
import { createLogger } from "../../common/logging/logger";
import { startMetricsServer } from "../../common/metrics/metrics-server";
import { MetricsRegistry } from "../../common/metrics/metrics";
import { registerProcessMetrics } from "../../common/metrics/process-metrics";
import { TaskState, WorkerServiceService, type Task, type WorkerServiceServer } from "../../gen/worker/v1/worker";
import { monotonicNowMs } from "../../common/clock/monotonic-clock";
import { planTask } from "../core/task-plan";
import { ErrorRateWindow } from "../adapters/error-rate-window";
import { HeartbeatPublisher } from "../adapters/heartbeat-publisher";
import { HostMetrics } from "../adapters/host-metrics";
import { registerWorkerMetrics } from "../adapters/worker-metrics";
import { TaskRunner } from "../adapters/task-runner";
import { WorkerDriver } from "../adapters/worker-driver";
import { BlockTextStore } from "../../runtime/chains/localtestservice/block-text-store";
import { WorkerService } from "../adapters/worker-service";
import { WorkerCore } from "../core/worker-core";
import type { ExecutorSummary } from "../../common/registry/worker-heartbeat";
import { ExecutorPool, type ExecutorPoolStats } from "../../runtime/executor/executor-pool";
import { functionsFromDir } from "../../runtime/functions/functions-dir";
import { FaultInjector } from "../../runtime/io/fault-injection";
import { buildBackendSet, buildIoSubsystem } from "../../runtime/io/io-assembly";
import { describeTableStore, openTableStore } from "../../outputs/stores/open-table-store";
import { isSqliteLockContention } from "../../outputs/stores/sqlite-table-store";
import { TaskCallTimes } from "../adapters/task-call-times";
import { TaskTrace, taskKey } from "../adapters/task-trace";
import { startTrace } from "../../common/trace/trace-file";
import { tracedPool } from "../../runtime/calls/traced-pool";
import { RunFencing } from "../adapters/run-fencing";
import type { WorkerRuntimeConfig } from "./config";

export type WorkerLifecycle = "starting" | "serving" | "draining" | "stopped";

/** advertisedAddr is what Coordinators and clients dial: the configured one, or the bound one. */
function advertisedAddr(config: WorkerRuntimeConfig, boundAddr: string): string {
  if (config.advertiseAddr) return config.advertiseAddr;
  return boundAddr.replace(/^0\.0\.0\.0:/, `${hostname()}:`).replace(/^\[::\]:/, `${hostname()}:`);
}

/**
 * runWorker assembles one Worker process (block or bundle profile): the executor pool, the
 * gRPC WorkerService over the WorkerDriver (WorkerCore and the TaskRunner), the etcd heartbeat, metrics and
 * health. On SIGTERM it stops taking slots (health NOT_SERVING), revokes its lease so that
 * Coordinators drop it at once, lets running tasks finish up to WORKER_DRAIN_TIMEOUT_MS, then
 * exits.
 */
export async function runWorker(config: WorkerRuntimeConfig): Promise<void> {
  const role = config.profile.deployment === "block" ? "worker" : "bundle-worker";
  const log = createLogger(config.logLevel, { role });
  announceTls(log, config.tls);
  announceEtcdAccess(log, config.etcd);
  let lifecycle: WorkerLifecycle = "starting";

  // A bad block store is a configuration error: refuse to start rather than serve generated blocks.
  let blockStore: BlockTextStore | undefined;
  if (config.localTestBlockStore) {
    try {
      blockStore = BlockTextStore.open(config.localTestBlockStore);
    } catch (e) {
      throw new ConfigError([`LOCALTESTSERVICE_BLOCK_STORE: ${(e as Error).message}`]);
    }
    log.info({ chain: blockStore.chain, first: blockStore.header.first, count: blockStore.header.count }, "local test chain block store opened");
  }

  const registry = new MetricsRegistry();
  registerProcessMetrics(registry, role);
  const pool = await ExecutorPool.start(config.pool, log.child({ component: "executor-pool" }), {
    ...(blockStore && config.blockHandoff === "mapped" ? { sharedBlockStore: { fd: blockStore.fd, identity: blockStore.identity } } : {}),
  });

  // Handlers are bound before the service exists: the service needs the bound address.
  let impl: WorkerServiceServer | null = null;
  const notReady = (cb: (e: grpc.ServiceError) => void) => cb(grpcError(grpc.status.UNAVAILABLE, "worker is starting"));
  const handlers: WorkerServiceServer = {
    requestTaskSlot: (call, cb) => (impl ? impl.requestTaskSlot(call, cb) : notReady(cb)),
    requestTaskSlots: (call, cb) => (impl ? impl.requestTaskSlots(call, cb) : notReady(cb)),
    submitTask: (call, cb) => (impl ? impl.submitTask(call, cb) : notReady(cb)),
    submitTasks: (call, cb) => (impl ? impl.submitTasks(call, cb) : notReady(cb)),
    cancelTask: (call, cb) => (impl ? impl.cancelTask(call, cb) : notReady(cb)),
    getTaskResult: (call, cb) => (impl ? impl.getTaskResult(call, cb) : notReady(cb)),
    watchTasks: (call) => (impl ? impl.watchTasks(call) : void call.emit("error", grpcError(grpc.status.UNAVAILABLE, "worker is starting"))),
    streamTaskLogs: (call) => (impl ? impl.streamTaskLogs(call) : void call.emit("error", grpcError(grpc.status.UNAVAILABLE, "worker is starting"))),
    listTasks: (call, cb) => (impl ? impl.listTasks(call, cb) : notReady(cb)),
    getTaskStory: (call, cb) => (impl ? impl.getTaskStory(call, cb) : notReady(cb)),
  };
  const grpcServer = new grpc.Server(GRPC_SERVER_OPTIONS);
  const health = new HealthStatus(["worker.v1.WorkerService"]);
  health.register(grpcServer);
  addStrictService(grpcServer, WorkerServiceService, handlers);
  const boundAddr = await bindGrpcServer(grpcServer, config.listenAddr, await loadedServerCredentials(config.tls));
  const workerAddr = advertisedAddr(config, boundAddr);

  const incarnation = randomBytes(6).toString("hex");
  const core = new WorkerCore(
    { taskSlots: config.taskSlots, retentionMs: config.resultRetentionMs, workerAddr, maxSlotTtlMs: config.maxSlotTtlMs, retainedTasksMax: config.retainedTasksMax, retainedBytesMax: config.retainedBytesMax },
    incarnation,
  );
  const errors = new ErrorRateWindow();
  const functions = functionsFromDir(config.functionsDir, log);
  const faults = new FaultInjector(config.localTestFaults, config.localTestFaultsFile, log.child({ component: "localtestservice" })).start();
  const { registry: backends, router, localTestChain } = buildBackendSet({
    chains: config.chains,
    localTestChain: config.localTestChain,
    rpcMaxAnswerBytes: config.rpcMaxAnswerBytes,
    ...(blockStore ? { blockStore } : {}),
    faults,
    functions: () => functions.current(),
  });
  const io = buildIoSubsystem(backends, config.io, registry, log);
  const tableStore = openTableStore(config);
  // The table store is checked before the Worker registers: a wrong URL, a refused login or an
  // unwritable file stops it here, naming the variable (never the password), instead of a Worker
  // that takes tasks and fails every write. Opening its epoch is that check (fencing's lease).
  let runner: TaskRunner | null = null;
  const fencing = new RunFencing(
    tableStore,
    {
      workerAddr,
      leaseTtlMs: config.leaseTtlSeconds * 1000,
      onEpochLost: (epoch, why) => runner?.failRunsOf(epoch, `${why}: this run is no longer current and nothing more of it is written`),
    },
    log.child({ component: "run-fencing" }),
  );
  const store = describeTableStore(config);
  let unusable: string | null = null;
  try {
    await fencing.start();
    // A Postgres that does not answer may come back (the Worker starts without it, unhealthy); a
    // file of this host that cannot be opened will not. A file another process holds locked (another
    // Worker mid-commit, a checkpoint: SQLite may answer "locked" at once rather than wait) will be
    // free again: the Worker starts unhealthy and opens its epoch at the next renewal, as with Postgres.
    if (!store.shared && !fencing.storeHealthy && !isSqliteLockContention(fencing.unhealthyReason)) unusable = fencing.unhealthyReason;
  } catch (e) {
    unusable = (e as Error).message;
  }
  if (unusable !== null) {
    await pool.close();
    grpcServer.forceShutdown();
    throw new ConfigError([`${store.which}: the table store cannot be used: ${unusable}`]);
  }
  // Each task's calls timed in the pool, for ListTasks (the dashboard's latency chart).
  const callTimes = new TaskCallTimes();
  const tracer = startTrace(config.trace, role, log);
  runner = new TaskRunner({
    pool: tracedPool(callTimes.wrap(pool), tracer, (callId) => taskKey(callId.slice(0, callId.indexOf("/")))),
    dispatcher: config.dispatcher,
    io,
    tables: tableStore,
    log: log.child({ component: "task-runner" }),
    nowMs: monotonicNowMs,
    logCaps: config.taskLogCaps,
    ownerWithoutIdentity: config.pool.ownerWithoutIdentity,
    maxResultBytes: config.taskMaxResultBytes,
    ioPrefetch: config.taskIoPrefetch,
    onStoreReached: (reached, why) => fencing.observe(reached, why),
    chainReorganises: (chain) => router.reorganises(chain),
  });
  // A task by name pins the function snapshot current at its submission; a miss re-reads FUNCTIONS_DIR.
  const planLimits = { maxInputs: config.taskMaxInputs, maxSourceBytes: config.pool.maxSourceBytes };
  const plan = (task: Task | undefined) => planTask(task, config.profile, functions.current(task?.functionCallConfig?.function?.name || undefined), planLimits);
  const driver = new WorkerDriver(core, runner, plan, log.child({ component: "worker-driver" }), monotonicNowMs, fencing.claims());
  driver.callTimesOf = (taskId) => callTimes.of(taskId);
  const svc = new WorkerService(driver, log.child({ component: "worker-service" }), config.tls, config.maxWatchStreams);
  if (tracer.enabled) {
    const tasks = new TaskTrace(tracer);
    const publish = driver.onSnapshot;
    driver.onSnapshot = (s) => {
      tasks.snapshot(s);
      publish(s);
    };
    runner.onCommitStarted = (callId, done) => tasks.commit(callId, done);
  }
  const metrics = registerWorkerMetrics(registry, {
    slotCounts: () => core.slotCounts(),
    inflightCalls: () => runner!.inflightCalls,
    poolStats: () => pool.stats(),
    writesOf: (taskId) => runner!.result(taskId)?.writes ?? [],
    commitCounts: () => tableStore.commitCounts(),
  });
  driver.onTaskEnded = (state, snapshot) => metrics.taskEnded(state, snapshot);
  driver.onRetainedEvicted = () => metrics.retainedEvicted();
  runner.onCallFinished = (systemFailure, info) => {
    errors.record(systemFailure, Date.now());
    metrics.callFinished(systemFailure, info);
  };
  impl = svc.handlers();

  const etcd = await createEtcdClient({ endpoints: config.etcdEndpoints, dialTimeoutMs: 5_000, access: config.etcd });
  const host = new HostMetrics();
  const clock = startClockMonitor(registry, { etcdEndpoints: config.etcdEndpoints, etcdTls: config.etcd.tls, ...config.clock }, log);
  const heartbeatPuts = registry.counter("blockx_worker_heartbeat_puts_total", "Heartbeats put into etcd, by reason (HEARTBEAT_PUBLISH).", ["reason"]);
  const heartbeat = new HeartbeatPublisher(
    etcd,
    {
      prefix: config.registryPrefix,
      workerAddr,
      intervalMs: config.heartbeatIntervalMs,
      leaseTtlSeconds: config.leaseTtlSeconds,
      mode: config.heartbeatPublish,
      refreshMs: config.heartbeatRefreshMs,
      redLines: config.heartbeatRedLines,
      onPut: (reason) => heartbeatPuts.inc({ reason: reason.toLowerCase() }),
    },
    () => {
      const c = core.slotCounts();
      const now = Date.now();
      return {
        workerAddr,
        taskSlots: c.taskSlots,
        // A draining Worker offers nothing: Coordinators still listing it skip it.
        reservedSlots: lifecycle === "serving" ? c.reservedSlots : c.taskSlots,
        runningTasks: lifecycle === "serving" ? c.runningTasks : 0,
        ...host.sample(),
        // A Worker that cannot write fails every table task fast (retryably, not its own fault), which
        // would leave it the most free slots of all: report it at the worst error rate instead, so
        // that Coordinators send work elsewhere until its store answers again.
        errorRate: fencing.storeHealthy ? errors.rate(now) : 1,
        lastHeartbeatMs: now,
        executors: executorSummary(pool.stats()),
      };
    },
    log,
    () => clock.onHeartbeatCycle(),
  );
  heartbeat.start();
  const metricsServer = startMetricsServer(registry, config.prometheusListenAddr, config.prometheusPath, log);

  onShutdownSignal(log, config.drainTimeoutMs + 10_000, async () => {
    lifecycle = "draining";
    health.setAll(ServingStatus.NOT_SERVING);
    // Refuse new slots at once: revoking the lease can take a while on a loaded host, and a
    // slot granted meanwhile would be a task started on a Worker that is going away.
    const drained = driver.drain().then(() => true);
    await heartbeat.stop();
    clock.stop();
    const timedOut = new Promise<boolean>((r) => setTimeout(() => r(false), config.drainTimeoutMs));
    if (!(await Promise.race([drained, timedOut]))) log.warn({ drainTimeoutMs: config.drainTimeoutMs }, "drain deadline passed with tasks still running");
    driver.stop();
    svc.endWatches();
    await shutdownGrpcServer(grpcServer, 2_000);
    await pool.close();
    fencing.stop();
    functions.stop();
    faults.stop();
    await tableStore.close();
    blockStore?.close();
    localTestChain?.close();
    etcd.close();
    metricsServer?.stop();
    lifecycle = "stopped";
  });

  lifecycle = "serving";
  health.setAll(ServingStatus.SERVING);
  log.info({ addr: boundAddr, workerAddr, incarnation, prefix: config.registryPrefix, taskSlots: config.taskSlots }, "grpc listening");
  log.info(router.summary(), "chains");
  // A node of another chain is named at start (its client checks again on every reconnect).
  void router.checkChainIds().then((checks) => {
    for (const c of checks) if (!c.ok) log.error({ component: "chains", chain: c.chain }, `chain ${c.chain}: ${c.message}`);
  });
  sdNotify("READY=1"); // systemd Type=notify: serving, heartbeat published
}

/** executorSummary: the pool's state as the heartbeat carries it (for the dashboard). */
function executorSummary(s: ExecutorPoolStats): ExecutorSummary {
  const ready = s.executors.filter((e) => e.state === "READY");
  return { total: s.executors.length, ready: ready.length, busy: ready.filter((e) => e.inflight > 0).length, queuedCalls: s.queued, restarts: s.restarts };
}
