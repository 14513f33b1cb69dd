import { envVar, enumSchema, intSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";

const MAX_MS = 24 * 3600 * 1000;

/**
 * executorPoolVars: the executor pool's variables, shared by every role that runs calls
 * (`exec` today; the Worker and the Sync Invoker later include them in their --help).
 */
export const executorPoolVars = {
  executorCount: envVar("EXECUTOR_COUNT", "8", "an integer from 1 to 256", "Python executor processes in the pool", intSchema(1, 256)),
  spread: envVar(
    "EXECUTOR_SPREAD",
    "0",
    "an integer from 0 to 256",
    "executors one owner's calls are spread over while they keep up (0: one per CPU this process may use; " +
      "in the Sync Invoker every executor); the others take calls when one stalls (no call ended for 100 ms) and serve other owners",
    intSchema(0, 256),
  ),
  hotWaitUs: envVar(
    "EXECUTOR_HOT_WAIT_US",
    "250",
    "an integer from 0 to 100000",
    "µs the pool keeps polling for the answer of a lone call (the only one in the pool: a serial caller's) instead of sleeping until it " +
      "comes: the answer then skips a kernel wake-up (30-70 µs on a VM). Only while lone calls answer within it; 0: never",
    intSchema(0, 100_000),
  ),
  python: envVar(
    "EXECUTOR_PYTHON",
    "python3",
    "a command or an absolute path",
    "Python 3.10+ interpreter; resolved once to its real path (pyenv shims cost 500 ms a spawn)",
    stringSchema().refine((s) => s.trim().length > 0),
  ),
  callBudgetMs: envVar(
    "EXECUTOR_CALL_BUDGET_MS",
    "5000",
    "an integer from 1 to 86400000",
    "per-call budget: CPU time plus IO-backend time, queueing excluded (BUDGET_EXCEEDED past it)",
    intSchema(1, MAX_MS),
  ),
  wallClockCeilingMs: envVar(
    "EXECUTOR_WALL_CLOCK_CEILING_MS",
    "30000",
    "an integer from 1 to 86400000",
    "a call running (not suspended) this long without finishing is stopped by killing its executor " +
      "(WALL_CLOCK_EXCEEDED; catches sleeps and C calls that use no CPU). The executor's other calls fail as retryable",
    intSchema(1, MAX_MS),
  ),
  memoryLimitMb: envVar(
    "EXECUTOR_MEMORY_LIMIT_MB",
    "2048",
    "an integer from 16 to 1048576",
    "resident memory per executor; past it that executor is killed and its calls fail with OOM_KILLED (retryable)",
    intSchema(16, 1 << 20),
  ),
  memoryCgroup: envVar(
    "EXECUTOR_MEMORY_CGROUP",
    "auto",
    "auto, off or required",
    "enforce EXECUTOR_MEMORY_LIMIT_MB in the kernel with a memory cgroup per executor (cgroup v2 delegated to the Worker, as the units' Delegate=yes gives, or a writable v1 memory hierarchy); " +
      "auto: where one can be had, else the pool's 50 ms memory sampling alone (said once at start); required: refuse to start without one",
    enumSchema(["auto", "off", "required"] as const),
  ),
  pingIntervalMs: envVar("EXECUTOR_PING_INTERVAL_MS", "1000", "an integer from 10 to 86400000", "liveness ping period", intSchema(10, MAX_MS)),
  pingTimeoutMs: envVar(
    "EXECUTOR_PING_TIMEOUT_MS",
    "10000",
    "an integer from 10 to 86400000",
    "an executor that has not answered a ping for this long is hung: killed and replaced (EXECUTOR_HUNG)",
    intSchema(10, MAX_MS),
  ),
  user: envVar(
    "EXECUTOR_USER",
    "nobody",
    "a user name, or empty",
    "when the process runs as root, executors run as this unprivileged user (needs setpriv); empty keeps root. " +
      "Ignored, with a warning, when not root",
    stringSchema(),
  ),
  networkIsolation: envVar(
    "EXECUTOR_NETWORK_ISOLATION",
    "on",
    "on or off",
    "on: executors start in their own network namespace when root (unshare -n; Unix sockets still work), " +
      "else a warning; user code is always denied sockets by an audit hook",
    enumSchema(["on", "off"] as const),
  ),
  sandbox: envVar(
    "EXECUTOR_SANDBOX",
    "on",
    "on or off",
    "on: every executor runs in a bubblewrap sandbox (own user, PID, network, IPC and mount namespaces; sees only " +
      "the Python runtime, its code, its socket and a scratch folder wiped after use; seccomp denies non-Unix sockets); " +
      "a role that runs user code refuses to start where bwrap or user namespaces are missing. off (loudly warned): " +
      "user code can then read what EXECUTOR_USER can read (/etc/blockx, the table store, other executors' folders), " +
      "see other processes and, past the audit hook, start processes and open connections",
    enumSchema(["on", "off"] as const),
  ),
  bwrap: envVar("EXECUTOR_BWRAP", "bwrap", "a command or an absolute path", "bubblewrap, for EXECUTOR_SANDBOX=on (Debian: apt-get install bubblewrap)", stringSchema().refine((s) => s.trim().length > 0)),
  nprocLimit: envVar(
    "EXECUTOR_NPROC_LIMIT",
    "4096",
    "an integer from 64 to 1048576",
    "RLIMIT_NPROC of executors (threads count): contains a fork bomb; user code is also denied fork/exec",
    intSchema(64, 1 << 20),
  ),
  maxSourceBytes: envVar(
    "EXECUTOR_MAX_SOURCE_BYTES",
    String(32 * 1024 * 1024),
    "an integer from 1024 to 62914560 (60 MiB)",
    "largest function source (UTF-8 bytes) a task, a request or a sub-call may carry (INVALID_ARGUMENT at submit, INPUT_REJECTED for a " +
      "sub-call); each executor is sent a source once, then its digest. 32 MiB leaves the first call's frame (64 MiB) room for its input",
    intSchema(1024, 60 * 1024 * 1024),
  ),
  ownerWithoutIdentity: envVar(
    "EXECUTOR_OWNER_WITHOUT_IDENTITY",
    "task",
    "task or shared",
    "whose calls may share an executor when the caller has no authenticated identity (BLOCKX_INSECURE): task: each task (Worker) or request " +
      "(Sync Invoker) is its own owner, so an executor is recycled, a process start of about 100-200 ms, between two of them; shared: they " +
      "are all one owner and reuse warm executors: only where everyone who can reach the role is trusted",
    enumSchema(["task", "shared"] as const),
  ),
  cacheDir: envVar(
    "BLOCKX_CACHE_DIR",
    "",
    "a directory path, or empty",
    "where the binary unpacks its executor files (content-addressed); empty: <tmpdir>/blockx-cache",
    stringSchema(),
  ),
};

export type ExecutorPoolVars = EnvValues<typeof executorPoolVars>;

export interface ExecutorPoolConfig {
  readonly executorCount: number;
  /** EXECUTOR_SPREAD: executors one owner's calls are spread over while they keep up; 0: the CPUs this process may use. */
  readonly spread: number;
  readonly python: string;
  readonly callBudgetMs: number;
  readonly wallClockCeilingMs: number;
  readonly memoryLimitBytes: number;
  /** EXECUTOR_MEMORY_CGROUP (absent: auto). */
  readonly memoryCgroup?: "auto" | "off" | "required";
  readonly pingIntervalMs: number;
  readonly pingTimeoutMs: number;
  readonly user: string;
  readonly networkIsolation: "on" | "off";
  readonly sandbox: "on" | "off";
  readonly bwrap: string;
  readonly nprocLimit: number;
  /** EXECUTOR_MAX_SOURCE_BYTES: a longer source is refused (INPUT_REJECTED here; INVALID_ARGUMENT at the roles' doors). */
  readonly maxSourceBytes: number;
  readonly cacheDir: string;
  /** EXECUTOR_OWNER_WITHOUT_IDENTITY: the executor owner of a call whose caller has no authenticated identity. */
  readonly ownerWithoutIdentity: "task" | "shared";
  /**
   * µs an executor polls its socket after a call before it blocks (0: none). The Sync Invoker
   * sets it (SYNCINVOKER_HOT_SPIN_US): a request arriving within it skips the kernel wake-up. The
   * executor spins only after a call the pool marked lone (its only call when sent) and while
   * requests came within it, yielding the core between polls.
   */
  readonly hotSpinUs?: number;
  /**
   * µs the pool keeps its event loop polling for the answer of a lone call (the only one in the
   * pool) before it lets the loop sleep (0: none); see lone-call-poll.ts.
   */
  readonly hotWaitUs: number;
}

export function executorPoolConfigFrom(v: ExecutorPoolVars): ExecutorPoolConfig {
  return Object.freeze({
    executorCount: v.executorCount,
    spread: v.spread,
    hotWaitUs: v.hotWaitUs,
    python: v.python.trim(),
    callBudgetMs: v.callBudgetMs,
    wallClockCeilingMs: v.wallClockCeilingMs,
    memoryLimitBytes: v.memoryLimitMb * 1024 * 1024,
    memoryCgroup: v.memoryCgroup,
    pingIntervalMs: v.pingIntervalMs,
    pingTimeoutMs: v.pingTimeoutMs,
    user: v.user.trim(),
    networkIsolation: v.networkIsolation,
    sandbox: v.sandbox,
    bwrap: v.bwrap.trim(),
    nprocLimit: v.nprocLimit,
    maxSourceBytes: v.maxSourceBytes,
    cacheDir: v.cacheDir.trim(),
    ownerWithoutIdentity: v.ownerWithoutIdentity,
  });
}

/** defaultExecutorPoolConfig is the configuration of an empty environment, with overrides. */
export function defaultExecutorPoolConfig(overrides: Partial<ExecutorPoolConfig> = {}): ExecutorPoolConfig {
  return { ...executorPoolConfigFrom(loadEnvConfig(executorPoolVars, {})), ...overrides };
}

/** The executor owner shared by every call without an authenticated identity, under EXECUTOR_OWNER_WITHOUT_IDENTITY=shared. */
export const UNAUTHENTICATED_OWNER = "unauthenticated";

/**
 * executorOwnerKey: whose calls may share an executor (the pool recycles one between owners). An
 * authenticated identity is its own owner; without one (BLOCKX_INSECURE: any name can be sent)
 * each task or request is (`ownKey`), unless EXECUTOR_OWNER_WITHOUT_IDENTITY=shared made them one.
 */
export function executorOwnerKey(identity: string | null, policy: "task" | "shared" | undefined, ownKey: string): string {
  if (identity !== null && identity !== "") return `identity:${identity}`;
  return policy === "shared" ? UNAUTHENTICATED_OWNER : ownKey;
}
