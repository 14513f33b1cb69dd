/**
 * bench/coordinator/cold-channel.ts: what a Coordinator's first RequestTaskSlot to a Worker costs
 * (issue 22: with 10,000 Workers nearly every reservation goes to a Worker the Coordinator has not
 * called yet). A WorkerService server in a process of its own (it answers RequestTaskSlot at once);
 * this process times one RequestTaskSlot per new channel, each to its own loopback address, with
 * the Coordinator's channel (Http2UnaryChannel: one HTTP/2 connection of node:http2, no grpc-js
 * client), with a grpc-js channel to an ipv4: target (what the Coordinator used before) and to the
 * plain address (grpc-js's dns: resolver, which builds a DNS resolver per channel), against the
 * same calls over channels kept open. Medians of interleaved rounds of p50s.
 *
 *   bun bench/coordinator/cold-channel.ts [--calls 200] [--rounds 7]
 */
import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Http2UnaryChannel } from "../../src/common/grpc/http2-unary-channel";
import { RequestTaskSlotRequest, WorkerServiceClient, WorkerServiceService } from "../../src/gen/worker/v1/worker";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({ options: { calls: { type: "string", default: "200" }, rounds: { type: "string", default: "7" }, serve: { type: "boolean", default: false } } });

if (values.serve) {
  // The server side: a Worker that grants every slot at once.
  const { TaskSnapshot, TaskState, WorkerServiceService } = await import("../../src/gen/worker/v1/worker");
  const server = new grpc.Server();
  server.addService(WorkerServiceService, {
    requestTaskSlot: (call: grpc.ServerUnaryCall<{ taskId: string }, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: "s", state: TaskState.ALLOCATED })),
  } as never);
  server.bindAsync("0.0.0.0:0", grpc.ServerCredentials.createInsecure(), (e, port) => {
    if (e) throw e;
    console.log(port);
  });
} else {
  const child = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, join(import.meta.dir, "cold-channel.ts"), "--serve"], { stdout: "pipe", stderr: "inherit" });
  const first = await child.stdout.getReader().read();
  const port = Number(new TextDecoder().decode(first.value).trim());
  const CALLS = Number(values.calls);
  let seq = 0;
  const nextAddr = () => {
    const i = seq++;
    return `127.3.${Math.floor(i / 250) % 250}.${(i % 250) + 1}:${port}`;
  };
  const call = (c: WorkerServiceClient) =>
    new Promise<number>((resolve, reject) => {
      const t = performance.now();
      c.requestTaskSlot({ taskId: `t${seq}`, ttlMs: 1_000 }, new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (e) => (e ? reject(e) : resolve(performance.now() - t)));
    });
  const request = RequestTaskSlotRequest.encode({ taskId: "t", ttlMs: 1_000 }).finish();
  const callH2 = async (c: Http2UnaryChannel) => {
    const t = performance.now();
    await c.unary(WorkerServiceService.requestTaskSlot.path, request, {}, Date.now() + 5_000);
    return performance.now() - t;
  };
  const warm = new WorkerServiceClient(nextAddr(), grpc.credentials.createInsecure());
  await call(warm);
  const warmH2 = new Http2UnaryChannel(nextAddr(), { kind: "insecure" }, ["worker"]);
  await callH2(warmH2);
  const series = {
    "cold, Http2UnaryChannel (the Coordinator's)": async () => {
      const d: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const c = new Http2UnaryChannel(nextAddr(), { kind: "insecure" }, ["worker"]);
        d.push(await callH2(c));
        c.close();
      }
      return median(d);
    },
    "cold, grpc-js, ipv4: target (the Coordinator's before)": async () => {
      const d: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const c = new WorkerServiceClient(`ipv4:${nextAddr()}`, grpc.credentials.createInsecure());
        d.push(await call(c));
        c.close();
      }
      return median(d);
    },
    "cold, grpc-js, dns: target (grpc-js's default)": async () => {
      const d: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const c = new WorkerServiceClient(nextAddr(), grpc.credentials.createInsecure());
        d.push(await call(c));
        c.close();
      }
      return median(d);
    },
    "warm, Http2UnaryChannel (a channel kept open)": async () => {
      const d: number[] = [];
      for (let i = 0; i < CALLS; i++) d.push(await callH2(warmH2));
      return median(d);
    },
    "warm, grpc-js (a channel kept open)": async () => {
      const d: number[] = [];
      for (let i = 0; i < CALLS; i++) d.push(await call(warm));
      return median(d);
    },
  } as const;
  type Key = keyof typeof series;
  const keys = Object.keys(series) as Key[];
  for (const k of keys) await series[k](); // warm-up: JIT, the server's first connections
  const results = await interleavedRounds(keys, Number(values.rounds), (k) => series[k]());
  const warmP50 = median(results["warm, grpc-js (a channel kept open)"]);
  console.log(`RequestTaskSlot over loopback, ${CALLS} calls per round, medians of ${values.rounds} interleaved rounds of p50s`);
  console.log("");
  console.log("| series | p50 | against warm grpc-js | rounds |");
  console.log("| --- | ---: | ---: | --- |");
  for (const k of keys) {
    const m = median(results[k]);
    console.log(`| ${k} | ${(m * 1000).toFixed(0)} µs | ${(m / warmP50).toFixed(2)}x | ${results[k].map((v) => (v * 1000).toFixed(0)).join(", ")} |`);
  }
  const h2 = median(results["cold, Http2UnaryChannel (the Coordinator's)"]);
  const h2Warm = median(results["warm, Http2UnaryChannel (a channel kept open)"]);
  const ip = median(results["cold, grpc-js, ipv4: target (the Coordinator's before)"]);
  const dns = median(results["cold, grpc-js, dns: target (grpc-js's default)"]);
  console.log("");
  console.log(`- a first call over the Coordinator's channel costs ${((h2 - h2Warm) * 1000).toFixed(0)} µs more than a warm one; over grpc-js, ipv4: ${((ip - warmP50) * 1000).toFixed(0)} µs, dns: ${((dns - warmP50) * 1000).toFixed(0)} µs`);
  console.log(`- cold: Http2UnaryChannel / grpc-js ipv4: = ${(h2 / ip).toFixed(2)}x; warm: ${(h2Warm / warmP50).toFixed(2)}x`);
  warm.close();
  warmH2.close();
  child.kill();
  process.exit(0);
}
