/**
 * runTask's waiting SubmitTask (wait_ms), against a real Coordinator and real Workers: a short task's
 * result comes with SubmitTask's answer; a Worker killed while a SubmitTask waits on it leaves the
 * submission uncertain, and the task is then followed there first under the lost-Worker rules (then
 * rerun as a new run that fences the lost one off: a block_table_write with one set of rows per
 * block, a normal_table_write with each call's rows once), never resubmitted blindly as a refused
 * submission would be.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxClient, type ClientEvent } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { RawTableReader } from "../support/raw-table-reader";
import { TestCluster } from "../support/cluster";
import { inputsTask, WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const SLOW_ROWS = "import time\ndef main(ctx, input):\n    time.sleep(0.2)\n    n = input['blockNumber']\n    return [{'block': n, 'double': n * 2}]\n";

function rangeTask(taskId: string, output: "blockTableWrite" | "normalTableWrite", from: number, to: number): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: SLOW_ROWS, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [output === "blockTableWrite" ? { handler: { $case: "blockTableWrite", blockTableWrite: { table: "waited" } } } : { handler: { $case: "normalTableWrite", normalTableWrite: { table: "appended" } } }],
  });
}

async function cluster(workers: number) {
  const c = new TestCluster();
  cleanups.push(() => c.stop());
  const ws = [];
  for (let i = 0; i < workers; i++) ws.push(await c.worker());
  const coord = await c.coordinator({ COORDINATOR_CPU_RED_LINE: "1" });
  const client = new BlockxClient(c.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "1500" }));
  cleanups.push(() => client.close());
  const probes = ws.map((w) => new WorkerClient(w.addr));
  cleanups.push(() => probes.forEach((p) => p.close()));
  return { cluster: c, workers: ws, client, probes };
}

/** killWhereRunning SIGKILLs the Worker on which `taskId` is RUNNING, as soon as one says so (the SDK is still inside SubmitTask). */
async function killWhereRunning(c: Awaited<ReturnType<typeof cluster>>, taskId: string): Promise<string> {
  for (let i = 0; i < 2_000; i++) {
    for (const [k, p] of c.probes.entries()) {
      const r = await p.getTaskResult(taskId);
      if (r.ok && r.value.snapshot?.state === TaskState.RUNNING) {
        c.workers[k]!.proc.proc.kill("SIGKILL");
        return c.workers[k]!.addr;
      }
    }
    await Bun.sleep(5);
  }
  throw new Error(`${taskId} never ran`);
}

/**
 * answeredBySubmit runs a task through runTask and checks that one SubmitTask answered it at its end
 * (a reservation may be refused while the Coordinator's view fills: those events aside).
 */
async function answeredBySubmit(client: BlockxClient, task: Task) {
  const events: ClientEvent[] = [];
  const run = await client.runTask(task, { onEvent: (e) => events.push(e) });
  const after = events.filter((e) => e.kind !== "reserveRefused");
  expect(after.map((e) => e.kind)).toEqual(["submitting", "submitted"]);
  expect(after[1]).toMatchObject({ kind: "submitted", state: "SUCCEEDED" });
  return run;
}

describe("runTask's waiting SubmitTask", () => {
  test("a short task's result comes with SubmitTask's answer (SUCCEEDED at submission, no watch)", async () => {
    const { client } = await cluster(1);
    const run = await answeredBySubmit(client, inputsTask("short-wait", "def main(ctx, x):\n    return x + 1\n", [41]));
    expect(run).toMatchObject({ state: "SUCCEEDED", returnValues: [42], attempts: 1 });
  }, 60_000);

  // (That the Worker leaves such outputs out of its answer is held by test/worker/submit-wait-process.test.ts.)
  test("a task whose values exceed a unary answer's default bound (5 MB): all of them come back, submitted once", async () => {
    const { client } = await cluster(1);
    const run = await answeredBySubmit(client, inputsTask("big-wait", "def main(ctx, n):\n    return 'x' * n\n", [2_600_000, 2_600_000]));
    expect(run).toMatchObject({ state: "SUCCEEDED", attempts: 1 });
    expect((run.returnValues as string[]).map((v) => v.length)).toEqual([2_600_000, 2_600_000]);
  }, 60_000);

  test("with onProgress the task is followed as before (SubmitTask answers at once)", async () => {
    const { client } = await cluster(1);
    const events: ClientEvent[] = [];
    let progressed = 0;
    const run = await client.runTask(inputsTask("progress-wait", "def main(ctx, x):\n    return x + 1\n", [1, 2]), { onEvent: (e) => events.push(e), onProgress: () => progressed++ });
    expect(run.returnValues).toEqual([2, 3]);
    const submitted = events.find((e) => e.kind === "submitted");
    expect(submitted).toMatchObject({ kind: "submitted" });
    expect((submitted as { state: string }).state).not.toBe("SUCCEEDED");
    expect(progressed).toBeGreaterThan(0);
  }, 60_000);

  test("normal_table_write: the Worker is SIGKILLed while SubmitTask waits; the task is followed there first, then rerun on the other, and each call's rows land once", async () => {
    const c = await cluster(2);
    const running = c.client.runTask(rangeTask("append-wait", "normalTableWrite", 0, 29));
    const killed = await killWhereRunning(c, "append-wait");
    const run = await running;
    expect({ state: run.state, attempts: run.attempts, first: run.workers[0] }).toEqual({ state: "SUCCEEDED", attempts: 2, first: killed });
    expect(run.events.some((e) => e.kind === "submitUncertain" && e.workerAddr === killed)).toBe(true);
    const store = new RawTableReader(c.cluster.tableStorePath);
    const blocks = store.query("appended", "ORDER BY block").map((r) => r.block);
    store.close();
    expect(blocks).toEqual(Array.from({ length: 30 }, (_, i) => i));
  }, 90_000);

  test("block_table_write: the Worker is SIGKILLed while SubmitTask waits; rerun on the other Worker, one set of rows per block", async () => {
    const c = await cluster(2);
    const events: ClientEvent[] = [];
    const running = c.client.runTask(rangeTask("blocks-wait", "blockTableWrite", 100, 129), { onEvent: (e) => events.push(e) });
    const killed = await killWhereRunning(c, "blocks-wait");
    const run = await running;
    expect(run).toMatchObject({ state: "SUCCEEDED", attempts: 2 });
    expect(run.workers[0]).toBe(killed);
    expect(run.workers[1]).not.toBe(killed);
    expect(events.find((e) => e.kind === "submitUncertain")).toMatchObject({ workerAddr: killed, attempt: 1 });
    expect(events.some((e) => e.kind === "workerLost" && e.resubmit)).toBe(true);
    const store = new RawTableReader(c.cluster.tableStorePath);
    const rows = store.query("waited", "ORDER BY block").map(({ block, double }) => ({ block, double }));
    store.close();
    expect(rows).toEqual(Array.from({ length: 30 }, (_, i) => ({ block: 100 + i, double: 2 * (100 + i) })));
  }, 90_000);
});
