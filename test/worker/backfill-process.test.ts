/**
 * A backfill end to end: compiled Coordinator and Worker, a block range over the local test
 * chain, the function reading blocks through the Worker's IO path, rows in the SQLite table
 * store, checked against values recomputed independently from the same synthetic chain.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Task, TaskState } from "../../src/gen/worker/v1/worker";
import { RawTableReader } from "../support/raw-table-reader";
import { BLOCK_STATS, BUNDLE_STATS, expectedBlockStats as expected } from "../support/block-stats";
import { BLOCKX_BINARY, BlockxProcess } from "../support/blockx-process";
import { NO_HOST_RED_LINES, reserve, waitFor } from "../support/coordinator-client";
import { randomLanePrefix } from "../support/worker-double";
import { rangeTask, WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function blockTask(taskId: string, fn: { source?: string; name?: string }, from: number, to: number, table: string, bundleSize = 0): Task {
  return rangeTask(taskId, fn, from, to, [{ handler: { $case: "blockTableWrite", blockTableWrite: { table, recordScopes: false } } }], bundleSize);
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
  const c = BlockxProcess.spawn([kind === "block" ? "coordinator" : "bundle-coordinator"], { ...env, ...NO_HOST_RED_LINES, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix });
  cleanups.push(() => c.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  return { dir, kind, coordAddr: await c.grpcAddr(), client, worker: w };
}

async function runTask(s: Awaited<ReturnType<typeof setup>>, task: Task) {
  const slot = await waitFor(() => reserve(s.coordAddr, task.taskId, s.kind as "block" | "bundle"), (o) => o.ok);
  const submitted = await s.client.submitTask(task, slot.ok ? slot.res.slotId : "");
  if (!submitted.ok) throw new Error(submitted.details);
  return (await s.client.watch([task.taskId])).snapshots.at(-1)!;
}

describe("a backfill over the local test chain", () => {
  test("1,000 blocks: one row per block, exactly once, even when ranges overlap; values match the chain (recomputed)", async () => {
    const s = await setup("worker");
    const first = await runTask(s, blockTask("bf-1", { source: BLOCK_STATS }, 1000, 1999, "block_stats"));
    expect(first).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 1000, callsSucceeded: 1000 });
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    const rowsOf = () => store.query("block_stats", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    expect(rowsOf()).toEqual(expected(1000, 1999));
    // An overlapping range run again replaces the overlap instead of duplicating it.
    const again = await runTask(s, blockTask("bf-2", { source: BLOCK_STATS }, 1900, 2099, "block_stats"));
    expect(again.state).toBe(TaskState.SUCCEEDED);
    const result = await s.client.getTaskResult("bf-2");
    expect(result.ok && result.value.writes).toEqual([{ table: "block_stats", handler: "block_table_write", rowsWritten: 200, callsWritten: 200 }]);
    expect(rowsOf()).toEqual(expected(1000, 2099));
    store.close();
  }, 90_000);

  test("blocks rendered by `blockx localchain render` are served from the store: the same rows; a damaged store stops the Worker", async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockx-store-"));
    Bun.spawnSync(["chmod", "755", dir]);
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const storePath = join(dir, "eth.blocks");
    const render = Bun.spawnSync([BLOCKX_BINARY, "localchain", "render", "--chain", "ethereum", "--from", "3000", "--to", "3199", "--out", storePath]);
    expect(render.exitCode).toBe(0);
    expect(render.stdout.toString()).toContain("rendered blocks 3000..3199 of ethereum");
    // Blocks 3100..3299: half from the store, half generated; the table cannot tell them apart.
    const s = await setup("worker", { LOCALTESTSERVICE_BLOCK_STORE: storePath });
    await s.worker.waitForLog((l) => l.msg === "local test chain block store opened");
    const last = await runTask(s, blockTask("st-1", { source: BLOCK_STATS }, 3100, 3299, "block_stats"));
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 200 });
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    expect(store.query("block_stats", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }))).toEqual(expected(3100, 3299));
    store.close();

    writeFileSync(storePath, readFileSync(storePath).subarray(0, 5000));
    const broken = BlockxProcess.spawn(["worker"], { WORKER_LISTEN: "127.0.0.1:0", LOCALTESTSERVICE_BLOCK_STORE: storePath });
    cleanups.push(() => broken.stop("SIGKILL"));
    expect(await broken.exited).toBe(2);
    expect(broken.stderr).toContain("LOCALTESTSERVICE_BLOCK_STORE");
    expect(broken.stderr).toContain("truncated or damaged");
    const usage = Bun.spawnSync([BLOCKX_BINARY, "localchain", "render", "--chain", "ethereum", "--from", "10", "--to", "5", "--out", storePath]);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr.toString()).toContain("--to (5) is below --from (10)");
  }, 90_000);

  test("the bundle cluster writes per bundle, and a function by name comes from FUNCTIONS_DIR", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    writeFileSync(join(fnDir, "bundle_stats.py"), BUNDLE_STATS);
    const s = await setup("bundle-worker", { FUNCTIONS_DIR: fnDir });
    const last = await runTask(s, blockTask("bundle-1", { name: "bundle_stats" }, 500, 574, "bundle_stats", 10));
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 8 });
    await runTask(s, blockTask("bundle-2", { name: "bundle_stats" }, 500, 574, "bundle_stats", 10)); // a rerun replaces, never duplicates
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    const rows = store.query("bundle_stats", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    store.close();
    expect(rows).toEqual(expected(500, 574));
  }, 90_000);

  test("reruns never lose rows: another start, another bundle size and part of one bundle are aligned with the bundles written before (75 rows for 75 blocks every time), and a cut the store would make is refused", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    writeFileSync(join(fnDir, "bundle_stats.py"), BUNDLE_STATS);
    const s = await setup("bundle-worker", { FUNCTIONS_DIR: fnDir });
    const dbFile = join(s.dir, "tables.sqlite");
    let n = 0;
    const run = async (from: number, to: number, size: number) => {
      const last = await runTask(s, blockTask(`realign-${++n}`, { name: "bundle_stats" }, from, to, "realigned", size));
      expect(last.state).toBe(TaskState.SUCCEEDED);
      return last;
    };
    // Every row of the table, read with plain SQL: nothing outside the blocks expected, nothing twice.
    const read = <T>(f: (store: RawTableReader) => T) => {
      const store = new RawTableReader(dbFile);
      try {
        return f(store);
      } finally {
        store.close();
      }
    };
    const table = () => read((t) => t.query("realigned", "ORDER BY block, rowid").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used })));
    const scopes = () => read((t) => [...new Set(t.query("realigned", "ORDER BY _scope_from").map((r) => `${r._scope_from}..${r._scope_to}`))]);
    const all = expected(500, 574);
    await run(500, 574, 10);
    expect(table()).toEqual(all);
    // The rerun: bundles of 10 from 505 would cut 500..509 (rows carry no block of their
    // own): it is widened to 500..574 on the earlier bundles, so blocks 500..504 keep their rows.
    expect((await run(505, 574, 10)).callsTotal).toBe(8);
    expect(table()).toEqual(all);
    expect(scopes()).toEqual(["500..509", "510..519", "520..529", "530..539", "540..549", "550..559", "560..569", "570..574"]);
    const widened = await s.worker.waitForLog((l) => l.msg.startsWith("bundles aligned") && l.taskId === "realign-2");
    expect(widened).toMatchObject({ from: 505, to: 574, alignedFrom: 500, alignedTo: 574, calls: 8 });
    // Another bundle size: a bundle reaching into an earlier one takes it whole.
    await run(500, 574, 15);
    expect(table()).toEqual(all);
    expect(scopes()).toEqual(["500..519", "520..539", "540..559", "560..574"]);
    // Part of one bundle: that whole bundle (and its neighbour the range reaches into) is recomputed.
    expect((await run(517, 521, 10)).callsTotal).toBe(2);
    expect(table()).toEqual(all);
    expect(scopes()).toEqual(["500..519", "520..539", "540..559", "560..574"]);
  }, 90_000);

  test("a row that does not fit the table fails the task with a clear error", async () => {
    const s = await setup("worker");
    await runTask(s, blockTask("fit-1", { source: "def main(ctx, input):\n    return [{'block': input['blockNumber']}]\n" }, 1, 1, "strict"));
    const bad = await runTask(s, blockTask("fit-2", { source: "def main(ctx, input):\n    return [{'block': 'x', 'extra': 1}]\n" }, 2, 2, "strict"));
    expect(bad.state).toBe(TaskState.FAILED);
    expect(bad.error?.code).toBe("ROW_MISMATCH");
    expect(bad.error?.message).toContain('column "extra" is not in table strict');
  }, 60_000);

  test("a function raising on one block fails the task, naming the block with its traceback; that block has no rows", async () => {
    const s = await setup("worker");
    const src = "def main(ctx, input):\n    n = input['blockNumber']\n    if n == 205:\n        raise RuntimeError(f'cannot decode block {n}')\n    return [{'block': n}]\n";
    const last = await runTask(s, blockTask("raises", { source: src }, 200, 209, "partial"));
    expect(last.state).toBe(TaskState.FAILED);
    const result = await s.client.getTaskResult("raises");
    if (!result.ok) throw new Error(result.details);
    expect(result.value.firstError).toMatchObject({ code: "USER_ERROR", callInput: '{"chain":"ethereum","blockNumber":205}', message: "RuntimeError: cannot decode block 205" });
    expect(result.value.firstError!.traceback).toContain("line 4, in main");
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    // The failure may end the task before any other call's rows were committed: then no table.
    const blocks = store.hasTable("partial") ? store.query("partial").map((r) => r.block) : [];
    store.close();
    expect(blocks).not.toContain(205);
  }, 60_000);

  test("cancel mid-backfill: no rows are written after CANCELLED", async () => {
    const s = await setup("worker");
    const src = "import time\ndef main(ctx, input):\n    time.sleep(0.05)\n    return [{'block': input['blockNumber']}]\n";
    // Rows are the side effect; counted with plain SQL (0 until the first write makes the table).
    const countRows = () => {
      const store = new RawTableReader(join(s.dir, "tables.sqlite"));
      try {
        return store.query("cancelled_rows").length;
      } catch {
        return 0;
      } finally {
        store.close();
      }
    };
    const slot = await waitFor(() => reserve(s.coordAddr, "cancel-bf"), (o) => o.ok);
    await s.client.submitTask(blockTask("cancel-bf", { source: src }, 0, 99_999, "cancelled_rows"), slot.ok ? slot.res.slotId : "");
    await waitFor(async () => countRows(), (n) => n > 0);
    const cancelled = await s.client.cancelTask("cancel-bf", "enough");
    // The baseline is taken at the reply: a call that was running then, answering later, must
    // not add a row either.
    const atCancel = countRows();
    expect(cancelled.ok && cancelled.value.state).toBe(TaskState.CANCELLED);
    expect(atCancel).toBeGreaterThan(0);
    expect(atCancel).toBeLessThan(100_000);
    // Another backfill runs to its end on the same Worker and executors meanwhile (by then the
    // calls the cancel met have answered); the cancelled table has not grown.
    expect(await runTask(s, blockTask("after-cancel-bf", { source: src }, 0, 49, "other_rows"))).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 50 });
    await Bun.sleep(1_000);
    expect(countRows()).toBe(atCancel);
  }, 60_000);

  test("a 10-million-block task started and cancelled keeps the Worker's memory flat", async () => {
    const s = await setup("worker");
    const rssOf = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${s.worker.proc.pid}/status`, "utf8"))![1]) * 1024;
    const src = "def main(ctx, input):\n    return [{'block': input['blockNumber']}]\n";
    await runTask(s, blockTask("warm", { source: src }, 1, 50, "flat")); // warm the Worker up first
    const before = rssOf();
    const slot = await waitFor(() => reserve(s.coordAddr, "ten-million"), (o) => o.ok);
    await s.client.submitTask(blockTask("ten-million", { source: src }, 0, 9_999_999, "flat"), slot.ok ? slot.res.slotId : "");
    await Bun.sleep(2_000);
    const during = rssOf();
    const cancelled = await s.client.cancelTask("ten-million");
    expect(cancelled.ok && cancelled.value.callsTotal).toBe(10_000_000);
    // A materialised list of 10 million call inputs ({chain, blockNumber} objects, ~60 bytes
    // each) would add about 600 MiB at once; running calls for 2 s grows the heap by tens of MiB.
    expect(during - before).toBeLessThan(256 * 1024 * 1024);
  }, 60_000);

  test("a small task submitted during a large backfill finishes while the backfill is still running (fairness)", async () => {
    const s = await setup("worker");
    const slow = "import time\ndef main(ctx, input):\n    time.sleep(0.02)\n    return [{'block': input['blockNumber']}]\n";
    const big = await waitFor(() => reserve(s.coordAddr, "big"), (o) => o.ok);
    await s.client.submitTask(blockTask("big", { source: slow }, 0, 49_999, "big_rows"), big.ok ? big.res.slotId : "");
    await Bun.sleep(500);
    const small = await runTask(s, blockTask("small", { source: BLOCK_STATS }, 7, 7, "small_rows"));
    expect(small.state).toBe(TaskState.SUCCEEDED);
    const bigNow = await s.client.getTaskResult("big");
    expect(bigNow.ok && bigNow.value.snapshot!.state).toBe(TaskState.RUNNING);
    await s.client.cancelTask("big");
  }, 60_000);

  test("a function edited mid-backfill: the running task keeps the code pinned when it started", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    Bun.spawnSync(["chmod", "755", fnDir]); // executors may run as nobody: they read the gate here
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    // Every call waits for the gate file, so the task cannot end before the test lets it: the
    // edit is sure to land while it runs, however fast or slow this machine is.
    const gate = join(fnDir, "gate");
    const v1 = [
      "import os, time",
      "def main(ctx, input):",
      `    while not os.path.exists(${JSON.stringify(gate)}):`,
      "        time.sleep(0.01)",
      "    return [{'block': input['blockNumber'], 'version': 1}]",
    ].join("\n");
    writeFileSync(join(fnDir, "versioned.py"), v1);
    // The calls wait for a gate file in a host folder, which the executor sandbox hides by design.
    const s = await setup("worker", { EXECUTOR_SANDBOX: "off", FUNCTIONS_DIR: fnDir, TASK_MAX_INFLIGHT_CALLS: "4" });
    await s.worker.waitForLog((l) => l.msg === "functions loaded");
    const slot = await waitFor(() => reserve(s.coordAddr, "pinned"), (o) => o.ok);
    const submitted = await s.client.submitTask(blockTask("pinned", { name: "versioned" }, 0, 299, "versions"), slot.ok ? slot.res.slotId : "");
    expect(submitted.ok && submitted.value.state).toBe(TaskState.RUNNING);
    writeFileSync(join(fnDir, "versioned.py"), v1.replace("'version': 1", "'version': 2"));
    // The Worker has read version 2 (its poller logs each new epoch) while the task still runs.
    await s.worker.waitForLog((l) => l.msg === "functions loaded" && Number(l.epoch) >= 2);
    const during = await s.client.getTaskResult("pinned");
    expect(during.ok && during.value.snapshot!.state).toBe(TaskState.RUNNING);
    expect(during.ok && during.value.snapshot!.callsSucceeded).toBe(0);
    writeFileSync(gate, "");
    const last = (await s.client.watch(["pinned"])).snapshots.at(-1)!;
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 300 });
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    expect(new Set(store.query("versions").map((r) => r.version))).toEqual(new Set([1]));
    store.close();
    // A task started after the Worker read the edit runs the new code.
    await runTask(s, blockTask("after-edit", { name: "versioned" }, 1000, 1000, "versions"));
    const store2 = new RawTableReader(join(s.dir, "tables.sqlite"));
    expect(store2.query("versions", "WHERE block = 1000").map((r) => r.version)).toEqual([2]);
    store2.close();
  }, 60_000);

  test("a function calling another function by name, and executors SIGKILLed repeatedly mid-backfill: still SUCCEEDED, rows exact, no duplicates", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    Bun.spawnSync(["chmod", "755", fnDir]);
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    writeFileSync(join(fnDir, "tx_count.py"), "def main(ctx, block):\n    return len(block['transactions'])\n");
    writeFileSync(
      join(fnDir, "stats_via_sub_call.py"),
      [
        "import time",
        "def main(ctx, input):",
        "    time.sleep(0.02)",
        "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber'], 'full': False})",
        "    return [{'block': input['blockNumber'], 'tx_count': ctx.call('tx_count', b), 'gas_used': int(b['gasUsed'], 16)}]",
      ].join("\n"),
    );
    const s = await setup("worker", { FUNCTIONS_DIR: fnDir, CALL_MAX_ATTEMPTS: "10" });
    const slot = await waitFor(() => reserve(s.coordAddr, "survivor"), (o) => o.ok);
    await s.client.submitTask(blockTask("survivor", { name: "stats_via_sub_call" }, 3000, 3399, "survivor_rows"), slot.ok ? slot.res.slotId : "");
    const watching = s.client.watch(["survivor"]);
    for (let i = 0; i < 3; i++) {
      await Bun.sleep(400);
      const pids = Bun.spawnSync(["pgrep", "-P", String(s.worker.proc.pid)]).stdout.toString().trim().split("\n").filter(Boolean);
      if (pids[0]) process.kill(Number(pids[0]), "SIGKILL");
    }
    const last = (await watching).snapshots.at(-1)!;
    expect(last.state).toBe(TaskState.SUCCEEDED);
    expect(last.callsRetried).toBeGreaterThan(0);
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    const rows = () => store.query("survivor_rows", "ORDER BY block").map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
    expect(rows()).toEqual(expected(3000, 3399));
    // Retried calls write only once they succeed, so the retries alone cannot show a duplicate:
    // the same range run again over its written rows must still leave one row per block.
    // Straight to the Worker (a slot taken inline): the kills just put its system error rate over
    // the Coordinators' red line, which is the point of that rate, not of this check.
    const resubmitted = await s.client.submitTask(blockTask("survivor-rerun", { name: "stats_via_sub_call" }, 3000, 3399, "survivor_rows"), "");
    expect(resubmitted.ok).toBe(true);
    const again = (await s.client.watch(["survivor-rerun"])).snapshots.at(-1)!;
    expect(again.state).toBe(TaskState.SUCCEEDED);
    expect(rows()).toEqual(expected(3000, 3399));
    store.close();
  }, 90_000);

  test("a sub-call whose executor dies is retried like a call, not turned into the parent's error", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    Bun.spawnSync(["chmod", "777", fnDir]); // executors may run as nobody: they write markers here
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    // The first try of each block's sub-call kills its own executor process.
    writeFileSync(
      join(fnDir, "dies_once.py"),
      ["import os", "def main(ctx, n):", `    marker = os.path.join(${JSON.stringify(fnDir)}, f"tried-{n}")`, "    if not os.path.exists(marker):", "        open(marker, 'w').close()", "        os._exit(3)", "    return n * 2"].join("\n"),
    );
    writeFileSync(join(fnDir, "parent.py"), "def main(ctx, input):\n    return [{'block': input['blockNumber'], 'double': ctx.call('dies_once', input['blockNumber'])}]\n");
    // One parent at a time on two executors: its sub-call goes to the other, idle executor, so the
    // death hits the sub-call alone (the parent keeps running and waits for it).
    // The functions keep markers in a host folder, which the executor sandbox hides by design.
    const s = await setup("worker", { EXECUTOR_SANDBOX: "off", FUNCTIONS_DIR: fnDir, TASK_MAX_INFLIGHT_CALLS: "1" });
    const last = await runTask(s, blockTask("sub-dies", { name: "parent" }, 100, 104, "sub_dies"));
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 5 });
    expect(last.callsRetried).toBeGreaterThanOrEqual(5);
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    expect(store.query("sub_dies", "ORDER BY block").map((r) => [r.block, r.double])).toEqual([100, 101, 102, 103, 104].map((n) => [n, 2 * n]));
    store.close();
    await s.worker.waitForLog((l) => l.msg === "sub-call failed retryably; retrying" && String(l.callId).startsWith("sub-dies/") && String(l.callId).includes("/sub-"));
  }, 90_000);

  test("cancelling a task stops the sub-calls its calls are waiting for", async () => {
    const fnDir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    Bun.spawnSync(["chmod", "777", fnDir]);
    cleanups.push(() => rmSync(fnDir, { recursive: true, force: true }));
    // A sub-call that marks its start, waits until it is stopped, and marks its end.
    writeFileSync(
      join(fnDir, "waits.py"),
      ["import os, time", "def main(ctx, n):", `    d = ${JSON.stringify(fnDir)}`, "    open(os.path.join(d, f'started-{n}'), 'w').close()", "    try:", "        while True:", "            time.sleep(0.01)", "    finally:", "        open(os.path.join(d, f'stopped-{n}'), 'w').close()"].join("\n"),
    );
    writeFileSync(join(fnDir, "parent.py"), "def main(ctx, input):\n    return [{'block': input['blockNumber'], 'v': ctx.call('waits', input['blockNumber'])}]\n");
    // The functions keep markers in a host folder, which the executor sandbox hides by design.
    const s = await setup("worker", { EXECUTOR_SANDBOX: "off", FUNCTIONS_DIR: fnDir, TASK_MAX_INFLIGHT_CALLS: "2", EXECUTOR_WALL_CLOCK_CEILING_MS: "600000" });
    const slot = await waitFor(() => reserve(s.coordAddr, "sub-cancel"), (o) => o.ok);
    await s.client.submitTask(blockTask("sub-cancel", { name: "parent" }, 0, 99, "sub_cancel"), slot.ok ? slot.res.slotId : "");
    const markers = (prefix: string) => readdirSync(fnDir).filter((f) => f.startsWith(prefix)).sort();
    // Two calls run, each waiting in its sub-call; the window holds the rest back.
    await waitFor(async () => markers("started-"), (m) => m.length === 2, 30_000);
    const cancelled = await s.client.cancelTask("sub-cancel", "enough");
    expect(cancelled.ok && cancelled.value.state).toBe(TaskState.CANCELLED);
    // Both sub-calls are stopped in their executors (their finally ran), and no call started after.
    await waitFor(async () => markers("stopped-"), (m) => m.length === 2, 30_000);
    expect(markers("stopped-")).toEqual(markers("started-").map((m) => m.replace("started-", "stopped-")));
    expect(markers("started-")).toHaveLength(2);
  }, 90_000);
});
