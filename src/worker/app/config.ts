import { traceVar } from "../../common/trace/trace-file";
import { tableStoreProblems, tableStoreVars, type TableStoreConfig } from "../../outputs/stores/table-store-config";
import type { ChainsConfig } from "../../common/config/chains-config";
import type { LocalTestChainSettings } from "../../runtime/chains/localtestservice/local-test-chain";
import { clockVars } from "../../common/clock/clock-vars";
import { compileTlsInto, type TlsSetting } from "../../common/tls/tls-setting";
import { compileEtcdAccessInto, type EtcdAccess } from "../../common/etcd/etcd-access";
import { etcdAccessVars } from "../../common/etcd/etcd-vars";
import { commonVars } from "../../common/config/common-vars";
import { ConfigError, enumSchema, envVar, fractionSchema, intSchema, listenAddrSchema, listSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";
import { parseRegistryPrefix } from "../../common/registry/registry-prefix";
import { executorPoolConfigFrom, executorPoolVars, type ExecutorPoolConfig } from "../../runtime/executor/executor-pool-config";
import type { Faults } from "../../runtime/io/fault-injection";
import { ioSettingsFrom, ioVars, type IoSettings } from "../../runtime/io/io-config";
import type { IoConfig } from "../../runtime/io/io-subsystem";
import type { HeartbeatPublishMode, RedLines } from "../core/heartbeat-schedule";
import { DEFAULT_TASK_LOG_CAPS, type TaskLogCaps } from "../core/task-log-book";
import type { WorkerProfile } from "../core/profile";
import type { DispatcherConfig } from "../core/dispatcher-core";

/** Calls in flight per executor, across tasks (the dispatcher's global window is the pool's size times this). */
const CALLS_PER_EXECUTOR = 256;
/** A retryable call's backoff: 100 ms, doubling up to 5 s. */
const CALL_RETRY_BACKOFF_BASE_MS = 100;
const CALL_RETRY_BACKOFF_MAX_MS = 5_000;

const MAX_MS = 24 * 3600 * 1000;
const MS_RULE = "an integer from 1 to 86400000 (24 h)";

/** workerVars lists every variable a Worker reads (executor pool variables included). */
export function workerVars(profile: WorkerProfile) {
  return {
    listenAddr: envVar("WORKER_LISTEN", ":9090", "host:port or :port", "gRPC listen address of worker.v1.WorkerService", listenAddrSchema()),
    advertiseAddr: envVar(
      "WORKER_ADVERTISE_ADDR",
      "",
      "host:port, or empty",
      "the address clients and Coordinators reach this Worker at (its etcd key); empty: the bound address, with the host name for 0.0.0.0",
      stringSchema().refine((s) => s === "" || /^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(s)),
    ),
    etcdEndpoints: envVar("ETCD_ENDPOINTS", "localhost:2379", "comma-separated host:port list", "etcd endpoints", listSchema()),
    ...etcdAccessVars,
    registryPrefix: envVar(
      "WORKER_REGISTRY_PREFIX",
      profile.registryPrefix,
      `a registry prefix of ${profile.deployment} workers`,
      "where the heartbeat is published (key = prefix + advertised address)",
      stringSchema(),
    ),
    taskSlots: envVar("TASK_SLOTS", "50", "an integer from 1 to 100000", "tasks this Worker runs at once", intSchema(1, 100_000)),
    heartbeatIntervalMs: envVar("HEARTBEAT_INTERVAL_MS", "200", MS_RULE, "heartbeat period (2000 advised in production)", intSchema(1, MAX_MS)),
    heartbeatPublish: envVar(
      "HEARTBEAT_PUBLISH",
      "on-change",
      "on-change or every-interval",
      "on-change: put the heartbeat only when free capacity or a red-line side changed, or to refresh it (HEARTBEAT_REFRESH_MS); every-interval: put every sample, as Workers did before on-change existed",
      enumSchema(["on-change", "every-interval"] as const),
    ),
    heartbeatRefreshMs: envVar(
      "HEARTBEAT_REFRESH_MS",
      "5000",
      `${MS_RULE}, >= HEARTBEAT_INTERVAL_MS`,
      "on-change: an unchanged heartbeat is put again once this old; keep it well below the Coordinators' COORDINATOR_HEARTBEAT_TIMEOUT_MS",
      intSchema(1, MAX_MS),
    ),
    heartbeatCpuRedLine: envVar("HEARTBEAT_CPU_RED_LINE", "0.90", "a number in (0, 1]", "on-change: crossing it is a change (set it to the Coordinators' COORDINATOR_CPU_RED_LINE)", fractionSchema(0, 1)),
    heartbeatMemoryRedLine: envVar(
      "HEARTBEAT_MEMORY_RED_LINE",
      "0.90",
      "a number in (0, 1]",
      "on-change: crossing it is a change (set it to the Coordinators' COORDINATOR_MEMORY_RED_LINE)",
      fractionSchema(0, 1),
    ),
    heartbeatErrorRateRedLine: envVar(
      "HEARTBEAT_ERROR_RATE_RED_LINE",
      "0.50",
      "a number in (0, 1]",
      "on-change: crossing it is a change (set it to the Coordinators' COORDINATOR_ERROR_RATE_RED_LINE)",
      fractionSchema(0, 1),
    ),
    leaseTtlSeconds: envVar("HEARTBEAT_LEASE_TTL_S", "10", "an integer from 2 to 3600", "TTL of the heartbeat lease", intSchema(2, 3600)),
    maxSlotTtlMs: envVar(
      "WORKER_MAX_SLOT_TTL_MS",
      "10000",
      "an integer from 1 to 3600000",
      "longest an ALLOCATED slot lives from its allocation: ttl_ms is cut to it and repeated RequestTaskSlot never extend past it",
      intSchema(1, 3_600_000),
    ),
    resultRetentionMs: envVar("RESULT_RETENTION_MS", "300000", MS_RULE, "how long a finished task's result stays queryable", intSchema(1, MAX_MS)),
    maxWatchStreams: envVar(
      "WORKER_MAX_WATCH_STREAMS",
      "4096",
      "an integer from 1 to 1000000",
      "WatchTasks streams open at once (each holds memory while its client keeps it); more are RESOURCE_EXHAUSTED, and the SDKs poll instead",
      intSchema(1, 1_000_000),
    ),
    retainedTasksMax: envVar(
      "WORKER_RETAINED_TASKS_MAX",
      "10000",
      "an integer from 1 to 10000000",
      "ended tasks kept for RESULT_RETENTION_MS at most; beyond, the oldest ended are forgotten first (blockx_worker_retained_evicted_total)",
      intSchema(1, 10_000_000),
    ),
    retainedBytesMax: envVar(
      "WORKER_RETAINED_BYTES_MAX",
      "536870912",
      "an integer from 1048576 to 1099511627776, at least TASK_MAX_RESULT_BYTES + TASK_LOG_MAX_BYTES",
      "bytes the ended tasks keep together (results' JSON, log lines, tracebacks) at most; beyond, the oldest ended are forgotten first (blockx_worker_retained_evicted_total)",
      intSchema(1 << 20, 2 ** 40),
    ),
    drainTimeoutMs: envVar("WORKER_DRAIN_TIMEOUT_MS", "30000", "an integer from 0 to 86400000", "on SIGTERM, how long running tasks may finish", intSchema(0, MAX_MS)),
    taskMaxInflightCalls: envVar("TASK_MAX_INFLIGHT_CALLS", "1024", "an integer from 1 to 1000000", "calls of one task in flight at once", intSchema(1, 1_000_000)),
    functionsDir: envVar("FUNCTIONS_DIR", "", "a directory path, or empty", "functions by name: <name>.py files, re-read every second (empty: inline sources only)", stringSchema()),
    ...tableStoreVars,
    localTestBlockStore: envVar(
      "LOCALTESTSERVICE_BLOCK_STORE",
      "",
      "a file path, or empty",
      "block store file of the local test chain (`blockx localchain render`): its blocks are served as stored text instead of generated",
      stringSchema(),
    ),
    blockHandoff: envVar(
      "EXECUTOR_BLOCK_HANDOFF",
      "mapped",
      "mapped or bytes",
      "how final blocks of LOCALTESTSERVICE_BLOCK_STORE reach executors: mapped (each executor inherits the store's open file, " +
        "read-only, and reads a block itself by the offset and length the Worker answers; the Worker never reads it) or bytes " +
        "(the Worker reads the block and sends it in the frame). Blocks that are not final always go as bytes",
      enumSchema(["mapped", "bytes"] as const),
    ),
    taskMaxInputs: envVar(
      "TASK_MAX_INPUTS",
      "100000",
      "an integer from 1 to 10000000",
      "inputs one task may carry (an inputs call config; block ranges are never materialised): more is INVALID_ARGUMENT at submit",
      intSchema(1, 10_000_000),
    ),
    taskMaxResultBytes: envVar(
      "TASK_MAX_RESULT_BYTES",
      String(64 * 1024 * 1024),
      "an integer from 1024 to 4294967296",
      "bytes of JSON return values one task keeps for GetTaskResult (return_value output): a task over it fails with RESULT_TOO_LARGE, other tasks go on",
      intSchema(1024, 2 ** 32),
    ),
    taskIoPrefetch: envVar(
      "TASK_IO_PREFETCH",
      "true",
      "true or false",
      "fetch the IO request a task's calls ask first before each call starts, once two calls showed how it follows from their input " +
        "(read ops only; stops for a task whose calls stop asking it): the call gets the answer in its ExecuteCall, without a round trip",
      enumSchema(["true", "false"] as const),
    ),
    callMaxAttempts: envVar("CALL_MAX_ATTEMPTS", "4", "an integer from 1 to 100", "tries per call for retryable failures (a user's error is never retried)", intSchema(1, 100)),
    taskLogMaxBytes: envVar("TASK_LOG_MAX_BYTES", "1048576", "an integer from 1024 to 1073741824", "log lines kept per task (`blockx logs`): beyond this the oldest go first, counted", intSchema(1024, 1 << 30)),
    taskLogMaxLineBytes: envVar("TASK_LOG_MAX_LINE_BYTES", "4096", "an integer from 64 to 1048576", "a longer log line is cut, saying how much", intSchema(64, 1 << 20)),
    taskLogMaxCallBytes: envVar("TASK_LOG_MAX_CALL_BYTES", "65536", "an integer from 64 to 1073741824", "log lines kept per call; the rest become one line saying how many", intSchema(64, 1 << 30)),
    ...ioVars,
    ...executorPoolVars,
    ...clockVars,
    trace: traceVar("WORKER_TRACE"),
    ...commonVars,
  };
}

export interface WorkerRuntimeConfig extends TableStoreConfig {
  readonly profile: WorkerProfile;
  readonly listenAddr: string;
  readonly advertiseAddr: string;
  readonly etcdEndpoints: readonly string[];
  /** ETCD_TLS_* / ETCD_USERNAME / ETCD_PASSWORD[_FILE], compiled. */
  readonly etcd: EtcdAccess;
  readonly registryPrefix: string;
  readonly taskSlots: number;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatPublish: HeartbeatPublishMode;
  readonly heartbeatRefreshMs: number;
  readonly heartbeatRedLines: RedLines;
  readonly leaseTtlSeconds: number;
  readonly resultRetentionMs: number;
  readonly retainedTasksMax: number;
  readonly maxWatchStreams: number;
  readonly retainedBytesMax: number;
  readonly maxSlotTtlMs: number;
  readonly drainTimeoutMs: number;
  /** The call dispatcher's windows and retries, compiled once from TASK_MAX_INFLIGHT_CALLS, CALL_MAX_ATTEMPTS and the pool's size. */
  readonly dispatcher: DispatcherConfig;
  readonly taskMaxInputs: number;
  readonly taskMaxResultBytes: number;
  /** TASK_IO_PREFETCH: fetch a call's predicted first IO request before it starts. */
  readonly taskIoPrefetch: boolean;
  readonly taskLogCaps: TaskLogCaps;
  readonly functionsDir: string;
  readonly chains: ChainsConfig;
  /** LOCALTESTSERVICE_ENABLED (or CHAINS_CONFIG naming it), LOCALTESTSERVICE_HEAD and LOCALTESTSERVICE_MAX_LOG_BLOCKS. */
  readonly localTestChain: LocalTestChainSettings;
  /** RPC_MAX_ANSWER_BYTES. */
  readonly rpcMaxAnswerBytes: number;
  /** Empty: every block is generated on demand. */
  readonly localTestBlockStore: string;
  /** EXECUTOR_BLOCK_HANDOFF: final blocks of the store by offset into the executors' inherited file, or as bytes. */
  readonly blockHandoff: "mapped" | "bytes";
  readonly io: IoConfig;
  readonly localTestFaults: Faults;
  readonly localTestFaultsFile: string;
  readonly pool: ExecutorPoolConfig;
  /** CLOCK_MAX_OFFSET_MS and CLOCK_TEST_OFFSET_MS. */
  readonly clock: { readonly maxOffsetMs: number; readonly testOffsetMs: number };
  readonly logLevel: EnvValues<ReturnType<typeof workerVars>>["logLevel"];
  readonly prometheusListenAddr: string;
  readonly prometheusPath: string;
  /** Empty: no trace (WORKER_TRACE). */
  readonly trace: string;
  /** BLOCKX_TLS_* / BLOCKX_INSECURE, compiled. */
  readonly tls: TlsSetting;
}

/** loadWorkerRuntimeConfigFromEnv reads every variable (flags win) and checks cross-variable rules. */
export function loadWorkerRuntimeConfigFromEnv(
  profile: WorkerProfile,
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[] = [],
): WorkerRuntimeConfig {
  const v = loadEnvConfig(workerVars(profile), env, argv);
  const problems: string[] = [];
  try {
    const p = parseRegistryPrefix(v.registryPrefix);
    if (p.kind !== profile.deployment) {
      problems.push(`WORKER_REGISTRY_PREFIX: prefix ${JSON.stringify(v.registryPrefix)} names ${p.kind} workers, but this is a ${profile.deployment} worker`);
    }
  } catch (e) {
    problems.push(`WORKER_REGISTRY_PREFIX: ${(e as Error).message}`);
  }
  problems.push(...tableStoreProblems(v));
  // One task's result and log must fit the aggregate, or the task that just ended would be over it alone.
  if (v.retainedBytesMax < v.taskMaxResultBytes + v.taskLogMaxBytes) {
    problems.push(`WORKER_RETAINED_BYTES_MAX: expected at least TASK_MAX_RESULT_BYTES + TASK_LOG_MAX_BYTES (${v.taskMaxResultBytes + v.taskLogMaxBytes}), got ${v.retainedBytesMax}`);
  }
  if (v.heartbeatRefreshMs < v.heartbeatIntervalMs) {
    problems.push(`HEARTBEAT_REFRESH_MS: expected >= HEARTBEAT_INTERVAL_MS (${v.heartbeatIntervalMs}), got "${v.heartbeatRefreshMs}"`);
  }
  let io: IoSettings | null = null;
  try {
    io = ioSettingsFrom(v);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }
  if (io !== null && v.localTestBlockStore.trim() !== "" && !io.localTestChain.enabled) {
    problems.push(`LOCALTESTSERVICE_BLOCK_STORE: the store serves the local test chain, which is off: set LOCALTESTSERVICE_ENABLED=true too`);
  }
  const tls = compileTlsInto(v, problems);
  const etcd = compileEtcdAccessInto(v, v.etcdEndpoints, problems);
  if (problems.length > 0 || io === null || tls === null || etcd === null) throw new ConfigError(problems);
  return Object.freeze({
    tls,
    etcd,
    profile,
    listenAddr: v.listenAddr,
    advertiseAddr: v.advertiseAddr,
    etcdEndpoints: v.etcdEndpoints,
    registryPrefix: v.registryPrefix,
    taskSlots: v.taskSlots,
    heartbeatIntervalMs: v.heartbeatIntervalMs,
    heartbeatPublish: v.heartbeatPublish === "on-change" ? "ON_CHANGE" : "EVERY_INTERVAL",
    heartbeatRefreshMs: v.heartbeatRefreshMs,
    heartbeatRedLines: Object.freeze({ cpu: v.heartbeatCpuRedLine, memory: v.heartbeatMemoryRedLine, errorRate: v.heartbeatErrorRateRedLine }),
    leaseTtlSeconds: v.leaseTtlSeconds,
    resultRetentionMs: v.resultRetentionMs,
    retainedTasksMax: v.retainedTasksMax,
    maxWatchStreams: v.maxWatchStreams,
    retainedBytesMax: v.retainedBytesMax,
    maxSlotTtlMs: v.maxSlotTtlMs,
    drainTimeoutMs: v.drainTimeoutMs,
    dispatcher: Object.freeze({
      taskMaxInflightCalls: v.taskMaxInflightCalls,
      // All tasks together: what the executor pool can usefully hold.
      maxInflightCalls: v.executorCount * CALLS_PER_EXECUTOR,
      maxAttempts: v.callMaxAttempts,
      retryBackoffBaseMs: CALL_RETRY_BACKOFF_BASE_MS,
      retryBackoffMaxMs: CALL_RETRY_BACKOFF_MAX_MS,
    }),
    taskMaxInputs: v.taskMaxInputs,
    taskMaxResultBytes: v.taskMaxResultBytes,
    taskIoPrefetch: v.taskIoPrefetch === "true",
    taskLogCaps: { ...DEFAULT_TASK_LOG_CAPS, bytesPerTask: v.taskLogMaxBytes, bytesPerLine: v.taskLogMaxLineBytes, bytesPerCall: v.taskLogMaxCallBytes },
    functionsDir: v.functionsDir.trim(),
    tableStoreUrl: v.tableStoreUrl.trim(),
    tableStorePath: v.tableStorePath.trim(),
    tableStorePoolSize: v.tableStorePoolSize,
    tableStoreStatementTimeoutMs: v.tableStoreStatementTimeoutMs,
    tableStoreIdleInTransactionTimeoutMs: v.tableStoreIdleInTransactionTimeoutMs,
    tableStoreConnectTimeoutMs: v.tableStoreConnectTimeoutMs,
    tableStoreReconnectMinMs: v.tableStoreReconnectMinMs,
    tableStoreReconnectMaxMs: v.tableStoreReconnectMaxMs,
    tableStoreDeadlineMarginMs: v.tableStoreDeadlineMarginMs,
    tableStoreTls: v.tableStoreTls,
    tableStoreTlsCa: v.tableStoreTlsCa,
    localTestBlockStore: v.localTestBlockStore,
    blockHandoff: v.blockHandoff,
    ...io,
    pool: executorPoolConfigFrom(v),
    clock: Object.freeze({ maxOffsetMs: v.clockMaxOffsetMs, testOffsetMs: v.clockTestOffsetMs }),
    logLevel: v.logLevel,
    prometheusListenAddr: v.prometheusListenAddr,
    prometheusPath: v.prometheusPath,
    trace: v.trace,
  });
}
