/**
 * bench/coordinator/channel-cost.ts: what one Coordinator -> Worker channel costs (issue 22: could
 * a Coordinator keep a warm channel to every Worker?). N channels, each to its own loopback address
 * (127.1.x.y) on one in-process server, each connected by one call; prints the connect time per
 * channel and the RSS growth per channel against the process before them. Two kinds, each in a
 * process of its own: the Coordinator's Http2UnaryChannel (one node:http2 connection), and a
 * grpc-js WorkerService client (what the Coordinator used before). Client and server sides live in
 * one process, so the per-channel figure is an upper bound for the Coordinator's side.
 *
 *   bun bench/coordinator/channel-cost.ts [--channels 2000] [--client http2|grpc-js]   (without --client: both)
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { Http2UnaryChannel } from "../../src/common/grpc/http2-unary-channel";
import { WorkerServiceClient, WorkerServiceService } from "../../src/gen/worker/v1/worker";

const { values } = parseArgs({ options: { channels: { type: "string", default: "2000" }, client: { type: "string" } } });
const N = Number(values.channels);

if (values.client === undefined) {
  for (const client of ["http2", "grpc-js"]) {
    const p = Bun.spawn([process.execPath, import.meta.path, "--channels", String(N), "--client", client], { stdout: "inherit", stderr: "inherit" });
    await p.exited;
    console.log("");
  }
  process.exit(0);
}
if (values.client !== "http2" && values.client !== "grpc-js") throw new Error(`--client: http2 or grpc-js, got ${values.client}`);

const server = new grpc.Server();
// No method implemented: every call answers UNIMPLEMENTED, which is enough to connect.
server.addService(WorkerServiceService, {} as never);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("0.0.0.0:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);
Bun.gc(true);
const rssBefore = process.memoryUsage().rss;
const started = performance.now();
const closers: (() => void)[] = [];
for (let i = 0; i < N; i++) {
  const addr = `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}:${port}`;
  if (values.client === "http2") {
    const c = new Http2UnaryChannel(addr, { kind: "insecure" }, ["worker"]);
    closers.push(() => c.close());
    await c.unary(WorkerServiceService.requestTaskSlot.path, new Uint8Array(0), {}, Date.now() + 5_000).catch(() => {});
  } else {
    const c = new WorkerServiceClient(`ipv4:${addr}`, grpc.credentials.createInsecure(), { "grpc.keepalive_time_ms": 30_000 });
    closers.push(() => c.close());
    await new Promise<void>((resolve) => c.requestTaskSlot({ taskId: "t", ttlMs: 1 }, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, () => resolve()));
  }
}
const ms = performance.now() - started;
Bun.gc(true);
const grownMb = (process.memoryUsage().rss - rssBefore) / 1048576;
console.log(`${values.client}: ${N} channels, each to its own address, connected one after another by one call each`);
console.log(`connect and first call: ${(ms / N).toFixed(2)} ms per channel (${ms.toFixed(0)} ms in all)`);
console.log(`RSS: +${grownMb.toFixed(1)} MB against the process before them = ${((grownMb * 1024) / N).toFixed(1)} KB per channel (client and server side)`);
console.log(`at 10,000 Workers: about ${((grownMb / N) * 10_000).toFixed(0)} MB`);
for (const close of closers) close();
server.forceShutdown();
process.exit(0);
