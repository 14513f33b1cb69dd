import type { EtcdTls } from "../../common/etcd/etcd-access";
import type { ChildSpec } from "./dev-plan";

/** DevLayout: where `blockx dev` keeps each thing inside its directory. */
export interface DevLayout {
  readonly dir: string;
  readonly etcdDataDir: string;
  readonly functionsDir: string;
  readonly tableStorePath: string;
  /** TMPDIR of every child: executor sockets and scratch files stay inside the dev dir. */
  readonly tmpDir: string;
  readonly proxySocketPath: string;
  readonly envFilePath: string;
}

export function devLayout(dir: string): DevLayout {
  return {
    dir,
    etcdDataDir: `${dir}/etcd-data`,
    functionsDir: `${dir}/functions`,
    tableStorePath: `${dir}/tables.sqlite`,
    tmpDir: `${dir}/tmp`,
    proxySocketPath: `${dir}/proxy.sock`,
    envFilePath: `${dir}/blockx-dev.env`,
  };
}

/** Readiness: how the adapter learns that a child serves. */
export type Readiness =
  /** The "grpc listening" JSON log line; its `addr` is the endpoint. */
  | { readonly kind: "grpcLog" }
  /** etcd's /health answers {"health":"true"} (asked over TLS with `tls`'s client certificate when set). */
  | { readonly kind: "httpHealth"; readonly endpoint: string; readonly tls: EtcdTls | null }
  /** A Unix socket file appears (the proxy). */
  | { readonly kind: "socketFile"; readonly path: string };

export interface ChildLaunch {
  readonly argv: readonly string[];
  /** Added to the inherited environment (these win). */
  readonly env: Readonly<Record<string, string>>;
  readonly readiness: Readiness;
}

export interface LaunchContext {
  readonly layout: DevLayout;
  readonly etcdBin: string;
  readonly etcdClientPort: number;
  readonly etcdPeerPort: number;
  /** How to run this binary again: [execPath] compiled, [bun, main.ts] from source. */
  readonly self: readonly string[];
  readonly executorsPerWorker: number;
  readonly logLevel: string;
  /** The Workers' Postgres table store (TABLE_STORE_URL, or `--postgres`'s); empty: the SQLite file. */
  readonly tableStoreUrl?: string;
  /** Endpoints of the children ready so far, by child id. */
  readonly endpoints: ReadonlyMap<string, string>;
  /** host:port of each blockx child's /metrics (chosen before it starts); a child without one serves none. */
  readonly metricsAddrs: ReadonlyMap<string, string>;
  /** Environment names a role's command declares (for roles whose variables dev does not know by heart). */
  readonly declaredVars: (role: ChildSpec["role"]) => ReadonlySet<string>;
  readonly tls: DevTls;
}

const LOOPBACK_ANY_PORT = "127.0.0.1:0";

/**
 * The synthetic chain, which production roles serve only when configured, is on for dev's Workers
 * and Sync Invoker: a function tried on one machine reads it (and any chain CHAINS_CONFIG names).
 */
const LOCAL_TEST_CHAIN_ON = { LOCALTESTSERVICE_ENABLED: "true" } as const;

/** The identities `blockx dev` issues certificates for (the proxy holds the client's). */
export type DevIdentity = "coordinator" | "worker" | "syncinvoker" | "client";

/** The three TLS variables of one process. */
export interface DevTlsFiles {
  readonly BLOCKX_TLS_CA_FILE: string;
  readonly BLOCKX_TLS_CERT_FILE: string;
  readonly BLOCKX_TLS_KEY_FILE: string;
}

/** The etcd users of dev's children (their etcd client certificates' CN; root is dev's own, to set up the roles). */
export type DevEtcdUser = "worker" | "coordinator" | "proxy" | "client" | "root";

/** The three etcd TLS variables of one process. */
export interface DevEtcdTlsFiles {
  readonly ETCD_TLS_CA_FILE: string;
  readonly ETCD_TLS_CERT_FILE: string;
  readonly ETCD_TLS_KEY_FILE: string;
}

/**
 * DevTls: mTLS with a certificate per identity from dev's private CA (the default), and etcd over
 * TLS with client certificates (etcd's server certificate and one per etcd user); or plaintext
 * everywhere (BLOCKX_INSECURE=1).
 */
export type DevTls =
  | { readonly kind: "insecure" }
  | {
      readonly kind: "mtls";
      readonly files: Readonly<Record<DevIdentity, DevTlsFiles>>;
      readonly etcdServer: DevEtcdTlsFiles;
      readonly etcdUsers: Readonly<Record<DevEtcdUser, DevEtcdTlsFiles>>;
    };

/** etcdEnvFor: the etcd variables of a child that is etcd user `who` (all empty in plaintext, so none leaks in from dev's own environment). */
export function etcdEnvFor(tls: DevTls, who: DevEtcdUser): Record<string, string> {
  if (tls.kind === "insecure") return { ETCD_TLS_CA_FILE: "", ETCD_TLS_CERT_FILE: "", ETCD_TLS_KEY_FILE: "" };
  return { ...tls.etcdUsers[who] };
}

/** etcdTlsOf: etcd user `who`'s view of etcd's TLS (dev's readiness probe and role setup), null in plaintext. */
export function etcdTlsOf(tls: DevTls, who: DevEtcdUser): EtcdTls | null {
  if (tls.kind === "insecure") return null;
  const f = tls.etcdUsers[who];
  return { caFile: f.ETCD_TLS_CA_FILE, client: { certFile: f.ETCD_TLS_CERT_FILE, keyFile: f.ETCD_TLS_KEY_FILE, commonName: who } };
}

/**
 * tlsEnvFor: the transport variables of a child holding `who`'s certificate. Both ways are set
 * explicitly, so that a BLOCKX_INSECURE or BLOCKX_TLS_* in dev's own environment cannot leak in.
 */
export function tlsEnvFor(tls: DevTls, who: DevIdentity): Record<string, string> {
  if (tls.kind === "insecure") return { BLOCKX_INSECURE: "1", BLOCKX_TLS_CA_FILE: "", BLOCKX_TLS_CERT_FILE: "", BLOCKX_TLS_KEY_FILE: "" };
  return { BLOCKX_INSECURE: "0", ...tls.files[who] };
}

/**
 * clientEnvironment: the agreed client variables (the SDK and CLI read them), in the order
 * `blockx dev` prints them and writes them to blockx-dev.env.
 */
export function clientEnvironment(
  ctx: Pick<LaunchContext, "layout" | "endpoints" | "etcdClientPort" | "tableStoreUrl"> & { metricsAddrs?: ReadonlyMap<string, string>; uiUrl?: string; tls?: DevTls },
): [string, string][] {
  const out: [string, string][] = [];
  const e = ctx.endpoints;
  if (e.has("coordinator")) out.push(["BLOCKX_COORDINATOR_ADDRS", e.get("coordinator")!]);
  if (e.has("bundle-coordinator")) out.push(["BLOCKX_BUNDLE_COORDINATOR_ADDRS", e.get("bundle-coordinator")!]);
  if (e.has("syncinvoker")) out.push(["BLOCKX_SYNCINVOKER_ADDR", e.get("syncinvoker")!]);
  if (e.has("proxy")) out.push(["PROXY_SOCKET_PATH", e.get("proxy")!]);
  out.push(["ETCD_ENDPOINTS", `127.0.0.1:${ctx.etcdClientPort}`]);
  if (ctx.tableStoreUrl) out.push(["TABLE_STORE_URL", ctx.tableStoreUrl]);
  out.push(["TABLE_STORE_PATH", ctx.layout.tableStorePath]);
  out.push(["FUNCTIONS_DIR", ctx.layout.functionsDir]);
  // The client's certificate (or the plaintext choice): the SDK and CLI need one or the other.
  if (ctx.tls) for (const [k, v] of Object.entries({ ...tlsEnvFor(ctx.tls, "client"), ...etcdEnvFor(ctx.tls, "client") })) if (v !== "") out.push([k, v]);
  // Not read by the SDK: where to point Prometheus (child=host:port, comma-separated) and a browser.
  if (ctx.metricsAddrs && ctx.metricsAddrs.size > 0) out.push(["BLOCKX_DEV_METRICS_ADDRS", [...ctx.metricsAddrs].map(([id, a]) => `${id}=${a}`).join(",")]);
  if (ctx.uiUrl) out.push(["BLOCKX_UI_URL", ctx.uiUrl]);
  return out;
}

/** renderEnvFile writes `export NAME=value` lines, single-quoted so that `source` takes any path. */
export function renderEnvFile(vars: readonly (readonly [string, string])[]): string {
  return vars.map(([k, v]) => `export ${k}='${v.replace(/'/g, `'\\''`)}'`).join("\n") + "\n";
}

/**
 * launchFor says how to start one child: etcd on the ports chosen for it, every blockx role on
 * 127.0.0.1:0 (the bound port comes back in its "grpc listening" line), Workers sharing one
 * table store and FUNCTIONS_DIR, each its own /metrics port (chosen up front), a short drain,
 * Coordinators without CPU and memory red lines.
 */
export function launchFor(child: ChildSpec, ctx: LaunchContext): ChildLaunch {
  const { layout } = ctx;
  const etcd = `127.0.0.1:${ctx.etcdClientPort}`;
  const common = { ETCD_ENDPOINTS: etcd, BLOCKX_LOG_LEVEL: ctx.logLevel, BLOCKX_PROMETHEUS_LISTEN_ADDR: ctx.metricsAddrs.get(child.id) ?? "", TMPDIR: layout.tmpDir };
  switch (child.role) {
    case "etcd": {
      const tls = ctx.tls.kind === "mtls" ? ctx.tls.etcdServer : null;
      const client = `${tls ? "https" : "http"}://127.0.0.1:${ctx.etcdClientPort}`;
      const peer = `http://127.0.0.1:${ctx.etcdPeerPort}`;
      return {
        argv: [
          ctx.etcdBin,
          "--name=dev",
          `--data-dir=${layout.etcdDataDir}`,
          `--listen-client-urls=${client}`,
          `--advertise-client-urls=${client}`,
          `--listen-peer-urls=${peer}`,
          `--initial-advertise-peer-urls=${peer}`,
          `--initial-cluster=dev=${peer}`,
          "--logger=zap",
          "--log-level=error",
          // Clients need a certificate of dev's CA; the etcd user is its CN (dev sets up the roles once etcd is up).
          ...(tls ? [`--cert-file=${tls.ETCD_TLS_CERT_FILE}`, `--key-file=${tls.ETCD_TLS_KEY_FILE}`, `--trusted-ca-file=${tls.ETCD_TLS_CA_FILE}`, "--client-cert-auth"] : []),
        ],
        env: { TMPDIR: layout.tmpDir },
        readiness: { kind: "httpHealth", endpoint: etcd, tls: etcdTlsOf(ctx.tls, "root") },
      };
    }
    case "coordinator":
    case "bundle-coordinator":
      return {
        argv: [...ctx.self, child.role],
        // Every Worker shares this one machine's CPU and memory: red lines would only turn
        // work away whenever the machine is busy, never route it somewhere better.
        env: { ...common, ...tlsEnvFor(ctx.tls, "coordinator"), ...etcdEnvFor(ctx.tls, "coordinator"), COORDINATOR_LISTEN: LOOPBACK_ANY_PORT, COORDINATOR_CPU_RED_LINE: "1", COORDINATOR_MEMORY_RED_LINE: "1" },
        readiness: { kind: "grpcLog" },
      };
    case "worker":
    case "bundle-worker":
      return {
        argv: [...ctx.self, child.role],
        env: {
          ...common,
          ...tlsEnvFor(ctx.tls, "worker"),
          ...etcdEnvFor(ctx.tls, "worker"),
          WORKER_LISTEN: LOOPBACK_ANY_PORT,
          TABLE_STORE_PATH: layout.tableStorePath,
          ...(ctx.tableStoreUrl ? { TABLE_STORE_URL: ctx.tableStoreUrl } : {}),
          FUNCTIONS_DIR: layout.functionsDir,
          EXECUTOR_COUNT: String(ctx.executorsPerWorker),
          WORKER_DRAIN_TIMEOUT_MS: "5000",
          ...LOCAL_TEST_CHAIN_ON,
        },
        readiness: { kind: "grpcLog" },
      };
    case "syncinvoker":
    case "proxy": {
      // These roles arrive in other branches: give them the client variables, and loopback
      // port 0 for every listen variable they declare.
      const env: Record<string, string> = { ...common, ...Object.fromEntries(clientEnvironment(ctx)), ...tlsEnvFor(ctx.tls, child.role === "proxy" ? "client" : "syncinvoker"), ...etcdEnvFor(ctx.tls, child.role === "proxy" ? "proxy" : "client") };
      for (const name of ctx.declaredVars(child.role)) {
        if (name.endsWith("_LISTEN") && !name.includes("PROMETHEUS")) env[name] = LOOPBACK_ANY_PORT;
      }
      if (child.role === "proxy") {
        env.PROXY_SOCKET_PATH = layout.proxySocketPath;
        return { argv: [...ctx.self, child.role], env, readiness: { kind: "socketFile", path: layout.proxySocketPath } };
      }
      delete env.BLOCKX_SYNCINVOKER_ADDR;
      Object.assign(env, LOCAL_TEST_CHAIN_ON);
      return { argv: [...ctx.self, child.role], env, readiness: { kind: "grpcLog" } };
    }
  }
}
