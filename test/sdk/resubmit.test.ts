/**
 * Resubmission when the Worker running a task is lost: real Coordinator, two real Workers
 * sharing one SQLite table store, the SDK in this process. The Worker running a
 * block_table_write task is SIGKILLed mid-run; runTask reruns the task on the other Worker
 * and the table ends with exactly one set of rows per block.
 */
import { dirname, join } from "node:path";
import { afterEach, describe, expect, test } from "bun:test";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { RawTableReader } from "../support/raw-table-reader";
import { TestCluster } from "../support/cluster";
import { freePort } from "../support/ports";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SLOW_ROWS = "import time\ndef main(ctx, input):\n    time.sleep(0.05)\n    n = input['blockNumber']\n    return [{'block': n, 'double': n * 2}]\n";

function task(taskId: string, output: "blockTableWrite" | "normalTableWrite", from: number, to: number): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: SLOW_ROWS, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [output === "blockTableWrite" ? { handler: { $case: "blockTableWrite", blockTableWrite: { table: "resubmitted" } } } : { handler: { $case: "normalTableWrite", normalTableWrite: { table: "appended" } } }],
  });
}

async function twoWorkers() {
  const cluster = new TestCluster();
  cleanups.push(() => cluster.stop());
  const workers = [await cluster.worker(), await cluster.worker()];
  const coord = await cluster.coordinator();
  const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "1500" }));
  cleanups.push(() => client.close());
  return { cluster, workers, client };
}

/** killWhenHalfway SIGKILLs the Worker the task was submitted to, once a few calls are done. */
function killWhenHalfway(workers: { proc: { proc: { pid: number } }; addr: string }[], atDone: number) {
  let running = "";
  let killed = "";
  return {
    killed: () => killed,
    onEvent: (e: { kind: string; workerAddr?: string }) => {
      if (e.kind === "submitting" || e.kind === "submitted") running = e.workerAddr!; // submitting: a short task's waiting SubmitTask answers only at its end
    },
    onProgress: (p: { done: number }) => {
      if (!killed && running && p.done >= atDone) {
        killed = running;
        process.kill(workers.find((w) => w.addr === running)!.proc.proc.pid, "SIGKILL");
      }
    },
  };
}

describe("resubmission after a lost Worker", () => {
  test("block_table_write: the Worker is SIGKILLed mid-task; runTask reruns it on the other Worker; one set of rows per block", async () => {
    const { cluster, workers, client } = await twoWorkers();
    const killer = killWhenHalfway(workers, 10);
    const run = await client.runTask(task("resubmit-1", "blockTableWrite", 100, 159), killer);
    expect(killer.killed()).not.toBe("");
    expect(run.state).toBe("SUCCEEDED");
    expect(run.attempts).toBe(2);
    expect(run.workers[0]).toBe(killer.killed());
    expect(run.workers[1]).not.toBe(killer.killed());
    expect(run.events.some((e) => e.kind === "workerLost" && e.resubmit)).toBe(true);
    const store = new RawTableReader(cluster.tableStorePath);
    const rows = store.query("resubmitted", "ORDER BY block").map(({ block, double }) => ({ block, double }));
    store.close();
    expect(rows).toEqual(Array.from({ length: 60 }, (_, i) => ({ block: 100 + i, double: 2 * (100 + i) })));
  }, 90_000);

  test("normal_table_write is resubmitted too: each call's rows replace what the same call of the lost run appended, so every call's rows land once", async () => {
    const { cluster, workers, client } = await twoWorkers();
    const killer = killWhenHalfway(workers, 5);
    const run = await client.runTask(task("append-1", "normalTableWrite", 0, 59), killer);
    expect({ state: run.state, attempts: run.attempts }).toEqual({ state: "SUCCEEDED", attempts: 2 });
    expect(run.workers[0]).toBe(killer.killed());
    const store = new RawTableReader(cluster.tableStorePath);
    const rows = store.query("appended", "ORDER BY block").map(({ block, double }) => ({ block, double }));
    store.close();
    expect(rows).toEqual(Array.from({ length: 60 }, (_, i) => ({ block: i, double: 2 * i })));
  }, 90_000);

  test("a Worker restarted on the same address answers NotFound for the task; runTask reruns it there", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const listen = `127.0.0.1:${await freePort()}`;
    const first = await cluster.worker({ WORKER_LISTEN: listen });
    const coord = await cluster.coordinator();
    // Unreachable for long does not count as lost here: the restarted Worker's NotFound must decide.
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "60000" }));
    cleanups.push(() => client.close());
    let restarted = false;
    const run = await client.runTask(task("restart-1", "blockTableWrite", 0, 39), {
      onProgress: (p) => {
        if (!restarted && p.done >= 5) {
          restarted = true;
          void first.proc.stop("SIGKILL").then(() => cluster.worker({ WORKER_LISTEN: listen }));
        }
      },
    });
    expect(run).toMatchObject({ state: "SUCCEEDED", attempts: 2, workers: [listen, listen] });
    expect(run.events.find((e) => e.kind === "workerLost")).toMatchObject({ reason: expect.stringContaining("no longer knows the task") });
    const store = new RawTableReader(cluster.tableStorePath);
    expect(store.query("resubmitted", "ORDER BY block").map((r) => r.block)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    store.close();
  }, 90_000);

  test("runTasks: a backfill cut into 4 tasks, 2 at a time; a Worker SIGKILLed mid-way; every task ends SUCCEEDED and each block has one set of rows", async () => {
    const { cluster, workers, client } = await twoWorkers();
    const tasks = [0, 1, 2, 3].map((i) => task(`backfill-${i}`, "blockTableWrite", 1000 + i * 20, 1000 + i * 20 + 19));
    let killed = "";
    const entries = await client.runTasks(tasks, {
      concurrency: 2,
      onProgress: (p, s) => {
        if (!killed && p.done >= 5 && s.workerAddr) {
          killed = s.workerAddr;
          process.kill(workers.find((w) => w.addr === killed)!.proc.proc.pid, "SIGKILL");
        }
      },
    });
    expect(killed).not.toBe("");
    expect(entries.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    const resubmitted = entries.filter((e) => e.ok && e.run.attempts > 1);
    expect(resubmitted.length).toBeGreaterThanOrEqual(1);
    for (const e of resubmitted) if (e.ok) expect(e.run.workers[0]).toBe(killed);
    const store = new RawTableReader(cluster.tableStorePath);
    const blocks = store.query("resubmitted", "ORDER BY block").map((r) => r.block);
    store.close();
    expect(blocks).toEqual(Array.from({ length: 80 }, (_, i) => 1000 + i));
  }, 90_000);

  test("a Worker that hangs (SIGSTOP) mid-task is noticed by keepalive; runTask reruns the task on the other Worker", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    // A table store file per Worker: a Worker stopped inside a write transaction keeps its SQLite
    // write lock for as long as it is stopped, so a Worker sharing its file could not write at all
    // (SQLite's limit, not the SDK's; the Postgres store removes the shared file).
    const storeOf = (i: number) => join(dirname(cluster.tableStorePath), `worker-${i}.sqlite`);
    const workers = [await cluster.worker({ TABLE_STORE_PATH: storeOf(0) }), await cluster.worker({ TABLE_STORE_PATH: storeOf(1) })];
    const coord = await cluster.coordinator({ COORDINATOR_WORKER_RPC_TIMEOUT_MS: "500" });
    const client = new BlockxClient(
      cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_KEEPALIVE_TIME_MS: "5000", BLOCKX_RPC_TIMEOUT_MS: "1000", BLOCKX_WORKER_LOST_AFTER_MS: "1500" }),
    );
    cleanups.push(() => client.close());
    let stopped = 0;
    const run = await client.runTask(task("hung-1", "blockTableWrite", 300, 359), {
      onProgress: (p, s) => {
        if (!stopped && p.done >= 5) {
          stopped = workers.find((w) => w.addr === s.workerAddr)!.proc.proc.pid;
          process.kill(stopped, "SIGSTOP");
          cleanups.push(() => process.kill(stopped, "SIGCONT"));
        }
      },
    });
    expect(stopped).not.toBe(0);
    expect({ state: run.state, firstError: run.result.firstError }).toEqual({ state: "SUCCEEDED", firstError: undefined });
    expect(run.attempts).toBe(2);
    expect(run.workers[1]).not.toBe(run.workers[0]);
    const blocksIn = (i: number) => {
      const store = new RawTableReader(storeOf(i));
      try {
        return store.query("resubmitted", "ORDER BY block").map((r) => r.block as number);
      } finally {
        store.close();
      }
    };
    // The Worker that ran the task again wrote every block once; the stopped one wrote no block twice.
    const rerunBy = workers.findIndex((w) => w.addr === run.workers[1]);
    expect(blocksIn(rerunBy)).toEqual(Array.from({ length: 60 }, (_, i) => 300 + i));
    const partial = blocksIn(1 - rerunBy);
    expect(new Set(partial).size).toBe(partial.length);
  }, 90_000);
});
