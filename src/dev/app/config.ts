import { tableStoreVars } from "../../outputs/stores/table-store-config";
import { tlsVars } from "../../common/tls/tls-vars";
import { commonVars } from "../../common/config/common-vars";
import { enumSchema, envVar, intSchema, loadEnvConfig, stringSchema } from "../../common/config/env-config";

const MAX_MS = 24 * 3600 * 1000;

/** devVars lists every variable `blockx dev` reads; the children inherit the rest of the environment. */
export const devVars = {
  workers: envVar("DEV_WORKERS", "2", "an integer from 0 to 64", "block-cluster Workers to run", intSchema(0, 64)),
  bundleWorkers: envVar("DEV_BUNDLE_WORKERS", "1", "an integer from 0 to 64", "bundle-cluster Workers to run", intSchema(0, 64)),
  executorsPerWorker: envVar("DEV_EXECUTORS_PER_WORKER", "2", "an integer from 1 to 64", "EXECUTOR_COUNT of each Worker", intSchema(1, 64)),
  dir: envVar(
    "DEV_DIR",
    "",
    "a directory path, or empty",
    "logs, table store, FUNCTIONS_DIR and blockx-dev.env; empty: a fresh temporary directory, removed at the end unless DEV_KEEP",
    stringSchema(),
  ),
  keep: envVar("DEV_KEEP", "false", "true or false (flag --keep alone means true)", "keep a temporary DEV_DIR after stopping", enumSchema(["true", "false"] as const)),
  etcdBin: envVar(
    "ETCD_BIN",
    "",
    "a file path, or empty",
    "etcd executable; empty: .cache/etcd/root/usr/bin/etcd next to the binary's checkout or in the current directory, else etcd on PATH",
    stringSchema(),
  ),
  postgres: envVar(
    "DEV_POSTGRES",
    "false",
    "true or false (flag --postgres alone means true)",
    "start a private Postgres (Debian's postgresql, as `nobody` when root) as the Workers' table store, stopped with the cluster",
    enumSchema(["true", "false"] as const),
  ),
  tableStoreUrl: tableStoreVars.tableStoreUrl,
  proxy: envVar("DEV_PROXY", "true", "true or false", "also run `blockx proxy` on <DEV_DIR>/proxy.sock when this build has it", enumSchema(["true", "false"] as const)),
  ui: envVar("DEV_UI", "true", "true or false", "serve the web dashboard (`blockx ui`) on a loopback port, printed and in blockx-dev.env as BLOCKX_UI_URL", enumSchema(["true", "false"] as const)),
  readyTimeoutMs: envVar("DEV_READY_TIMEOUT_MS", "60000", "an integer from 1 to 86400000", "how long each start stage may take to become ready", intSchema(1, MAX_MS)),
  stopGraceMs: envVar(
    "DEV_STOP_GRACE_MS",
    "15000",
    "an integer from 1 to 86400000",
    "after SIGTERM, how long a stage of children may take to exit before SIGKILL (Workers drain for 5000)",
    intSchema(1, MAX_MS),
  ),
  terminalLogLevel: envVar(
    "DEV_TERMINAL_LOG_LEVEL",
    "warn",
    "one of trace, debug, info, warn, error, fatal",
    "children's log lines at or above this level are echoed to the terminal, prefixed with the child's name (files get everything)",
    enumSchema(["trace", "debug", "info", "warn", "error", "fatal"] as const),
  ),
  logLevel: commonVars.logLevel,
  insecure: tlsVars.insecure,
};

export interface DevConfig {
  readonly workers: number;
  readonly bundleWorkers: number;
  readonly executorsPerWorker: number;
  /** Empty: make a temporary directory. */
  readonly dir: string;
  readonly keep: boolean;
  readonly etcdBin: string;
  readonly proxy: boolean;
  /** Start a private Postgres as the table store. */
  readonly postgres: boolean;
  /** Passed to the Workers (and the client environment) when set. */
  readonly tableStoreUrl: string;
  readonly ui: boolean;
  readonly readyTimeoutMs: number;
  readonly stopGraceMs: number;
  readonly terminalLogLevel: "trace" | "debug" | "info" | "warn" | "error" | "fatal";
  readonly logLevel: "trace" | "debug" | "info" | "warn" | "error" | "fatal";
  /** BLOCKX_INSECURE=1: plaintext everywhere; otherwise a private CA and mTLS for every child and the client. */
  readonly insecure: boolean;
}

/** loadDevConfig reads the variables (flags win); a bare `--keep` stands for `--dev-keep=true`. */
export function loadDevConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[]): DevConfig {
  const args = argv.map((a) => (a === "--keep" ? "--dev-keep=true" : a === "--postgres" ? "--dev-postgres=true" : a));
  const v = loadEnvConfig(devVars, env, args);
  return Object.freeze({
    workers: v.workers,
    bundleWorkers: v.bundleWorkers,
    executorsPerWorker: v.executorsPerWorker,
    dir: v.dir.trim(),
    keep: v.keep === "true",
    etcdBin: v.etcdBin.trim(),
    proxy: v.proxy === "true",
    postgres: v.postgres === "true",
    tableStoreUrl: v.tableStoreUrl.trim(),
    ui: v.ui === "true",
    readyTimeoutMs: v.readyTimeoutMs,
    stopGraceMs: v.stopGraceMs,
    terminalLogLevel: v.terminalLogLevel,
    logLevel: v.logLevel,
    insecure: v.insecure === "1",
  });
}
