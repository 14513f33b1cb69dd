/**
 * Hostile input at every gRPC surface (issue 51 item 8): malformed, oversized, deeply nested,
 * out-of-range and mistyped request bodies (test/fuzz/proto-mutations.ts, seeded) sent as raw bytes
 * to every method of every role: the Worker, the block and bundle Coordinators, the Sync Invoker,
 * and the UDS proxy in front of them. Each case must end with an answer within its deadline (a
 * status with words for a refusal; UNKNOWN, an unhandled error, is a finding), the process must
 * still be serving after every method (its health says SERVING, it has not exited), and its memory
 * must not grow without bound. `make test` runs FUZZ_CASES (22 by default: two of each kind) per
 * method; `make fuzz` many more. The figures per surface are printed.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BundleCoordinatorServiceService } from "../../src/gen/bundlecoordinator/v1/bundle_coordinator";
import { CoordinatorServiceService } from "../../src/gen/coordinator/v1/coordinator";
import { SyncInvokerServiceService } from "../../src/gen/syncinvoker/v1/sync_invoker";
import { WorkerServiceService } from "../../src/gen/worker/v1/worker";
import type { BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { healthCheck } from "../support/coordinator-client";
import { HealthCheckResponse_ServingStatus } from "../../src/gen/grpc/health/v1/health";
import { suiteChannel, type SuiteRole } from "../support/suite-tls";
import { fuzzMethod, methodsOf, type MethodReport } from "./grpc-fuzz";

const CASES = Number(process.env.FUZZ_CASES ?? 22);
const SEED = Number(process.env.FUZZ_SEED ?? 20261206);
const DEADLINE_MS = 10_000;
/** A server's resident memory may grow this much over a surface's whole run (caches warming, allocator slack); more is a leak. */
const RSS_GROWTH_LIMIT_MB = 256;

const cluster = new TestCluster();
afterAll(() => cluster.stop());
const summary: string[] = [];
afterAll(() => console.log(`fuzz (seed ${SEED}, ${CASES} cases a method):\n${summary.join("\n")}`));

const SERVER_ROLES = ["coordinator", "worker", "syncinvoker"] as const;
const alive = (p: BlockxProcess) => p.proc.exitCode === null && p.proc.signalCode === null;

function rssMb(proc: BlockxProcess): number {
  const status = readFileSync(`/proc/${proc.proc.pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)![1]) / 1024;
}

async function serving(addr: string, service: string): Promise<boolean> {
  return (await healthCheck(addr, service)) === HealthCheckResponse_ServingStatus.SERVING;
}

/**
 * fuzzSurface runs every method of `service` against `addr` as `as`, checking after each method
 * that the process still serves, and returns the reports.
 */
async function fuzzSurface(name: string, proc: BlockxProcess, addr: string, as: SuiteRole, service: Record<string, unknown>, healthName: string, client?: grpc.Client): Promise<MethodReport[]> {
  const { credentials, options } = suiteChannel(as, addr, SERVER_ROLES);
  const c = client ?? new grpc.Client(addr, credentials, { ...options, "grpc.max_send_message_length": 64 << 20, "grpc.max_receive_message_length": 64 << 20 });
  const before = rssMb(proc);
  const reports: MethodReport[] = [];
  try {
    for (const [i, m] of methodsOf(service).entries()) {
      const r = await fuzzMethod(c, m, { seed: SEED + i, cases: CASES, deadlineMs: DEADLINE_MS });
      reports.push(r);
      expect(alive(proc)).toBe(true);
      if (healthName) expect(await serving(addr, healthName)).toBe(true);
    }
  } finally {
    if (!client) c.close();
  }
  const grew = rssMb(proc) - before;
  const cases = reports.reduce((n, r) => n + r.cases, 0);
  const codes = new Map<string, number>();
  for (const r of reports) for (const [k, v] of r.codes) codes.set(k, (codes.get(k) ?? 0) + v);
  summary.push(`  ${name}: ${reports.length} methods, ${cases} cases; answers ${[...codes].map(([k, v]) => `${k} ${v}`).join(", ")}; RSS ${grew >= 0 ? "+" : ""}${grew.toFixed(0)} MB`);
  expect(grew).toBeLessThan(RSS_GROWTH_LIMIT_MB);
  return reports;
}

const findings = (rs: readonly MethodReport[]) => rs.flatMap((r) => r.findings);

describe("hostile request bodies at every gRPC method", () => {
  test("the Worker: every method answers each case with a status and words, and keeps serving", async () => {
    const w = await cluster.worker();
    // As a Coordinator (RequestTaskSlot is theirs) and as a client (the rest): each identity's handlers see the cases.
    const asCoordinator = await fuzzSurface("worker (as a coordinator)", w.proc, w.addr, "coordinator", WorkerServiceService, "worker.v1.WorkerService");
    const asClient = await fuzzSurface("worker (as a client)", w.proc, w.addr, "client", WorkerServiceService, "worker.v1.WorkerService");
    expect([...findings(asCoordinator), ...findings(asClient)]).toEqual([]);
  }, 600_000);

  test("the block and bundle Coordinators", async () => {
    const c = await cluster.coordinator();
    const b = await cluster.coordinator({}, "bundle");
    const block = await fuzzSurface("coordinator", c.proc, c.addr, "client", CoordinatorServiceService, "coordinator.v1.CoordinatorService");
    const bundle = await fuzzSurface("bundle coordinator", b.proc, b.addr, "client", BundleCoordinatorServiceService, "bundlecoordinator.v1.BundleCoordinatorService");
    expect([...findings(block), ...findings(bundle)]).toEqual([]);
  }, 600_000);

  test("the Sync Invoker", async () => {
    const s = cluster.spawn("syncinvoker", { SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "1" });
    const addr = await s.grpcAddr();
    const reports = await fuzzSurface("sync invoker", s, addr, "client", SyncInvokerServiceService, "syncinvoker.v1.SyncInvokerService");
    expect(findings(reports)).toEqual([]);
  }, 600_000);

  test("the UDS proxy, relaying to a real Worker and Coordinator", async () => {
    const w = await cluster.worker();
    const c = await cluster.coordinator();
    const socket = join(cluster.dir, "fuzz-proxy.sock");
    const proxy = cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_COORDINATOR_ADDRS: c.addr });
    await proxy.grpcAddr();
    const client = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": 64 << 20 });
    try {
      // Worker calls name their Worker in a header: the registered one, so the cases reach it through the proxy.
      const viaWorker: MethodReport[] = [];
      for (const [i, m] of methodsOf(WorkerServiceService).entries()) {
        const md = () => {
          const x = new grpc.Metadata();
          x.set("x-blockx-worker-addr", w.addr);
          return x;
        };
        viaWorker.push(await fuzzMethod(client, m, { seed: SEED + 100 + i, cases: CASES, deadlineMs: DEADLINE_MS, metadata: md }));
        expect(alive(proxy)).toBe(true);
      }
      const viaCoordinator = await fuzzSurface("proxy (to the Coordinator)", proxy, `unix:${socket}`, "client", CoordinatorServiceService, "", client);
      summary.push(`  proxy (to the Worker): ${viaWorker.length} methods, ${viaWorker.reduce((n, r) => n + r.cases, 0)} cases`);
      expect([...findings(viaWorker), ...findings(viaCoordinator)]).toEqual([]);
      expect(alive(w.proc)).toBe(true);
    } finally {
      client.close();
    }
  }, 600_000);
});
