/**
 * A hung Worker (SIGSTOP: its sockets stay open, it answers nothing) while runTask watches its
 * task. Found by the soak: the WatchTasks stream just went quiet, nothing noticed, and the run
 * waited for as long as the Worker stayed stopped. Now a quiet stream is probed; the Worker
 * counts as lost and the task is rerun on the other Worker.
 *
 * Each Worker is a host of its own here, with its own SQLite table store: on one shared file a
 * Worker stopped inside a write transaction holds the file's write lock, and every other Worker
 * of that host waits (busy timeout, retries) until it resumes or dies; SQLite has no server that
 * could end a frozen writer's transaction (the README says so; Postgres does, see the table store's
 * idle-in-transaction timeout). The rows are checked in the rerun Worker's store.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { RawTableReader } from "../support/raw-table-reader";
import { TestCluster } from "../support/cluster";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SLOW_ROWS = "import time\ndef main(ctx, input):\n    time.sleep(0.05)\n    n = input['blockNumber']\n    return [{'block': n, 'double': n * 2}]\n";

test("a Worker stopped mid-task (not dead) is declared lost; runTask reruns the task elsewhere; one set of rows per block", async () => {
  const cluster = new TestCluster();
  cleanups.push(() => cluster.stop());
  const storeOf = (i: number) => join(cluster.dir, `host-${i}.sqlite`);
  const workers = [await cluster.worker({ TABLE_STORE_PATH: storeOf(0) }), await cluster.worker({ TABLE_STORE_PATH: storeOf(1) })];
  // Both Workers report this one busy host's CPU: no red line, or the reserve waits on the load.
  const coord = await cluster.coordinator({ COORDINATOR_CPU_RED_LINE: "1" });
  const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "1500" }));
  cleanups.push(() => client.close());
  let running = "";
  let stoppedPid = 0;
  // Resumed only at the end: without the probe, runTask would wait for this forever.
  cleanups.push(() => stoppedPid && process.kill(stoppedPid, "SIGCONT"));
  const task = Task.fromPartial({
    taskId: "hung-1",
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: SLOW_ROWS, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: 300, toBlock: 359 } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "after_hang" } } }],
  });
  const t0 = performance.now();
  const run = await client.runTask(task, {
    onEvent: (e) => {
      // Printed as they happen: if the run ever hangs, they say where.
      console.log(`[${((performance.now() - t0) / 1000).toFixed(1)} s] ${JSON.stringify(e)}`);
      if (e.kind === "submitting" || e.kind === "submitted") running = e.workerAddr; // submitting: a short task's waiting SubmitTask answers only at its end
    },
    onProgress: (p) => {
      if (!stoppedPid && running && p.done >= 10) {
        stoppedPid = workers.find((w) => w.addr === running)!.proc.proc.pid;
        console.log(`[${((performance.now() - t0) / 1000).toFixed(1)} s] SIGSTOP to the Worker at ${running} (pid ${stoppedPid})`);
        process.kill(stoppedPid, "SIGSTOP");
      }
    },
  });
  expect(stoppedPid).not.toBe(0);
  expect(run.state).toBe("SUCCEEDED");
  expect(run.attempts).toBe(2);
  expect(run.workers[1]).not.toBe(run.workers[0]);
  const lost = run.events.find((e) => e.kind === "workerLost");
  expect(lost).toMatchObject({ kind: "workerLost", resubmit: true });
  const store = new RawTableReader(storeOf(workers.findIndex((w) => w.addr === run.workers[1])));
  const rows = store.query("after_hang", "ORDER BY block").map(({ block, double }) => ({ block, double }));
  store.close();
  expect(rows).toEqual(Array.from({ length: 60 }, (_, i) => ({ block: 300 + i, double: 2 * (300 + i) })));
}, 90_000);
