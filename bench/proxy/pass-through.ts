/**
 * bench/proxy/pass-through.ts: what `blockx proxy` (compiled, Unix socket, byte pass-through
 * routed by x-blockx-worker-addr) adds to a worker.v1 call, against two baselines measured in
 * the same run: the same RequestTaskSlot straight to the Worker (one hop), and the bare grpc-js
 * two-hop server of bench/coordinator (decodes, calls on, re-encodes: the floor of two hops).
 *
 *   bun bench/proxy/pass-through.ts [--calls 3000] [--seconds 3] [--rounds 5]   (medians of interleaved rounds)
 */
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CoordinatorServiceClient } from "../../src/gen/coordinator/v1/coordinator";
import { WorkerServiceClient } from "../../src/gen/worker/v1/worker";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { testHeartbeat } from "../../test/support/heartbeat";
import { measureSeries, untilOk } from "../support/measure";
import { spawnPortPrinter } from "../support/port-printer";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "3000" }, seconds: { type: "string", default: "3" }, rounds: { type: "string", default: "5" } },
});
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);

const worker = await spawnPortPrinter("coordinator/minimal-worker.ts");
const bare = await spawnPortPrinter("coordinator/bare-proxy.ts", worker.addr);
const dir = mkdtempSync(join(tmpdir(), "blockx-proxy-bench-"));
const socket = join(dir, "proxy.sock");
// The proxy relays only to registered Workers: an etcd of the bench's own, with the Worker's heartbeat.
const etcd = await EtcdProcess.start();
const registry = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 2_000 });
await registry.put(`/blockx/test/lanes/default/block-workers/${worker.addr}`).value(JSON.stringify(testHeartbeat(worker.addr, { lastHeartbeatMs: Date.now() })));
registry.close();
const proxy = BlockxProcess.spawn(["proxy"], { PROXY_SOCKET_PATH: socket, BLOCKX_LOG_LEVEL: "warn", ETCD_ENDPOINTS: etcd.endpoint });

try {
  await proxy.waitForLog(() => false, 1500).catch(() => {}); // warn level: no "listening" line; give it time to bind
  const direct = new WorkerServiceClient(worker.addr, grpc.credentials.createInsecure());
  const viaProxy = new WorkerServiceClient(`unix:${socket}`, grpc.credentials.createInsecure());
  const twoHop = new CoordinatorServiceClient(bare.addr, grpc.credentials.createInsecure());
  const header = new grpc.Metadata();
  header.set("x-blockx-worker-addr", worker.addr);
  const call = (c: WorkerServiceClient, md: () => grpc.Metadata, tag: string) => (seq: number) =>
    new Promise<void>((resolve, reject) => c.requestTaskSlot({ taskId: `${tag}-${seq}`, ttlMs: 5000 }, md(), (e) => (e ? reject(e) : resolve())));
  const directCall = call(direct, () => new grpc.Metadata(), "d");
  const proxyCall = call(viaProxy, () => header.clone(), "p");
  const bareCall = (seq: number) => new Promise<void>((resolve, reject) => twoHop.reserveWorkerSlot({ taskId: `b-${seq}` }, (e) => (e ? reject(e) : resolve())));
  await untilOk(proxyCall);
  const f = await measureSeries({ direct: directCall, bare: bareCall, proxy: proxyCall }, { calls: CALLS, inflight: 64, seconds: SECONDS, rounds: ROUNDS });
  const us = (v: number) => `${v.toFixed(0)} µs`;
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
  console.log(`worker.v1 RequestTaskSlot through blockx proxy (compiled, UDS), ${CALLS} calls, ${SECONDS} s at 64 in flight, medians of ${ROUNDS} interleaved rounds`);
  console.log("");
  console.log("| measure | direct (1 hop) | bare two-hop (TCP) | blockx proxy (UDS) | proxy / direct | proxy / bare two-hop |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const [label, key, fmt] of [["p50, concurrency 1", "p50", us], ["p99, concurrency 1", "p99", us], ["calls/s, 64 in flight", "perSecond", (v: number) => v.toFixed(0)]] as const) {
    const [d, b, p] = [f.direct[key], f.bare[key], f.proxy[key]];
    console.log(`| ${label} | ${fmt(d)} | ${fmt(b)} | ${fmt(p)} | ${x(p, d)} | ${x(p, b)} |`);
  }
  direct.close();
  viaProxy.close();
  twoHop.close();
} finally {
  await proxy.stop("SIGTERM");
  worker.proc.kill("SIGKILL");
  bare.proc.kill("SIGKILL");
  await etcd.destroy();
  rmSync(dir, { recursive: true, force: true });
}
