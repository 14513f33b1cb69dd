import { ConfigError, envVar, enumSchema, fractionSchema, intSchema, stringSchema, type EnvValues } from "../../common/config/env-config";
import { loadChainsConfig, type ChainsConfig } from "../../common/config/chains-config";
import { DEFAULT_MAX_LOG_BLOCKS, MAX_LOG_BLOCKS_LIMIT, type LocalTestChainSettings } from "../chains/localtestservice/local-test-chain";
import { DEFAULT_RPC_MAX_ANSWER_BYTES } from "../chains/rpc/json-rpc-client";
import type { Faults } from "./fault-injection";
import type { IoConfig } from "./io-subsystem";

/** ioVars: the IO subsystem's variables, the chains its backends serve, and the local test chain's fault knobs. */
export const ioVars = {
  chainsConfig: envVar(
    "CHAINS_CONFIG",
    "",
    "inline JSON starting with {, a JSON file path, or empty",
    "chains and their sources (rpc endpoints or localtestservice), see README; empty: every chain is the local test chain when LOCALTESTSERVICE_ENABLED=true, else none",
    stringSchema(),
    // Inline JSON holds node URLs, whose credentials and keys are secrets.
    { secret: "url" },
  ),
  rpcMaxAnswerBytes: envVar(
    "RPC_MAX_ANSWER_BYTES",
    String(DEFAULT_RPC_MAX_ANSWER_BYTES),
    "an integer from 1024 to 67108864",
    "the most bytes one JSON-RPC answer of a node may have (read as a stream and stopped there): a request whose answer is longer fails with a " +
      "BackendError AnswerTooLarge naming its method (a batch over it is split and sent again)",
    intSchema(1024, 64 * 1024 * 1024),
  ),
  localTestChainEnabled: localTestChainEnabledVar("false"),
  localTestChainHead: envVar("LOCALTESTSERVICE_HEAD", "20000000", "an integer from 0 to 1000000000", "highest block of the synthetic local test chain", intSchema(0, 1_000_000_000)),
  localTestMaxLogBlocks: envVar(
    "LOCALTESTSERVICE_MAX_LOG_BLOCKS",
    String(DEFAULT_MAX_LOG_BLOCKS),
    `an integer from 1 to ${MAX_LOG_BLOCKS_LIMIT}`,
    "blocks one eth_getLogs (or blockdb.logs) of the local test chain may span; a longer range fails with InvalidParams naming this variable " +
      "(100 blocks: about 0.5 s of the generator thread and 5 MB of logs)",
    intSchema(1, MAX_LOG_BLOCKS_LIMIT),
  ),
  ioCacheMaxBytes: envVar(
    "IO_CACHE_MAX_BYTES",
    "268435456",
    "an integer from 0 to 68719476736",
    "read cache bound in bytes (final blocks only, least recently used evicted); 0 disables the cache",
    intSchema(0, 64 * 1024 ** 3),
  ),
  ioSingleflight: envVar("IO_SINGLEFLIGHT", "true", "true or false", "identical concurrent backend requests share one request and its answer", enumSchema(["true", "false"] as const)),
  ioTaskWindow: envVar("IO_TASK_WINDOW", "64", "an integer from 1 to 100000", "backend requests one task may have in flight; more wait in FIFO order", intSchema(1, 100_000)),
  ioFinalityDepth: envVar(
    "IO_FINALITY_DEPTH",
    "64",
    "an integer from 0 to 1000000",
    "blocks at or below head minus this are final (cacheable), for chains whose config names no finalityDepth and no chainId with a known default " +
      "(README: Chains and finality; 64 = Ethereum mainnet's two epochs)",
    intSchema(0, 1_000_000),
  ),
  ioHeadTtlMs: envVar("IO_HEAD_TTL_MS", "1000", "an integer from 1 to 3600000", "how long a chain head is trusted before a background refresh", intSchema(1, 3_600_000)),
  ioAdmissionInitialLimit: envVar("IO_ADMISSION_INITIAL_LIMIT", "32", "an integer from 1 to 100000", "each backend's starting concurrency limit (adaptive, Gradient2)", intSchema(1, 100_000)),
  ioAdmissionMinLimit: envVar("IO_ADMISSION_MIN_LIMIT", "2", "an integer from 1 to 100000", "the adaptive limit never falls below this", intSchema(1, 100_000)),
  ioAdmissionMaxLimit: envVar("IO_ADMISSION_MAX_LIMIT", "256", "an integer from 1 to 100000", "requests in flight to one backend never exceed this", intSchema(1, 100_000)),
  ioAdmissionQueue: envVar(
    "IO_ADMISSION_QUEUE",
    "128",
    "an integer from 0 to 100000",
    "requests that may wait for a backend's slot; beyond it they fail at once with a retryable BackendOverloaded (the call is retried)",
    intSchema(0, 100_000),
  ),
  localTestLatencyMs: envVar("LOCALTESTSERVICE_LATENCY_MS", "0", "an integer from 0 to 600000", "injected latency per localtestservice request (tests, drills)", intSchema(0, 600_000)),
  localTestErrorRate: envVar(
    "LOCALTESTSERVICE_ERROR_RATE",
    "0",
    "a number from 0 to 1",
    "share of localtestservice requests failing with a retryable BackendUnavailable (tests, drills)",
    fractionSchema(-1e-9, 1),
  ),
  localTestFaultsFile: envVar(
    "LOCALTESTSERVICE_FAULTS_FILE",
    "",
    "a file path, or empty",
    'JSON {"latencyMs": n, "errorRate": x} re-read every 200 ms, overriding the two above at run time',
    stringSchema(),
  ),
};

/**
 * localTestChainEnabledVar: LOCALTESTSERVICE_ENABLED with a role's default: off in the
 * production roles (Worker, Sync Invoker), on in `blockx exec`; `blockx dev` sets it for its
 * children.
 */
export function localTestChainEnabledVar(defaultRaw: "true" | "false") {
  return envVar(
    "LOCALTESTSERVICE_ENABLED",
    defaultRaw,
    "true or false",
    "serve the synthetic local test chain (the localtestservice backend, and every chain when CHAINS_CONFIG is empty); " +
      'a chain with "source": "localtestservice" in CHAINS_CONFIG turns it on too. Off, a function reaching it fails with BackendDisabled / UnknownChain saying so',
    enumSchema(["true", "false"] as const),
  );
}

export type IoVars = EnvValues<typeof ioVars>;

/** ioConfigFrom compiles the variables into the subsystem's frozen config and the local test chain's faults. */
export function ioConfigFrom(v: IoVars): { io: IoConfig; localTestFaults: Faults; localTestFaultsFile: string } {
  const { ioAdmissionMinLimit: min, ioAdmissionInitialLimit: initial, ioAdmissionMaxLimit: max } = v;
  if (!(min <= initial && initial <= max)) {
    throw new ConfigError([`IO_ADMISSION_*: expected IO_ADMISSION_MIN_LIMIT <= IO_ADMISSION_INITIAL_LIMIT <= IO_ADMISSION_MAX_LIMIT, got ${min}, ${initial}, ${max}`]);
  }
  return {
    io: Object.freeze({
      cacheMaxBytes: v.ioCacheMaxBytes,
      singleflight: v.ioSingleflight === "true",
      taskWindow: v.ioTaskWindow,
      finalityDepth: v.ioFinalityDepth,
      headTtlMs: v.ioHeadTtlMs,
      admission: Object.freeze({ initialLimit: initial, minLimit: min, maxLimit: max, queueSize: v.ioAdmissionQueue }),
      readOnly: false,
    }),
    localTestFaults: Object.freeze({ latencyMs: v.localTestLatencyMs, errorRate: v.localTestErrorRate }),
    localTestFaultsFile: v.localTestFaultsFile.trim(),
  };
}

/** IoSettings: everything a process needs to build its backend set and IO subsystem. */
export type IoSettings = ReturnType<typeof ioConfigFrom> & {
  readonly chains: ChainsConfig;
  readonly localTestChain: LocalTestChainSettings;
  /** RPC_MAX_ANSWER_BYTES. */
  readonly rpcMaxAnswerBytes: number;
};

/** localTestChainSettingsFrom: on when LOCALTESTSERVICE_ENABLED=true or CHAINS_CONFIG gives a chain to the local test chain. */
export function localTestChainSettingsFrom(v: Pick<IoVars, "localTestChainEnabled" | "localTestChainHead" | "localTestMaxLogBlocks">, chains: ChainsConfig): LocalTestChainSettings {
  const named = Object.values(chains.chains ?? {}).some((c) => c.source === "localtestservice");
  return Object.freeze({ enabled: v.localTestChainEnabled === "true" || named, head: v.localTestChainHead, maxLogBlocks: v.localTestMaxLogBlocks });
}

/** ioSettingsFrom reads CHAINS_CONFIG and compiles the IO variables; one ConfigError lists the problems of both. */
export function ioSettingsFrom(v: IoVars): IoSettings {
  const problems: string[] = [];
  let chains: ChainsConfig | null = null;
  try {
    chains = loadChainsConfig(v.chainsConfig);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }
  let io: ReturnType<typeof ioConfigFrom> | null = null;
  try {
    io = ioConfigFrom(v);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
  }
  if (problems.length > 0 || chains === null || io === null) throw new ConfigError(problems);
  return { chains, ...io, localTestChain: localTestChainSettingsFrom(v, chains), rpcMaxAnswerBytes: v.rpcMaxAnswerBytes };
}
