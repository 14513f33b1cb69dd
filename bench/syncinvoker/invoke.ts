/**
 * bench/syncinvoker/invoke.ts: Invoke of a trivial function through the compiled Sync Invoker
 * (dist/blockx syncinvoker, real executors) beside two baselines measured in the same run:
 *  - bare gRPC: the same RPC and messages against a grpc-js server that answers at once
 *    (bare-invoker.ts, its own process, like the invoker);
 *  - bare executor: ExecutorPool.execute of the same function in this process (the executor
 *    round trip over its Unix socket, no gRPC).
 * A third series runs the invoker's handler in this process over the same pool (no gRPC): its
 * excess over the bare executor is the invoker's own code (validation, admission, metrics).
 * An Invoke is one of each, so p50(Invoke) / (p50(bare gRPC) + p50(bare executor)) is the
 * invoker's own overhead; the aim is <= 1.3.
 *
 *   bun bench/syncinvoker/invoke.ts [--calls 2000] [--seconds 3] [--executors 2] [--calls-per-executor 1] [--hot-spin-us N]
 * (--hot-spin-us: the invoker's SYNCINVOKER_HOT_SPIN_US; its default when not given)
 */
import * as grpc from "@grpc/grpc-js";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { silentLogger } from "../../src/common/logging/logger";
import { SyncInvokerServiceClient, type InvokeRequest, type InvokeResponse } from "../../src/gen/syncinvoker/v1/sync_invoker";
import { MetricsRegistry } from "../../src/common/metrics/metrics";
import { PrecheckRunner } from "../../src/syncinvoker/adapters/precheck-runner";
import { ReadOnlyIo } from "../../src/syncinvoker/adapters/read-only-io";
import { SyncInvokerService } from "../../src/syncinvoker/adapters/sync-invoker-service";
import { loadSyncInvokerConfig } from "../../src/syncinvoker/app/config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { BackendRegistry } from "../../src/runtime/io/backends/backend-registry";
import { IoSubsystem } from "../../src/runtime/io/io-subsystem";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { Http2UnaryChannel } from "../../src/common/grpc/http2-unary-channel";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { SyncInvokerServiceService } from "../../src/gen/syncinvoker/v1/sync_invoker";
import { BlockxProcess } from "../../test/support/blockx-process";
import { latency, throughput } from "../support/measure";
import { treeCpuSeconds } from "../../test/support/proc-scan";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "2000" }, seconds: { type: "string", default: "3" }, executors: { type: "string", default: "2" }, "calls-per-executor": { type: "string", default: "1" }, "hot-spin-us": { type: "string" } },
});
const CALLS = Number(values.calls);
const SECONDS = Number(values.seconds);
const EXECUTORS = Number(values.executors);
const CALLS_PER_EXECUTOR = Number(values["calls-per-executor"]);
const SOURCE = "def main(ctx, x):\n    return x\n";
type Lat = { p50: number; p99: number };

/**
 * latencyAfterIdle times `call` after the caller has kept its core busy for `gapUs` (the wait is
 * not timed): the executor process has gone idle meanwhile, as it does between two Invokes, so
 * its wake-up is inside the figure, which a back-to-back loop hides.
 */
async function latencyAfterIdle(call: () => Promise<unknown>, n: number, gapUs: number): Promise<Lat> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const until = performance.now() + gapUs / 1000;
    while (performance.now() < until);
    const t = performance.now();
    await call();
    samples.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(n * 0.5)]!, p99: samples[Math.floor(n * 0.99)]! };
}

/** Calls each latency series runs before it times any. */
const WARMUP_CALLS = 300;

interface InvokerCpu {
  invoker: number;
  executors: number;
  calls: number;
  /** Each round's CPU per call, invoker and executors together, in ms. */
  perRoundMs: number[];
}

/** latencyWithCpu: latency() of `call`, adding the CPU `pid` (an invoker) and its executors used meanwhile, warm-up included, to `into`. */
async function latencyWithCpu(pid: number, into: InvokerCpu, call: () => Promise<unknown>, n: number): Promise<Lat> {
  const before = treeCpuSeconds(pid);
  const out = await latency(call, n, WARMUP_CALLS);
  const after = treeCpuSeconds(pid);
  const self = after.self - before.self;
  const children = after.children - before.children;
  into.invoker += self;
  into.executors += children;
  into.calls += n + WARMUP_CALLS;
  into.perRoundMs.push(((self + children) * 1000) / (n + WARMUP_CALLS));
  return out;
}

function invoker(addr: string) {
  const client = new SyncInvokerServiceClient(addr, grpc.credentials.createInsecure());
  const request: InvokeRequest = { function: { name: "", source: SOURCE, entry: "", filename: "" }, args: Buffer.from("1"), timeoutMs: 0 };
  const call = () =>
    new Promise<InvokeResponse>((resolve, reject) => client.invoke(request, (e, r) => (e ? reject(e) : r.error ? reject(new Error(r.error.message)) : resolve(r))));
  return { client, call };
}

/**
 * The bare invokers' TMPDIR, removed at the end: killed with SIGKILL, one with executors would
 * leave its pool's folder (socket, scratch folders) in /tmp. Passable by the executors' user.
 */
const bareTmp = mkdtempSync(join(tmpdir(), "blockx-bare-invoker-"));
chmodSync(bareTmp, 0o711);

/** spawnBare starts bare-invoker.ts and reads the port it prints. */
async function spawnBare(...args: string[]) {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, join(import.meta.dir, "bare-invoker.ts"), ...args], {
    stdout: "pipe",
    env: { ...process.env, TMPDIR: bareTmp },
  });
  const port = Number(new TextDecoder().decode((await proc.stdout.getReader().read()).value).trim());
  return { proc, addr: `127.0.0.1:${port}` };
}
const bare = await spawnBare();
const bareExec = await spawnBare("--executors", String(EXECUTORS));
const invokerEnv = {
  SYNCINVOKER_LISTEN: "127.0.0.1:0",
  EXECUTOR_COUNT: String(EXECUTORS),
  SYNCINVOKER_QUEUE_MAX: "1024",
  SYNCINVOKER_CALLS_PER_EXECUTOR: String(CALLS_PER_EXECUTOR),
  BLOCKX_LOG_LEVEL: "info", // per-call lines are debug: nothing is logged per call
  // Plaintext: without this every request is its own executor owner and pays a fresh executor.
  EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared",
  ...(values["hot-spin-us"] === undefined ? {} : { SYNCINVOKER_HOT_SPIN_US: values["hot-spin-us"] }),
};
const si = BlockxProcess.spawn(["syncinvoker"], invokerEnv);
// The same invoker with executors that sleep at once (the hot spin off): what the spin buys.
const siCold = BlockxProcess.spawn(["syncinvoker"], { ...invokerEnv, SYNCINVOKER_HOT_SPIN_US: "0" });
// The same invoker whose pool sleeps until its executor answers (no lone-call poll), and a bare
// executor round trip likewise: what EXECUTOR_HOT_WAIT_US buys each of them.
const siNoWait = BlockxProcess.spawn(["syncinvoker"], { ...invokerEnv, EXECUTOR_HOT_WAIT_US: "0" });
const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: EXECUTORS }), silentLogger(), { waitForAll: true });
const poolNoWait = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: EXECUTORS, hotWaitUs: 0 }), silentLogger(), { waitForAll: true });

try {
  const siClient = invoker(await si.grpcAddr());
  const siColdClient = invoker(await siCold.grpcAddr());
  const siNoWaitClient = invoker(await siNoWait.grpcAddr());
  const bareClient = invoker(bare.addr);
  const bareExecClient = invoker(bareExec.addr);
  // What a user's code gets: the SDK's invoke (its lean unary channel), against the bare server through the same channel.
  const sdk = new BlockxClient(loadClientConfig({ BLOCKX_SYNCINVOKER_ADDR: await si.grpcAddr(), BLOCKX_INSECURE: "1" }));
  const sdkCall = async () => {
    const r = await sdk.invoke({ source: SOURCE }, 1);
    if (r.error) throw new Error(r.error.message);
  };
  const leanBare = new Http2UnaryChannel(bare.addr, { kind: "insecure" }, ["syncinvoker"]);
  const bareRequest = SyncInvokerServiceService.invoke.requestSerialize({ function: { name: "", source: SOURCE, entry: "", filename: "" }, args: Buffer.from("1"), timeoutMs: 0 });
  const leanBareCall = () => leanBare.unary(SyncInvokerServiceService.invoke.path, bareRequest, {}, Date.now() + 10_000);
  let seq = 0;
  const execCallOn = (p: ExecutorPool) => async () => {
    const o = await p.execute({ callId: `bench-${++seq}`, fn: { source: SOURCE, entry: "main" }, args: 1 });
    if (!o.ok) throw new Error(o.error.message);
  };
  const execCall = execCallOn(pool);
  const execNoWaitCall = execCallOn(poolNoWait);
  const inProcess = new SyncInvokerService({
    pool,
    functions: () => null,
    io: new ReadOnlyIo(new IoSubsystem(new BackendRegistry(), loadSyncInvokerConfig({ BLOCKX_INSECURE: "1" }).io)),
    precheck: new PrecheckRunner({ python: "python3", pythonPath: "", maxConcurrent: 1, timeoutMs: 1 }), // not called
    capacity: EXECUTORS * CALLS_PER_EXECUTOR,
    queueMax: 1024,
    defaultTimeoutMs: 5000,
    log: silentLogger(),
    metrics: new MetricsRegistry(),
    tls: { kind: "insecure" },
    maxSourceBytes: 32 * 1024 * 1024,
    // As the compiled invokers above: one owner without an identity (else an executor per request).
    ownerWithoutIdentity: "shared",
  }).handlers();
  const handlerCall = () =>
    new Promise<void>((resolve, reject) => {
      // The few members of a grpc-js ServerUnaryCall the handler uses.
      const call = { request: { function: { name: "", source: SOURCE, entry: "" }, args: Buffer.from("1"), timeoutMs: 0 }, on() {}, removeListener() {}, getDeadline: () => Infinity, cancelled: false };
      inProcess.invoke(call as never, (e) => (e ? reject(e) : resolve()));
    });
  // Wait until the invoker's executors answer.
  for (let i = 0; ; i++) {
    try {
      await siClient.call();
      await siColdClient.call();
      await siNoWaitClient.call();
      break;
    } catch (e) {
      if (i > 200) throw e;
      await Bun.sleep(50);
    }
  }

  // ROUNDS interleaved rounds of each series, so that the machine's noise (it is shared) hits
  // every series alike; the figures are the medians of the rounds' p50s and p99s.
  const ROUNDS = 5;
  // CPU of the hot and the cold invoker over their concurrency-1 series (warm-up calls included): what the spin costs.
  const hotCpu: InvokerCpu = { invoker: 0, executors: 0, calls: 0, perRoundMs: [] };
  const coldCpu: InvokerCpu = { invoker: 0, executors: 0, calls: 0, perRoundMs: [] };
  const perRound = Math.ceil(CALLS / ROUNDS);
  const rounds: { grpc: Lat; exec: Lat; execIdle: Lat; handler: Lat; grpcExec: Lat; invoke: Lat; invokeCold: Lat; invokeNoWait: Lat; execNoWait: Lat; sdk: Lat; leanGrpc: Lat }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    rounds.push({
      grpc: await latency(bareClient.call, perRound, WARMUP_CALLS),
      exec: await latency(execCall, perRound, WARMUP_CALLS),
      execIdle: await latencyAfterIdle(execCall, perRound, 300),
      handler: await latency(handlerCall, perRound, WARMUP_CALLS),
      grpcExec: await latency(bareExecClient.call, perRound, WARMUP_CALLS),
      invoke: await latencyWithCpu(si.proc.pid, hotCpu, siClient.call, perRound),
      invokeCold: await latencyWithCpu(siCold.proc.pid, coldCpu, siColdClient.call, perRound),
      invokeNoWait: await latency(siNoWaitClient.call, perRound, WARMUP_CALLS),
      execNoWait: await latency(execNoWaitCall, perRound, WARMUP_CALLS),
      sdk: await latency(sdkCall, perRound, WARMUP_CALLS),
      leanGrpc: await latency(leanBareCall, perRound, WARMUP_CALLS),
    });
  }
  const med = (f: (x: (typeof rounds)[number]) => number) => rounds.map(f).sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
  const grpc1 = { p50: med((x) => x.grpc.p50), p99: med((x) => x.grpc.p99) };
  const exec1 = { p50: med((x) => x.exec.p50), p99: med((x) => x.exec.p99) };
  const invoke1 = { p50: med((x) => x.invoke.p50), p99: med((x) => x.invoke.p99) };
  const invokeCold1 = { p50: med((x) => x.invokeCold.p50), p99: med((x) => x.invokeCold.p99) };
  const invokeNoWait1 = { p50: med((x) => x.invokeNoWait.p50), p99: med((x) => x.invokeNoWait.p99) };
  const execNoWait1 = { p50: med((x) => x.execNoWait.p50), p99: med((x) => x.execNoWait.p99) };
  const handler1 = { p50: med((x) => x.handler.p50), p99: med((x) => x.handler.p99) };
  const execIdle1 = { p50: med((x) => x.execIdle.p50), p99: med((x) => x.execIdle.p99) };
  const grpcExec1 = { p50: med((x) => x.grpcExec.p50), p99: med((x) => x.grpcExec.p99) };
  const grpcTput = await throughput(bareClient.call, 64, SECONDS);
  const execTput = await throughput(execCall, 64, SECONDS);
  const grpcExecTput = await throughput(bareExecClient.call, 64, SECONDS);
  const invokeTput = await throughput(siClient.call, 64, SECONDS);
  const invokeColdTput = await throughput(siColdClient.call, 64, SECONDS);

  const us = (x: number) => `${x.toFixed(0)} µs`;
  const ratio = invoke1.p50 / (grpc1.p50 + exec1.p50);
  console.log(`Invoke of a trivial function over loopback (compiled syncinvoker, ${EXECUTORS} executors, ${CALLS_PER_EXECUTOR} call(s) admitted per executor), ${CALLS} calls per series in 5 interleaved rounds (medians), ${SECONDS} s at 64 in flight`);
  console.log("");
  console.log("| measure | bare gRPC unary | bare executor round trip | bare sum | Invoke | Invoke / sum |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  console.log(`| p50, concurrency 1 | ${us(grpc1.p50)} | ${us(exec1.p50)} | ${us(grpc1.p50 + exec1.p50)} | ${us(invoke1.p50)} | ${ratio.toFixed(2)}x |`);
  console.log(`| p99, concurrency 1 | ${us(grpc1.p99)} | ${us(exec1.p99)} | ${us(grpc1.p99 + exec1.p99)} | ${us(invoke1.p99)} | ${(invoke1.p99 / (grpc1.p99 + exec1.p99)).toFixed(2)}x |`);
  // Throughputs combine as rates of a serial pipeline: 1 / (1/a + 1/b) is the pair's ceiling.
  const pair = 1 / (1 / grpcTput + 1 / execTput);
  console.log(
    `| calls/s, 64 in flight | ${grpcTput.toFixed(0)} | ${execTput.toFixed(0)} | ${pair.toFixed(0)} (1/(1/a+1/b)) | ${invokeTput.toFixed(0)} | ${(invokeTput / pair).toFixed(2)}x |`,
  );
  console.log("");
  console.log(
    `in-process handler over the same pool (no gRPC): p50 ${us(handler1.p50)}, p99 ${us(handler1.p99)}; handler / bare executor p50 = ${(handler1.p50 / exec1.p50).toFixed(2)}x`,
  );
  console.log(
    `bare gRPC server running the call in its own executor pool (the invoker's topology, none of its logic): p50 ${us(grpcExec1.p50)}, p99 ${us(grpcExec1.p99)}, ${grpcExecTput.toFixed(0)} calls/s at 64 in flight; Invoke / that: p50 ${(invoke1.p50 / grpcExec1.p50).toFixed(2)}x, calls/s ${(invokeTput / grpcExecTput).toFixed(2)}x`,
  );
  console.log(
    `bare executor round trip after 300 µs idle (the executor asleep, as between two Invokes): p50 ${us(execIdle1.p50)}, p99 ${us(execIdle1.p99)}; ` +
      `Invoke / (bare gRPC + this) p50 = ${(invoke1.p50 / (grpc1.p50 + execIdle1.p50)).toFixed(2)}x`,
  );
  console.log(
    `the same invoker with SYNCINVOKER_HOT_SPIN_US=0 (executors sleep at once): p50 ${us(invokeCold1.p50)}, p99 ${us(invokeCold1.p99)}; ` +
      `its ratio p50 / (bare gRPC + bare executor) = ${(invokeCold1.p50 / (grpc1.p50 + exec1.p50)).toFixed(2)}x; hot / cold p50 = ${(invoke1.p50 / invokeCold1.p50).toFixed(2)}x; ` +
      `${invokeColdTput.toFixed(0)} calls/s at 64 in flight, hot / cold ${(invokeTput / invokeColdTput).toFixed(2)}x`,
  );
  const cpuByRound = (c: InvokerCpu) => c.perRoundMs.map((ms) => us(ms * 1000)).join(", ");
  const cpuUs = (c: typeof hotCpu) => `invoker ${us((c.invoker * 1e6) / c.calls)}, executors ${us((c.executors * 1e6) / c.calls)}`;
  console.log(
    `CPU per call at concurrency 1 (all rounds, /proc ticks of 10 ms): hot (SYNCINVOKER_HOT_SPIN_US=${values["hot-spin-us"] ?? "default"}) ${cpuUs(hotCpu)}; cold ${cpuUs(coldCpu)}; ` +
      `the spin's cost: executors ${((hotCpu.executors / hotCpu.calls - coldCpu.executors / coldCpu.calls) * 1e6).toFixed(0)} µs per call; ` +
      `per round (invoker and executors): hot ${cpuByRound(hotCpu)}; cold ${cpuByRound(coldCpu)}`,
  );
  console.log(
    `the same invoker with EXECUTOR_HOT_WAIT_US=0 (its pool sleeps until the executor answers): p50 ${us(invokeNoWait1.p50)}, p99 ${us(invokeNoWait1.p99)}; ` +
      `Invoke / that p50 = ${(invoke1.p50 / invokeNoWait1.p50).toFixed(2)}x; the bare executor round trip likewise: p50 ${us(execNoWait1.p50)}; ` +
      `with neither polling, Invoke / (bare gRPC + bare executor) p50 = ${(invokeNoWait1.p50 / (grpc1.p50 + execNoWait1.p50)).toFixed(2)}x`,
  );
  const sdk1 = { p50: med((x) => x.sdk.p50), p99: med((x) => x.sdk.p99) };
  const leanGrpc1 = { p50: med((x) => x.leanGrpc.p50), p99: med((x) => x.leanGrpc.p99) };
  console.log(
    `the SDK's invoke (BlockxClient.invoke, its lean unary channel) to the same invoker: p50 ${us(sdk1.p50)}, p99 ${us(sdk1.p99)} (${(sdk1.p50 / invoke1.p50).toFixed(2)}x the grpc-js client's); ` +
      `bare gRPC unary through that channel: p50 ${us(leanGrpc1.p50)}; SDK invoke / (that + bare executor) p50 = ${(sdk1.p50 / (leanGrpc1.p50 + exec1.p50)).toFixed(2)}x`,
  );
  // No disturbance check here (backfill.ts and io-bound.ts have one): a round gives the invoker about
  // 400 ms of CPU, and one invoker alone, 700 calls a round, ranged 414-671 µs a call over twelve
  // rounds after its first two (its collector and JIT at work, RSS 86-123 MB), past the 1.25x that
  // calls a run disturbed. The per-round CPU above is printed for a reader to judge.
  console.log(`ratio p50 / (bare gRPC p50 + bare executor p50) = ${ratio.toFixed(2)} (aim <= 1.3)`);
  siClient.client.close();
  sdk.close();
  leanBare.close();
  siColdClient.client.close();
  siNoWaitClient.client.close();
  bareClient.client.close();
  bareExecClient.client.close();
} finally {
  await pool.close();
  await poolNoWait.close();
  await si.stop("SIGKILL");
  await siCold.stop("SIGKILL");
  await siNoWait.stop("SIGKILL");
  bare.proc.kill("SIGKILL");
  bareExec.proc.kill("SIGKILL");
  await Promise.all([bare.proc.exited, bareExec.proc.exited]);
  rmSync(bareTmp, { recursive: true, force: true });
}
