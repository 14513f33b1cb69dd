/**
 * A backfill end to end: compiled Coordinator and Worker, a block range over the local test
 * chain, the function reading blocks through the Worker's IO path, rows in the SQLite table
 * store, checked against values recomputed independently from the same synthetic chain.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { SyntheticChain } from "../../src/worker/backends/localtestservice/synthetic-chain";
import { SqliteTableStore } from "../../src/worker/writers/table-store";
import { BlockxProcess } from "../support/blockx-process";
import { reserve, waitFor } from "../support/coordinator-client";
import { randomLanePrefix } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BLOCK_STATS = [
  "def main(ctx, input):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber']})",
  "    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)}]",
].join("\n");

function blockTask(taskId: string, fn: { source?: string; name?: string }, from: number, to: number, table: string, bundleSize = 0): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: fn.source ?? "", name: fn.name ?? "", entry: "main" },
      config:
        bundleSize > 0
          ? { $case: "blockBundle", blockBundle: { chain: "ethereum", fromBlock: from, toBlock: to, bundleSize } }
          : { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

async function setup(role: "worker" | "bundle-worker", extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "blockx-backfill-"));
  Bun.spawnSync(["chmod", "755", dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const kind = role === "worker" ? "block" : "bundle";
  const prefix = randomLanePrefix(kind);
  const env = { ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!, BLOCKX_LOG_LEVEL: "info" };
  const w = BlockxProcess.spawn([role], { ...env, WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: prefix, EXECUTOR_COUNT: "2", TABLE_STORE_PATH: join(dir, "tables.sqlite"), ...extra });
  cleanups.push(() => w.stop("SIGKILL"));
  const c = BlockxProcess.spawn([kind === "block" ? "coordinator" : "bundle-coordinator"], { ...env, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix });
  cleanups.push(() => c.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  return { dir, kind, coordAddr: await c.grpcAddr(), client };
}

async function runTask(s: Awaited<ReturnType<typeof setup>>, task: Task) {
  const slot = await waitFor(() => reserve(s.coordAddr, task.taskId, s.kind as "block" | "bundle"), (o) => o.ok);
  const submitted = await s.client.submitTask(task, slot.ok ? slot.res.slotId : "");
  if (!submitted.ok) throw new Error(submitted.details);
  return (await s.client.watch([task.taskId])).snapshots.at(-1)!;
}

function expected(from: number, to: number) {
  const chain = new SyntheticChain("ethereum");
  const rows = [];
  for (let n = from; n <= to; n++) {
    const b = chain.block(n, false)!;
    rows.push({ block: n, tx_count: b.transactions.length, gas_used: parseInt(b.gasUsed, 16) });
  }
  return rows;
}

describe("a backfill over the local test chain", () => {
  test("one row per block, exactly once, even when the same range runs twice; values match the chain", async () => {
    const s = await setup("worker");
    const first = await runTask(s, blockTask("bf-1", { source: BLOCK_STATS }, 1000, 1199, "block_stats"));
    expect(first).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 200, callsSucceeded: 200 });
    const again = await runTask(s, blockTask("bf-2", { source: BLOCK_STATS }, 1100, 1299, "block_stats"));
    expect(again.state).toBe(TaskState.SUCCEEDED);
    const result = await s.client.getTaskResult("bf-2");
    expect(result.ok && result.value.writes).toEqual([{ table: "block_stats", handler: "block_table_write", rowsWritten: 200, callsWritten: 200 }]);
    const store = new SqliteTableStore(join(s.dir, "tables.sqlite"));
    const rows = store.query("block_stats", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    store.close();
    expect(rows).toEqual(expected(1000, 1299));
  }, 90_000);

  test("the bundle cluster writes per bundle, and a function by name comes from FUNCTIONS_DIR", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    writeFileSync(
      join(fnDir, "bundle_stats.py"),
      [
        "def main(ctx, input):",
        "    rows = []",
        "    for n in range(input['fromBlock'], input['toBlock'] + 1):",
        "        b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': n, 'full': False})",
        "        rows.append({'block': n, 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)})",
        "    return rows",
      ].join("\n"),
    );
    const s = await setup("bundle-worker", { FUNCTIONS_DIR: fnDir });
    const last = await runTask(s, blockTask("bundle-1", { name: "bundle_stats" }, 500, 574, "bundle_stats", 10));
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 8 });
    await runTask(s, blockTask("bundle-2", { name: "bundle_stats" }, 500, 574, "bundle_stats", 10)); // a rerun replaces, never duplicates
    const store = new SqliteTableStore(join(s.dir, "tables.sqlite"));
    const rows = store.query("bundle_stats", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    store.close();
    expect(rows).toEqual(expected(500, 574));
  }, 90_000);

  test("a row that does not fit the table fails the task with a clear error", async () => {
    const s = await setup("worker");
    await runTask(s, blockTask("fit-1", { source: "def main(ctx, input):\n    return [{'block': input['blockNumber']}]\n" }, 1, 1, "strict"));
    const bad = await runTask(s, blockTask("fit-2", { source: "def main(ctx, input):\n    return [{'block': 'x', 'extra': 1}]\n" }, 2, 2, "strict"));
    expect(bad.state).toBe(TaskState.FAILED);
    expect(bad.error?.code).toBe("ROW_MISMATCH");
    expect(bad.error?.message).toContain('column "extra" is not in table strict');
  }, 60_000);
});
