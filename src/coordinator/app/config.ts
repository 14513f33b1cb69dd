import { compileTlsInto, type TlsSetting } from "../../common/tls/tls-setting";
import { compileEtcdAccessInto, type EtcdAccess } from "../../common/etcd/etcd-access";
import { etcdAccessVars } from "../../common/etcd/etcd-vars";
import { commonVars } from "../../common/config/common-vars";
import {
  ConfigError,
  envVar,
  fractionSchema,
  intSchema,
  listenAddrSchema,
  listSchema,
  loadEnvConfig,
  stringSchema,
  type EnvValues,
} from "../../common/config/env-config";
import type { EtcdWatcherConfig } from "../adapters/etcd-worker-watcher";
import type { HandlerConfig } from "../adapters/coordinator-server";
import { validateCoordinatorCoreConfig, type CoordinatorCoreConfig } from "../core/config";
import { validateRegistryPrefixes, type Profile } from "./profile";
import { traceVar } from "../../common/trace/trace-file";

/** Durations are capped at 24 h: longer ones are mistakes (and timers overflow past 2^31 ms). */
const MAX_MS = 24 * 3600 * 1000;
const MS_RULE = "an integer from 1 to 86400000 (24 h)";

/** coordinatorVars lists every variable a Coordinator reads, with the seed's defaults. */
export function coordinatorVars(profile: Profile) {
  return {
    listenAddr: envVar("COORDINATOR_LISTEN", ":8080", "host:port or :port", "gRPC listen address", listenAddrSchema()),
    etcdEndpoints: envVar("ETCD_ENDPOINTS", "localhost:2379", "comma-separated host:port list", "etcd endpoints", listSchema()),
    ...etcdAccessVars,
    registryPrefixes: envVar(
      "COORDINATOR_REGISTRY_PREFIXES",
      profile.workerRegistryPrefixes.join(","),
      `comma-separated registry prefixes of ${profile.deployment} workers`,
      "exact prefixes to list+watch; replaces the profile's default list",
      listSchema(),
    ),
    workerRpcTimeoutMs: envVar("COORDINATOR_WORKER_RPC_TIMEOUT_MS", "3000", MS_RULE, "deadline of one RequestTaskSlot", intSchema(1, MAX_MS)),
    etcdDialTimeoutMs: envVar("COORDINATOR_ETCD_DIAL_TIMEOUT_MS", "5000", MS_RULE, "etcd connection timeout", intSchema(1, MAX_MS)),
    etcdWatchRetryDelayMs: envVar(
      "COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS",
      "1000",
      MS_RULE,
      "pause before relisting after a failed list+watch",
      intSchema(1, MAX_MS),
    ),
    heartbeatTimeoutMs: envVar(
      "COORDINATOR_HEARTBEAT_TIMEOUT_MS",
      "10000",
      MS_RULE,
      "a worker whose heartbeat is older is filtered out",
      intSchema(1, MAX_MS),
    ),
    watchGracePeriodMs: envVar(
      "COORDINATOR_WATCH_GRACE_PERIOD_MS",
      "10000",
      "an integer from 1 to 86400000 and <= COORDINATOR_HEARTBEAT_TIMEOUT_MS",
      "how long routing continues on the cached view while the watch is down",
      intSchema(1, MAX_MS),
    ),
    slotTtlMs: envVar("COORDINATOR_SLOT_TTL_MS", "5000", MS_RULE, "ttl_ms passed to RequestTaskSlot", intSchema(1, MAX_MS)),
    maxCandidates: envVar("COORDINATOR_MAX_CANDIDATES", "3", "an integer >= 1", "candidates tried per request, one after another", intSchema(1)),
    maxTimeoutRetries: envVar(
      "COORDINATOR_MAX_TIMEOUT_RETRIES",
      "1",
      "an integer >= 0",
      "retries on the same worker after an uncertain result",
      intSchema(0),
    ),
    circuitBreakerThreshold: envVar(
      "COORDINATOR_CIRCUIT_BREAKER_THRESHOLD",
      "3",
      "an integer >= 1",
      "consecutive failures that open a worker's breaker",
      intSchema(1),
    ),
    circuitBreakerCooldownMs: envVar(
      "COORDINATOR_CIRCUIT_BREAKER_COOLDOWN_MS",
      "10000",
      MS_RULE,
      "how long an open breaker keeps the worker out",
      intSchema(1, MAX_MS),
    ),
    cpuRedLine: envVar("COORDINATOR_CPU_RED_LINE", "0.90", "a number in (0, 1]", "workers above this CPU fraction are filtered out", fractionSchema(0, 1)),
    memoryRedLine: envVar(
      "COORDINATOR_MEMORY_RED_LINE",
      "0.90",
      "a number in (0, 1]",
      "workers above this memory fraction are filtered out",
      fractionSchema(0, 1),
    ),
    errorRateRedLine: envVar(
      "COORDINATOR_ERROR_RATE_RED_LINE",
      "0.50",
      "a number in (0, 1]",
      "workers above this error rate are filtered out",
      fractionSchema(0, 1),
    ),
    shutdownGraceMs: envVar(
      "COORDINATOR_SHUTDOWN_GRACE_MS",
      "5000",
      "an integer from 0 to 86400000 (24 h)",
      "on SIGTERM, how long in-flight reservations may finish",
      intSchema(0, MAX_MS),
    ),
    cpuProfile: envVar(
      "COORDINATOR_CPU_PROFILE",
      "",
      "a file path, or empty",
      "write a CPU profile (Chrome .cpuprofile) of the whole process lifetime to this file",
      stringSchema(),
    ),
    trace: traceVar("COORDINATOR_TRACE"),
    ...commonVars,
  };
}

export type CoordinatorVars = ReturnType<typeof coordinatorVars>;

/** CoordinatorRuntimeConfig is the process's frozen, fully defaulted configuration. */
export interface CoordinatorRuntimeConfig {
  readonly profile: Profile;
  readonly listenAddr: string;
  readonly core: CoordinatorCoreConfig;
  readonly handler: HandlerConfig;
  readonly watcher: EtcdWatcherConfig;
  /** ETCD_TLS_* / ETCD_USERNAME / ETCD_PASSWORD[_FILE], compiled. */
  readonly etcd: EtcdAccess;
  readonly shutdownGraceMs: number;
  /** Empty: no profile. */
  readonly cpuProfile: string;
  /** Empty: no trace (COORDINATOR_TRACE). */
  readonly trace: string;
  readonly logLevel: EnvValues<CoordinatorVars>["logLevel"];
  readonly prometheusListenAddr: string;
  readonly prometheusPath: string;
  /** BLOCKX_TLS_* / BLOCKX_INSECURE, compiled. */
  readonly tls: TlsSetting;
}

/**
 * loadCoordinatorRuntimeConfigFromEnv reads every COORDINATOR_* variable (flags override the
 * environment), then checks the rules that span variables. Throws ConfigError listing every
 * problem, each naming its variable.
 */
export function loadCoordinatorRuntimeConfigFromEnv(
  profile: Profile,
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[] = [],
): CoordinatorRuntimeConfig {
  const v = loadEnvConfig(coordinatorVars(profile), env, argv);
  const core: CoordinatorCoreConfig = Object.freeze({
    heartbeatTimeoutMs: v.heartbeatTimeoutMs,
    watchGracePeriodMs: v.watchGracePeriodMs,
    slotTtlMs: v.slotTtlMs,
    maxCandidates: v.maxCandidates,
    circuitBreakerThreshold: v.circuitBreakerThreshold,
    circuitBreakerCooldownMs: v.circuitBreakerCooldownMs,
    cpuRedLine: v.cpuRedLine,
    memoryRedLine: v.memoryRedLine,
    errorRateRedLine: v.errorRateRedLine,
  });
  const problems: string[] = [];
  if (core.watchGracePeriodMs > core.heartbeatTimeoutMs) {
    problems.push(
      `COORDINATOR_WATCH_GRACE_PERIOD_MS: expected <= COORDINATOR_HEARTBEAT_TIMEOUT_MS (${core.heartbeatTimeoutMs}), got "${core.watchGracePeriodMs}"`,
    );
  }
  // Anything else the core rejects would be a bug in the schemas above; report it all the same.
  for (const p of validateCoordinatorCoreConfig(core)) if (!p.startsWith("watchGracePeriodMs")) problems.push(p);
  for (const p of validateRegistryPrefixes(profile, v.registryPrefixes)) problems.push(`COORDINATOR_REGISTRY_PREFIXES: ${p}`);
  const tls = compileTlsInto(v, problems);
  const etcd = compileEtcdAccessInto(v, v.etcdEndpoints, problems);
  if (problems.length > 0 || tls === null || etcd === null) throw new ConfigError(problems);
  return Object.freeze({
    tls,
    etcd,
    profile,
    listenAddr: v.listenAddr,
    core,
    handler: Object.freeze({ maxTimeoutRetries: v.maxTimeoutRetries, workerRpcTimeoutMs: v.workerRpcTimeoutMs }),
    watcher: Object.freeze({
      endpoints: v.etcdEndpoints,
      keyPrefixes: v.registryPrefixes,
      dialTimeoutMs: v.etcdDialTimeoutMs,
      retryDelayMs: v.etcdWatchRetryDelayMs,
    }),
    shutdownGraceMs: v.shutdownGraceMs,
    cpuProfile: v.cpuProfile,
    trace: v.trace,
    logLevel: v.logLevel,
    prometheusListenAddr: v.prometheusListenAddr,
    prometheusPath: v.prometheusPath,
  });
}
