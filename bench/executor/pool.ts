/**
 * bench/executor/pool.ts: calls through the executor pool against a bare framed ping-pong over
 * a Unix socket between Bun and one python3 process (echo_peer.py), measured in the same run.
 *
 *   bun bench/executor/pool.ts [--calls 3000] [--seconds 3] [--inflight 2000] [--rounds 5]   (medians of interleaved rounds)
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { silentLogger } from "../../src/common/logging/logger";
import type { CallOwner } from "../../src/runtime/calls/call";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { LoneCallPoll } from "../../src/runtime/executor/lone-call-poll";
import { encodeFrame, FrameDecoder } from "../../src/runtime/executor/frame-codec";
import { resolvePython } from "../../src/runtime/executor/isolation";
import { syncInvokerVars } from "../../src/syncinvoker/app/config";
import { latency, throughput } from "../support/measure";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "3000" },
    seconds: { type: "string", default: "3" },
    inflight: { type: "string", default: "2000" },
    rounds: { type: "string", default: "5" },
  },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const INFLIGHT = Number(values.inflight);
const python = resolvePython("python3");
/** The Sync Invoker's default executor spin (SYNCINVOKER_HOT_SPIN_US). */
const SYNCINVOKER_HOT_SPIN_US = syncInvokerVars.hotSpinUs.schema.parse(syncInvokerVars.hotSpinUs.defaultRaw);

/** The baseline: Bun <-> one python3 echoing frames over a Unix socket. */
async function barePingPong(): Promise<{ call: (i: number) => Promise<unknown>; stop: () => void }> {
  const path = join("/tmp", `blockx-bench-${process.pid}.sock`);
  const waiting = new Map<number, () => void>();
  let resolveConn: (s: import("bun").Socket<unknown>) => void;
  const connected = new Promise<import("bun").Socket<unknown>>((r) => (resolveConn = r));
  const decoder = new FrameDecoder();
  const backlog: Uint8Array[] = [];
  const writeAll = (s: import("bun").Socket<unknown>) => {
    while (backlog.length > 0) {
      const d = backlog[0]!;
      const n = s.write(d);
      if (n < d.length) {
        backlog[0] = d.subarray(Math.max(0, n));
        return;
      }
      backlog.shift();
    }
  };
  const listener = Bun.listen<unknown>({
    unix: path,
    socket: {
      open: (s) => resolveConn(s),
      drain: (s) => writeAll(s),
      data: (_s, chunk) => {
        for (const m of decoder.push(chunk) as { seq: number }[]) waiting.get(m.seq)?.();
      },
    },
  });
  const peer = Bun.spawn([python, join(import.meta.dir, "echo_peer.py"), path], { stdout: "inherit", stderr: "inherit" });
  const socket = await connected;
  let corked: Uint8Array[] = [];
  const flush = () => {
    const total = corked.reduce((n, f) => n + f.length, 0);
    const data = new Uint8Array(total);
    let off = 0;
    for (const f of corked) {
      data.set(f, off);
      off += f.length;
    }
    corked = [];
    backlog.push(data);
    if (backlog.length === 1) writeAll(socket);
  };
  return {
    call: (i) =>
      new Promise<void>((resolve) => {
        waiting.set(i, () => {
          waiting.delete(i);
          resolve();
        });
        // Same shape and size as an ExecuteCall of the pool benchmark.
        corked.push(encodeFrame({ type: "ExecuteCall", callId: `c${i}`, seq: i, digest: "d".repeat(64), source: SOURCE, entry: "main", args: i, budgetMs: 5000 }));
        if (corked.length === 1) queueMicrotask(flush);
      }),
    stop: () => {
      peer.kill();
      listener.stop(true);
    },
  };
}

const SOURCE = "def main(ctx, x):\n    return x + 1\n";
const IO_SOURCE = "def main(ctx, x):\n    return ctx.io('echo', 'get', x)\n";
const ASYNC_IO_SOURCE = "async def main(ctx, x):\n    return await ctx.io('echo', 'get', x)\n";
const echoOwner: CallOwner = { io: async (r) => ({ ok: true, value: r.params, ioMs: 0 }) };

/**
 * polling: the call with the pool's own lone-call poll around it (LoneCallPoll, with the pool's
 * default EXECUTOR_HOT_WAIT_US), given to the bare ping-pong so that the pool is also compared
 * like for like.
 */
const polling = (call: (i: number) => Promise<unknown>) => {
  const poll = new LoneCallPoll(defaultExecutorPoolConfig().hotWaitUs);
  return async (i: number): Promise<unknown> => {
    poll.sent(true);
    try {
      return await call(i);
    } finally {
      poll.heard();
    }
  };
};

// Every series lives at once and runs in interleaved rounds (medians): the bare ping-pong, a pool
// of 8 executors for the latencies (one with EXECUTOR_HOT_WAIT_US=0, one whose executors also spin
// for the next call as the Sync Invoker's do), and pools of 1, 2 and 8 for calls/s.
const bare = await barePingPong();
const pools = new Map<number | "cold" | "hot", ExecutorPool>();
for (const count of [1, 2, 8]) pools.set(count, await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: count }), silentLogger(), { waitForAll: true }));
pools.set("cold", await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 8, hotWaitUs: 0 }), silentLogger(), { waitForAll: true }));
pools.set("hot", await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 8, hotSpinUs: SYNCINVOKER_HOT_SPIN_US }), silentLogger(), { waitForAll: true }));
let n = 0;
// With its digest, as the Worker and the Sync Invoker call the pool (they compute it once per
// function); without one the pool hashes the source on every call.
const digests = new Map([SOURCE, IO_SOURCE, ASYNC_IO_SOURCE].map((src) => [src, createHash("sha256").update(src).digest("hex")]));
const run = (count: number | "cold" | "hot", src: string) => (i: number) =>
  pools.get(count)!.execute({ callId: `b${n++}`, fn: { source: src, entry: "main", digest: digests.get(src)! }, args: i }, echoOwner);
const perRound = Math.ceil(CALLS / ROUNDS);
const latencyCalls = {
  bare: bare.call,
  barePolling: polling(bare.call),
  plain: run(8, SOURCE),
  cold: run("cold", SOURCE),
  hot: run("hot", SOURCE),
  io: run(8, IO_SOURCE),
  asyncIo: run(8, ASYNC_IO_SOURCE),
};
const latencies = await interleavedRounds(Object.keys(latencyCalls) as (keyof typeof latencyCalls)[], ROUNDS, (k) => latency(latencyCalls[k], perRound, 300));
const tputRuns = await interleavedRounds(["bare", "1", "2", "8"] as const, ROUNDS, (k) =>
  throughput(k === "bare" ? bare.call : run(Number(k), SOURCE), INFLIGHT, SECONDS / ROUNDS),
);
bare.stop();
for (const p of pools.values()) await p.close();
const p50 = (k: keyof typeof latencies) => median(latencies[k].map((l) => l.p50));
const p99 = (k: keyof typeof latencies) => median(latencies[k].map((l) => l.p99));
const bareLat = { p50: p50("bare"), p99: p99("bare") };
const lat = { p50: p50("plain"), p99: p99("plain") };
const ioLat = { p50: p50("io") };
const coldLat = { p50: p50("cold"), p99: p99("cold") };
const hotLat = { p50: p50("hot"), p99: p99("hot") };
const barePollingLat = { p50: p50("barePolling"), p99: p99("barePolling") };
const asyncIoLat = { p50: p50("asyncIo") };
const bareTput = median(tputRuns.bare);
const tputs = ([1, 2, 8] as const).map((count) => [count, median(tputRuns[String(count) as "1" | "2" | "8"])] as const);

const us = (x: number) => `${x.toFixed(0)} µs`;
console.log(
  `Executor pool vs a bare framed ping-pong (Bun <-> python3 over a Unix socket), ${CALLS} serial calls, ${SECONDS} s at ${INFLIGHT} in flight, medians of ${ROUNDS} interleaved rounds\n`,
);
console.log("| measure | bare ping-pong (baseline) | through the pool | ratio |");
console.log("| --- | ---: | ---: | ---: |");
console.log(`| p50, \`return x + 1\` | ${us(bareLat.p50)} | ${us(lat.p50)} | ${(lat.p50 / bareLat.p50).toFixed(2)}x |`);
console.log(`| p99, \`return x + 1\` | ${us(bareLat.p99)} | ${us(lat.p99)} | ${(lat.p99 / bareLat.p99).toFixed(2)}x |`);
console.log(`| p50, \`return x + 1\`, EXECUTOR_HOT_WAIT_US=0 (the pool sleeps until the answer) | ${us(bareLat.p50)} | ${us(coldLat.p50)} | ${(coldLat.p50 / bareLat.p50).toFixed(2)}x |`);
console.log(`| p50, \`return x + 1\`, executors spinning for the next call too (the Sync Invoker's pool, SYNCINVOKER_HOT_SPIN_US=${SYNCINVOKER_HOT_SPIN_US}) | ${us(bareLat.p50)} | ${us(hotLat.p50)} | ${(hotLat.p50 / bareLat.p50).toFixed(2)}x |`);
console.log(`| p50, \`return x + 1\`, the bare ping-pong polling too (like for like) | ${us(barePollingLat.p50)} | ${us(lat.p50)} | ${(lat.p50 / barePollingLat.p50).toFixed(2)}x |`);
for (const [count, t] of tputs) console.log(`| calls/s, EXECUTOR_COUNT=${count} | ${bareTput.toFixed(0)} | ${t.toFixed(0)} | ${(t / bareTput).toFixed(2)}x |`);
console.log(`\nOne IO suspension answered at once (p50): def ${us(ioLat.p50)} (+${us(ioLat.p50 - lat.p50)}), async def ${us(asyncIoLat.p50)} (+${us(asyncIoLat.p50 - lat.p50)}) over the plain call`);
