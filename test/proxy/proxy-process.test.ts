/**
 * `blockx proxy` as a process: a Unix socket in front of real Coordinators and Workers (and a
 * scripted gRPC server where a test needs exact headers and trailers). The proxy must relay
 * statuses, messages, headers and trailers unchanged, and explain a missing worker header.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { testHeartbeat } from "../support/heartbeat";
import { join } from "node:path";
import { WorkerServiceClient, WorkerServiceService, type WorkerServiceServer } from "../../src/gen/worker/v1/worker";
import { TestCluster } from "../support/cluster";
import { waitFor } from "../support/coordinator-client";
import { suiteChannel, suiteServerCredentials } from "../support/suite-tls";

const PY_CLIENT = join(import.meta.dir, "..", "support", "py_grpc_client.py");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startProxy(env: Record<string, string> = {}) {
  const cluster = new TestCluster();
  cleanups.push(() => cluster.stop());
  const socket = join(cluster.dir, "proxy.sock");
  const proxy = cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, ...env });
  await proxy.grpcAddr();
  const worker = new WorkerServiceClient(`unix:${socket}`, grpc.credentials.createInsecure());
  cleanups.push(() => worker.close());
  return { cluster, socket, proxy, worker };
}

type Outcome = { err: grpc.ServiceError | null; headers?: grpc.Metadata; trailers?: grpc.Metadata };

function getTaskResult(client: WorkerServiceClient, md: grpc.Metadata, taskId = "t"): Promise<Outcome> {
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    const call = client.getTaskResult({ taskId }, md, { deadline: Date.now() + 20_000 }, (err) => resolve({ err, headers, trailers: err?.metadata }));
    call.on("metadata", (m) => (headers = m));
  });
}

/** A scripted WorkerService: NotFound with a header and a trailer, so relaying can be checked byte for byte. */
async function scriptedWorker(): Promise<string> {
  const server = new grpc.Server();
  const impl: Partial<WorkerServiceServer> = {
    getTaskResult: (call, callback) => {
      const headers = new grpc.Metadata();
      headers.set("x-scripted-header", "h1");
      call.sendMetadata(headers);
      const trailers = new grpc.Metadata();
      trailers.set("x-scripted-trailer", "t1");
      trailers.set("x-echo-caller", String(call.metadata.get("x-caller")[0] ?? ""));
      callback({ code: grpc.status.NOT_FOUND, details: `no task ${call.request.taskId} here`, metadata: trailers });
    },
  };
  server.addService(WorkerServiceService, impl as WorkerServiceServer);
  const credentials = await suiteServerCredentials("worker");
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", credentials, (e, p) => (e ? reject(e) : resolve(p))));
  cleanups.push(() => server.forceShutdown());
  return `127.0.0.1:${port}`;
}

describe("blockx proxy", () => {
  test("a worker.v1 call without x-blockx-worker-addr is InvalidArgument, and the message says which header", async () => {
    const { worker } = await startProxy();
    const out = await getTaskResult(worker, new grpc.Metadata());
    expect(out.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(out.err?.details).toBe("/worker.v1.WorkerService/GetTaskResult through the proxy needs the x-blockx-worker-addr metadata header naming the Worker (host:port)");
  }, 30_000);

  test("status, details, headers and trailers from the Worker come back unchanged; the caller's metadata goes through", async () => {
    const { worker, cluster } = await startProxy();
    const addr = await scriptedWorker();
    await register(cluster, addr);
    const md = new grpc.Metadata();
    md.set("x-blockx-worker-addr", addr);
    md.set("x-caller", "c1");
    const out = await getTaskResult(worker, md, "t-42");
    expect(out.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(out.err?.details).toBe("no task t-42 here");
    expect(out.headers?.get("x-scripted-header")).toEqual(["h1"]);
    expect(out.trailers?.get("x-scripted-trailer")).toEqual(["t1"]);
    expect(out.trailers?.get("x-echo-caller")).toEqual(["c1"]);
  }, 30_000);

  test("a real Worker's NotFound reaches the client the same through the proxy as directly; an unreachable Worker is Unavailable", async () => {
    const { cluster, worker } = await startProxy();
    const w = await cluster.worker();
    const ch = suiteChannel("client", w.addr, ["worker"]);
    const direct = new WorkerServiceClient(w.addr, ch.credentials, ch.options);
    cleanups.push(() => direct.close());
    const md = new grpc.Metadata();
    md.set("x-blockx-worker-addr", w.addr);
    // The Worker registers in etcd just after it listens: until then the proxy refuses it.
    const via = await waitFor(() => getTaskResult(worker, md, "nope"), (o) => o.err?.code !== grpc.status.PERMISSION_DENIED);
    const straight = await getTaskResult(direct, new grpc.Metadata(), "nope");
    expect(via.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(via.err?.details).toBe(straight.err!.details);
    // Registered but down: the proxy dials and reports the Worker unreachable.
    await register(cluster, "127.0.0.1:1");
    const gone = new grpc.Metadata();
    gone.set("x-blockx-worker-addr", "127.0.0.1:1");
    expect((await getTaskResult(worker, gone)).err?.code).toBe(grpc.status.UNAVAILABLE);
  }, 30_000);

  test("an address that is not a registered Worker is PERMISSION_DENIED and nothing dials it (no open relay, no port scan)", async () => {
    const { worker } = await startProxy();
    let connections = 0;
    const listener = createServer((s) => {
      connections++;
      s.destroy();
    });
    const port = await new Promise<number>((resolve) => listener.listen(0, "127.0.0.1", () => resolve((listener.address() as AddressInfo).port)));
    cleanups.push(() => listener.close());
    const md = new grpc.Metadata();
    md.set("x-blockx-worker-addr", `127.0.0.1:${port}`);
    const out = await getTaskResult(worker, md);
    expect(out.err?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(out.err?.details).toContain(`127.0.0.1:${port} is not a Worker in the registry`);
    await Bun.sleep(300);
    expect(connections).toBe(0);
  }, 30_000);

  test("the socket file gets PROXY_SOCKET_MODE (0660 by default) and every call is logged with the caller's uid", async () => {
    const { socket, proxy, worker } = await startProxy({ PROXY_SOCKET_MODE: "0600" });
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    await getTaskResult(worker, new grpc.Metadata());
    const line = await proxy.waitForLog((l) => l.msg === "relaying call");
    expect(line).toMatchObject({ path: "/worker.v1.WorkerService/GetTaskResult", peerUid: process.getuid!(), peerPid: process.pid });
    const plain = await startProxy();
    expect(statSync(plain.socket).mode & 0o777).toBe(0o660);
  }, 30_000);

  test("an unknown method is Unimplemented", async () => {
    const { socket } = await startProxy();
    const raw = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
    cleanups.push(() => raw.close());
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      raw.makeUnaryRequest("/other.v1.Thing/Do", (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), (e) => resolve(e)),
    );
    expect(err?.code).toBe(grpc.status.UNIMPLEMENTED);
  }, 30_000);

  test("SIGTERM removes the socket file and exits 0; a stale socket file left by a crash is replaced at start", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const socket = join(cluster.dir, "stale.sock");
    writeFileSync(socket, "");
    const proxy = cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket });
    expect(await proxy.grpcAddr()).toBe(`unix:${socket}`);
    expect(existsSync(socket)).toBe(true);
    expect(await proxy.stop("SIGTERM")).toBe(0);
    expect(existsSync(socket)).toBe(false);
  }, 30_000);

  test("python3-grpcio (not grpc-js) reserves a slot through the proxy (gzip request) and reads its health", async () => {
    const { cluster, socket } = await startProxyInFront();
    const py = (args: string[]) => JSON.parse(Bun.spawnSync(["/usr/bin/python3", PY_CLIENT, `unix:${socket}`, ...args], { env: { PATH: "/usr/bin:/bin" } }).stdout.toString()) as Record<string, unknown>;
    const reserved = await waitFor(async () => py(["reserve", "coordinator.v1.CoordinatorService", "py-1"]), (o) => o.ok === true);
    expect(reserved).toMatchObject({ ok: true, taskId: "py-1", workerAddr: cluster.workerAddr });
    expect(py(["health"])).toEqual({ ok: true, status: "SERVING" });
  }, 30_000);
});

/** register puts a heartbeat for `addr` in the test etcd, as a Worker of the cluster's lane would. */
async function register(cluster: TestCluster, addr: string): Promise<void> {
  const etcd = await createEtcdClient({ endpoints: [cluster.etcd], dialTimeoutMs: 2_000 });
  try {
    await etcd.put(`${cluster.blockPrefix}${addr}`).value(JSON.stringify(testHeartbeat(addr, { lastHeartbeatMs: Date.now() })));
  } finally {
    etcd.close();
  }
}

/** startProxyInFront: a proxy before a real block Coordinator with one Worker. */
async function startProxyInFront() {
  const cluster = new TestCluster();
  cleanups.push(() => cluster.stop());
  const w = await cluster.worker();
  const c = await cluster.coordinator();
  const socket = join(cluster.dir, "proxy.sock");
  await cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_COORDINATOR_ADDRS: c.addr }).grpcAddr();
  return { cluster: { workerAddr: w.addr }, socket };
}
