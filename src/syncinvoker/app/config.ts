import { traceVar } from "../../common/trace/trace-file";
import { compileTlsSetting, type TlsSetting } from "../../common/tls/tls-setting";
import { commonVars } from "../../common/config/common-vars";
import { envVar, intSchema, listenAddrSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";
import type { ChainsConfig } from "../../common/config/chains-config";
import type { LocalTestChainSettings } from "../../runtime/chains/localtestservice/local-test-chain";
import { executorPoolConfigFrom, executorPoolVars, type ExecutorPoolConfig } from "../../runtime/executor/executor-pool-config";
import type { Faults } from "../../runtime/io/fault-injection";
import { ioSettingsFrom, ioVars } from "../../runtime/io/io-config";
import type { IoConfig } from "../../runtime/io/io-subsystem";
import { MAX_TIMEOUT_MS } from "../adapters/invoke-request";

/** syncInvokerVars lists every variable `blockx syncinvoker` reads (the Worker's IO and executor pool variables included). */
export const syncInvokerVars = {
  listenAddr: envVar("SYNCINVOKER_LISTEN", ":9070", "host:port or :port", "gRPC listen address of syncinvoker.v1.SyncInvokerService", listenAddrSchema()),
  queueMax: envVar(
    "SYNCINVOKER_QUEUE_MAX",
    "256",
    "an integer from 0 to 1000000",
    "requests waiting for a free executor; one more is refused with RESOURCE_EXHAUSTED (0: never wait)",
    intSchema(0, 1_000_000),
  ),
  callsPerExecutor: envVar(
    "SYNCINVOKER_CALLS_PER_EXECUTOR",
    "1",
    "an integer from 1 to 512",
    "calls admitted at once per executor (EXECUTOR_COUNT x this run, the rest queue). 1: a call never shares its executor, " +
      "so its latency does not depend on others; more lets calls that wait on IO overlap",
    intSchema(1, 512),
  ),
  hotSpinUs: envVar(
    "SYNCINVOKER_HOT_SPIN_US",
    "1000",
    "an integer from 0 to 5000",
    "after a call that was the invoker's only one, its executor polls for the next request this long before it sleeps (while polling has lately shortened its waits): a request " +
      "arriving meanwhile skips the kernel's wake-up (~40-140 µs here); costs at most this much CPU per call (0: executors sleep at once)",
    intSchema(0, 5000),
  ),
  defaultTimeoutMs: envVar(
    "SYNCINVOKER_DEFAULT_TIMEOUT_MS",
    "5000",
    `an integer from 1 to ${MAX_TIMEOUT_MS}`,
    "a call's budget when the request's timeout_ms is 0: CPU + IO-backend time (BUDGET_EXCEEDED past it), and the longest a request waits in the queue",
    intSchema(1, MAX_TIMEOUT_MS),
  ),
  functionsDir: envVar("FUNCTIONS_DIR", "", "a directory path, or empty", "functions by name: <name>.py files, re-read every second (empty: inline sources only)", stringSchema()),
  shutdownGraceMs: envVar(
    "SYNCINVOKER_SHUTDOWN_GRACE_MS",
    "10000",
    "an integer from 0 to 600000",
    "on SIGTERM, how long running and queued calls may finish before the process exits",
    intSchema(0, 600_000),
  ),
  ...ioVars,
  ...executorPoolVars,
  trace: traceVar("SYNCINVOKER_TRACE"),
  ...commonVars,
};

export interface SyncInvokerConfig {
  readonly listenAddr: string;
  readonly queueMax: number;
  /** Calls running at once: EXECUTOR_COUNT x SYNCINVOKER_CALLS_PER_EXECUTOR. */
  readonly maxRunning: number;
  readonly defaultTimeoutMs: number;
  readonly functionsDir: string;
  readonly chains: ChainsConfig;
  /** LOCALTESTSERVICE_ENABLED (or CHAINS_CONFIG naming it), LOCALTESTSERVICE_HEAD and LOCALTESTSERVICE_MAX_LOG_BLOCKS. */
  readonly localTestChain: LocalTestChainSettings;
  /** RPC_MAX_ANSWER_BYTES. */
  readonly rpcMaxAnswerBytes: number;
  /** Always read-only: a write op is refused before it reaches a backend. */
  readonly io: IoConfig;
  readonly localTestFaults: Faults;
  readonly localTestFaultsFile: string;
  readonly shutdownGraceMs: number;
  readonly pool: ExecutorPoolConfig;
  readonly logLevel: EnvValues<typeof syncInvokerVars>["logLevel"];
  readonly prometheusListenAddr: string;
  readonly prometheusPath: string;
  /** Empty: no trace (SYNCINVOKER_TRACE). */
  readonly trace: string;
  /** BLOCKX_TLS_* / BLOCKX_INSECURE, compiled. */
  readonly tls: TlsSetting;
}

/** loadSyncInvokerConfig reads every variable (flags win) into frozen, defaulted values. */
export function loadSyncInvokerConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[] = []): SyncInvokerConfig {
  const v = loadEnvConfig(syncInvokerVars, env, argv);
  const { io, ...chainsAndFaults } = ioSettingsFrom(v);
  const tls = compileTlsSetting(v);
  return Object.freeze({
    tls,
    listenAddr: v.listenAddr,
    queueMax: v.queueMax,
    maxRunning: v.executorCount * v.callsPerExecutor,
    defaultTimeoutMs: v.defaultTimeoutMs,
    functionsDir: v.functionsDir.trim(),
    ...chainsAndFaults,
    io: Object.freeze({ ...io, readOnly: true }),
    shutdownGraceMs: v.shutdownGraceMs,
    // Admission gives each executor SYNCINVOKER_CALLS_PER_EXECUTOR calls so that a call's latency does not
    // depend on others': the admitted calls must reach every executor, not one per CPU (EXECUTOR_SPREAD=0).
    pool: Object.freeze({ ...executorPoolConfigFrom(v), spread: v.spread > 0 ? v.spread : v.executorCount, hotSpinUs: v.hotSpinUs }),
    logLevel: v.logLevel,
    prometheusListenAddr: v.prometheusListenAddr,
    prometheusPath: v.prometheusPath,
    trace: v.trace,
  });
}
