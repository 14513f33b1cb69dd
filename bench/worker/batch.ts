/**
 * bench/worker/batch.ts: many tiny tasks (`def main(ctx, x): return x`, one input, return value)
 * through the compiled Worker and Coordinator (dist/blockx, real etcd, real Python executors),
 * run by the SDK in this process. The baseline of the same run is the one-by-one path (runTask
 * per task: ReserveWorkerSlot, SubmitTask, WatchTasks, GetTaskResult each), with the same number
 * of tasks in flight; against it, runTasks' batch path at batch sizes 1, 16 and 256.
 *
 *   bun bench/worker/batch.ts [--tasks 10000] [--inflight 256] [--rounds 5] [--executors 2] [--sizes 1,16,256] [--baseline BINARY]
 *
 * A round is 10,000 tasks by default: at 256 in flight, a round of 1,000 is four windows, and
 * filling and draining the window is much of its time (`--tasks 1000` shows it).
 * `--baseline BINARY` also runs the batch path's series on another build (its own Worker and
 * Coordinator, the same etcd) in the same rounds, and prints this build's figures against it.
 *
 * Rounds are interleaved (one of each series per round, in a rotating order) and every figure is
 * the median over the rounds, so that the shared machine's noise hits every series alike.
 * Prints tasks/s and CPU µs per task by process (from /proc), and each series' ratio to the baseline.
 */
import { parseArgs } from "node:util";
import { Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { suiteEnv } from "../../test/support/suite-tls";
import { BLOCKX_BINARY, BlockxProcess } from "../../test/support/blockx-process";
import { healthCheck, waitFor } from "../../test/support/coordinator-client";
import { EtcdProcess } from "../../test/support/etcd";
import { cpuSeconds, descendants } from "../../test/support/proc-scan";
import { randomLanePrefix } from "../../test/support/worker-double";
import { HealthCheckResponse_ServingStatus } from "../../src/gen/grpc/health/v1/health";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "10000" },
    inflight: { type: "string", default: "256" },
    rounds: { type: "string", default: "5" },
    executors: { type: "string", default: "2" },
    sizes: { type: "string", default: "1,16,256" },
    baseline: { type: "string" },
  },
});
const TASKS = Number(values.tasks);
const INFLIGHT = Number(values.inflight);
const ROUNDS = Number(values.rounds);
const SIZES = values.sizes.split(",").map(Number);
const AIM = { perSecond: 5000, cpuUsPerTask: 300 };

const blockx: BlockxProcess[] = [];
let etcd: EtcdProcess | undefined;
async function cleanup(): Promise<void> {
  for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  await etcd?.destroy();
  etcd = undefined;
}
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

const SOURCE = "def main(ctx, x):\n    return x\n";
let nextId = 0;
function tinyTasks(n: number): Task[] {
  const run = `${process.pid}-${Date.now()}-${nextId++}`;
  return Array.from({ length: n }, (_, i) =>
    Task.fromPartial({
      taskId: `b-${run}-${i}`,
      functionCallConfig: { function: { source: SOURCE, entry: "main" }, config: { $case: "inputs", inputs: { inputs: [Buffer.from(String(i))] } } },
      outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
    }),
  );
}

type Cpu = Record<string, number>;
function cpuMs(pids: Record<string, number>): Cpu {
  const out: Cpu = { client: cpuSeconds(process.pid) * 1000 };
  for (const [role, pid] of Object.entries(pids)) {
    out[role] = cpuSeconds(pid) * 1000;
    if (role === "worker") out.executors = descendants(pid).reduce((a, d) => a + cpuSeconds(d) * 1000, 0);
  }
  return out;
}

interface Round {
  perSecond: number;
  cpuUsPerTask: Cpu;
}

/** oneByOne: the path before the batch one, runTask per task in `INFLIGHT` lanes (the old runTasks). */
async function oneByOne(client: BlockxClient, tasks: Task[]): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const r = await client.runTask(tasks[next++]!, { cluster: "block" });
      if (!r.succeeded) throw new Error(`task ${r.taskId} ended ${r.state}`);
    }
  };
  await Promise.all(Array.from({ length: INFLIGHT }, lane));
}

async function batched(client: BlockxClient, tasks: Task[], batchSize: number): Promise<void> {
  const entries = await client.runTasks(tasks, { cluster: "block", concurrency: INFLIGHT, batchSize });
  const bad = entries.find((e) => !e.ok || !e.run.succeeded);
  if (bad) throw new Error(`task ${bad.task.taskId}: ${bad.ok ? bad.run.state : bad.error.message}`);
}

/** measure runs one round of a series on fresh tasks, built before the clock and the CPU count start (the harness's work, not the path's). */
async function measure(pids: Record<string, number>, run: (tasks: Task[]) => Promise<void>): Promise<Round> {
  const tasks = tinyTasks(TASKS);
  const a = cpuMs(pids);
  const t = performance.now();
  await run(tasks);
  const seconds = (performance.now() - t) / 1000;
  const b = cpuMs(pids);
  return { perSecond: TASKS / seconds, cpuUsPerTask: Object.fromEntries(Object.keys(b).map((k) => [k, ((b[k]! - (a[k] ?? 0)) * 1000) / TASKS])) };
}

/** A Worker and a Coordinator of one build on their own registry prefix, and a client of them. */
async function startCluster(binary: string): Promise<{ client: BlockxClient; pids: Record<string, number> }> {
  const prefix = randomLanePrefix("block");
  const common = { ETCD_ENDPOINTS: etcd!.endpoint, BLOCKX_LOG_LEVEL: "info" };
  const worker = BlockxProcess.spawn(["worker"], { ...common, WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: prefix, EXECUTOR_COUNT: values.executors, TASK_SLOTS: "2048", EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared" }, binary);
  blockx.push(worker);
  await worker.grpcAddr();
  // The load generator shares the box with the Worker: its host CPU must not read as a red line.
  const coord = BlockxProcess.spawn(["coordinator"], { ...common, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix, COORDINATOR_CPU_RED_LINE: "1", COORDINATOR_MEMORY_RED_LINE: "1" }, binary);
  blockx.push(coord);
  const coordAddr = await coord.grpcAddr();
  await waitFor(() => healthCheck(coordAddr, "coordinator.v1.CoordinatorService"), (s) => s === HealthCheckResponse_ServingStatus.SERVING, 30_000);
  // The transport of the processes BlockxProcess started (plaintext in a bench without the suite's CA).
  const client = new BlockxClient(loadClientConfig({ BLOCKX_COORDINATOR_ADDRS: coordAddr, ETCD_ENDPOINTS: etcd!.endpoint, ...suiteEnv("client") }));
  return { client, pids: { coordinator: coord.proc.pid, worker: worker.proc.pid } };
}

const BASELINE_PREFIX = "baseline build: ";

try {
  etcd = await EtcdProcess.start();
  const main = await startCluster(BLOCKX_BINARY);
  const other = values.baseline === undefined ? undefined : await startCluster(values.baseline);

  type Series = [string, (tasks: Task[]) => Promise<void>, Record<string, number>];
  const batchSeries = (c: { client: BlockxClient; pids: Record<string, number> }, label: string): Series[] =>
    SIZES.map((size): Series => [`${label}batch path, batch size ${size}`, (tasks) => batched(c.client, tasks, size), c.pids]);
  const series: Series[] = [
    ["one-by-one (runTask per task, baseline)", (tasks) => oneByOne(main.client, tasks), main.pids],
    ...batchSeries(main, ""),
    ...(other ? batchSeries(other, BASELINE_PREFIX) : []),
  ];
  // Warm-up: one small round of each (JIT, executors' first imports, channels).
  for (const [, f] of series) await f(tinyTasks(Math.min(TASKS, 1000)));
  const byName = new Map(series.map(([name, f, pids]) => [name, { f, pids }]));
  const results = await interleavedRounds(
    series.map(([name]) => name),
    ROUNDS,
    (name) => measure(byName.get(name)!.pids, byName.get(name)!.f),
    (r) => process.stderr.write(`round ${r}/${ROUNDS} done\n`),
  );
  const rounds = new Map<string, Round[]>(Object.entries(results));
  main.client.close();
  other?.client.close();

  const roles = ["client", "coordinator", "worker", "executors"];
  const med = (name: string) => {
    const rs = rounds.get(name)!;
    const cpu = Object.fromEntries(roles.map((role) => [role, median(rs.map((x) => x.cpuUsPerTask[role] ?? 0))]));
    return { perSecond: median(rs.map((x) => x.perSecond)), cpu, total: median(rs.map((x) => roles.reduce((a, role) => a + (x.cpuUsPerTask[role] ?? 0), 0))), spread: rs.map((x) => x.perSecond) };
  };
  const base = med(series[0]![0]);
  console.log(`BlockX batch path${other ? ` (against ${values.baseline})` : ""}: ${TASKS} tiny tasks per round, ${INFLIGHT} in flight, EXECUTOR_COUNT=${values.executors}, medians of ${ROUNDS} interleaved rounds`);
  console.log("");
  console.log(`| series | tasks/s | vs baseline | CPU µs/task: ${roles.join(" | ")} | total | total vs baseline |`);
  console.log(`| --- | ---: | ---: | ${roles.map(() => "---:").join(" | ")} | ---: | ---: |`);
  for (const [name] of series) {
    const m = med(name);
    console.log(
      `| ${name} | ${m.perSecond.toFixed(0)} | ${(m.perSecond / base.perSecond).toFixed(2)}x | ${roles.map((r) => m.cpu[r]!.toFixed(0)).join(" | ")} | ${m.total.toFixed(0)} | ${(m.total / base.total).toFixed(2)}x |`,
    );
  }
  console.log("");
  for (const [name] of series) console.log(`(${name}: tasks/s per round ${med(name).spread.map((v) => v.toFixed(0)).join(", ")})`);
  if (other) {
    console.log("");
    console.log(`This build against the baseline build (${values.baseline}), medians of the same rounds:`);
    console.log("");
    console.log(`| batch size | tasks/s, this / baseline | CPU µs/task, this / baseline | ${roles.join(" | ")} |`);
    console.log(`| ---: | --- | --- | ${roles.map(() => "---").join(" | ")} |`);
    for (const size of SIZES) {
      const a = med(`batch path, batch size ${size}`);
      const b = med(`${BASELINE_PREFIX}batch path, batch size ${size}`);
      const ratio = (x: number, y: number) => `${x.toFixed(0)}/${y.toFixed(0)} = ${(x / y).toFixed(2)}x`;
      console.log(`| ${size} | ${ratio(a.perSecond, b.perSecond)} | ${ratio(a.total, b.total)} | ${roles.map((r) => ratio(a.cpu[r]!, b.cpu[r]!)).join(" | ")} |`);
    }
  }
  const best = med(`batch path, batch size ${SIZES.at(-1)}`);
  console.log("");
  console.log(`- at least ${AIM.perSecond} tasks/s through the batch path: ${best.perSecond >= AIM.perSecond ? "**met**" : "**not met**"} (${best.perSecond.toFixed(0)})`);
  console.log(`- at most ${AIM.cpuUsPerTask} µs CPU per task: ${best.total <= AIM.cpuUsPerTask ? "**met**" : "**not met**"} (${best.total.toFixed(0)})`);
} finally {
  await cleanup();
}
