/**
 * FUNCTIONS_DIR does not follow symbolic links out of itself (issue 51, item 7): a link to the
 * Worker's TLS key, submitted as a function by name, came back quoted in a syntax-error traceback.
 * Against the compiled Worker: a link to a key file outside the folder, and one to valid Python
 * outside it, are refused with an error naming the rule, and the key's content appears nowhere
 * (the answer, the task's result, the Worker's logs); a link within the folder still works.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { TestCluster } from "../support/cluster";
import { WorkerClient } from "../support/worker-client";

const KEY_TEXT = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj SECRETKEYDATA\n-----END PRIVATE KEY-----\n";

let root = "";
let cluster: TestCluster;
let worker: WorkerClient;
let workerProc: Awaited<ReturnType<TestCluster["worker"]>>["proc"];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "blockx-fdir-links-"));
  const fns = join(root, "functions");
  const outside = join(root, "outside");
  mkdirSync(fns);
  mkdirSync(outside);
  writeFileSync(join(outside, "worker.key"), KEY_TEXT);
  writeFileSync(join(outside, "elsewhere.py"), "def main(ctx, x):\n    return 'from outside'\n");
  writeFileSync(join(fns, "double.py"), "def main(ctx, x):\n    return 2 * x\n");
  symlinkSync(join(outside, "worker.key"), join(fns, "key.py"));
  symlinkSync("../outside/elsewhere.py", join(fns, "escape.py"));
  symlinkSync("double.py", join(fns, "alias.py"));
  Bun.spawnSync(["chmod", "-R", "a+rX", root]);
  cluster = new TestCluster();
  const w = await cluster.worker({ FUNCTIONS_DIR: fns, EXECUTOR_COUNT: "1" });
  workerProc = w.proc;
  worker = new WorkerClient(w.addr);
}, 60_000);

afterAll(async () => {
  worker?.close();
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** run submits a task calling the FUNCTIONS_DIR function `name` on inputs 1 and 2 and returns what came back: the refusal, or the end state and error. */
async function run(name: string): Promise<{ refused?: string; state?: TaskState; error?: string; values?: unknown[] }> {
  const taskId = `links-${name}-${Date.now().toString(36)}`;
  const slot = await worker.requestTaskSlot(taskId);
  if (!slot.ok) throw new Error(slot.details);
  const task = Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { name, entry: "main" }, config: { $case: "inputs", inputs: { inputs: [1, 2].map((i) => Buffer.from(JSON.stringify(i))) } } }),
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
  });
  const sub = await worker.submitTask(task, slot.value.slotId, { waitMs: 10_000 });
  if (!sub.ok) return { refused: sub.details };
  await worker.watch([taskId], false, true);
  const r = await worker.getTaskResult(taskId);
  if (!r.ok) throw new Error(r.details);
  const fe = r.value.firstError;
  return {
    state: r.value.snapshot!.state,
    error: fe ? `${fe.code} ${fe.message} ${fe.traceback}` : undefined,
    values: r.value.snapshot!.state === TaskState.SUCCEEDED ? JSON.stringify(r.value).match(/from outside|\b[24]\b/g) ?? [] : undefined,
  };
}

describe("FUNCTIONS_DIR and symbolic links", () => {
  test("a link to a key file outside the folder, submitted by name: refused with the rule, the key's content nowhere", async () => {
    const r = await run("key");
    const said = JSON.stringify(r);
    expect(said).toContain("symbolic link leading out of FUNCTIONS_DIR");
    expect(r.state).not.toBe(TaskState.SUCCEEDED);
    expect(said).not.toContain("SECRETKEYDATA");
    expect(said).not.toContain("PRIVATE KEY");
  }, 60_000);

  test("a link to valid Python outside the folder is refused too (the target is never read)", async () => {
    const r = await run("escape");
    expect(JSON.stringify(r)).toContain("symbolic link leading out of FUNCTIONS_DIR");
    expect(JSON.stringify(r)).not.toContain("from outside");
  }, 60_000);

  test("a link within the folder runs the function it names", async () => {
    const r = await run("alias");
    expect(r.state).toBe(TaskState.SUCCEEDED);
  }, 60_000);

  test("the Worker's logs name the refused files and never the key's content", () => {
    const logs = JSON.stringify(workerProc.lines) + workerProc.stderr;
    expect(logs).toContain("key.py is a symbolic link leading out of FUNCTIONS_DIR");
    expect(logs).not.toContain("SECRETKEYDATA");
  });
});
