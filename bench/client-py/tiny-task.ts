/**
 * bench/client-py/tiny-task.ts: a tiny task (one input, `return x + 1`, return value) end to end —
 * reserve, submit, watch, result — through blockx-py (client-py, Debian's python3-grpcio) and
 * through the TypeScript SDK, in the same run against one `blockx dev`, through the proxy and
 * direct: serial p50/p99 and throughput with several tasks in flight, and the ratios py/ts; then
 * `--batch-tasks` of them through each client's batch path (runTasks / run_tasks, `--batch-inflight`
 * in flight, batches of up to 256).
 *
 *   bun bench/client-py/tiny-task.ts [--tasks 200] [--inflight 8] [--seconds 8] [--batch-tasks 5000] [--batch-inflight 64]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { BlockxProcess } from "../../test/support/blockx-process";

const { values } = parseArgs({
  options: { tasks: { type: "string", default: "200" }, inflight: { type: "string", default: "8" }, seconds: { type: "string", default: "8" }, "batch-tasks": { type: "string", default: "5000" }, "batch-inflight": { type: "string", default: "64" } },
});
const BATCH_TASKS = Number(values["batch-tasks"]);
/** Within dev's free slots (2 Workers x TASK_SLOTS 50): more would measure NoSlot refusals and their back-off, not the path. */
const BATCH_INFLIGHT = Number(values["batch-inflight"]);
const TASKS = Number(values.tasks);
const INFLIGHT = Number(values.inflight);
const SECONDS = Number(values.seconds);
const SRC = "def main(ctx, x):\n    return x + 1\n";

const dir = mkdtempSync(join(tmpdir(), "blockx-py-bench-"));
// blockx-py has no TLS options yet: this comparison runs in plaintext.
// Plaintext: its tasks share warm executors, as one TLS client's do (EXECUTOR_OWNER_WITHOUT_IDENTITY reaches dev's children).
const dev = BlockxProcess.spawn(["dev"], { DEV_DIR: dir, DEV_WORKERS: "2", DEV_BUNDLE_WORKERS: "1", BLOCKX_INSECURE: "1", EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared" });

function tinyTask(seq: number): Task {
  return Task.fromPartial({
    taskId: `ts-bench-${process.pid}-${seq}`,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: SRC, entry: "main" }, config: { $case: "inputs", inputs: { inputs: [Buffer.from(String(seq))] } } }),
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
  });
}

type Series = { p50: number; p99: number; perSecond: number; batchPerSecond: number };

async function tsSeries(env: Record<string, string>): Promise<Series> {
  const client = new BlockxClient(loadClientConfig(env));
  let seq = 0;
  const one = async () => {
    const r = await client.runTask(tinyTask(seq++));
    if (!r.succeeded) throw new Error(`bench task failed: ${r.state}`);
  };
  for (let i = 0; i < 20; i++) await one();
  const samples: number[] = [];
  for (let i = 0; i < TASKS; i++) {
    const t = performance.now();
    await one();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const end = performance.now() + SECONDS * 1000;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: INFLIGHT }, async () => { while (performance.now() < end) { await one(); done++; } }));
  const perSecond = done / ((performance.now() - t0) / 1000);
  const tasks = Array.from({ length: BATCH_TASKS }, () => tinyTask(seq++));
  const b0 = performance.now();
  const outcomes = await client.runTasks(tasks, { concurrency: BATCH_INFLIGHT, batchSize: 256 });
  const batchPerSecond = BATCH_TASKS / ((performance.now() - b0) / 1000);
  if (!outcomes.every((o) => o.ok && o.run.succeeded)) throw new Error("a bench task of the batch failed");
  client.close();
  return { p50: samples[Math.floor(TASKS / 2)]!, p99: samples[Math.min(TASKS - 1, Math.floor(TASKS * 0.99))]!, perSecond, batchPerSecond };
}

async function pySeries(env: Record<string, string>, mode: string): Promise<Series> {
  const p = Bun.spawn(["/usr/bin/python3", join(import.meta.dir, "tiny_task.py"), mode, String(TASKS), String(INFLIGHT), String(SECONDS), String(BATCH_TASKS), String(BATCH_INFLIGHT)], { env: { ...process.env, ...env, PYTHONDONTWRITEBYTECODE: "1" }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`tiny_task.py exited ${code}: ${err}`);
  const r = JSON.parse(out.trim().split("\n").at(-1)!) as { p50_ms: number; p99_ms: number; per_s: number; batch_per_s: number };
  return { p50: r.p50_ms, p99: r.p99_ms, perSecond: r.per_s, batchPerSecond: r.batch_per_s };
}

try {
  const ready = await dev.waitForLog((l) => l.msg === "dev ready", 90_000);
  const env: Record<string, string> = {};
  for (const line of readFileSync(String(ready.envFile), "utf8").split("\n")) {
    const m = /^export (\w+)='(.*)'$/.exec(line);
    if (m) env[m[1]!] = m[2]!;
  }
  const direct = { ...env, PROXY_SOCKET_PATH: "" };
  const rows: string[] = [];
  for (const mode of ["proxy", "direct"] as const) {
    const e = mode === "proxy" ? env : direct;
    // Alternate the two clients so that machine noise hits them alike.
    const ts = await tsSeries(e);
    const py = await pySeries(e, mode);
    rows.push(
      `| ${mode} | ${ts.p50.toFixed(2)} | ${py.p50.toFixed(2)} | ${(py.p50 / ts.p50).toFixed(2)}x | ${ts.p99.toFixed(2)} | ${py.p99.toFixed(2)} | ${ts.perSecond.toFixed(0)} | ${py.perSecond.toFixed(0)} | ${(ts.perSecond / py.perSecond).toFixed(2)}x | ${ts.batchPerSecond.toFixed(0)} | ${py.batchPerSecond.toFixed(0)} | ${(py.batchPerSecond / py.perSecond).toFixed(2)}x |`,
    );
  }
  console.log(`tiny task end to end, ${TASKS} serial tasks, then ${INFLIGHT} in flight for ${SECONDS} s, then ${BATCH_TASKS} through the batch path (${BATCH_INFLIGHT} in flight); ms and tasks/s`);
  console.log("| path | TS p50 | py p50 | py/ts p50 | TS p99 | py p99 | TS tasks/s | py tasks/s | ts/py throughput | TS batch tasks/s | py batch tasks/s | py batch / py one by one |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(r);
} finally {
  await dev.stop("SIGINT");
  rmSync(dir, { recursive: true, force: true });
}
