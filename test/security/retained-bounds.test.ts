/**
 * The Worker's aggregate bound on what ended tasks keep (issue 51, item 6): results (up to
 * TASK_MAX_RESULT_BYTES of JSON each) and logs (TASK_LOG_MAX_BYTES each) were kept for
 * RESULT_RETENTION_MS whatever the number of tasks, so an authenticated client ending tasks fast
 * grew the Worker's memory without bound. Against the compiled Worker: 400 tasks of 2 MB results
 * each (800 MB in all) under WORKER_RETAINED_BYTES_MAX = 16 MiB: the oldest ended tasks are
 * forgotten first (their result is NOT_FOUND, the newest's is whole), each counted in
 * blockx_worker_retained_evicted_total, and the Worker's RSS grows by less than RSS_GROWTH_BOUND.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { inputsTask } from "../support/worker-client";
import { startWorker } from "../support/worker-process";

/**
 * RSS growth allowed over the idle Worker. With the bound, 16 MiB is kept and the rest is garbage of
 * results in flight (each 2 MB result is framed, parsed and encoded several times) that the collector
 * frees in its own time: growth was 281-397 MiB here (2026-12-06). Without it the 800 MB of results
 * stay: growth was 867-907 MiB.
 */
const RSS_GROWTH_BOUND_BYTES = 640 * 1024 * 1024;
const TASKS = 400;
const RESULT_CHARS = 2_000_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]!) * 1024;

describe("retained results and logs, per Worker", () => {
  test(`${TASKS} tasks of 2 MB results under WORKER_RETAINED_BYTES_MAX=16 MiB: the oldest are forgotten first, counted, and RSS stays bounded`, async () => {
    const { client, process: w } = await startWorker(
      { EXECUTOR_COUNT: "2", TASK_MAX_RESULT_BYTES: String(4 << 20), TASK_LOG_MAX_BYTES: String(1 << 20), WORKER_RETAINED_BYTES_MAX: String(16 << 20), BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0" },
      cleanups,
    );
    const metricsAddr = (await w.waitForLog((l) => l.msg === "metrics listening")).addr as string;
    const source = `def main(ctx, x):\n    ctx.log("task %d" % x)\n    return "r" * ${RESULT_CHARS}\n`;
    // Warm: the executors have started and run once before the idle figure is read.
    const warm = await client.submitTask(inputsTask("retained-warm", source, [0]), "", { waitMs: 10_000 });
    expect(warm.ok).toBe(true);
    await client.watch(["retained-warm"], false, true);
    const idle = rssOf(w.proc.pid);
    let peak = idle;
    const ids = Array.from({ length: TASKS }, (_, i) => `retained-${i}`);
    for (const [i, id] of ids.entries()) {
      const r = await client.submitTask(inputsTask(id, source, [i]), "", { waitMs: 10_000 });
      if (!r.ok) throw new Error(`${id}: ${r.details}`);
      if (r.value.state !== TaskState.SUCCEEDED) {
        const end = await client.watch([id], false, true);
        expect(end.snapshots.at(-1)?.state).toBe(TaskState.SUCCEEDED);
      }
      peak = Math.max(peak, rssOf(w.proc.pid));
    }
    console.log(`worker VmRSS: idle ${(idle / 1048576).toFixed(0)} MiB, peak ${(peak / 1048576).toFixed(0)} MiB (bound: idle + ${RSS_GROWTH_BOUND_BYTES / 1048576} MiB)`);

    // The newest ended task is whole; the oldest are gone, as if their retention had passed.
    const newest = await client.getTaskResult(ids.at(-1)!);
    expect(newest.ok && newest.value.returnValues.length).toBe(1);
    const oldest = await client.getTaskResult(ids[0]!);
    expect(oldest.ok).toBe(false);
    const kept = (await Promise.all(ids.map((id) => client.getTaskResult(id)))).filter((r) => r.ok).length;
    expect(kept).toBeGreaterThanOrEqual(2);
    expect(kept * RESULT_CHARS).toBeLessThanOrEqual(16 << 20);
    const metrics = await (await fetch(`http://${metricsAddr}/metrics`)).text();
    const evicted = Number(/^blockx_worker_retained_evicted_total (\d+)$/m.exec(metrics)?.[1] ?? "NaN");
    expect(evicted).toBe(TASKS + 1 - kept);
    expect(peak - idle).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
  }, 240_000);
});
