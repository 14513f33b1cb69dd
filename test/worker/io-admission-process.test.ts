/**
 * The IO subsystem under a backend that slows down tenfold mid-backfill, with the real binary:
 * the local test chain's latency is raised through LOCALTESTSERVICE_FAULTS_FILE while a
 * backfill runs. The Worker's /metrics is scraped throughout and its RSS sampled from /proc.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TaskState, type Task } from "../../src/gen/worker/v1/worker";
import { RawTableReader } from "../support/raw-table-reader";
import { BlockxProcess } from "../support/blockx-process";
import { blockTableTask } from "../support/block-table-task";
import { metricSample, scrapedWorkerEnv } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// Transaction hashes only (full: False): the test is about the IO path, not about moving blocks.
const TX_COUNT = `def main(ctx, input):
    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber'], 'full': False})
    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions'])}]
`;

const backfill = (taskId: string, from: number, to: number, table: string) => blockTableTask(taskId, TX_COUNT, from, to, table);

const BASE_LATENCY_MS = 30;
const MAX_LIMIT = 16;

async function startWorker(extra: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), "blockx-io-admission-"));
  Bun.spawnSync(["chmod", "755", dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const faults = join(dir, "faults.json");
  writeFileSync(faults, JSON.stringify({ latencyMs: BASE_LATENCY_MS }));
  const w = BlockxProcess.spawn(["worker"], scrapedWorkerEnv(join(dir, "tables.sqlite"), { LOCALTESTSERVICE_FAULTS_FILE: faults, ...extra }));
  cleanups.push(() => w.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  return { dir, faults, w, client };
}

async function run(client: WorkerClient, task: Task) {
  const slot = await client.requestTaskSlot(task.taskId, 60_000);
  if (!slot.ok) throw new Error(slot.details);
  const submitted = await client.submitTask(task, slot.value.slotId);
  if (!submitted.ok) throw new Error(submitted.details);
  return client.watch([task.taskId]).then((r) => r.snapshots.at(-1)!);
}

describe("IO admission under a backend slowing down tenfold", () => {
  test("in flight never exceeds the max limit, the limit shrinks, the backfill completes exactly, and memory stays bounded", async () => {
    const { dir, faults, w, client } = await startWorker({
      EXECUTOR_SANDBOX: "off", // the calls wait for gate files in a host folder, which the sandbox hides by design
      TASK_MAX_INFLIGHT_CALLS: "64", // calls waiting at a gate hold an executor thread each
      IO_ADMISSION_INITIAL_LIMIT: "8",
      IO_ADMISSION_MIN_LIMIT: "4",
      IO_ADMISSION_MAX_LIMIT: String(MAX_LIMIT),
      IO_ADMISSION_QUEUE: "64",
    });
    const metricsAddr = (await w.waitForLog((l) => l.msg === "metrics listening")).addr as string;
    const scrape = async () => (await fetch(`http://${metricsAddr}/metrics`)).text();
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${w.proc.pid}/status`, "utf8"))![1]) * 1024;

    // The phases follow the backfill's progress, not the clock, so that the machine's speed
    // cannot decide the outcome: blocks 2000..2599 are read at the normal latency, 2600..2799
    // at ten times it, 2800..3499 at the normal latency again. A call of a later phase waits
    // (before its read) for that phase's gate file, which the test creates only once every
    // read of the phase before has been answered and the Worker has applied the new latency.
    const FROM = 2_000;
    const SLOW_FROM = 2_600;
    const RECOVERED_FROM = 2_800;
    const TO = 3_499;
    const gate = (name: string) => join(dir, `gate-${name}`);
    const gated = [
      "import os, time",
      "def main(ctx, input):",
      "    n = input['blockNumber']",
      `    gate = ${JSON.stringify(gate("recovered"))} if n >= ${RECOVERED_FROM} else ${JSON.stringify(gate("slow"))} if n >= ${SLOW_FROM} else None`,
      "    while gate and not os.path.exists(gate):",
      "        time.sleep(0.05)",
      ...TX_COUNT.split("\n").slice(1),
    ].join("\n");
    const done = run(client, blockTableTask("slow-backend", gated, FROM, TO, "io_rows"));
    let finished = false;
    void done.finally(() => (finished = true));

    const L = '{backend="localtestservice"}';
    const OK_READS = '{backend="localtestservice",op="eth_getBlockByNumber",result="ok"}';
    type Phase = "normal" | "slow" | "recovered";
    const samples: { inflight: number; limit: number; rss: number; phase: Phase }[] = [];
    let phase: Phase = "normal";
    const sampling = (async () => {
      while (!finished) {
        const page = await scrape();
        samples.push({ inflight: metricSample(page, "blockx_io_inflight", L), limit: metricSample(page, "blockx_io_admission_limit", L), rss: rss(), phase });
        await Bun.sleep(100);
      }
    })();
    const readsAnswered = async (n: number) => {
      while (metricSample(await scrape(), "blockx_io_backend_requests_total", OK_READS) < n) await Bun.sleep(50);
    };
    const enter = async (next: Phase, latencyMs: number) => {
      const seen = w.lines.length;
      writeFileSync(faults, JSON.stringify({ latencyMs }));
      await w.waitForLog((l) => l.msg === "injected backend faults changed" && l.latencyMs === latencyMs && w.lines.indexOf(l) >= seen);
      phase = next;
      writeFileSync(gate(next), "");
    };
    await readsAnswered(SLOW_FROM - FROM);
    await enter("slow", BASE_LATENCY_MS * 10);
    await readsAnswered(RECOVERED_FROM - FROM);
    await enter("recovered", BASE_LATENCY_MS);
    const last = await done;
    await sampling;
    const page = await scrape();

    expect(metricSample(page, "blockx_io_backend_requests_total", OK_READS)).toBe(TO - FROM + 1); // each block read once
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 1_500, callsSucceeded: 1_500 });
    const store = new RawTableReader(join(dir, "tables.sqlite"));
    const rows = store.query("io_rows") as { block: number }[];
    store.close();
    expect(rows.length).toBe(1_500);
    expect(new Set(rows.map((r) => r.block)).size).toBe(1_500);

    // Admission: the high-water mark over the whole run and every sample stay within the max limit.
    expect(metricSample(page, "blockx_io_inflight_peak", L)).toBeLessThanOrEqual(MAX_LIMIT);
    expect(metricSample(page, "blockx_io_inflight_peak", L)).toBeGreaterThan(0);
    for (const s of samples) expect(s.inflight).toBeLessThanOrEqual(MAX_LIMIT);
    // The limit shrank while the backend was slow and grew back once it was not.
    const limits = (p: Phase) => samples.filter((s) => s.phase === p).map((s) => s.limit);
    const slowMin = Math.min(...limits("slow"));
    expect(slowMin).toBeLessThanOrEqual(MAX_LIMIT / 2);
    expect(Math.max(...limits("recovered"))).toBeGreaterThan(slowMin);
    // Memory: a generous bound (the Worker idles near 100-200 MiB; the read cache holds the blocks it saw).
    const maxRss = Math.max(...samples.map((s) => s.rss));
    expect(maxRss).toBeLessThan(1024 * 1024 * 1024);
    // The blocks are final (head 20,000,000): a rerun over some of them is served by the read cache.
    const backendBefore = metricSample(page, "blockx_io_backend_requests_total", '{backend="localtestservice",op="eth_getBlockByNumber",result="ok"}');
    const rerun = await run(client, backfill("rerun", FROM, FROM + 99, "io_rows"));
    expect(rerun).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 100 });
    const after = await scrape();
    expect(metricSample(after, "blockx_io_cache_hits_total") - metricSample(page, "blockx_io_cache_hits_total")).toBe(100);
    expect(metricSample(after, "blockx_io_requests_total", '{backend="localtestservice",op="eth_getBlockByNumber",via="cache"}')).toBeGreaterThanOrEqual(100);
    expect(metricSample(after, "blockx_io_backend_requests_total", '{backend="localtestservice",op="eth_getBlockByNumber",result="ok"}')).toBe(backendBefore);
    expect(metricSample(after, "blockx_io_cache_bytes")).toBeLessThanOrEqual(268_435_456);
    expect(metricSample(after, "blockx_io_cache_entries")).toBeGreaterThanOrEqual(1_500);
    console.log(
      `io-admission: ${samples.length} samples; peak in flight ${metricSample(page, "blockx_io_inflight_peak", L)} (max ${MAX_LIMIT}); ` +
        `limit normal max ${Math.max(...limits("normal"))}, slow min ${slowMin}, recovered max ${Math.max(...limits("recovered"))}; ` +
        `rejected ${metricSample(page, "blockx_io_admission_rejected_total", L)}; max RSS ${(maxRss / 2 ** 20).toFixed(0)} MiB; retried ${last.callsRetried}`,
    );
  }, 240_000);

  test("a backend failing transiently: the call fails retryably (BACKEND_RETRYABLE), is retried, and the backfill completes; a backend that never recovers fails the task after CALL_MAX_ATTEMPTS", async () => {
    const { dir, faults, w, client } = await startWorker({ LOCALTESTSERVICE_ERROR_RATE: "0.2", CALL_MAX_ATTEMPTS: "8", IO_CACHE_MAX_BYTES: "0" });
    writeFileSync(faults, JSON.stringify({ latencyMs: 0 }));
    const ok = await run(client, backfill("flaky", 100, 299, "flaky_rows"));
    expect(ok).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 200 });
    expect(ok.callsRetried).toBeGreaterThan(0);
    const store = new RawTableReader(join(dir, "tables.sqlite"));
    expect(store.query("flaky_rows").length).toBe(200);
    store.close();

    writeFileSync(faults, JSON.stringify({ errorRate: 1 }));
    await w.waitForLog((l) => l.msg === "injected backend faults changed" && l.errorRate === 1); // the Worker has read it
    const failed = await run(client, backfill("down", 100, 101, "down_rows"));
    expect(failed.state).toBe(TaskState.FAILED);
    expect(failed.error?.code).toBe("BACKEND_RETRYABLE");
    expect(failed.error?.message).toContain("BackendError: BackendUnavailable: localtestservice.eth_getBlockByNumber: injected fault");
    expect(failed.error?.message).toContain("(after 8 attempts)");
  }, 120_000);
});
