/**
 * The compiled Worker's bounds, end to end over gRPC with real executors: task ids over 256
 * characters are INVALID_ARGUMENT on every task RPC; inputs per task (TASK_MAX_INPUTS) and source
 * bytes (EXECUTOR_MAX_SOURCE_BYTES) are refused at submit; a task whose kept return values pass
 * TASK_MAX_RESULT_BYTES fails with RESULT_TOO_LARGE while its neighbour completes; and the Worker
 * keeps serving a neighbour task, its RSS (VmRSS of /proc/<pid>/status) under RSS_GROWTH_BOUND,
 * while hostile tasks flood stderr, send a 30 MiB source with 1,024 calls in flight, and nest an
 * input 10,000 deep, all at once.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { TaskState, type TaskSnapshot } from "../../src/gen/worker/v1/worker";
import { inputsTask, type WorkerClient } from "../support/worker-client";
import { startWorker } from "../support/worker-process";

/**
 * How much the Worker's RSS may grow over its idle self while the hostile tasks run. The 30 MiB source
 * arrives, is decoded, planned and hashed once (~150 MiB of growth for one call), and its JSON is
 * encoded once for every executor it goes to. Growth was 425-516 MiB while each executor's frame
 * made its own encoding (~90 MiB each: the JSON text, its UTF-8, the frame; the bound was 768 MiB
 * then), 207-224 MiB with the shared encoding (2026-12-03); a frame per executor again would go over
 * this bound, and the pathology it first guarded against (the source framed per call, 1,024 x 30
 * MiB) is 80x over it.
 */
const RSS_GROWTH_BOUND_BYTES = 384 * 1024 * 1024;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function worker(env: Record<string, string> = {}): Promise<{ client: WorkerClient; pid: number }> {
  const { client, process } = await startWorker(env, cleanups);
  return { client, pid: process.proc.pid };
}

async function finalState(client: WorkerClient, taskId: string): Promise<TaskSnapshot> {
  const w = await client.watch([taskId]);
  if (w.error) throw w.error;
  return w.snapshots.at(-1)!;
}

function unary<Req, Res>(client: WorkerClient, method: string, req: Req): Promise<{ err: grpc.ServiceError | null; res?: Res }> {
  const c = client.client as unknown as Record<string, (req: Req, cb: (err: grpc.ServiceError | null, res?: Res) => void) => void>;
  return new Promise((resolve) => c[method]!.call(client.client, req, (err, res) => resolve({ err, res })));
}

function streamError(stream: grpc.ClientReadableStream<unknown>): Promise<grpc.ServiceError | null> {
  return new Promise((resolve) => {
    stream.on("data", () => {});
    stream.on("error", (e: grpc.ServiceError) => resolve(e));
    stream.on("end", () => resolve(null));
  });
}

function vmRssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]!;
  return Number(kb) * 1024;
}

describe("the Worker's bounds (compiled binary)", () => {
  test("a task id over 256 characters is INVALID_ARGUMENT on every task RPC, naming the bound", async () => {
    // Plaintext: one stub calls every method, RequestTaskSlot included (under mTLS a Coordinator's only).
    const { client } = await worker({ BLOCKX_INSECURE: "1" });
    const long = "t".repeat(257);
    const said = "at most 256 characters, got 257";
    const unaries: [string, unknown][] = [
      ["requestTaskSlot", { taskId: long, ttlMs: 1000 }],
      ["submitTask", { task: inputsTask(long, "def main(ctx, x):\n    return x\n", [1]), slotId: "", waitMs: 0 }],
      ["cancelTask", { taskId: long, reason: "" }],
      ["getTaskResult", { taskId: long }],
      ["getTaskStory", { taskId: long }],
    ];
    for (const [method, req] of unaries) {
      const { err } = await unary(client, method, req);
      expect([method, err?.code]).toEqual([method, grpc.status.INVALID_ARGUMENT]);
      expect(err!.details).toContain(said);
    }
    const slots = await unary<unknown, { outcomes: { status: number; message: string }[] }>(client, "requestTaskSlots", { requests: [{ taskId: long, ttlMs: 1000 }] });
    expect(slots.res!.outcomes[0]).toMatchObject({ status: grpc.status.INVALID_ARGUMENT });
    expect(slots.res!.outcomes[0]!.message).toContain(said);
    const submits = await unary<unknown, { outcomes: { status: number; message: string }[] }>(client, "submitTasks", { tasks: [{ task: inputsTask(long, "def main(ctx, x):\n    return x\n", [1]), slotId: "", waitMs: 0 }] });
    expect(submits.res!.outcomes[0]).toMatchObject({ status: grpc.status.INVALID_ARGUMENT });
    const watch = await streamError(client.client.watchTasks({ taskIds: ["ok-id", long], withResults: false, terminalOnly: false }));
    expect(watch?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(watch?.details).toContain(said);
    const logs = await streamError(client.client.streamTaskLogs({ taskId: long, tail: 0, follow: false }));
    expect(logs?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(logs?.details).toContain(said);
  }, 60_000);

  test("inputs over TASK_MAX_INPUTS and a source over EXECUTOR_MAX_SOURCE_BYTES are refused at submit, naming count and limit", async () => {
    const { client } = await worker({ TASK_MAX_INPUTS: "10", EXECUTOR_MAX_SOURCE_BYTES: "4096" });
    const src = "def main(ctx, x):\n    return x\n";
    const many = await client.submitTask(inputsTask("many-inputs", src, Array.from({ length: 11 }, (_, i) => i)));
    expect(many.ok).toBe(false);
    if (!many.ok) {
      expect(many.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(many.details).toContain("11 inputs, over the limit of 10 per task (TASK_MAX_INPUTS)");
    }
    const big = await client.submitTask(inputsTask("big-source", `${src}# ${"x".repeat(5000)}\n`, [1]));
    expect(big.ok).toBe(false);
    if (!big.ok) {
      expect(big.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(big.details).toMatch(/function\.source is \d+ bytes of source, over the limit of 4096 \(EXECUTOR_MAX_SOURCE_BYTES\)/);
    }
    expect((await client.submitTask(inputsTask("ten-inputs", src, Array.from({ length: 10 }, (_, i) => i)))).ok).toBe(true);
    expect((await finalState(client, "ten-inputs")).state).toBe(TaskState.SUCCEEDED);
  }, 60_000);

  test("a task whose return values pass TASK_MAX_RESULT_BYTES fails with RESULT_TOO_LARGE; its neighbour completes", async () => {
    const { client } = await worker({ TASK_MAX_RESULT_BYTES: "4096" });
    await client.submitTask(inputsTask("hoarder", "def main(ctx, x):\n    return 'v' * 1000\n", Array.from({ length: 10 }, (_, i) => i)));
    await client.submitTask(inputsTask("modest", "def main(ctx, x):\n    return x\n", [1, 2, 3]));
    const hoarder = await finalState(client, "hoarder");
    expect(hoarder.state).toBe(TaskState.FAILED);
    expect(hoarder.error?.code).toBe("RESULT_TOO_LARGE");
    expect(hoarder.error?.message).toContain("over the limit of 4096 per task (TASK_MAX_RESULT_BYTES)");
    expect((await finalState(client, "modest")).state).toBe(TaskState.SUCCEEDED);
    const r = await client.getTaskResult("modest");
    expect(r.ok && r.value.returnValues.map((b) => JSON.parse(Buffer.from(b).toString()))).toEqual([1, 2, 3]);
  }, 60_000);

  test("hostile tasks (a stderr flood, a 30 MiB source with 1,024 calls in flight, an input 10,000 deep) leave the Worker serving and its RSS bounded", async () => {
    // Four executors: the Worker keeps 4 x 256 calls in flight, all 1,024 of the big task's at once.
    const { client, pid } = await worker({ EXECUTOR_COUNT: "4" });
    const inc = "def main(ctx, x):\n    return x + 1\n";
    expect((await client.submitTask(inputsTask("warm-up", inc, [1, 2, 3, 4, 5, 6, 7, 8]))).ok).toBe(true);
    expect((await finalState(client, "warm-up")).state).toBe(TaskState.SUCCEEDED);
    const idle = vmRssBytes(pid);
    let peak = idle;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, vmRssBytes(pid));
        await Bun.sleep(50);
      }
    })();

    const flood = "import os\ndef main(ctx, x):\n    for i in range(50_000):\n        os.write(2, b'flood line %d\\n' % i)\n    os.write(2, b'z' * (4 << 20))\n    return x\n";
    const bigSource = `${inc}# ${"x".repeat(30 * 1024 * 1024)}\n`;
    let nested: unknown = 0;
    for (let i = 0; i < 10_000; i++) nested = [nested];
    const submits = await Promise.all([
      client.submitTask(inputsTask("flood", flood, [1, 2])),
      client.submitTask(inputsTask("big-source", bigSource, Array.from({ length: 1024 }, (_, i) => i))),
      client.submitTask(inputsTask("deep-input", inc, [nested])),
      client.submitTask(inputsTask("neighbour", inc, Array.from({ length: 50 }, (_, i) => i))),
    ]);
    expect(submits.map((s) => s.ok)).toEqual([true, true, true, true]);
    const [floodEnd, bigEnd, deepEnd, neighbourEnd] = await Promise.all(["flood", "big-source", "deep-input", "neighbour"].map((id) => finalState(client, id)));
    sampling = false;
    await sampler;

    expect(neighbourEnd!.state).toBe(TaskState.SUCCEEDED);
    expect(floodEnd!.state).toBe(TaskState.SUCCEEDED);
    expect(bigEnd!.state).toBe(TaskState.SUCCEEDED);
    expect(Number(bigEnd!.callsSucceeded)).toBe(1024);
    expect(deepEnd!.state).toBe(TaskState.FAILED);
    expect(deepEnd!.error?.code).toBe("INPUT_REJECTED");
    console.log(`worker VmRSS: idle ${(idle / 1048576).toFixed(0)} MiB, peak ${(peak / 1048576).toFixed(0)} MiB (bound: idle + ${RSS_GROWTH_BOUND_BYTES / 1048576} MiB)`);
    expect(peak - idle).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
    // Still serving after all of it.
    expect((await client.submitTask(inputsTask("after", inc, [41]))).ok).toBe(true);
    expect((await finalState(client, "after")).state).toBe(TaskState.SUCCEEDED);
  }, 300_000);
});

