/**
 * The Worker end to end: compiled binaries of a Coordinator and Workers against a real etcd,
 * real executor processes, a client reserving through the Coordinator and submitting to the
 * Worker it was given.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../support/blockx-process";
import { NO_HOST_RED_LINES, reserve, waitFor } from "../support/coordinator-client";
import { randomLanePrefix } from "../support/worker-double";
import { inputsTask, WorkerClient } from "../support/worker-client";

const etcdEndpoint = () => process.env.BLOCKX_TEST_ETCD_ENDPOINT!;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function spawn(role: string, env: Record<string, string>): BlockxProcess {
  const p = BlockxProcess.spawn([role], { ETCD_ENDPOINTS: etcdEndpoint(), BLOCKX_LOG_LEVEL: "info", ...env });
  cleanups.push(() => p.stop("SIGKILL"));
  return p;
}

async function cluster(workerEnv: Record<string, string> = {}) {
  const prefix = randomLanePrefix("block");
  const worker = spawn("worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: prefix, EXECUTOR_COUNT: "2", ...workerEnv });
  const coord = spawn("coordinator", { ...NO_HOST_RED_LINES, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix, COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: "100" });
  const workerAddr = await worker.grpcAddr();
  const coordAddr = await coord.grpcAddr();
  const client = new WorkerClient(workerAddr);
  cleanups.push(() => client.close());
  return { worker, coord, workerAddr, coordAddr, client, prefix };
}

async function reserveOk(coordAddr: string, taskId: string) {
  const r = await waitFor(() => reserve(coordAddr, taskId), (o) => o.ok, 20_000);
  if (!r.ok) throw new Error("unreachable");
  return r.res;
}

describe("blockx worker (compiled binary) through a Coordinator", () => {
  test("an InputsCallConfig task with 1,000 inputs returns its values in input order; WatchTasks streams progress to the end", async () => {
    const { worker, coordAddr, workerAddr, client } = await cluster({ BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0" });
    const slot = await reserveOk(coordAddr, "inputs-1000");
    expect(slot.workerAddr).toBe(workerAddr);
    const inputs = Array.from({ length: 1000 }, (_, i) => i);
    const submitted = await client.submitTask(inputsTask("inputs-1000", "def main(ctx, x):\n    return {'x': x, 'sq': x * x}\n", inputs), slot.slotId);
    expect(submitted.ok && submitted.value.state).toBe(TaskState.RUNNING);
    const watched = await client.watch(["inputs-1000"]);
    expect(watched.error).toBeUndefined();
    const last = watched.snapshots.at(-1)!;
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 1000, callsSucceeded: 1000, callsFailed: 0, slotId: slot.slotId });
    const result = await client.getTaskResult("inputs-1000");
    if (!result.ok) throw new Error(result.details);
    const values = result.value.returnValues.map((b) => JSON.parse(Buffer.from(b).toString()));
    expect(values).toEqual(inputs.map((x) => ({ x, sq: x * x })));
    // A watch without with_results carries no outputs; one with it ends on a snapshot carrying
    // exactly what GetTaskResult answers (and only the terminal snapshot carries them).
    expect(watched.snapshots.every((s) => s.outputs === undefined)).toBe(true);
    const withResults = await client.watch(["inputs-1000"], true);
    expect(withResults.snapshots.at(-1)!.outputs).toEqual({ returnValues: result.value.returnValues, writes: result.value.writes, firstError: result.value.firstError });
    expect(withResults.snapshots.slice(0, -1).every((s) => s.outputs === undefined)).toBe(true);
    // The slot is free again: the same Worker takes the next task.
    const again = await reserveOk(coordAddr, "next");
    expect(again.workerAddr).toBe(workerAddr);
    const metricsLine = await worker.waitForLog((l) => l.msg === "metrics listening");
    const metrics = await (await fetch(`http://${metricsLine.addr}/metrics`)).text();
    expect(metrics).toContain('blockx_worker_tasks_total{state="SUCCEEDED"} 1');
    expect(metrics).toContain('blockx_worker_calls_total{result="finished"} 1000');
    expect(metrics).toMatch(/blockx_worker_slots\{state="allocated"\} 1/);
  }, 90_000);

  test("WatchTasks with terminal_only sends each task's terminal snapshot alone (with its results), whether it ended before the watch or during it", async () => {
    const { client } = await cluster();
    const done = await client.submitTask(inputsTask("t-only-done", "def main(ctx, x):\n    return x\n", [1]));
    expect(done.ok).toBe(true);
    expect((await client.watch(["t-only-done"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    // Running for a while, with counts changing (a plain watch of it gets progress meanwhile).
    await client.submitTask(inputsTask("t-only-slow", "import time\ndef main(ctx, x):\n    time.sleep(0.25)\n    return x\n", [1, 2, 3, 4, 5, 6]));
    await client.submitTask(inputsTask("t-only-bad", "import time\ndef main(ctx, x):\n    time.sleep(0.3)\n    raise ValueError('no')\n", [1]));
    const [terminalOnly, plain] = await Promise.all([client.watch(["t-only-done", "t-only-slow", "t-only-bad"], true, true), client.watch(["t-only-slow"])]);
    expect(terminalOnly.error).toBeUndefined();
    expect(terminalOnly.snapshots.map((s) => [s.taskId, TaskState[s.state]]).sort()).toEqual([
      ["t-only-bad", "FAILED"],
      ["t-only-done", "SUCCEEDED"],
      ["t-only-slow", "SUCCEEDED"],
    ]);
    for (const s of terminalOnly.snapshots) {
      const r = await client.getTaskResult(s.taskId);
      if (!r.ok) throw new Error(r.details);
      expect(s.outputs).toEqual({ returnValues: r.value.returnValues, writes: r.value.writes, firstError: r.value.firstError });
    }
    // The same task watched without the flag: its states before the end were there to send.
    expect(plain.snapshots.filter((s) => s.state === TaskState.RUNNING).length).toBeGreaterThan(0);
    expect(plain.snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
  }, 90_000);

  test("watches of overlapping task lists each get their own tasks' snapshots and end with them; a cancelled watch does not hold the others up", async () => {
    const { client } = await cluster();
    const slow = "import time\ndef main(ctx, x):\n    time.sleep(0.2)\n    return x\n";
    for (const id of ["ov-a", "ov-b", "ov-c"]) expect((await client.submitTask(inputsTask(id, slow, [1, 2]))).ok).toBe(true);
    const gone = client.client.watchTasks({ taskIds: ["ov-a", "ov-b"], withResults: false, terminalOnly: false });
    gone.on("error", () => {});
    gone.cancel();
    const [ab, bc, c] = await Promise.all([client.watch(["ov-a", "ov-b"]), client.watch(["ov-b", "ov-c"]), client.watch(["ov-c"], false, true)]);
    const ids = (r: typeof ab) => [...new Set(r.snapshots.map((s) => s.taskId))].sort();
    expect([ids(ab), ids(bc), ids(c)]).toEqual([["ov-a", "ov-b"], ["ov-b", "ov-c"], ["ov-c"]]);
    for (const r of [ab, bc, c]) {
      expect(r.error).toBeUndefined();
      // Each task's last snapshot on each watch is its end, and nothing follows it.
      for (const id of ids(r)) expect(r.snapshots.filter((s) => s.taskId === id).at(-1)!.state).toBe(TaskState.SUCCEEDED);
      expect(r.snapshots.filter((s) => s.state === TaskState.SUCCEEDED).length).toBe(ids(r).length);
    }
  }, 90_000);

  test("a user exception on one input fails the task, naming that input, with the Python traceback", async () => {
    const { coordAddr, client } = await cluster();
    const slot = await reserveOk(coordAddr, "fails");
    const src = "def main(ctx, x):\n    if x == 7:\n        raise ValueError(f'bad input {x}')\n    return x\n";
    await client.submitTask(inputsTask("fails", src, Array.from({ length: 20 }, (_, i) => i)), slot.slotId);
    // Watched with its results from the start: the terminal snapshot carries the first error too.
    const watchedWithResults = await client.watch(["fails"], true);
    const last = watchedWithResults.snapshots.at(-1)!;
    expect(watchedWithResults.snapshots.slice(0, -1).every((s) => s.outputs === undefined)).toBe(true);
    expect(last.state).toBe(TaskState.FAILED);
    expect(last.error?.code).toBe("USER_ERROR");
    expect(last.error?.message).toContain("call 7 (input 7)");
    const result = await client.getTaskResult("fails");
    if (!result.ok) throw new Error(result.details);
    expect(result.value.firstError).toMatchObject({ code: "USER_ERROR", callIndex: 7, callInput: "7", message: "ValueError: bad input 7" });
    expect(result.value.firstError!.traceback).toContain("line 3, in main");
    expect(last.outputs?.firstError).toEqual(result.value.firstError);
    expect(last.callsRetried).toBe(0); // a user's error is never retried
  }, 60_000);

  test("an executor killed mid-task: its calls are retried on a fresh executor and the task still succeeds", async () => {
    const { worker, coordAddr, client } = await cluster();
    const slot = await reserveOk(coordAddr, "survives");
    // All 60 calls run at once (threads in 2 executors), each sleeping 1 s: the kill lands mid-call.
    const src = "import time\ndef main(ctx, x):\n    time.sleep(1.0)\n    return x + 1\n";
    await client.submitTask(inputsTask("survives", src, Array.from({ length: 60 }, (_, i) => i)), slot.slotId);
    const watching = client.watch(["survives"]);
    await Bun.sleep(300);
    const executors = Bun.spawnSync(["pgrep", "-P", String(worker.proc.pid)]).stdout.toString().trim().split("\n").filter(Boolean);
    expect(executors.length).toBe(2);
    process.kill(Number(executors[0]), "SIGKILL");
    const last = (await watching).snapshots.at(-1)!;
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 60, callsFailed: 0 });
    expect(last.callsRetried).toBeGreaterThan(0);
    const result = await client.getTaskResult("survives");
    expect(result.ok && result.value.returnValues.map((b) => Number(Buffer.from(b).toString()))).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  }, 60_000);

  test("a task past its timeout is TIMED_OUT and its slot freed", async () => {
    const { coordAddr, client } = await cluster({ TASK_SLOTS: "1" });
    const slow = "import time\ndef main(ctx, x):\n    time.sleep(0.2)\n    return x\n";
    const slot = await reserveOk(coordAddr, "slow");
    await client.submitTask(inputsTask("slow", slow, Array.from({ length: 100 }, (_, i) => i), 500), slot.slotId);
    const timedOut = (await client.watch(["slow"])).snapshots.at(-1)!;
    expect(timedOut.state).toBe(TaskState.TIMED_OUT);
    expect(timedOut.callsSucceeded).toBeLessThan(100);
    expect((await reserveOk(coordAddr, "after-timeout")).slotId).not.toBe(""); // the only slot was freed
  }, 60_000);

  test("a cancelled task is CANCELLED, its running calls are stopped in the executors, and it starts no further call", async () => {
    // Seen from the function itself and from the executors' answers, not from the task's
    // counters (the Worker stops updating those when the task ends, so they cannot tell).
    // Each call appends "start x" to a file when it begins, "end x" if it ever returns, and
    // otherwise runs until it is stopped (60 s at most). At most 4 calls of the task are in
    // flight: once 4 have started, no other call of the task is on its way to an executor.
    // The calls write to a host file, which the executor sandbox hides by design (test/security/sandbox.test.ts covers it).
    const { worker, coordAddr, client } = await cluster({ EXECUTOR_SANDBOX: "off", TASK_SLOTS: "1", TASK_MAX_INFLIGHT_CALLS: "4", BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0" });
    const metricsAddr = String((await worker.waitForLog((l) => l.msg === "metrics listening")).addr);
    const callsAnswered = async () => {
      const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
      return Number(/^blockx_worker_calls_total\{result="finished"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const dir = mkdtempSync(join(tmpdir(), "blockx-cancel-"));
    chmodSync(dir, 0o777); // executors may run as nobody
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const log = join(dir, "calls.log");
    const marked = [
      "import time",
      "def note(line):",
      `    with open(${JSON.stringify(log)}, 'a') as f:`,
      "        f.write(line + '\\n')",
      "def main(ctx, x):",
      "    note(f'start {x}')",
      "    for _ in range(6000):",
      "        time.sleep(0.01)",
      "    note(f'end {x}')",
      "    return x",
    ].join("\n");
    const lines = async () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).sort() : []);
    const slot = await reserveOk(coordAddr, "to-cancel");
    await client.submitTask(inputsTask("to-cancel", marked, Array.from({ length: 100 }, (_, i) => i)), slot.slotId);
    const started = ["start 0", "start 1", "start 2", "start 3"];
    expect(await waitFor(lines, (l) => l.length >= 4)).toEqual(started);
    const cancelled = await client.cancelTask("to-cancel", "not needed");
    expect(cancelled.ok && cancelled.value.state).toBe(TaskState.CANCELLED);
    // The cancel reached the executors: each of the 4 running calls was stopped and answered
    // (none could have ended by itself, see above).
    expect(await waitFor(callsAnswered, (n) => n >= 4)).toBe(4);
    // The slot is free and another task runs to its end on the same executors; a task still
    // dispatching would have started calls 4, 5, ... meanwhile (its window is empty now).
    const next = await reserveOk(coordAddr, "after-cancel");
    await client.submitTask(inputsTask("after-cancel", "def main(ctx, x):\n    return x\n", Array.from({ length: 20 }, (_, i) => i)), next.slotId);
    expect((await client.watch(["after-cancel"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    expect(await lines()).toEqual(started);
    expect(await callsAnswered()).toBe(4 + 20);
  }, 60_000);

  test("slot rules over the network: expired slot, wrong task, unknown incarnation, full pool", async () => {
    const { client } = await cluster({ TASK_SLOTS: "2" });
    const a = await client.requestTaskSlot("a", 300);
    if (!a.ok) throw new Error(a.details);
    // The same task asking again gets the same slot.
    const a2 = await client.requestTaskSlot("a", 300);
    expect(a2.ok && a2.value.slotId).toBe(a.value.slotId);
    const b = await client.requestTaskSlot("b", 5000);
    expect(b.ok).toBe(true);
    const full = await client.requestTaskSlot("c", 5000);
    expect(full).toMatchObject({ ok: false, code: grpc.status.RESOURCE_EXHAUSTED });
    const wrong = await client.submitTask(inputsTask("c", "def main(ctx, x):\n    return x\n", [1]), a.value.slotId);
    expect(wrong).toMatchObject({ ok: false, code: grpc.status.FAILED_PRECONDITION });
    await Bun.sleep(600); // a's TTL passes
    const late = await client.submitTask(inputsTask("a", "def main(ctx, x):\n    return x\n", [1]), a.value.slotId);
    expect(late).toMatchObject({ ok: false, code: grpc.status.NOT_FOUND });
    const foreign = await client.submitTask(inputsTask("d", "def main(ctx, x):\n    return x\n", [1]), "0123456789ab.1");
    expect(foreign).toMatchObject({ ok: false, code: grpc.status.NOT_FOUND });
  }, 60_000);

  test("bad requests get INVALID_ARGUMENT naming the field", async () => {
    const { client } = await cluster();
    const noOutputs = inputsTask("x", "def main(ctx, x):\n    return x\n", [1]);
    noOutputs.outputs = [];
    const r1 = await client.submitTask(noOutputs);
    expect(r1).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT });
    expect(!r1.ok && r1.details).toContain("task.outputs");
    const badJson = inputsTask("y", "def main(ctx, x):\n    return x\n", [1]);
    (badJson.functionCallConfig!.config as { inputs: { inputs: Buffer[] } }).inputs.inputs = [Buffer.from("{nope")];
    const r2 = await client.submitTask(badJson);
    expect(!r2.ok && r2.details).toContain("task.function_call_config.inputs.inputs[0]: not JSON");
    const r3 = await client.requestTaskSlot("", 1000);
    expect(r3).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT });
    const r4 = await client.watch([]);
    expect(r4.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
  }, 60_000);
});

describe("blockx bundle-worker", () => {
  test("registers under the bundle prefix and refuses a ReturnValueHandler, which only the block cluster runs", async () => {
    const prefix = randomLanePrefix("bundle");
    const w = spawn("bundle-worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: prefix, EXECUTOR_COUNT: "1" });
    const addr = await w.grpcAddr();
    const coord = spawn("bundle-coordinator", { ...NO_HOST_RED_LINES, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix });
    const caddr = await coord.grpcAddr();
    const slot = await waitFor(() => reserve(caddr, "b1", "bundle"), (o) => o.ok);
    expect(slot.ok && slot.res.workerAddr).toBe(addr);
    const client = new WorkerClient(addr);
    cleanups.push(() => client.close());
    const r = await client.submitTask(inputsTask("b1", "def main(ctx, x):\n    return x\n", [1]), slot.ok ? slot.res.slotId : "");
    expect(r).toMatchObject({ ok: false, code: grpc.status.INVALID_ARGUMENT });
    expect(!r.ok && r.details).toContain("task.outputs[0].return_value: the bundle cluster does not run this writer");
  }, 60_000);

  test("a block-kind WORKER_REGISTRY_PREFIX is rejected at start-up", async () => {
    const w = BlockxProcess.spawn(["bundle-worker"], { WORKER_REGISTRY_PREFIX: "/blockx/workers/" });
    expect(await w.exited).toBe(2);
    expect(w.stderr).toContain("WORKER_REGISTRY_PREFIX");
  });
});
