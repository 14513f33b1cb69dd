/**
 * Final blocks handed to executors by offset (EXECUTOR_BLOCK_HANDOFF=mapped, the default): a
 * compiled Worker with a block store, real sandboxed executors that inherit the store's open file,
 * and the failure cases of that hand-off, each checked against the block table's rows (exactly one
 * per block, each as the chain gives it): a head block (not final: never by offset), the store
 * truncated under a backfill, the store replaced under a backfill, executors killed while reading.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TaskState, type Task } from "../../src/gen/worker/v1/worker";
import { BlockTextStore, writeBlockStore } from "../../src/runtime/chains/localtestservice/block-text-store";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { BLOCK_STATS, expectedBlockStats as expected } from "../support/block-stats";
import { BlockxProcess } from "../support/blockx-process";
import { waitFor } from "../support/coordinator-client";
import { RawTableReader } from "../support/raw-table-reader";
import { metricSample, scrapedWorkerEnv } from "../support/worker-double";
import { rangeTask, WorkerClient } from "../support/worker-client";

/** The store holds blocks 0..299 and the chain's head is 299: with a finality depth of 12 (IO_FINALITY_DEPTH below), 0..287 are final, 288..299 are not. */
const HEAD = 299;
const LAST_FINAL = HEAD - 12;
/** BLOCK_STATS slowed down, so that a backfill lasts long enough to be interfered with. */
const SLOW_STATS = BLOCK_STATS.replace("def main(ctx, input):", "import time\ndef main(ctx, input):\n    time.sleep(0.02)");

const dir = mkdtempSync(join(tmpdir(), "blockx-handoff-"));
Bun.spawnSync(["chmod", "755", dir]);
const rendered = join(dir, "rendered.blocks");
beforeAll(() => {
  writeBlockStore(rendered, new SyntheticChain("ethereum"), 0, HEAD);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let workers = 0;
async function startWorker(extra: Record<string, string> = {}) {
  const n = ++workers;
  const store = join(dir, `store-${n}.blocks`);
  copyFileSync(rendered, store);
  const tables = join(dir, `tables-${n}.sqlite`);
  const w = BlockxProcess.spawn(["worker"], scrapedWorkerEnv(tables, { LOCALTESTSERVICE_BLOCK_STORE: store, LOCALTESTSERVICE_HEAD: String(HEAD), IO_FINALITY_DEPTH: "12", ...extra }));
  cleanups.push(() => w.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  const metricsAddr = (await w.waitForLog((l) => l.msg === "metrics listening")).addr as string;
  const handoffs = async () => {
    const page = await (await fetch(`http://${metricsAddr}/metrics`)).text();
    return {
      mapped: metricSample(page, "blockx_executor_block_handoffs_total", '{via="mapped"}'),
      bytes: metricSample(page, "blockx_executor_block_handoffs_total", '{via="bytes"}'),
      restarts: metricSample(page, "blockx_executor_restarts_total"),
      commits: metricSample(page, "blockx_table_store_commits_total"),
      transactions: metricSample(page, "blockx_table_store_transactions_total"),
      prefetchTaken: metricSample(page, "blockx_executor_prefetched_answers_total", '{outcome="taken"}'),
      prefetchNotTaken: metricSample(page, "blockx_executor_prefetched_answers_total", '{outcome="not_taken"}'),
    };
  };
  /** rows: the table's rows with plain SQL, in block order (none before the first write). */
  const rows = (table: string) => {
    const r = new RawTableReader(tables);
    try {
      return r.query(table, "ORDER BY block, rowid").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    } catch {
      return [];
    } finally {
      r.close();
    }
  };
  return { w, client, store, handoffs, rows };
}

const statsTask = (taskId: string, source: string, from: number, to: number, table: string): Task =>
  rangeTask(taskId, { source }, from, to, [{ handler: { $case: "blockTableWrite", blockTableWrite: { table, recordScopes: false } } }]);

async function submit(client: WorkerClient, task: Task): Promise<void> {
  const slot = await client.requestTaskSlot(task.taskId, 60_000);
  if (!slot.ok) throw new Error(slot.details);
  const submitted = await client.submitTask(task, slot.value.slotId);
  if (!submitted.ok) throw new Error(submitted.details);
}

async function run(client: WorkerClient, task: Task) {
  await submit(client, task);
  return (await client.watch([task.taskId])).snapshots.at(-1)!;
}

/** Every row is the chain's own for its block, and no block has two. */
function expectExactRows(rows: { block: unknown }[]) {
  const blocks = rows.map((r) => Number(r.block));
  expect(new Set(blocks).size).toBe(blocks.length);
  for (const r of rows) expect(r).toEqual(expected(Number(r.block), Number(r.block))[0]!);
}

describe("final blocks handed to executors by offset into the block store", () => {
  test("final blocks go by offset to the sandboxed executors, which read them themselves; head blocks never do, and arrive right as bytes", async () => {
    const s = await startWorker();
    const ready = await s.w.waitForLog((l) => l.msg === "executor ready");
    expect(String(ready.readsBlockStore)).toMatch(/^\d+:\d+$/);
    expect(await run(s.client, statsTask("final", BLOCK_STATS, 0, LAST_FINAL, "stats"))).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: LAST_FINAL + 1 });
    expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
    // Every block went by offset: every executor reads the file (none got a final block as bytes).
    const afterFinal = await s.handoffs();
    expect({ mapped: afterFinal.mapped, bytes: afterFinal.bytes }).toEqual({ mapped: LAST_FINAL + 1, bytes: 0 });
    // One commit per call, in as many transactions or fewer (calls finishing during a commit share the next).
    expect(afterFinal.commits).toBe(LAST_FINAL + 1);
    expect(afterFinal.transactions).toBeGreaterThanOrEqual(1);
    expect(afterFinal.transactions).toBeLessThanOrEqual(afterFinal.commits);

    // Blocks above head - finality depth may still change: not one offset goes out for them.
    expect(await run(s.client, statsTask("head", BLOCK_STATS, LAST_FINAL + 1, HEAD, "head_stats"))).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: HEAD - LAST_FINAL });
    expect(s.rows("head_stats")).toEqual(expected(LAST_FINAL + 1, HEAD));
    const afterHead = await s.handoffs();
    expect({ mapped: afterHead.mapped, bytes: afterHead.bytes }).toEqual({ mapped: LAST_FINAL + 1, bytes: 0 });
  }, 120_000);

  test("once two calls showed which block they read first, the next calls get it by offset in their ExecuteCall and take it; with TASK_IO_PREFETCH=false none does; the same rows either way", async () => {
    for (const prefetch of ["true", "false"]) {
      const s = await startWorker({ TASK_IO_PREFETCH: prefetch, TASK_MAX_INFLIGHT_CALLS: "8" });
      expect(await run(s.client, statsTask(`pf-${prefetch}`, BLOCK_STATS, 0, LAST_FINAL, "stats"))).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: LAST_FINAL + 1 });
      expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
      const h = await s.handoffs();
      expect({ mapped: h.mapped, bytes: h.bytes, restarts: h.restarts }).toEqual({ mapped: LAST_FINAL + 1, bytes: 0, restarts: 0 });
      if (prefetch === "true") {
        // Only calls sent before the second call's first request confirmed the pattern went without (at most 8 in flight, twice).
        expect(h.prefetchTaken).toBeGreaterThanOrEqual(LAST_FINAL + 1 - 16);
        expect(h.prefetchNotTaken).toBe(0);
      } else {
        expect(h.prefetchTaken + h.prefetchNotTaken).toBe(0);
      }
    }
  }, 120_000);

  test("a store truncated under a backfill: the executors never read past its end, the bytes they then ask for fail the task naming the cause, no executor dies; restored, a rerun fills the table exactly", async () => {
    const s = await startWorker({ TASK_MAX_INFLIGHT_CALLS: "4" });
    const whole = readFileSync(s.store);
    const opened = BlockTextStore.open(s.store);
    const cut = opened.read(150).span!.offset + 10;
    opened.close();
    await submit(s.client, statsTask("cut", SLOW_STATS, 0, LAST_FINAL, "stats"));
    await waitFor(async () => s.rows("stats").length, (n) => n >= 20, 60_000);
    truncateSync(s.store, cut);
    const last = (await s.client.watch(["cut"])).snapshots.at(-1)!;
    expect(last.state).toBe(TaskState.FAILED);
    const result = await s.client.getTaskResult("cut");
    if (!result.ok) throw new Error(result.details);
    expect(result.value.firstError!.message).toMatch(/short read of block \d+ from the block store .*truncated/);
    const h = await s.handoffs();
    // The executor that met the cut asked for the bytes (counted), and the Worker's read failed.
    expect(h.bytes).toBeGreaterThan(0);
    expect(h.restarts).toBe(0);
    const partial = s.rows("stats");
    expect(partial.length).toBeGreaterThan(0);
    expectExactRows(partial);

    writeFileSync(s.store, whole); // the same file, whole again
    expect(await run(s.client, statsTask("cut-rerun", SLOW_STATS, 0, LAST_FINAL, "stats"))).toMatchObject({ state: TaskState.SUCCEEDED });
    expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
  }, 120_000);

  test("a store replaced under a backfill (re-rendered with another layout): the Worker and every executor, respawned ones too, keep reading the file the Worker opened; rows exact", async () => {
    const s = await startWorker({ TASK_MAX_INFLIGHT_CALLS: "4" });
    const identity = String((await s.w.waitForLog((l) => l.msg === "executor ready")).readsBlockStore);
    await submit(s.client, statsTask("replaced", SLOW_STATS, 0, LAST_FINAL, "stats"));
    await waitFor(async () => s.rows("stats").length, (n) => n >= 20, 60_000);
    // Blocks 100..299 only: every block now lies elsewhere in a new file at the same path.
    writeBlockStore(s.store, new SyntheticChain("ethereum"), 100, HEAD);
    const pids = Bun.spawnSync(["pgrep", "-P", String(s.w.proc.pid)]).stdout.toString().trim().split("\n").filter(Boolean);
    process.kill(Number(pids[0]), "SIGKILL");
    const last = (await s.client.watch(["replaced"])).snapshots.at(-1)!;
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: LAST_FINAL + 1 });
    expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
    const during = await s.handoffs();
    expect(during.restarts).toBeGreaterThanOrEqual(1);
    expect(during.bytes).toBe(0);
    // Another task: executors started after the replacement (a new owner gets fresh ones) read
    // the Worker's open file too, not the new one at the path, and get every block by offset.
    expect(await run(s.client, statsTask("after", BLOCK_STATS, 0, 99, "stats_after"))).toMatchObject({ state: TaskState.SUCCEEDED });
    expect(s.rows("stats_after")).toEqual(expected(0, 99));
    const after = await s.handoffs();
    expect({ mapped: after.mapped - during.mapped, bytes: after.bytes }).toEqual({ mapped: 100, bytes: 0 });
    const readers = s.w.lines.filter((l) => l.msg === "executor ready").map((l) => String(l.readsBlockStore));
    expect(readers.length).toBeGreaterThanOrEqual(3);
    expect(new Set(readers)).toEqual(new Set([identity]));
  }, 120_000);

  test("executors SIGKILLed while reading blocks: their calls are retried, the task succeeds, and the block table holds one row per block, also after a rerun", async () => {
    const s = await startWorker({ TASK_MAX_INFLIGHT_CALLS: "4", CALL_MAX_ATTEMPTS: "10" });
    await submit(s.client, statsTask("killed", SLOW_STATS, 0, LAST_FINAL, "stats"));
    const watching = s.client.watch(["killed"]);
    for (let i = 0; i < 3; i++) {
      await waitFor(async () => s.rows("stats").length, (n) => n >= 20 * (i + 1), 60_000);
      const pids = Bun.spawnSync(["pgrep", "-P", String(s.w.proc.pid)]).stdout.toString().trim().split("\n").filter(Boolean);
      if (pids[i % pids.length]) process.kill(Number(pids[i % pids.length]), "SIGKILL");
    }
    const last = (await watching).snapshots.at(-1)!;
    expect(last.state).toBe(TaskState.SUCCEEDED);
    expect(last.callsRetried).toBeGreaterThan(0);
    expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
    const h = await s.handoffs();
    expect(h.restarts).toBeGreaterThanOrEqual(3);
    expect(h.mapped).toBeGreaterThan(0);
    expect(h.bytes).toBe(0);
    // The same range again over its written rows: still one row per block.
    expect(await run(s.client, statsTask("killed-rerun", BLOCK_STATS, 0, LAST_FINAL, "stats"))).toMatchObject({ state: TaskState.SUCCEEDED });
    expect(s.rows("stats")).toEqual(expected(0, LAST_FINAL));
  }, 120_000);
});
