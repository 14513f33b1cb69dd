/**
 * SubmitTask's wait_ms, end to end: a compiled Worker with real executors answers a waiting
 * SubmitTask at the task's end (terminal snapshot and outputs, so no WatchTasks is needed), or with
 * the snapshot of the moment once the wait, or the call's own deadline, is near; bad values are
 * refused with a clear status.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { inputsTask } from "../support/worker-client";
import { startWorker } from "../support/worker-process";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ECHO = "def main(ctx, x):\n    return x * 2\n";
const SLOW = "import time\ndef main(ctx, x):\n    time.sleep(x)\n    return x\n";
const BROKEN = "def main(ctx, x):\n    raise ValueError(f'no good: {x}')\n";

const returned = (outputs: { returnValues: Buffer[] } | undefined) => (outputs?.returnValues ?? []).map((b) => JSON.parse(b.toString("utf8")) as unknown);

describe("SubmitTask with wait_ms (compiled Worker)", () => {
  test("a short task is answered at its end: SUCCEEDED with its return values, in the one call", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("quick", ECHO, [1, 2, 3]), "", { waitMs: 5_000 });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.state).toBe(TaskState.SUCCEEDED);
    expect(returned(r.value.outputs)).toEqual([2, 4, 6]);
  });

  test("a failing task is answered FAILED with its first error", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("broken", BROKEN, [7]), "", { waitMs: 5_000 });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.state).toBe(TaskState.FAILED);
    expect(r.value.outputs?.firstError?.message ?? "").toContain("no good: 7");
  });

  test("outputs over 1 MiB stay out of the answer (SUCCEEDED without them); GetTaskResult has them", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("big", "def main(ctx, n):\n    return 'x' * n\n", [700_000, 700_000]), "", { waitMs: 5_000 });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.state).toBe(TaskState.SUCCEEDED);
    expect(r.value.outputs).toBeUndefined();
    const result = await client.getTaskResult("big");
    if (!result.ok) throw new Error(result.details);
    expect(result.value.returnValues.map((b) => b.length)).toEqual([700_002, 700_002]);
  });

  test("a task longer than the wait is answered RUNNING, without outputs, and goes on to its end", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("long", SLOW, [1.5]), "", { waitMs: 200 });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.state).toBe(TaskState.RUNNING);
    expect(r.value.outputs).toBeUndefined();
    expect((await client.watch(["long"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
  });

  test("the call's own deadline bounds the wait: answered in time (RUNNING), not DEADLINE_EXCEEDED", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("bounded", SLOW, [3]), "", { waitMs: 10_000, deadlineMs: Date.now() + 1_000 });
    if (!r.ok) throw new Error(`${grpc.status[r.code]}: ${r.details}`);
    expect(r.value.state).toBe(TaskState.RUNNING);
    await client.cancelTask("bounded");
  });

  test("a task cancelled while its SubmitTask waits: the waiting call is answered CANCELLED", async () => {
    const { client } = await startWorker({}, cleanups);
    const waiting = client.submitTask(inputsTask("cancelled", SLOW, [5]), "", { waitMs: 10_000 });
    let cancelled = await client.cancelTask("cancelled");
    for (let i = 0; i < 100 && !cancelled.ok; i++) {
      await Bun.sleep(20);
      cancelled = await client.cancelTask("cancelled");
    }
    const r = await waiting;
    if (!r.ok) throw new Error(r.details);
    expect(r.value.state).toBe(TaskState.CANCELLED);
  });

  test("wait_ms over 10000 is INVALID_ARGUMENT; SubmitTasks refuses wait_ms per task, the others go ahead", async () => {
    const { client } = await startWorker({}, cleanups);
    const r = await client.submitTask(inputsTask("too-long", ECHO, [1]), "", { waitMs: 10_001 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.code, r.details]).toEqual([grpc.status.INVALID_ARGUMENT, "wait_ms: at most 10000, got 10001"]);
    const many = await new Promise<{ outcomes: { taskId: string; status: number; message: string }[] }>((resolve, reject) =>
      client.client.submitTasks(
        { tasks: [{ task: inputsTask("b-wait", ECHO, [1]), slotId: "", waitMs: 100, resubmit: false }, { task: inputsTask("b-plain", ECHO, [1]), slotId: "", waitMs: 0, resubmit: false }] },
        (e, res) => (e ? reject(e) : resolve(res!)),
      ),
    );
    expect(many.outcomes.map((o) => [o.taskId, o.status])).toEqual([
      ["b-wait", grpc.status.INVALID_ARGUMENT],
      ["b-plain", grpc.status.OK],
    ]);
    expect(many.outcomes[0]!.message).toContain("wait_ms: SubmitTask only");
    // The refused task was not accepted.
    expect((await client.getTaskResult("b-wait")).ok).toBe(false);
  });
});
