/**
 * bench/io/io-bound.ts: IO-bound throughput. One task of 1,000 calls, each waiting 10 ms on the
 * backend (one local-chain request with LOCALTESTSERVICE_LATENCY_MS=10, cache off, every call a
 * different block), on a compiled Worker (EXECUTOR_COUNT=2), with 16 calls in flight (the
 * TASK_MAX_INFLIGHT_CALLS window; what 2 Dask workers x 8 threads run at once) and with 1,024.
 * The blocks are full ones served from a block store rendered up front (untimed): a generated
 * block costs the local chain about 2.6 ms of the Worker's CPU, which made the floor of this
 * bench (378 calls/s) the generator's, not BlockX's; every task reads the same 1,000 blocks
 * (the cache is off, so each read goes to the backend and waits its latency).
 *
 * A second kind of call (`--answers full-block,small`) waits the same latency for a small answer:
 * `eth_blockNumber` with the call's input as an extra parameter, so that every call is its own
 * backend request (identical requests in flight would share one: singleflight). It is the IO-bound
 * call of the comparison with Dask (each call waits on its own request), apart from the 230 µs
 * json.loads of a 79 KB block that a full-block call also pays in its executor.
 *
 *   bun bench/io/io-bound.ts [--calls 1000] [--latency-ms 10] [--rounds 5] [--executors 2] [--inflight 16,1024] [--answers full-block,small] [--baseline BINARY]
 *
 * `--baseline BINARY` runs every series a second time on another build (a blockx binary built from
 * an older commit), in the same interleaved rounds, and prints the ratios: a change's effect
 * measured against its baseline in one run, whatever the machine's load meanwhile.
 *
 * Ideal calls/s = min(in flight, calls) / latency. The same run also measures the same task
 * without the latency (what the Worker and executors cost per call), so the waiting can be read
 * apart from the CPU, and for every series the CPU per call of the Worker process and of its
 * executors (the processes below it, from /proc). Medians of interleaved rounds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { writeBlockStore } from "../../src/runtime/chains/localtestservice/block-text-store";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { metricSample, randomLanePrefix } from "../../test/support/worker-double";
import { WorkerClient } from "../../test/support/worker-client";
import { CpuSampler, THREAD_GROUP_COLUMNS, threadMedians, threadsScaled, type ThreadGroup } from "../support/cpu-sampler";
import { interferenceNote, interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "1000" },
    "latency-ms": { type: "string", default: "10" },
    rounds: { type: "string", default: "5" },
    executors: { type: "string", default: "2" },
    inflight: { type: "string", default: "16,1024" },
    answers: { type: "string", default: "full-block,small" },
    baseline: { type: "string" },
  },
});
const CALLS = Number(values.calls);
const LATENCY_MS = Number(values["latency-ms"]);
const INFLIGHT = values.inflight.split(",").map(Number);
const ROUNDS = Number(values.rounds);

type Answer = "full-block" | "small";
const FUNCTIONS: Record<Answer, string> = {
  "full-block": ["def main(ctx, x):", "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x, 'full': True})", "    return b['number']"].join("\n"),
  small: ["def main(ctx, x):", "    head = ctx.io('localtestservice', 'eth_blockNumber', {'chain': 'ethereum', 'call': x})", "    return int(head, 16) - x"].join("\n"),
};
const ANSWERS = values.answers.split(",").map((a) => {
  if (a !== "full-block" && a !== "small") throw new Error(`--answers: expected full-block and/or small, got ${JSON.stringify(a)}`);
  return a as Answer;
});
const FIRST_BLOCK = 1_000_000;
const dir = mkdtempSync(join(tmpdir(), "blockx-io-bound-"));
const storePath = join(dir, "blocks.store");

let etcd: EtcdProcess | undefined;
const workers: BlockxProcess[] = [];
async function cleanup(): Promise<void> {
  for (const w of workers.splice(0)) await w.stop("SIGKILL").catch(() => {});
  await etcd?.destroy();
  etcd = undefined;
  rmSync(dir, { recursive: true, force: true });
}
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

interface Scraped {
  w: WorkerClient;
  pid: number;
  /** The Worker's Prometheus page: call durations and backend request times are read from it around each task. */
  metricsUrl: string;
}

async function worker(inflight: number, latencyMs: number, binary?: string): Promise<Scraped> {
  // binary undefined: dist/blockx (spawn's default).
  const w = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: etcd!.endpoint,
    BLOCKX_LOG_LEVEL: "info",
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: values.executors,
    EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared", // plaintext: tasks share warm executors as one TLS client's do
    TASK_MAX_INFLIGHT_CALLS: String(inflight),
    IO_TASK_WINDOW: String(Math.max(64, inflight)),
    IO_CACHE_MAX_BYTES: "0",
    // Admission is adaptive (it starts low and learns the backend): let it grow to the window and
    // queue the rest rather than refuse them (a refused request makes its call retry).
    IO_ADMISSION_MAX_LIMIT: String(Math.max(256, inflight)),
    IO_ADMISSION_QUEUE: String(Math.max(128, inflight)),
    LOCALTESTSERVICE_LATENCY_MS: String(latencyMs),
    LOCALTESTSERVICE_BLOCK_STORE: storePath,
    // A call's budget counts its IO time: on a loaded box 1,024 requests at once can wait seconds.
    EXECUTOR_CALL_BUDGET_MS: "120000",
    BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0",
  }, binary);
  workers.push(w);
  const client = new WorkerClient(await w.grpcAddr());
  const metricsAddr = (await w.waitForLog((l) => l.msg === "metrics listening")).addr as string;
  return { w: client, pid: w.proc.pid, metricsUrl: `http://${metricsAddr}/metrics` };
}

/** The Worker's sums and counts of call durations (OK calls) and of backend request times, in seconds. */
async function timings(url: string): Promise<{ callS: number; calls: number; backendS: number; requests: number }> {
  const page = await (await fetch(url)).text();
  const backend = '{backend="localtestservice"}';
  return {
    callS: metricSample(page, "blockx_worker_call_duration_seconds_sum", '{outcome="OK"}'),
    calls: metricSample(page, "blockx_worker_call_duration_seconds_count", '{outcome="OK"}'),
    backendS: metricSample(page, "blockx_io_backend_request_seconds_sum", backend),
    requests: metricSample(page, "blockx_io_backend_request_seconds_count", backend),
  };
}

let seq = 0;
interface TaskRun {
  callsPerS: number;
  /** CPU per call of the Worker process and of its executors (the processes below it). */
  workerUs: number;
  executorsUs: number;
  /** The Worker's CPU per call by thread group (main, JIT compilers, collector, ...). */
  workerThreadsUs: Record<ThreadGroup, number>;
  /** Mean time of a call from its dispatch to its outcome, and of a backend request, as the Worker measured them. */
  callMs: number;
  backendMs: number;
}

/** runTask submits one task of CALLS calls (the same stored blocks each time; the cache is off, so every read waits on the backend). */
async function runTask(s: Scraped, answer: Answer): Promise<TaskRun> {
  const { w, pid } = s;
  const before = await timings(s.metricsUrl);
  const cpu = new CpuSampler(pid);
  seq++;
  const inputs = Array.from({ length: CALLS }, (_, i) => Buffer.from(String(FIRST_BLOCK + i)));
  const task = Task.fromPartial({
    taskId: `io-${process.pid}-${seq}`,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: FUNCTIONS[answer], entry: "main" }, config: { $case: "inputs", inputs: { inputs } } }),
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
  });
  const t = performance.now();
  const sub = await w.submitTask(task);
  if (!sub.ok) throw new Error(`SubmitTask: ${sub.details}`);
  const watched = await w.watch([task.taskId]);
  const last = watched.snapshots.at(-1);
  const seconds = (performance.now() - t) / 1000;
  if (last?.state !== TaskState.SUCCEEDED) throw new Error(`task ended ${JSON.stringify(last?.state)}: ${last?.error?.message ?? watched.error?.details}`);
  cpu.sample();
  const after = await timings(s.metricsUrl);
  const perMs = (sum: number, n: number) => (n > 0 ? (sum * 1000) / n : NaN);
  return {
    callsPerS: CALLS / seconds,
    workerUs: (cpu.worker * 1e6) / CALLS,
    executorsUs: (cpu.executors * 1e6) / CALLS,
    workerThreadsUs: threadsScaled(cpu.workerThreads, 1e6 / CALLS),
    callMs: perMs(after.callS - before.callS, after.calls - before.calls),
    backendMs: perMs(after.backendS - before.backendS, after.requests - before.requests),
  };
}

try {
  writeBlockStore(storePath, new SyntheticChain("ethereum"), FIRST_BLOCK, FIRST_BLOCK + CALLS - 1);
  etcd = await EtcdProcess.start();
  // One Worker per in-flight count and latency; each runs both kinds of call (the answer is the task's function).
  // With --baseline, each series also runs on the baseline build ("baseline " before its name).
  const series = new Map<string, Scraped & { ideal: number; answer: Answer }>();
  for (const build of values.baseline === undefined ? [undefined] : [undefined, values.baseline]) {
    for (const latencyMs of [LATENCY_MS, 0]) {
      for (const n of INFLIGHT) {
        const w = await worker(n, latencyMs, build);
        for (const answer of ANSWERS) {
          const what = latencyMs > 0 ? `${latencyMs} ms per call` : "no latency (the CPU floor)";
          series.set(`${build === undefined ? "" : "baseline "}${answer}: ${n} in flight, ${what}`, { ...w, answer, ideal: latencyMs > 0 ? (Math.min(n, CALLS) * 1000) / latencyMs : Infinity });
        }
      }
    }
  }
  for (const s of series.values()) await runTask(s, s.answer); // warm-up: executors' imports, JIT
  const results = await interleavedRounds(
    [...series.keys()],
    ROUNDS,
    (k) => runTask(series.get(k)!, series.get(k)!.answer),
    (r) => process.stderr.write(`round ${r}/${ROUNDS}\n`),
  );
  console.log(`IO-bound calls: ${CALLS} calls per task, each one local-chain request (full-block: a stored full block, 79 KB; small: eth_blockNumber); EXECUTOR_COUNT=${values.executors}; medians of ${ROUNDS} interleaved rounds`);
  console.log("");
  console.log("| series | calls/s | ideal | share of ideal | Worker CPU per call | executors' CPU per call | a call, mean | its backend request, mean | rounds (calls/s) |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  const rate = (k: string) => median(results[k]!.map((r) => r.callsPerS));
  for (const [k, s] of series) {
    const m = rate(k);
    const ideal = Number.isFinite(s.ideal) ? s.ideal.toFixed(0) : "-";
    const share = Number.isFinite(s.ideal) ? `${((m / s.ideal) * 100).toFixed(0)}%` : "-";
    const workerUs = median(results[k]!.map((r) => r.workerUs));
    const executorsUs = median(results[k]!.map((r) => r.executorsUs));
    const callMs = median(results[k]!.map((r) => r.callMs));
    const backendMs = median(results[k]!.map((r) => r.backendMs));
    console.log(
      `| ${k} | ${m.toFixed(0)} | ${ideal} | ${share} | ${workerUs.toFixed(0)} µs | ${executorsUs.toFixed(0)} µs | ${callMs.toFixed(2)} ms | ${backendMs.toFixed(2)} ms | ${results[k]!.map((r) => r.callsPerS.toFixed(0)).join(", ")} |`,
    );
  }
  // What calls that wait cost the Worker's main thread per call, apart from its JIT compilers' work.
  console.log(`\nThe Worker's CPU per call by thread (medians, µs): ${THREAD_GROUP_COLUMNS}`);
  for (const k of series.keys()) console.log(`- ${k}: ${threadMedians(results[k]!.map((r) => r.workerThreadsUs), 0)}`);
  if (values.baseline !== undefined) {
    console.log("");
    console.log(`This build against the baseline (${values.baseline}), medians of the same rounds:`);
    console.log("");
    console.log("| series | calls/s, this / baseline | Worker CPU per call | executors' CPU per call |");
    console.log("| --- | ---: | ---: | ---: |");
    const cpu = (k: string, f: "workerUs" | "executorsUs") => median(results[k]!.map((r) => r[f]));
    for (const k of series.keys()) {
      const b = `baseline ${k}`;
      if (k.startsWith("baseline ") || !results[b]) continue;
      const ratio = (x: number, y: number) => `${(x / y).toFixed(2)}x`;
      console.log(`| ${k} | ${rate(k).toFixed(0)} / ${rate(b).toFixed(0)} = ${ratio(rate(k), rate(b))} | ${ratio(cpu(k, "workerUs"), cpu(b, "workerUs"))} | ${ratio(cpu(k, "executorsUs"), cpu(b, "executorsUs"))} |`);
    }
  }
  // A quiet host charges the same calls the same CPU in every round; a busy one does not (rounds.ts).
  // Measured on the executors (the Worker's JIT compilers still settle over its first minute) and
  // only where a round gives them 20 or more /proc ticks of 10 ms (the full block's decode).
  const steady = [...series.keys()].filter((k) => median(results[k]!.map((r) => r.executorsUs)) * CALLS >= 200_000);
  const disturbed = interferenceNote(Object.fromEntries(steady.map((k) => [k, results[k]!.map((r) => r.executorsUs / 1000)])), "call (ms, executors)");
  console.log(`\nThe executors' CPU per call by round, what the disturbance check reads (µs):`);
  for (const k of steady) console.log(`- ${k}: ${results[k]!.map((r) => r.executorsUs.toFixed(0)).join(", ")}`);
  if (disturbed) console.log(`\n${disturbed}`);
  console.log("");
  for (const [k, s] of series) {
    if (k.startsWith("baseline ") || !k.includes(": 16 in flight,") || !Number.isFinite(s.ideal)) continue;
    const share = rate(k) / s.ideal;
    const verdict = disturbed ? "no result (the host disturbed this run)" : share >= 0.9 ? "**met**" : "**not met**";
    console.log(`- at least 90% of ideal at 16 in flight, ${s.answer}: ${verdict} (${(share * 100).toFixed(0)}%)`);
  }
  for (const w of new Set([...series.values()].map((s) => s.w))) w.close();
} finally {
  await cleanup();
}
