/**
 * bench/coordinator/channel-cost.ts: what one Coordinator -> Worker channel costs (issue 22: could
 * a Coordinator keep a warm channel to every Worker?). N grpc-js WorkerService clients, each to its
 * own loopback address (127.1.x.y) on one in-process server, each connected (waitForReady); prints
 * the connect time per channel and the RSS growth per channel against the process before them.
 * Client and server sides live in this one process, so the per-channel figure is an upper bound
 * for the Coordinator's side.
 *
 *   bun bench/coordinator/channel-cost.ts [--channels 2000]
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { WorkerServiceClient, WorkerServiceService } from "../../src/gen/worker/v1/worker";

const { values } = parseArgs({ options: { channels: { type: "string", default: "2000" } } });
const N = Number(values.channels);

const server = new grpc.Server();
server.addService(WorkerServiceService, {} as never);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("0.0.0.0:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);
Bun.gc(true);
const rssBefore = process.memoryUsage().rss;
const started = performance.now();
const clients: WorkerServiceClient[] = [];
for (let i = 0; i < N; i++) {
  const c = new WorkerServiceClient(`127.1.${Math.floor(i / 250)}.${(i % 250) + 1}:${port}`, grpc.credentials.createInsecure(), { "grpc.keepalive_time_ms": 30_000 });
  clients.push(c);
  await new Promise<void>((resolve, reject) => c.waitForReady(Date.now() + 5_000, (e) => (e ? reject(e) : resolve())));
}
const ms = performance.now() - started;
Bun.gc(true);
const grownMb = (process.memoryUsage().rss - rssBefore) / 1048576;
console.log(`${N} channels, each to its own address, connected one after another`);
console.log(`connect: ${(ms / N).toFixed(2)} ms per channel (${ms.toFixed(0)} ms in all)`);
console.log(`RSS: +${grownMb.toFixed(1)} MB against the process before them = ${((grownMb * 1024) / N).toFixed(1)} KB per channel (client and server side)`);
console.log(`at 10,000 Workers: about ${((grownMb / N) * 10_000).toFixed(0)} MB`);
for (const c of clients) c.close();
server.forceShutdown();
process.exit(0);
