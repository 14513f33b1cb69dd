/**
 * Resubmission when the Worker running a task is lost: real Coordinator, two real Workers
 * sharing one SQLite table store, the SDK in this process. The Worker running a
 * block_table_write task is SIGKILLed mid-run; runTask reruns the task on the other Worker
 * and the table ends with exactly one set of rows per block.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { SqliteTableStore } from "../../src/worker/writers/table-store";
import { TestCluster } from "../support/cluster";

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
      if (e.kind === "submitted") running = e.workerAddr!;
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
    const store = new SqliteTableStore(cluster.tableStorePath);
    const rows = store.query("resubmitted", "ORDER BY block").map(({ block, double }) => ({ block, double }));
    store.close();
    expect(rows).toEqual(Array.from({ length: 60 }, (_, i) => ({ block: 100 + i, double: 2 * (100 + i) })));
  }, 90_000);

  test("normal_table_write is not resubmitted by default (appends could duplicate): WORKER_LOST names the reason", async () => {
    const { workers, client } = await twoWorkers();
    const killer = killWhenHalfway(workers, 5);
    const err = await client.runTask(task("append-1", "normalTableWrite", 0, 59), killer).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockxError);
    expect((err as BlockxError).code).toBe("WORKER_LOST");
    expect((err as BlockxError).message).toContain("normal_table_write could append rows twice");
  }, 90_000);
});
