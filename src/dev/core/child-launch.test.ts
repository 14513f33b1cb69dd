import { describe, expect, test } from "bun:test";
import { terminalLine } from "./terminal-line";
import { clientEnvironment, devLayout, launchFor, renderEnvFile, type DevTls, type LaunchContext } from "./child-launch";

const files = (who: string) => ({ BLOCKX_TLS_CA_FILE: "/d/tls/ca.pem", BLOCKX_TLS_CERT_FILE: `/d/tls/${who}.pem`, BLOCKX_TLS_KEY_FILE: `/d/tls/${who}.key` });
const etcdFiles = (who: string) => ({ ETCD_TLS_CA_FILE: "/d/tls/ca.pem", ETCD_TLS_CERT_FILE: `/d/tls/etcd-${who}.pem`, ETCD_TLS_KEY_FILE: `/d/tls/etcd-${who}.key` });
const MTLS: DevTls = {
  kind: "mtls",
  files: { coordinator: files("coordinator"), worker: files("worker"), syncinvoker: files("syncinvoker"), client: files("client") },
  etcdServer: etcdFiles("server"),
  etcdUsers: { worker: etcdFiles("worker"), coordinator: etcdFiles("coordinator"), proxy: etcdFiles("proxy"), client: etcdFiles("client"), root: etcdFiles("root") },
};

const ctx = (endpoints: Record<string, string>, declared: string[] = [], tls: DevTls = MTLS): LaunchContext => ({
  layout: devLayout("/d"),
  etcdBin: "/e/etcd",
  etcdClientPort: 2001,
  etcdPeerPort: 2002,
  self: ["/b/blockx"],
  executorsPerWorker: 3,
  logLevel: "info",
  endpoints: new Map(Object.entries(endpoints)),
  metricsAddrs: new Map([["worker-1", "127.0.0.1:9101"], ["syncinvoker", "127.0.0.1:9102"]]),
  declaredVars: () => new Set(declared),
  tls,
});

describe("transport security of the children", () => {
  test("secure by default: each role holds its own certificate, the proxy and the client hold the client's, and an inherited BLOCKX_INSECURE is overridden", () => {
    expect(launchFor({ id: "coordinator", role: "coordinator", stage: 1 }, ctx({})).env).toMatchObject({ ...files("coordinator"), BLOCKX_INSECURE: "0" });
    expect(launchFor({ id: "worker-1", role: "worker", stage: 1 }, ctx({})).env).toMatchObject({ ...files("worker"), BLOCKX_INSECURE: "0" });
    expect(launchFor({ id: "syncinvoker", role: "syncinvoker", stage: 1 }, ctx({})).env).toMatchObject(files("syncinvoker"));
    expect(launchFor({ id: "proxy", role: "proxy", stage: 2 }, ctx({})).env).toMatchObject(files("client"));
    expect(Object.fromEntries(clientEnvironment({ ...ctx({}), tls: MTLS }))).toMatchObject(files("client"));
  });

  test("BLOCKX_INSECURE=1 given to dev: every child and the client are plaintext, and inherited certificate paths are blanked", () => {
    const plain: DevTls = { kind: "insecure" };
    expect(launchFor({ id: "worker-1", role: "worker", stage: 1 }, ctx({}, [], plain)).env).toMatchObject({ BLOCKX_INSECURE: "1", BLOCKX_TLS_CERT_FILE: "" });
    const client = Object.fromEntries(clientEnvironment({ ...ctx({}, [], plain), tls: plain }));
    expect(client.BLOCKX_INSECURE).toBe("1");
    expect(client.BLOCKX_TLS_CERT_FILE).toBeUndefined();
  });
});

describe("child launches", () => {
  test("Workers share the dev dir's table store and FUNCTIONS_DIR, bind loopback port 0, drain briefly, serve /metrics on the port chosen for them, serve the synthetic chain", () => {
    const l = launchFor({ id: "worker-1", role: "worker", stage: 1 }, ctx({}));
    expect(l.argv).toEqual(["/b/blockx", "worker"]);
    expect(l.env).toMatchObject({
      ETCD_ENDPOINTS: "127.0.0.1:2001",
      WORKER_LISTEN: "127.0.0.1:0",
      TABLE_STORE_PATH: "/d/tables.sqlite",
      FUNCTIONS_DIR: "/d/functions",
      EXECUTOR_COUNT: "3",
      BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:9101",
      TMPDIR: "/d/tmp",
      LOCALTESTSERVICE_ENABLED: "true",
    });
    expect(l.readiness).toEqual({ kind: "grpcLog" });
  });

  test("etcd gets its data dir and the two chosen ports; ready when /health says so", () => {
    const l = launchFor({ id: "etcd", role: "etcd", stage: 0 }, ctx({}, [], { kind: "insecure" }));
    expect(l.argv).toContain("--data-dir=/d/etcd-data");
    expect(l.argv).toContain("--listen-client-urls=http://127.0.0.1:2001");
    expect(l.argv).toContain("--initial-cluster=dev=http://127.0.0.1:2002");
    expect(l.readiness).toEqual({ kind: "httpHealth", endpoint: "127.0.0.1:2001", tls: null });
  });

  test("secure dev: etcd serves https with its certificate and asks every client for one of dev's CA; each child is its etcd user", () => {
    const l = launchFor({ id: "etcd", role: "etcd", stage: 0 }, ctx({}));
    expect(l.argv).toContain("--listen-client-urls=https://127.0.0.1:2001");
    expect(l.argv).toEqual(expect.arrayContaining(["--client-cert-auth", "--trusted-ca-file=/d/tls/ca.pem", "--cert-file=/d/tls/etcd-server.pem"]));
    expect(l.readiness).toMatchObject({ kind: "httpHealth", endpoint: "127.0.0.1:2001", tls: { caFile: "/d/tls/ca.pem", client: { certFile: "/d/tls/etcd-root.pem" } } });
    expect(launchFor({ id: "worker-1", role: "worker", stage: 1 }, ctx({})).env).toMatchObject(etcdFiles("worker"));
    expect(launchFor({ id: "coordinator", role: "coordinator", stage: 1 }, ctx({})).env).toMatchObject(etcdFiles("coordinator"));
    expect(launchFor({ id: "proxy", role: "proxy", stage: 2 }, ctx({})).env).toMatchObject(etcdFiles("proxy"));
    expect(Object.fromEntries(clientEnvironment({ ...ctx({}), tls: MTLS }))).toMatchObject(etcdFiles("client"));
  });

  test("roles from other branches get the client variables and loopback port 0 for each listen variable they declare", () => {
    const e = { coordinator: "127.0.0.1:1", "bundle-coordinator": "127.0.0.1:2" };
    const si = launchFor({ id: "syncinvoker", role: "syncinvoker", stage: 2 }, ctx(e, ["SYNCINVOKER_LISTEN", "BLOCKX_PROMETHEUS_LISTEN_ADDR"]));
    expect(si.env).toMatchObject({ SYNCINVOKER_LISTEN: "127.0.0.1:0", BLOCKX_COORDINATOR_ADDRS: "127.0.0.1:1", BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:9102", LOCALTESTSERVICE_ENABLED: "true" });
    const proxy = launchFor({ id: "proxy", role: "proxy", stage: 2 }, ctx(e));
    expect(proxy.env).toMatchObject({ PROXY_SOCKET_PATH: "/d/proxy.sock", BLOCKX_BUNDLE_COORDINATOR_ADDRS: "127.0.0.1:2" });
    expect(proxy.readiness).toEqual({ kind: "socketFile", path: "/d/proxy.sock" });
  });

  test("a Postgres table store (TABLE_STORE_URL, or --postgres's) reaches every Worker and the client environment", () => {
    const url = "postgres://blockx@127.0.0.1:5999/blockx";
    const withPg = { ...ctx({}), tableStoreUrl: url };
    expect(launchFor({ id: "worker-1", role: "worker", stage: 1 }, withPg).env).toMatchObject({ TABLE_STORE_URL: url });
    expect(launchFor({ id: "bundle-worker-1", role: "bundle-worker", stage: 1 }, withPg).env).toMatchObject({ TABLE_STORE_URL: url });
    expect(launchFor({ id: "worker-1", role: "worker", stage: 1 }, ctx({})).env).not.toHaveProperty("TABLE_STORE_URL");
    const vars = clientEnvironment({ layout: devLayout("/d"), endpoints: new Map(), etcdClientPort: 7, tableStoreUrl: url });
    expect(vars.find(([k]) => k === "TABLE_STORE_URL")).toEqual(["TABLE_STORE_URL", url]);
  });

  test("the env file is `export NAME='value'` lines that survive quotes in paths", () => {
    const vars = clientEnvironment({ layout: devLayout("/tmp/it's"), endpoints: new Map([["coordinator", "127.0.0.1:9"]]), etcdClientPort: 7 });
    expect(vars.map(([k]) => k)).toEqual(["BLOCKX_COORDINATOR_ADDRS", "ETCD_ENDPOINTS", "TABLE_STORE_PATH", "FUNCTIONS_DIR"]);
    const text = renderEnvFile(vars);
    const r = Bun.spawnSync(["bash", "-c", `${text}\nprintf '%s' "$TABLE_STORE_PATH"`]);
    expect(r.stdout.toString()).toBe("/tmp/it's/tables.sqlite");
  });

  test("the env file lists every child's /metrics address and the dashboard's URL", () => {
    const vars = clientEnvironment({
      layout: devLayout("/d"),
      endpoints: new Map(),
      etcdClientPort: 7,
      metricsAddrs: new Map([["coordinator", "127.0.0.1:1"], ["worker-1", "127.0.0.1:2"]]),
      uiUrl: "http://127.0.0.1:3/",
    });
    expect(Object.fromEntries(vars)).toMatchObject({ BLOCKX_DEV_METRICS_ADDRS: "coordinator=127.0.0.1:1,worker-1=127.0.0.1:2", BLOCKX_UI_URL: "http://127.0.0.1:3/" });
  });
});

describe("terminal summary", () => {
  test("JSON lines below the level are dropped; others are prefixed with the child's name and carry the error", () => {
    expect(terminalLine("worker-1", JSON.stringify({ level: "info", msg: "grpc listening" }), false, "warn")).toBeNull();
    expect(terminalLine("worker-1", JSON.stringify({ level: "error", msg: "call failed", err: { message: "boom" } }), false, "warn")).toBe("[worker-1] error call failed: boom");
    // etcd's gRPC library reconnecting its own gateway (as dev stops it) is chatter, not a warning; its own warnings stay.
    expect(terminalLine("etcd", 'WARNING: 2026/12/06 03:10:19 [core] grpc: addrConn.createTransport failed to connect to {127.0.0.1:20255 ...}. Reconnecting...', true, "warn")).toBeNull();
    expect(terminalLine("etcd", "something went wrong", true, "warn")).toBe("[etcd] warn something went wrong");
    expect(terminalLine("etcd", "panic: plain text on stderr", true, "warn")).toBe("[etcd] warn panic: plain text on stderr");
  });
});
