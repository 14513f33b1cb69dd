/**
 * bench/coordinator/reserve.ts: ReserveWorkerSlot over loopback through the compiled
 * Coordinator (dist/blockx) against a minimal Worker process, compared with the baseline
 * measured in the same run: a bare grpc-js unary round trip to that same Worker process.
 * A reservation is two hops (client -> Coordinator -> Worker), so 2x the baseline is the floor.
 * A second baseline, bench/coordinator/bare-proxy.ts, does the same two hops with no logic at
 * all: the Coordinator's own cost is what it adds to that.
 *
 *   bun bench/coordinator/reserve.ts [--calls 3000] [--seconds 3] [--rounds 5]   (medians of interleaved rounds)
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { CoordinatorServiceClient } from "../../src/gen/coordinator/v1/coordinator";
import { WorkerServiceClient } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { Registrar, randomLanePrefix } from "../../test/support/worker-double";
import { measureSeries } from "../support/measure";
import { spawnPortPrinter } from "../support/port-printer";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "3000" }, seconds: { type: "string", default: "3" }, rounds: { type: "string", default: "5" } },
});
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);

type Call = (seq: number) => Promise<void>;

/** unary calls `method` with a fresh task id per call (the tag keeps the ids of each series apart). */
function unary<C extends grpc.Client>(
  client: C,
  method: (req: { taskId: string; ttlMs: number }, md: grpc.Metadata, cb: (e: grpc.ServiceError | null) => void) => unknown,
  tag: string,
): Call {
  return (seq) =>
    new Promise((resolve, reject) => {
      method.call(client, { taskId: `${tag}-${seq}`, ttlMs: 5000 }, new grpc.Metadata(), (e) => (e ? reject(e) : resolve()));
    });
}

const etcd = await EtcdProcess.start();
const worker = await spawnPortPrinter("coordinator/minimal-worker.ts");
const workerAddr = worker.addr;
const proxy = await spawnPortPrinter("coordinator/bare-proxy.ts", workerAddr);
const prefix = randomLanePrefix("block");
const registrar = await Registrar.connect(etcd.endpoint);
await registrar.register(prefix, {
  workerAddr,
  taskSlots: 1_000_000,
  reservedSlots: 0,
  runningTasks: 0,
  cpuPercent: 0.1,
  memoryPercent: 0.1,
  memoryAvailableBytes: 8e9,
  memoryTotalBytes: 16e9,
  processRssBytes: 1e8,
  errorRate: 0,
  lastHeartbeatMs: Date.now() + 3_600_000, // stays fresh for the whole run
});
const coord = BlockxProcess.spawn(["coordinator"], {
  COORDINATOR_LISTEN: "127.0.0.1:0",
  ETCD_ENDPOINTS: etcd.endpoint,
  COORDINATOR_REGISTRY_PREFIXES: prefix,
  BLOCKX_LOG_LEVEL: "info", // per-reservation lines are debug: nothing is logged per call
});

try {
  const coordAddr = await coord.grpcAddr();
  const coordClient = new CoordinatorServiceClient(coordAddr, grpc.credentials.createInsecure());
  const workerClient = new WorkerServiceClient(workerAddr, grpc.credentials.createInsecure());
  const reserveCall = unary(coordClient, coordClient.reserveWorkerSlot as never, "reserve");
  const echoCall = unary(workerClient, workerClient.requestTaskSlot as never, "echo");
  const proxyClient = new CoordinatorServiceClient(proxy.addr, grpc.credentials.createInsecure());
  const proxyCall = unary(proxyClient, proxyClient.reserveWorkerSlot as never, "proxy");
  // Wait until the Coordinator has listed the registry.
  for (let i = 0; ; i++) {
    try {
      await reserveCall(-1 - i);
      break;
    } catch {
      await Bun.sleep(50);
    }
  }

  const f = await measureSeries({ echo: echoCall, proxy: proxyCall, reserve: reserveCall }, { calls: CALLS, inflight: 64, seconds: SECONDS, rounds: ROUNDS });
  const [echo1, proxy1, reserve1] = [f.echo, f.proxy, f.reserve];
  const [echoTput, proxyTput, reserveTput] = [f.echo.perSecond, f.proxy.perSecond, f.reserve.perSecond];

  const us = (x: number) => `${x.toFixed(0)} µs`;
  console.log(`ReserveWorkerSlot over loopback (compiled coordinator, minimal worker process), ${CALLS} calls, ${SECONDS} s at 64 in flight, medians of ${ROUNDS} interleaved rounds`);
  console.log("");
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  console.log("| measure | bare unary (baseline) | bare two-hop proxy | ReserveWorkerSlot | reserve / unary | reserve / proxy |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  console.log(`| p50, concurrency 1 | ${us(echo1.p50)} | ${us(proxy1.p50)} | ${us(reserve1.p50)} | ${x(reserve1.p50, echo1.p50)} | ${x(reserve1.p50, proxy1.p50)} |`);
  console.log(`| p99, concurrency 1 | ${us(echo1.p99)} | ${us(proxy1.p99)} | ${us(reserve1.p99)} | ${x(reserve1.p99, echo1.p99)} | ${x(reserve1.p99, proxy1.p99)} |`);
  console.log(
    `| calls/s, 64 in flight | ${echoTput.toFixed(0)} | ${proxyTput.toFixed(0)} | ${reserveTput.toFixed(0)} | ${x(reserveTput, echoTput)} | ${x(reserveTput, proxyTput)} |`,
  );
  proxyClient.close();
  coordClient.close();
  workerClient.close();
} finally {
  coord.proc.kill("SIGKILL");
  worker.proc.kill("SIGKILL");
  proxy.proc.kill("SIGKILL");
  registrar.close();
  await etcd.destroy();
}
