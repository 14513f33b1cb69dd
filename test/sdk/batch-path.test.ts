/**
 * The batch path's contract, against real processes (etcd, Coordinators, Workers with real Python
 * executors, one SQLite table store): ReserveWorkerSlots and SubmitTasks answer each task on its
 * own (granted, NoSlot, invalid), and the SDK's runTasks built on them runs every task exactly once
 * through a batch larger than the free slots, a Worker killed mid-batch and a resubmitted batch.
 * "Exactly once" is read from a normal table (each run of a call appends its row again).
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CoordinatorServiceClient, type ReserveWorkerSlotsResponse } from "../../src/gen/coordinator/v1/coordinator";
import { FunctionCallConfig, Task, TaskState, type SubmitTasksResponse } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { RawTableReader } from "../support/raw-table-reader";
import { TestCluster } from "../support/cluster";
import { healthCheck, waitFor } from "../support/coordinator-client";
import { HealthCheckResponse_ServingStatus } from "../../src/gen/grpc/health/v1/health";
import { WorkerClient } from "../support/worker-client";
import { suiteChannel } from "../support/suite-tls";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ROW = "import time\ndef main(ctx, input):\n    time.sleep(0.02)\n    return [{'block': input['blockNumber']}]\n";

/** A one-block task whose row goes to `table`: appended (normal) or replaced (block table). */
function task(taskId: string, block: number, table = "once", handler: "normalTableWrite" | "blockTableWrite" = "normalTableWrite", lastBlock = block): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: ROW, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: block, toBlock: lastBlock } },
    }),
    outputs: [handler === "normalTableWrite" ? { handler: { $case: "normalTableWrite", normalTableWrite: { table } } } : { handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

function blocksIn(cluster: TestCluster, table: string): number[] {
  const store = new RawTableReader(cluster.tableStorePath);
  try {
    return store.query(table, "ORDER BY block").map((r) => r.block as number);
  } finally {
    store.close();
  }
}

function reserveMany(addr: string, taskIds: string[]): Promise<{ ok: true; res: ReserveWorkerSlotsResponse } | { ok: false; code: grpc.status; details: string }> {
  const ch = suiteChannel("client", addr, ["coordinator"]);
  const c = new CoordinatorServiceClient(addr, ch.credentials, ch.options);
  return new Promise((resolve) =>
    c.reserveWorkerSlots({ taskIds }, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (e, res) => {
      c.close();
      resolve(e ? { ok: false, code: e.code, details: e.details } : { ok: true, res: res! });
    }),
  );
}

function submitMany(w: WorkerClient, tasks: { task: Task | undefined; slotId: string }[]): Promise<{ ok: true; res: SubmitTasksResponse } | { ok: false; code: grpc.status; details: string }> {
  return new Promise((resolve) =>
    w.client.submitTasks({ tasks: tasks.map((t) => ({ ...t, waitMs: 0, resubmit: false })) }, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (e, res) =>
      resolve(e ? { ok: false, code: e.code, details: e.details } : { ok: true, res: res! }),
    ),
  );
}

async function cluster(workers: number, workerEnv: Record<string, string> = {}) {
  const c = new TestCluster();
  cleanups.push(() => c.stop());
  const ws = [];
  for (let i = 0; i < workers; i++) ws.push(await c.worker(workerEnv));
  await c.registered(workers);
  const coord = await c.coordinator();
  // Ready (its view of the Workers loaded), so that no batch reservation is refused for that reason
  // and handed to the single path; without spending a slot on a probe reservation.
  await waitFor(() => healthCheck(coord.addr, "coordinator.v1.CoordinatorService"), (s) => s === HealthCheckResponse_ServingStatus.SERVING);
  const client = new BlockxClient(c.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "1500" }));
  cleanups.push(() => client.close());
  return { cluster: c, workers: ws, coord, client };
}

describe("SubmitTasks", () => {
  test("mixed valid and invalid tasks in one batch: each answered on its own; the batch resent is an idempotent hit (each row once)", async () => {
    const c = new TestCluster();
    cleanups.push(() => c.stop());
    const { addr } = await c.worker();
    const w = new WorkerClient(addr);
    cleanups.push(() => w.client.close());

    const noConfig = Task.fromPartial({ taskId: "bad-1", outputs: [{ handler: { $case: "returnValue", returnValue: {} } }] });
    const first = await submitMany(w, [
      { task: task("mixed-1", 1), slotId: "" },
      { task: noConfig, slotId: "" },
      { task: task("mixed-2", 2), slotId: "" },
      { task: task("mixed-1", 1), slotId: "" },
      { task: task("mixed-3", 3), slotId: "not-a-slot-of-this-worker" },
    ]);
    if (!first.ok) throw new Error(`SubmitTasks failed as a whole: ${first.details}`);
    expect(first.res.outcomes.map((o) => [o.taskId, grpc.status[o.status]])).toEqual([
      ["mixed-1", "OK"],
      ["bad-1", "INVALID_ARGUMENT"],
      ["mixed-2", "OK"],
      ["mixed-1", "INVALID_ARGUMENT"],
      ["mixed-3", expect.stringMatching(/^(NOT_FOUND|FAILED_PRECONDITION|INVALID_ARGUMENT)$/)],
    ]);
    expect(first.res.outcomes[3]!.message).toContain("more than once in the batch");
    expect(first.res.outcomes[0]!.snapshot?.slotId).not.toBe("");

    const watched = await w.watch(["mixed-1", "mixed-2"]);
    expect(watched.error).toBeUndefined();
    const again = await submitMany(w, [
      { task: task("mixed-1", 1), slotId: first.res.outcomes[0]!.snapshot!.slotId },
      { task: task("mixed-2", 2), slotId: "" },
    ]);
    if (!again.ok) throw new Error(again.details);
    expect(again.res.outcomes.map((o) => [o.status, o.snapshot?.state, o.snapshot?.slotId])).toEqual([
      [grpc.status.OK, TaskState.SUCCEEDED, first.res.outcomes[0]!.snapshot!.slotId],
      [grpc.status.OK, TaskState.SUCCEEDED, first.res.outcomes[2]!.snapshot!.slotId],
    ]);
    expect(blocksIn(c, "once")).toEqual([1, 2]);
  }, 60_000);

  test("a request with no tasks or over 1024 is refused as a whole with InvalidArgument", async () => {
    const c = new TestCluster();
    cleanups.push(() => c.stop());
    const w = new WorkerClient((await c.worker()).addr);
    cleanups.push(() => w.client.close());
    expect(await submitMany(w, [])).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining("at least one") });
    const many = Array.from({ length: 1025 }, (_, i) => ({ task: task(`t${i}`, i), slotId: "" }));
    expect(await submitMany(w, many)).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining("at most 1024") });
  }, 60_000);
});

describe("ReserveWorkerSlots", () => {
  test("a batch larger than the free slots: one grant per free slot, spread over both Workers, NoSlot for the rest; invalid ids refused on their own", async () => {
    const { workers, coord } = await cluster(2, { TASK_SLOTS: "3" });
    const ids = Array.from({ length: 8 }, (_, i) => `r${i}`);
    const r = await reserveMany(coord.addr, [...ids, "", "r0"]);
    if (!r.ok) throw new Error(`ReserveWorkerSlots failed as a whole: ${r.details}`);
    const grants = r.res.grants;
    expect(grants.map((g) => g.taskId)).toEqual([...ids, "", "r0"]);
    const granted = grants.slice(0, 8).filter((g) => g.status === grpc.status.OK);
    expect(granted.length).toBe(6);
    expect(granted.every((g) => g.slotId !== "")).toBe(true);
    for (const w of workers) expect(granted.filter((g) => g.workerAddr === w.addr).length).toBe(3);
    const refused = grants.slice(0, 8).filter((g) => g.status !== grpc.status.OK);
    expect(refused.map((g) => [grpc.status[g.status], g.code])).toEqual([
      ["RESOURCE_EXHAUSTED", "NO_SLOT"],
      ["RESOURCE_EXHAUSTED", "NO_SLOT"],
    ]);
    expect(grants[8]).toMatchObject({ status: grpc.status.INVALID_ARGUMENT, slotId: "" });
    expect(grants[9]).toMatchObject({ status: grpc.status.INVALID_ARGUMENT, slotId: "", message: expect.stringContaining("more than once") });

    expect(await reserveMany(coord.addr, [])).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT });
    expect(await reserveMany(coord.addr, Array.from({ length: 1025 }, (_, i) => `x${i}`))).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT, details: expect.stringContaining("at most 1024") });
  }, 60_000);
});

describe("runTasks through the batch path", () => {
  test("more tasks than free slots in one batch: every task SUCCEEDED, each row once", async () => {
    const { cluster: c, client } = await cluster(2, { TASK_SLOTS: "2" });
    const tasks = Array.from({ length: 12 }, (_, i) => task(`over-${i}`, 100 + i));
    const entries = await client.runTasks(tasks, { concurrency: 12, batchSize: 12 });
    expect(entries.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual(tasks.map(() => "SUCCEEDED"));
    // Some were refused a slot in the batch and placed alone afterwards (runTask's backoff).
    expect(entries.some((e) => e.ok && e.run.events.some((ev) => ev.kind === "reserveRefused"))).toBe(true);
    expect(blocksIn(c, "once")).toEqual(tasks.map((_, i) => 100 + i));
  }, 90_000);

  test("mixed valid and invalid tasks: the invalid ones fail on their own, the rest run", async () => {
    const { cluster: c, client } = await cluster(1);
    const tasks = [task("ok-1", 1), Task.fromPartial({ taskId: "no-config", outputs: [{ handler: { $case: "returnValue", returnValue: {} } }] }), task("ok-2", 2)];
    const entries = await client.runTasks(tasks, { concurrency: 8 });
    expect(entries.map((e) => (e.ok ? e.run.state : e.error.code))).toEqual(["SUCCEEDED", "INVALID_ARGUMENT", "SUCCEEDED"]);
    expect(blocksIn(c, "once")).toEqual([1, 2]);
  }, 60_000);

  test("a Worker SIGKILLed mid-batch: its tasks are rerun elsewhere, every task SUCCEEDED, one set of rows per block", async () => {
    const { cluster: c, workers, client } = await cluster(2);
    const tasks = Array.from({ length: 8 }, (_, i) => task(`kill-${i}`, 1000 + i * 10, "replaced", "blockTableWrite", 1000 + i * 10 + 9));
    let killed = "";
    const entries = await client.runTasks(tasks, {
      concurrency: 8,
      batchSize: 8,
      onProgress: (p, s) => {
        if (!killed && p.done >= 3 && s.workerAddr) {
          killed = s.workerAddr;
          process.kill(workers.find((w) => w.addr === killed)!.proc.proc.pid, "SIGKILL");
        }
      },
    });
    expect(killed).not.toBe("");
    expect(entries.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual(tasks.map(() => "SUCCEEDED"));
    const rerun = entries.filter((e) => e.ok && e.run.attempts > 1);
    expect(rerun.length).toBeGreaterThanOrEqual(1);
    for (const e of rerun) if (e.ok) expect(e.run.workers[0]).toBe(killed);
    expect(blocksIn(c, "replaced")).toEqual(Array.from({ length: 80 }, (_, i) => 1000 + i));
  }, 90_000);

  test("a batch resubmitted with the same task ids: the tasks are idempotent hits, no task runs twice", async () => {
    const { cluster: c, client } = await cluster(1);
    const tasks = Array.from({ length: 6 }, (_, i) => task(`again-${i}`, 200 + i));
    const first = await client.runTasks(tasks, { concurrency: 6 });
    expect(first.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual(tasks.map(() => "SUCCEEDED"));
    // The same batch again, and one task twice in one list: every answer is the first run's.
    const second = await client.runTasks([...tasks, tasks[0]!], { concurrency: 8 });
    expect(second.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual([...tasks, tasks[0]].map(() => "SUCCEEDED"));
    expect(blocksIn(c, "once")).toEqual(tasks.map((_, i) => 200 + i));
  }, 60_000);

  test("through blockx proxy: the batch's ReserveWorkerSlots and SubmitTasks reach the Coordinator and the Worker (no task falls back to the single path)", async () => {
    const { cluster: c, coord } = await cluster(1);
    const socket = join(c.dir, "batch-proxy.sock");
    const proxy = c.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_COORDINATOR_ADDRS: coord.addr });
    await proxy.grpcAddr();
    const viaProxy = new BlockxClient(c.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, PROXY_SOCKET_PATH: socket }));
    cleanups.push(() => viaProxy.close());
    const tasks = Array.from({ length: 4 }, (_, i) => task(`proxied-${i}`, 300 + i));
    const entries = await viaProxy.runTasks(tasks, { concurrency: 4, batchSize: 4 });
    expect(entries.map((e) => (e.ok ? e.run.state : e.error.message))).toEqual(tasks.map(() => "SUCCEEDED"));
    expect(entries.map((e) => (e.ok ? e.run.events.map((ev) => ev.kind) : []))).toEqual(tasks.map(() => ["submitted"]));
    expect(blocksIn(c, "once")).toEqual(tasks.map((_, i) => 300 + i));
  }, 60_000);

  test("batches of one take runTask's path: each task is answered by its own waiting SubmitTask, each row once", async () => {
    const { cluster: c, client } = await cluster(1);
    const tasks = Array.from({ length: 3 }, (_, i) => task(`single-${i}`, 400 + i));
    const entries = await client.runTasks(tasks, { concurrency: 3, batchSize: 1 });
    const submits = entries.map((e) => (e.ok ? e.run.events.map((ev) => (ev.kind === "submitted" ? `${ev.kind} ${ev.state}` : ev.kind)) : e.error.message));
    expect(submits).toEqual(tasks.map(() => ["submitting", "submitted SUCCEEDED"]));
    expect(blocksIn(c, "once")).toEqual(tasks.map((_, i) => 400 + i));
  }, 60_000);

  test("results come on the watch (with_results): runTask and runTasks give exactly what GetTaskResult answers, a failed task's first error and traceback included", async () => {
    const { workers, client } = await cluster(1);
    const worker = new WorkerClient(workers[0]!.addr);
    cleanups.push(() => worker.close());
    const src = "def main(ctx, x):\n    if x == 3:\n        raise ValueError(f'no {x}')\n    return {'x': x, 'big': 2 ** 70 + x}\n";
    const inputsTask = (taskId: string, inputs: number[]) =>
      Task.fromPartial({
        taskId,
        functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: src, entry: "main" }, config: { $case: "inputs", inputs: { inputs: inputs.map((x) => Buffer.from(String(x))) } } }),
        outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
      });
    const single = await client.runTask(inputsTask("res-one", [0, 1, 2]));
    const [ok, failed] = await client.runTasks([inputsTask("res-ok", [5, 6]), inputsTask("res-fail", [1, 2, 3, 4])], { concurrency: 2, batchSize: 2 });
    const runs = [single, ok!.ok ? ok!.run : undefined, failed!.ok ? failed!.run : undefined];
    expect(runs.map((r) => r?.state)).toEqual(["SUCCEEDED", "SUCCEEDED", "FAILED"]);
    for (const run of runs) {
      const answered = await worker.getTaskResult(run!.taskId);
      if (!answered.ok) throw new Error(answered.details);
      expect(run!.result.returnValues).toEqual(answered.value.returnValues);
      expect(run!.result.writes).toEqual(answered.value.writes);
      expect(run!.result.firstError).toEqual(answered.value.firstError);
      expect(run!.result.snapshot).toMatchObject({ taskId: run!.taskId, state: answered.value.snapshot!.state, outputs: undefined });
    }
    expect(single.returnValues.map((v) => (v as { x: number }).x)).toEqual([0, 1, 2]);
    expect(runs[2]!.result.firstError).toMatchObject({ code: "USER_ERROR", callIndex: 2, callInput: "3", message: "ValueError: no 3" });
    expect(runs[2]!.result.firstError!.traceback).toContain("line 3, in main");
  }, 60_000);
});
