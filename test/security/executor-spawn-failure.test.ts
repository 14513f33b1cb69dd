/**
 * An executor the host refuses to start (issue 51, item 7): spawning throws EMFILE, EAGAIN or
 * ENOSPC, which before was thrown inside the pool's timer with no handler and ended the Worker.
 * Against the compiled Worker (one executor): its open-file limit is lowered, with prlimit, to
 * just above what it holds, and its executor is killed, so the restart's spawn gets EMFILE for
 * real. A task's call then fails with a clear error naming the cause, the Worker keeps serving
 * (it answers, and logs the cause once), and once the limit is raised the executor comes back by
 * itself and the next task succeeds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { TaskState } from "../../src/gen/worker/v1/worker";
import type { BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { inputsTask, WorkerClient } from "../support/worker-client";

let cluster: TestCluster;
let proc: BlockxProcess;
let worker: WorkerClient;
let softLimit = "";

const SOURCE = "def main(ctx, x):\n    return x + 1\n";

/** runTask runs a one-call task and returns its end state and first error. */
async function runTask(name: string): Promise<{ state: TaskState; error: string }> {
  const taskId = `spawn-${name}-${Date.now().toString(36)}`;
  const slot = await worker.requestTaskSlot(taskId);
  if (!slot.ok) throw new Error(slot.details);
  const sub = await worker.submitTask(inputsTask(taskId, SOURCE, [41]), slot.value.slotId);
  if (!sub.ok) throw new Error(sub.details);
  await worker.watch([taskId], false, true);
  const r = await worker.getTaskResult(taskId);
  if (!r.ok) throw new Error(r.details);
  return { state: r.value.snapshot!.state, error: r.value.firstError ? `${r.value.firstError.code}: ${r.value.firstError.message}` : "" };
}

const childrenOf = (pid: number): number[] =>
  readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));

function prlimit(pid: number, soft: string): void {
  const r = Bun.spawnSync(["prlimit", "--pid", String(pid), `--nofile=${soft}:`]);
  if (r.exitCode !== 0) throw new Error(`prlimit: ${r.stderr.toString()}`);
}

beforeAll(async () => {
  cluster = new TestCluster();
  const w = await cluster.worker({ EXECUTOR_COUNT: "1", CALL_MAX_ATTEMPTS: "1" });
  proc = w.proc;
  worker = new WorkerClient(w.addr);
  softLimit = /Max open files\s+(\d+)/.exec(readFileSync(`/proc/${proc.proc.pid}/limits`, "utf8"))![1]!;
}, 60_000);

afterAll(async () => {
  if (proc?.proc.exitCode === null && softLimit) prlimit(proc.proc.pid, softLimit);
  worker?.close();
  await cluster?.stop();
});

describe("an executor the host refuses to start", () => {
  test("EMFILE at the executor's restart: the call fails naming the cause, the Worker keeps serving, and recovers when the limit is raised", async () => {
    expect(await runTask("before")).toEqual({ state: TaskState.SUCCEEDED, error: "" });
    const pid = proc.proc.pid;
    // Just above what it holds now: reading /proc for memory samples still works, a spawn's pipes do not.
    prlimit(pid, String(readdirSync(`/proc/${pid}/fd`).length + 2));
    for (const child of childrenOf(pid)) process.kill(child, "SIGKILL");
    const logged = await proc.waitForLog((l) => l.msg.startsWith("executor could not be started"), 30_000);
    expect(String(logged.err)).toStartWith("EMFILE");

    const failed = await runTask("during");
    expect(failed.state).toBe(TaskState.FAILED);
    expect(failed.error).toContain("EXECUTOR_CRASHED");
    expect(failed.error).toContain("could not be started");
    expect(failed.error).toContain("EMFILE");
    // Still serving, and the cause logged once however many restarts failed.
    expect(proc.proc.exitCode).toBeNull();
    expect((await worker.getTaskResult("no-such-task")).ok).toBe(false);
    expect(proc.lines.filter((l) => l.msg.startsWith("executor could not be started"))).toHaveLength(1);

    prlimit(pid, softLimit);
    const readyBefore = proc.lines.filter((l) => l.msg === "executor ready").length;
    await proc.waitForLog((l) => l.msg === "executor ready" && proc.lines.filter((x) => x.msg === "executor ready").length > readyBefore, 60_000);
    expect(await runTask("after")).toEqual({ state: TaskState.SUCCEEDED, error: "" });
  }, 120_000);
});
