/**
 * Process-level tests of the compiled binary: `dist/blockx coordinator` and
 * `dist/blockx bundle-coordinator` started from an empty temporary directory against a real
 * etcd, with Worker doubles (real gRPC servers) registered in etcd the way Workers register.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { HealthCheckResponse_ServingStatus as Serving } from "../../src/gen/grpc/health/v1/health";
import { BlockxProcess } from "../support/blockx-process";
import { healthCheck, reserve, waitFor, type ReserveOutcome } from "../support/coordinator-client";
import { EtcdProcess } from "../support/etcd";
import { freePort } from "../support/ports";
import { randomLanePrefix, Registrar, WorkerDouble } from "../support/worker-double";
import { suiteEnv } from "../support/suite-tls";

const sharedEtcd = () => process.env.BLOCKX_TEST_ETCD_ENDPOINT!;
const PY_CLIENT = join(import.meta.dir, "..", "support", "py_grpc_client.py");

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function startCoordinator(env: Record<string, string>, role = "coordinator"): BlockxProcess {
  const p = BlockxProcess.spawn([role], {
    COORDINATOR_LISTEN: "127.0.0.1:0",
    COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: "100",
    COORDINATOR_ETCD_DIAL_TIMEOUT_MS: "1000",
    BLOCKX_LOG_LEVEL: "debug",
    ...env,
  });
  cleanups.push(() => p.stop("SIGKILL"));
  return p;
}

async function workerIn(registrar: Registrar, prefix: string): Promise<WorkerDouble> {
  const w = await WorkerDouble.start();
  cleanups.push(() => w.stop());
  await registrar.register(prefix, w.heartbeat());
  return w;
}

const isOk = (o: ReserveOutcome) => o.ok;
const code = (o: ReserveOutcome) => (o.ok ? "OK" : grpc.status[o.code]);

/** Runs the python3-grpcio client; async, since the Worker double answers from this process. */
async function runPython(args: string[]): Promise<{ ok: boolean; [k: string]: unknown }> {
  const p = Bun.spawn(["/usr/bin/python3", PY_CLIENT, ...args], { env: { PATH: "/usr/bin:/bin", ...suiteEnv("client") }, stdout: "pipe", stderr: "pipe" });
  const [out, err, exit] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (exit !== 0) throw new Error(`python client failed (${exit}): ${err}`);
  return JSON.parse(out);
}

describe("blockx coordinator (compiled binary, real etcd)", () => {
  let registrar: Registrar;
  beforeAll(async () => {
    registrar = await Registrar.connect(sharedEtcd());
  });
  afterAll(() => registrar.close());

  test("a client reserves a slot through the Coordinator on a registered Worker: full round trip over the network, gzip included", async () => {
    const prefix = randomLanePrefix("block");
    const worker = await workerIn(registrar, prefix);
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: prefix });
    const addr = await coord.grpcAddr();

    expect(await healthCheck(addr)).toBe(Serving.SERVING);
    const out = await waitFor(() => reserve(addr, "task-1"), isOk);
    expect(out).toEqual({ ok: true, res: { taskId: "task-1", workerAddr: worker.addr, slotId: "slot-task-1" } });
    // The Worker saw exactly the seed's request: same task id, the default slot TTL.
    expect(worker.requests.at(-1)).toEqual({ taskId: "task-1", ttlMs: 5000 });
    // Once ready, the Coordinator service itself reports SERVING.
    expect(await waitFor(() => healthCheck(addr, "coordinator.v1.CoordinatorService"), (s) => s === Serving.SERVING)).toBe(
      Serving.SERVING,
    );
  });

  test("the same round trip from python3-grpcio (not grpc-js), with a gzip request, and its health check", async () => {
    const prefix = randomLanePrefix("block");
    const worker = await workerIn(registrar, prefix);
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: prefix });
    const addr = await coord.grpcAddr();
    await waitFor(() => reserve(addr, "warm-up"), isOk);

    expect(await runPython([addr, "health"])).toEqual({ ok: true, status: "SERVING" });
    expect(await runPython([addr, "reserve", "coordinator.v1.CoordinatorService", "py-task"])).toEqual({
      ok: true,
      taskId: "py-task",
      workerAddr: worker.addr,
      slotId: "slot-py-task",
    });
    const bad = await runPython([addr, "reserve", "coordinator.v1.CoordinatorService", ""]);
    expect(bad).toMatchObject({ ok: false, code: "INVALID_ARGUMENT" });
    expect(String(bad.details)).toContain("task_id is required");
  });

  test("an empty task id is InvalidArgument and reaches no Worker", async () => {
    const prefix = randomLanePrefix("block");
    const worker = await workerIn(registrar, prefix);
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: prefix });
    const addr = await coord.grpcAddr();
    await waitFor(() => reserve(addr, "warm-up"), isOk);
    const before = worker.requests.length;
    const out = await reserve(addr, "");
    expect(code(out)).toBe("INVALID_ARGUMENT");
    expect(worker.requests.length).toBe(before);
  });

  test("Worker answers map to the seed's statuses: no slot -> ResourceExhausted; a hung Worker -> same-Worker retry then Aborted; a dead Worker -> next candidate", async () => {
    const prefix = randomLanePrefix("block");
    const full = await workerIn(registrar, prefix);
    full.behaviour = { code: grpc.status.RESOURCE_EXHAUSTED, details: "no free slot" };
    const coord = startCoordinator({
      ETCD_ENDPOINTS: sharedEtcd(),
      COORDINATOR_REGISTRY_PREFIXES: prefix,
      COORDINATOR_WORKER_RPC_TIMEOUT_MS: "300",
    });
    const addr = await coord.grpcAddr();
    const exhausted = await waitFor(() => reserve(addr, "t-full"), (o) => !o.ok && o.code !== grpc.status.UNAVAILABLE);
    expect(code(exhausted)).toBe("RESOURCE_EXHAUSTED");
    expect(exhausted.ok ? "" : exhausted.details).toContain("all candidates rejected");

    full.behaviour = "hang";
    full.requests.length = 0;
    const aborted = await reserve(addr, "t-hang");
    expect(code(aborted)).toBe("ABORTED");
    expect(aborted.ok ? "" : aborted.details).toContain("unable to confirm slot reservation");
    expect(full.requests.map((r) => r.taskId)).toEqual(["t-hang", "t-hang"]);

    // A Worker that is registered but not listening (connection refused) is an explicit
    // failure: the Coordinator moves on to the next candidate at once.
    const deadPort = await freePort();
    const alive = await workerIn(registrar, prefix);
    await registrar.register(prefix, { ...alive.heartbeat(), workerAddr: `127.0.0.1:${deadPort}`, reservedSlots: 0, taskSlots: 100 });
    await registrar.register(prefix, { ...full.heartbeat(), reservedSlots: 50 }); // full: out of the picture
    const out = await waitFor(() => reserve(addr, "t-dead"), isOk);
    expect(out.ok && out.res.workerAddr).toBe(alive.addr);
    expect(
      coord.lines.some((l) => l.msg === "worker rejected slot request" && l.code === "WORKER_UNREACHABLE" && l.workerAddr === `127.0.0.1:${deadPort}`),
    ).toBe(true);
  });

  test("Unavailable while etcd is not there yet; serves once etcd starts and a Worker registers", async () => {
    const etcd = await EtcdProcess.start();
    cleanups.push(() => etcd.destroy());
    await etcd.stop();
    const prefix = randomLanePrefix("block");
    const coord = startCoordinator({ ETCD_ENDPOINTS: etcd.endpoint, COORDINATOR_REGISTRY_PREFIXES: prefix });
    const addr = await coord.grpcAddr();
    expect(await healthCheck(addr)).toBe(Serving.SERVING);
    expect(await healthCheck(addr, "coordinator.v1.CoordinatorService")).toBe(Serving.NOT_SERVING);
    const early = await reserve(addr, "t-early");
    expect(code(early)).toBe("UNAVAILABLE");

    await etcd.start();
    const late = await Registrar.connect(etcd.endpoint);
    cleanups.push(() => late.close());
    const worker = await workerIn(late, prefix);
    const out = await waitFor(() => reserve(addr, "t-late"), isOk);
    expect(out.ok && out.res.workerAddr).toBe(worker.addr);
  });

  test("etcd outage: routing continues within the grace period, Unavailable after it, and recovers when etcd returns", async () => {
    const etcd = await EtcdProcess.start();
    cleanups.push(() => etcd.destroy());
    const reg = await Registrar.connect(etcd.endpoint);
    cleanups.push(() => reg.close());
    const prefix = randomLanePrefix("block");
    const worker = await workerIn(reg, prefix);
    const coord = startCoordinator({
      ETCD_ENDPOINTS: etcd.endpoint,
      COORDINATOR_REGISTRY_PREFIXES: prefix,
      COORDINATOR_WATCH_GRACE_PERIOD_MS: "4000",
      COORDINATOR_HEARTBEAT_TIMEOUT_MS: "120000",
    });
    const addr = await coord.grpcAddr();
    await waitFor(() => reserve(addr, "t0"), isOk);

    // A short outage, shorter than the grace period: the cached view keeps routing.
    await etcd.stop();
    await coord.waitForLog((l) => l.msg === "registry watch broken; relisting" || l.msg === "registry list+watch failed");
    expect(await reserve(addr, "t1")).toMatchObject({ ok: true, res: { workerAddr: worker.addr } });
    await etcd.start();
    await coord.waitForLog((l) => l.msg === "registry watch reconnected on every prefix");
    expect(await reserve(addr, "t2")).toMatchObject({ ok: true });

    // A long outage: once the grace period has passed the view is no longer trusted.
    await etcd.stop();
    const unavailable = await waitFor(() => reserve(addr, "t3"), (o) => !o.ok, 20_000, 250);
    expect(code(unavailable)).toBe("UNAVAILABLE");
    expect(await healthCheck(addr, "coordinator.v1.CoordinatorService")).toBe(Serving.NOT_SERVING);
    await etcd.start();
    const back = await waitFor(() => reserve(addr, "t4"), isOk);
    expect(back.ok && back.res.workerAddr).toBe(worker.addr);
  });

  test("/metrics serves the registry gauge by format, reservations by outcome, and build info", async () => {
    const prefix = randomLanePrefix("block");
    await workerIn(registrar, prefix);
    const coord = startCoordinator({
      ETCD_ENDPOINTS: sharedEtcd(),
      COORDINATOR_REGISTRY_PREFIXES: prefix,
      BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0",
    });
    const addr = await coord.grpcAddr();
    await waitFor(() => reserve(addr, "t-metrics"), isOk);
    const line = await coord.waitForLog((l) => l.msg === "metrics listening");
    const text = await (await fetch(`http://${line.addr}/metrics`)).text();
    expect(text).toContain('blockx_coordinator_registry_workers{format="v2"} 1');
    expect(text).toContain('blockx_coordinator_registry_workers{format="legacy"} 0');
    expect(text).toContain('blockx_coordinator_reservations_total{outcome="reserved"} 1');
    expect(text).toMatch(/blockx_coordinator_reservation_duration_seconds_count\{outcome="reserved"\} 1/);
    expect(text).toMatch(/blockx_build_info\{version="[^"]+",commit="[^"]+",bun_version="[^"]+",role="coordinator"\} 1/);
  });

  test("SIGTERM: a graceful stop that exits 0", async () => {
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: randomLanePrefix("block") });
    await coord.grpcAddr();
    expect(await coord.stop("SIGTERM")).toBe(0);
    expect(coord.lines.some((l) => l.msg === "stopped")).toBe(true);
  });

  test("an invalid variable stops the process with exit 2 and a message naming it", async () => {
    const coord = BlockxProcess.spawn(["coordinator"], { COORDINATOR_MAX_CANDIDATES: "abc", COORDINATOR_CPU_RED_LINE: "1.5" });
    expect(await coord.exited).toBe(2);
    expect(coord.stderr).toContain('COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "abc"');
    expect(coord.stderr).toContain('COORDINATOR_CPU_RED_LINE: expected a number in (0, 1], got "1.5"');
  });
});

describe("blockx bundle-coordinator (compiled binary, real etcd)", () => {
  test("serves bundlecoordinator.v1 end to end, not coordinator.v1", async () => {
    const registrar = await Registrar.connect(sharedEtcd());
    cleanups.push(() => registrar.close());
    const prefix = randomLanePrefix("bundle");
    const worker = await workerIn(registrar, prefix);
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: prefix }, "bundle-coordinator");
    const addr = await coord.grpcAddr();
    const out = await waitFor(() => reserve(addr, "b-1", "bundle"), isOk);
    expect(out.ok && out.res).toEqual({ taskId: "b-1", workerAddr: worker.addr, slotId: "slot-b-1" });
    expect(code(await reserve(addr, "b-2", "block"))).toBe("UNIMPLEMENTED");
    expect(await runPython([addr, "reserve", "bundlecoordinator.v1.BundleCoordinatorService", "py-b"])).toMatchObject({
      ok: true,
      workerAddr: worker.addr,
    });
  });

  test("rejects a block-kind prefix in COORDINATOR_REGISTRY_PREFIXES at start-up", async () => {
    const coord = BlockxProcess.spawn(["bundle-coordinator"], { COORDINATOR_REGISTRY_PREFIXES: "/blockx/workers/" });
    expect(await coord.exited).toBe(2);
    expect(coord.stderr).toContain("COORDINATOR_REGISTRY_PREFIXES");
    expect(coord.stderr).toContain("names block workers, but this is the bundle coordinator");
  });

  test("watches the legacy and the prod v2 bundle prefixes by default", async () => {
    const coord = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd(), COORDINATOR_REGISTRY_PREFIXES: "" }, "bundle-coordinator");
    // An empty list is not the default: it is rejected, naming the variable.
    expect(await coord.exited).toBe(2);
    const dflt = startCoordinator({ ETCD_ENDPOINTS: sharedEtcd() }, "bundle-coordinator");
    const line = await dflt.waitForLog((l) => l.msg === "grpc listening");
    expect(line.prefixes).toEqual(["/blockx/bundle-workers/", "/blockx/prod/lanes/default/bundle-workers/"]);
  });
});
