/**
 * Task logs and the task list, end to end: a compiled Worker with real executors; a function's
 * ctx.log lines and prints come back through StreamTaskLogs (tail and follow) in order, tagged with
 * their inputs; the caps drop the oldest lines and say how many; ListTasks lists the Worker's tasks
 * with their owner and function.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { TaskState, type ListTasksResponse, type TaskLogLine } from "../../src/gen/worker/v1/worker";
import { inputsTask, type WorkerClient } from "../support/worker-client";
import { startWorker } from "../support/worker-process";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function worker(env: Record<string, string> = {}) {
  return (await startWorker(env, cleanups)).client;
}

/** logs collects a StreamTaskLogs stream until it ends (or fails), and when each line arrived. */
function logs(client: WorkerClient, taskId: string, o: { tail?: number; follow?: boolean } = {}): Promise<{ lines: TaskLogLine[]; error?: grpc.ServiceError }> {
  return new Promise((resolve) => {
    const lines: TaskLogLine[] = [];
    const s = client.client.streamTaskLogs({ taskId, tail: o.tail ?? 0, follow: o.follow ?? false });
    s.on("data", (l: TaskLogLine) => lines.push(l));
    s.on("end", () => resolve({ lines }));
    s.on("error", (error: grpc.ServiceError) => resolve({ lines, error }));
  });
}

const CHATTY = "import time\ndef main(ctx, x):\n    ctx.log(f'working on {x}', level='warning')\n    print('printed', x)\n    time.sleep(0.05)\n    return x\n";

describe("task logs (compiled Worker)", () => {
  test("every call's ctx.log lines and prints come back in order, tagged with the call's input, while and after the task runs", async () => {
    const client = await worker();
    const submitted = await client.submitTask(inputsTask("chatty", CHATTY, [0, 1, 2, 3, 4, 5, 6, 7]));
    expect(submitted.ok).toBe(true);
    // Followed from the start: the stream ends by itself when the task is terminal.
    const followed = await logs(client, "chatty", { follow: true });
    expect(followed.error).toBeUndefined();
    const show = (ls: TaskLogLine[]) => ls.map((l) => `${l.input}|${l.stream}|${l.level}|${l.text}`);
    const expected = [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => [`input ${i}|log|warning|working on ${i}`, `input ${i}|stdout||printed ${i}`]);
    // One executor runs the calls one after another, so the order is the inputs' order.
    expect(show(followed.lines)).toEqual(expected);
    expect(followed.lines.map((l) => Number(l.seq))).toEqual(expected.map((_, i) => i + 1));
    expect((await client.watch(["chatty"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    // After the end: all of them, or the last few.
    expect(show((await logs(client, "chatty")).lines)).toEqual(expected);
    expect(show((await logs(client, "chatty", { tail: 3 })).lines)).toEqual(expected.slice(-3));
    // A failing call's lines are kept too, with the traceback on stderr where Python wrote it.
    const failing = "import sys\ndef main(ctx, x):\n    print('before the error', file=sys.stderr)\n    raise ValueError('bad input')\n";
    await client.submitTask(inputsTask("failing", failing, ["only"]));
    expect((await client.watch(["failing"])).snapshots.at(-1)!.state).toBe(TaskState.FAILED);
    expect(show((await logs(client, "failing")).lines)).toContain("input 0|stderr||before the error");
  }, 90_000);

  test("caps: over TASK_LOG_MAX_BYTES the oldest lines go first and the reader is told how many; a task never seen is NOT_FOUND", async () => {
    const client = await worker({ TASK_LOG_MAX_BYTES: "1024", TASK_LOG_MAX_LINE_BYTES: "64" });
    const src = "def main(ctx, x):\n    print(f'line {x:04d} ' + 'x' * 100)\n    return x\n";
    await client.submitTask(inputsTask("capped", src, Array.from({ length: 100 }, (_, i) => i)));
    expect((await client.watch(["capped"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    const { lines } = await logs(client, "capped");
    // Each line is cut to 64 bytes (saying how much was cut), so 1024 bytes keep the last few lines.
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.length).toBeLessThan(100);
    expect(lines.at(-1)!.text).toMatch(/^line 0099 x+ \[\d+ bytes cut\]$/);
    expect(Number(lines[0]!.droppedBefore)).toBe(100 - lines.length);
    expect(Number(lines[0]!.seq)).toBe(100 - lines.length + 1);
    const unknown = await logs(client, "never-submitted");
    expect(unknown.error?.code).toBe(grpc.status.NOT_FOUND);
    const bad = await logs(client, "capped", { tail: 1_000_000 });
    expect(bad.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.error?.details).toContain("tail: at most 100000");
  }, 90_000);

  test("ListTasks lists running and finished tasks, newest first, with owner, function and counts", async () => {
    // Plaintext: the owner label under test is x-blockx-owner, which only BLOCKX_INSECURE reads (mTLS owners are identities).
    const client = await worker({ BLOCKX_INSECURE: "1" });
    const md = new grpc.Metadata();
    md.set("x-blockx-owner", "alice@laptop");
    await new Promise((resolve, reject) =>
      client.client.submitTask({ task: inputsTask("first", "def main(ctx, x):\n    return x\n", [1, 2]), slotId: "", waitMs: 0, resubmit: false }, md, (e, r) => (e ? reject(e) : resolve(r))),
    );
    expect((await client.watch(["first"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    await client.submitTask(inputsTask("second", "import time\ndef main(ctx, x):\n    time.sleep(30)\n", [1]));
    const list = await new Promise<ListTasksResponse>((resolve, reject) => client.client.listTasks({ limit: 0 }, (e, r) => (e ? reject(e) : resolve(r!))));
    expect(list.truncated).toBe(false);
    expect(list.tasks.map((t) => [t.snapshot!.taskId, TaskState[t.snapshot!.state], t.owner])).toEqual([
      ["second", "RUNNING", ""],
      ["first", "SUCCEEDED", "alice@laptop"],
    ]);
    expect(list.tasks[1]!.function).toMatch(/^inline:[0-9a-f]{12}$/);
    expect(Number(list.tasks[1]!.snapshot!.callsSucceeded)).toBe(2);
    const one = await new Promise<ListTasksResponse>((resolve, reject) => client.client.listTasks({ limit: 1 }, (e, r) => (e ? reject(e) : resolve(r!))));
    expect([one.tasks.length, one.truncated]).toEqual([1, true]);
    const tooMany = await new Promise<grpc.ServiceError>((resolve) => client.client.listTasks({ limit: 10_001 }, (e) => resolve(e!)));
    expect(tooMany.code).toBe(grpc.status.INVALID_ARGUMENT);
    await client.cancelTask("second");
  }, 90_000);
});
