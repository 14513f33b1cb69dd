/**
 * COORDINATOR_TRACE, WORKER_TRACE and SYNCINVOKER_TRACE, end to end: the compiled binary's roles
 * against the shared test etcd and real executors write a Chrome trace-event file on SIGUSR2; the
 * test opens it as JSON and checks that a known request's spans nest (children inside their
 * parent, on its lane when consecutive) and add up (consecutive stages cover their span exactly).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TraceEvent } from "../../src/common/trace/tracer";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { reserve, waitFor } from "../support/coordinator-client";
import { SyncInvokerClient } from "../support/syncinvoker-client";
import { inputsTask, WorkerClient } from "../support/worker-client";

interface TraceFile {
  traceEvents: TraceEvent[];
  otherData: { role: string; droppedEvents: number; droppedSpans: number; gc: string };
}

/** writtenTrace asks the process for its trace (SIGUSR2) and reads the file once it says it wrote it. */
async function writtenTrace(proc: BlockxProcess, file: string): Promise<TraceFile> {
  proc.proc.kill("SIGUSR2");
  await proc.waitForLog((l) => l.msg === "trace written");
  expect(existsSync(`${file}.tmp`)).toBe(false);
  return JSON.parse(readFileSync(file, "utf8")) as TraceFile;
}

const spans = (t: TraceFile) => t.traceEvents.filter((e) => e.ph === "X");
const childrenOf = (t: TraceFile, parent: TraceEvent) => spans(t).filter((e) => e.args?.parent === parent.args?.span).sort((a, b) => a.ts - b.ts);
const endOf = (e: TraceEvent) => e.ts + e.dur!;

/** expectStagesCover: `parent`'s stages follow one another with no gap and end where it ends; all on its lane. */
function expectStagesCover(parent: TraceEvent, stages: TraceEvent[]): void {
  expect(stages.length).toBeGreaterThan(0);
  expect(stages[0]!.ts).toBe(parent.ts);
  for (let i = 1; i < stages.length; i++) expect(stages[i]!.ts).toBe(endOf(stages[i - 1]!));
  expect(stages.reduce((sum, s) => sum + s.dur!, 0)).toBe(parent.dur!);
  for (const s of stages) expect(s.tid).toBe(parent.tid);
}

function expectInside(child: TraceEvent, parent: TraceEvent): void {
  expect(child.ts).toBeGreaterThanOrEqual(parent.ts);
  expect(endOf(child)).toBeLessThanOrEqual(endOf(parent));
}

describe("runtime traces (compiled binary, real etcd, real executors)", () => {
  const cluster = new TestCluster();
  const coordTrace = join(cluster.dir, "coordinator.trace.json");
  const workerTrace = join(cluster.dir, "worker.trace.json");
  let worker: { proc: BlockxProcess; addr: string };
  let coord: { proc: BlockxProcess; addr: string };
  beforeAll(async () => {
    worker = await cluster.worker({ WORKER_TRACE: workerTrace });
    await cluster.withFreeCapacity(1);
    coord = await cluster.coordinator({ COORDINATOR_TRACE: coordTrace });
  });
  afterAll(() => cluster.stop());

  test("a reservation and its task: the Coordinator's stages add up to the ReserveWorkerSlot span; the Worker's task phases add up to the task, its calls' queue and run to each call", async () => {
    const reserved = await waitFor(() => reserve(coord.addr, "traced-1"), (o) => o.ok);
    if (!reserved.ok) throw new Error("no slot");
    const client = new WorkerClient(worker.addr);
    const src = `def main(ctx, n):\n    b = ctx.io("localtestservice", "eth_getBlockByNumber", {"chain": "ethereum", "number": n, "full": False})\n    return int(b["number"], 16)\n`;
    const submitted = await client.submitTask(inputsTask("traced-1", src, [1, 2, 3]), reserved.res.slotId, { waitMs: 10_000 });
    client.close();
    if (!submitted.ok) throw new Error(`SubmitTask failed: ${submitted.details}`);
    expect(submitted.value.state).toBe(TaskState.SUCCEEDED);

    const ct = await writtenTrace(coord.proc, coordTrace);
    expect(ct.otherData).toMatchObject({ role: "coordinator", droppedEvents: 0, droppedSpans: 0 });
    expect(ct.otherData.gc).toContain("no GC events");
    const rpc = spans(ct).find((e) => e.name === "ReserveWorkerSlot" && e.args?.taskId === "traced-1" && e.args?.code === "OK")!;
    expect(rpc.args).toMatchObject({ parent: 0 });
    const stages = childrenOf(ct, rpc);
    expect(stages.map((s) => s.name)).toEqual(["validate", "select candidate", "RequestTaskSlot", "handle answer", "reply"]);
    expect(stages[2]!.args).toMatchObject({ workerAddr: worker.addr, attempt: 1 });
    expectStagesCover(rpc, stages);

    const wt = await writtenTrace(worker.proc, workerTrace);
    expect(wt.otherData).toMatchObject({ role: "worker", droppedEvents: 0, droppedSpans: 0 });
    const task = spans(wt).find((e) => e.name === "task" && e.args?.taskId === "traced-1")!;
    expect(task.args).toMatchObject({ state: "SUCCEEDED", callsSucceeded: 3 });
    const phases = childrenOf(wt, task).filter((s) => !["call", "commit"].includes(s.name));
    expect(phases.map((p) => p.name)).toEqual(["ALLOCATED", "BUILD", "EXECUTE", "WRITE"]);
    expectStagesCover(task, phases);

    const calls = childrenOf(wt, task).filter((s) => s.name === "call");
    expect(calls.map((c) => c.args?.callId).sort()).toEqual(["traced-1/0/1", "traced-1/1/1", "traced-1/2/1"]);
    for (const call of calls) {
      expectInside(call, task);
      const parts = childrenOf(wt, call);
      const [queue, run] = [parts.find((p) => p.name === "queue")!, parts.find((p) => p.name === "run")!];
      expect(queue.dur! + run.dur!).toBe(call.dur!);
      expect(endOf(queue)).toBe(run.ts);
      const io = parts.filter((p) => p.name === "io localtestservice.eth_getBlockByNumber");
      expect(io).toHaveLength(1);
      expectInside(io[0]!, run);
      const commit = spans(wt).find((e) => e.name === "commit" && e.args?.callId === call.args?.callId)!;
      expect(commit.args?.parent).toBe(task.args?.span);
      expect(commit.ts).toBeGreaterThanOrEqual(endOf(call));
      expectInside(commit, task);
    }
  });

  test("SYNCINVOKER_TRACE: an Invoke's stages add up to it, its call hangs under it and a sub-call under the call", async () => {
    const file = join(cluster.dir, "syncinvoker.trace.json");
    const proc = BlockxProcess.spawn(["syncinvoker"], { SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "1", SYNCINVOKER_TRACE: file });
    try {
      const client = new SyncInvokerClient(await proc.grpcAddr());
      const child = `def main(ctx, n):\n    return n + 1\n`;
      const src = `def main(ctx, n):\n    return ctx.call({"source": ${JSON.stringify(child)}, "entry": "main"}, n) * 10\n`;
      const r = await client.invoke({ source: src, args: "4" });
      client.close();
      expect(r.ok && JSON.parse(r.value.result.toString())).toBe(50);
      const callId = r.ok ? r.value.callId : "";

      const t = await writtenTrace(proc, file);
      const invoke = spans(t).find((e) => e.name === "Invoke" && e.args?.callId === callId)!;
      const stages = childrenOf(t, invoke).filter((s) => s.name !== "call");
      expect(stages.map((s) => s.name)).toEqual(["admission", "run", "reply"]);
      expectStagesCover(invoke, stages);
      const call = childrenOf(t, invoke).find((s) => s.name === "call")!;
      expectInside(call, stages[1]!);
      const sub = childrenOf(t, call).find((s) => s.name === "call")!;
      expect(sub.args?.callId).toBe(`${callId}/sub-1`);
      expectInside(sub, call);
    } finally {
      await proc.stop("SIGKILL");
    }
  });
});
