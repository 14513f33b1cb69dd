import { UNAUTHENTICATED_OWNER } from "../../runtime/executor/executor-pool-config";
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../common/logging/logger";
import type { Task } from "../../gen/worker/v1/worker";
import { FunctionCodeView } from "../../runtime/functions/function-code-view";
import { InMemoryPool } from "../../../test/support/in-memory-pool";
import { blockWorkerProfile } from "../core/profile";
import { planTask } from "../core/task-plan";
import { SqliteTableStore } from "../../outputs/stores/sqlite-table-store";
import type { IoAnswer } from "../../runtime/calls/call";
import type { JsonValue } from "../../runtime/json/raw-json";
import { TaskRunner, type TaskRunnerEvent } from "./task-runner";

const log = createLogger("fatal");

/** A task of `inputs` calling `source`, with the given outputs (return value by default). */
function task(id: string, inputs: unknown[], o: { source?: string; name?: string; outputs?: Task["outputs"] } = {}): Task {
  return {
    taskId: id,
    taskTimeoutMs: 0,
    functionCallConfig: {
      function: { name: o.name ?? "", source: o.name ? "" : (o.source ?? "def main(ctx, x):\n    return x\n"), entry: "", filename: "" },
      config: { $case: "inputs", inputs: { inputs: inputs.map((v) => Buffer.from(JSON.stringify(v))) } },
    },
    outputs: o.outputs ?? [{ handler: { $case: "returnValue", returnValue: {} } }],
  };
}

interface Rig {
  pool: InMemoryPool;
  runner: TaskRunner;
  events: TaskRunnerEvent[];
  ioEnded: string[];
  systemFailures: boolean[];
  now: { ms: number };
}

/** What a rig's tasks' IO does: every request answered at once with null, and no op a read (no prefetch), unless a test says. */
interface RigIo {
  call?: (backend: string, op: string, params: JsonValue) => Promise<IoAnswer>;
  isReadOp?: (backend: string, op: string) => boolean;
}

function rig(
  o: { taskWindow?: number; maxAttempts?: number; tables?: SqliteTableStore; budgetMs?: number; ownerWithoutIdentity?: "task" | "shared"; progressIntervalMs?: number; io?: RigIo; ioPrefetch?: boolean } = {},
): Rig {
  const pool = new InMemoryPool();
  const events: TaskRunnerEvent[] = [];
  const ioEnded: string[] = [];
  const systemFailures: boolean[] = [];
  const now = { ms: 1_000 };
  const runner = new TaskRunner({
    pool,
    dispatcher: { taskMaxInflightCalls: o.taskWindow ?? 100, maxInflightCalls: 1000, maxAttempts: o.maxAttempts ?? 3, retryBackoffBaseMs: 1, retryBackoffMaxMs: 1 },
    io: {
      forTask: (taskId) => ({
        call: async (backend: string, op: string, params: JsonValue) => ({ answer: o.io?.call ? await o.io.call(backend, op, params) : { ok: true, value: null, ioMs: 0 } }) as never,
        isReadOp: o.io?.isReadOp ?? (() => false),
        end: () => void ioEnded.push(taskId),
      }),
    },
    tables: o.tables ?? null,
    log,
    nowMs: () => now.ms,
    // Counts every turn, so that each test can read them after each step; the cadence has its own test.
    progressIntervalMs: o.progressIntervalMs ?? 0,
    ...(o.budgetMs ? { callBudgetMs: o.budgetMs } : {}),
    ...(o.ownerWithoutIdentity ? { ownerWithoutIdentity: o.ownerWithoutIdentity } : {}),
    ...(o.ioPrefetch !== undefined ? { ioPrefetch: o.ioPrefetch } : {}),
  });
  runner.onEvent = (e) => events.push(e);
  runner.onCallFinished = (f) => systemFailures.push(f);
  return { pool, runner, events, ioEnded, systemFailures, now };
}

function run(r: Rig, t: Task, functions: FunctionCodeView | null = null): void {
  expect(r.runner.accept(planTask(t, blockWorkerProfile, functions?.current() ?? null))).toBe(true);
  r.runner.start(t.taskId);
}

/** Lets the runner see finished calls (their promises) and its coalesced counts. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

const ends = (r: Rig) => r.events.filter((e) => e.type === "taskSucceeded" || e.type === "taskFailed");

describe("TaskRunner", () => {
  test("runs every call, reports EXECUTE, counts, WRITE and the end in WorkerCore's events, returns values in input order", async () => {
    const r = rig();
    run(r, task("t1", [10, 20, 30]));
    expect(r.pool.started).toEqual(["t1/0/1", "t1/1/1", "t1/2/1"]);
    expect(r.events[0]).toEqual({ type: "taskPhaseEntered", taskId: "t1", phase: "EXECUTE" });
    // Completions out of order: the values still come back by call index.
    r.pool.call("t1/2/1").finish({ value: 3 });
    r.pool.call("t1/0/1").finish({ value: 1 });
    await settle();
    expect(ends(r)).toEqual([]);
    expect(r.runner.result("t1")).toBeUndefined(); // no output while it runs
    r.pool.call("t1/1/1").finish({ value: 2 });
    await settle();
    const types = r.events.map((e) => (e.type === "taskPhaseEntered" ? `phase:${e.phase}` : e.type));
    expect(types.indexOf("phase:WRITE")).toBeGreaterThan(types.lastIndexOf("taskCallCountsChanged"));
    expect(types.at(-1)).toBe("taskSucceeded");
    expect(r.events.filter((e) => e.type === "taskCallCountsChanged").at(-1)).toMatchObject({ callsTotal: 3, callsSucceeded: 3, callsFailed: 0 });
    expect(r.runner.result("t1")).toEqual({ returnValues: [1, 2, 3], resultBytes: 3, firstError: undefined, writes: [] });
    expect(r.ioEnded).toEqual(["t1"]);
    expect(r.systemFailures).toEqual([false, false, false]);
  });

  test("counts are reported at most once per progress interval while calls run; the last counts go at once, before the end", async () => {
    const counts = (r: Rig) => r.events.filter((e) => e.type === "taskCallCountsChanged").map((e) => (e.type === "taskCallCountsChanged" ? e.callsSucceeded : -1));
    // An interval no test outlives: nothing but the task's end may report the held counts.
    const held = rig({ progressIntervalMs: 60_000 });
    run(held, task("p1", [1, 2, 3]));
    expect(counts(held)).toEqual([0]); // reported at the start
    held.pool.call("p1/0/1").finish({ value: 1 });
    await settle();
    held.pool.call("p1/1/1").finish({ value: 2 });
    await settle();
    expect(counts(held)).toEqual([0]); // held: within the interval
    held.pool.call("p1/2/1").finish({ value: 3 });
    await settle();
    const types = held.events.map((e) => (e.type === "taskPhaseEntered" ? `phase:${e.phase}` : e.type));
    expect(counts(held)).toEqual([0, 3]);
    expect(types.lastIndexOf("taskCallCountsChanged")).toBeLessThan(types.indexOf("phase:WRITE"));
    expect(types.at(-1)).toBe("taskSucceeded");

    // A short interval: the held counts go when it has passed, without another call finishing.
    const short = rig({ progressIntervalMs: 20 });
    run(short, task("p2", [1, 2]));
    short.pool.call("p2/0/1").finish({ value: 1 });
    await settle();
    expect(counts(short)).toEqual([0]);
    await new Promise((resolve) => setTimeout(resolve, 40)); // after the runner's 20 ms timer, whichever the load
    expect(counts(short)).toEqual([0, 1]);
    short.pool.call("p2/1/1").finish({ value: 2 });
    await settle();
    expect(counts(short)).toEqual([0, 1, 2]);
    expect(ends(short).map((e) => e.type)).toEqual(["taskSucceeded"]);
  });

  test("a call that fails for good fails the task at once, naming its input; the other calls are cancelled and nothing more starts", async () => {
    const r = rig({ taskWindow: 2 });
    run(r, task("t2", ["a", "b", "c", "d"]));
    expect(r.pool.started).toEqual(["t2/0/1", "t2/1/1"]);
    r.pool.call("t2/1/1").finish({ code: "USER_ERROR", message: "ValueError: bad b" });
    await settle();
    expect(ends(r)).toEqual([{ type: "taskFailed", taskId: "t2", error: { code: "USER_ERROR", message: 'call 1 (input "b") failed: ValueError: bad b' } }]);
    expect(r.pool.cancelled).toEqual(["t2/0/1"]);
    expect(r.pool.started).toEqual(["t2/0/1", "t2/1/1"]); // calls 2 and 3 never start
    expect(r.runner.result("t2")?.firstError).toMatchObject({ code: "USER_ERROR", callIndex: 1, callInput: '"b"', callId: "t2/1/1" });
    expect(r.systemFailures).toEqual([false, false]); // a user's error and a cancel say nothing about the Worker
  });

  test("an executor that dies is retried on a fresh attempt, counted as retried and as a system failure", async () => {
    const r = rig();
    run(r, task("t3", [1]));
    r.pool.call("t3/0/1").finish({ code: "EXECUTOR_CRASHED", retryable: true });
    await settle();
    r.now.ms += 10;
    await settle();
    r.pool.call("t3/0/2").finish({ value: 7 });
    await settle();
    expect(ends(r)).toEqual([{ type: "taskSucceeded", taskId: "t3" }]);
    expect(r.events.filter((e) => e.type === "taskCallCountsChanged").at(-1)).toMatchObject({ callsSucceeded: 1, callsRetried: 1 });
    expect(r.systemFailures).toEqual([true, false]);
  });

  test("attempts run out: the task fails with the count of attempts in the message", async () => {
    const r = rig({ maxAttempts: 2 });
    run(r, task("t4", [1]));
    r.pool.call("t4/0/1").finish({ code: "EXECUTOR_HUNG", retryable: true });
    await settle();
    expect(r.pool.running.size).toBe(0); // the retry waits for its backoff on the runner's clock
    r.now.ms += 10;
    await settle();
    r.pool.call("t4/0/2").finish({ code: "EXECUTOR_HUNG", message: "no heartbeat", retryable: true });
    await settle();
    expect(ends(r)).toEqual([{ type: "taskFailed", taskId: "t4", error: { code: "EXECUTOR_HUNG", message: "call 0 (input 1) failed: no heartbeat (after 2 attempts)" } }]);
  });

  test("stop (cancel, timeout) cancels the task's calls and the sub-calls below them, and reports nothing", async () => {
    const r = rig();
    const fns = new FunctionCodeView();
    fns.update(new Map([["child", "def main(ctx, x):\n    return x\n"]]));
    run(r, task("t5", [1, 2]), fns);
    const parent = r.pool.call("t5/0/1");
    const sub = parent.owner.subCall!({ kind: "call", function: { name: "child" }, args: 1 }, parent.callId);
    await settle();
    expect([...r.pool.running.keys()].sort()).toEqual(["t5/0/1", "t5/0/1/sub-1", "t5/1/1"]);
    const before = r.events.length;
    r.runner.stop("t5");
    expect(r.pool.cancelled.sort()).toEqual(["t5/0/1", "t5/0/1/sub-1", "t5/1/1"]);
    expect(await sub).toMatchObject({ ok: false });
    await settle();
    expect(r.events.length).toBe(before);
    expect(r.runner.result("t5")).toEqual({ returnValues: [], firstError: undefined, writes: [] });
    expect(r.ioEnded).toEqual(["t5"]);
  });

  test("sub-calls count in the task's window, get the parent's id and budget, and are retried when their executor dies", async () => {
    const r = rig({ taskWindow: 2, budgetMs: 1234 });
    const fns = new FunctionCodeView();
    fns.update(new Map([["child", "def main(ctx, x):\n    return x\n"]]));
    run(r, task("t6", [1, 2, 3]), fns);
    expect(r.pool.started).toEqual(["t6/0/1", "t6/1/1"]);
    const parent = r.pool.call("t6/0/1");
    const sub = parent.owner.subCall!({ kind: "call", function: { name: "child" }, args: 5 }, parent.callId);
    await settle();
    expect(r.pool.call("t6/0/1/sub-1").budgetMs).toBe(1234);
    expect(r.pool.call("t6/0/1/sub-1").fn).toMatchObject({ entry: "main", filename: "child.py" });
    // Call 1 finishes, but the sub-call holds call 2's place in the window.
    r.pool.call("t6/1/1").finish({ value: 2 });
    await settle();
    expect(r.pool.started).not.toContain("t6/2/1");
    // The sub-call's executor dies: a new attempt with a new id, not a failure of the parent.
    r.pool.call("t6/0/1/sub-1").finish({ code: "OOM_KILLED", retryable: true });
    await settle();
    r.pool.call("t6/0/1/sub-2").finish({ value: 50 });
    expect(await sub).toMatchObject({ ok: true, value: 50 });
    await settle();
    expect(r.pool.started).toContain("t6/2/1");
    expect(r.events.filter((e) => e.type === "taskCallCountsChanged").at(-1)).toMatchObject({ callsRetried: 1 });
  });

  test("a sub-call by an unknown name fails the sub-call, not the Worker, and says what the snapshot has", async () => {
    const r = rig();
    const fns = new FunctionCodeView();
    fns.update(new Map([["child", "def main(ctx, x):\n    return x\n"]]));
    run(r, task("t7", [1]), fns);
    const parent = r.pool.call("t7/0/1");
    expect(await parent.owner.subCall!({ kind: "call", function: { name: "nope" }, args: 1 }, parent.callId)).toEqual({
      ok: false,
      error: { type: "FUNCTION_NOT_FOUND", message: 'no function "nope" in FUNCTIONS_DIR (epoch 1 has: child)' },
    });
  });

  test("a task without inputs succeeds at once; a task the runner never accepted fails as INTERNAL; forget drops the output", () => {
    const r = rig();
    run(r, task("t8", []));
    expect(ends(r)).toEqual([{ type: "taskSucceeded", taskId: "t8" }]);
    r.runner.start("ghost");
    expect(ends(r).at(-1)).toEqual({ type: "taskFailed", taskId: "ghost", error: { code: "INTERNAL", message: "the worker lost the task's plan" } });
    expect(r.runner.result("t8")).toBeDefined();
    r.runner.forget("t8");
    expect(r.runner.result("t8")).toBeUndefined();
    expect(r.runner.accept(planTask(task("t8", [1]), blockWorkerProfile))).toBe(true); // the id is free again
  });

  test("a writer that cannot be set up fails the task before any call starts", () => {
    const r = rig(); // no table store
    run(r, task("t9", [1], { outputs: [{ handler: { $case: "normalTableWrite", normalTableWrite: { table: "rows" } } }] }));
    expect(r.pool.started).toEqual([]);
    expect(ends(r)).toEqual([{ type: "taskFailed", taskId: "t9", error: { code: "INTERNAL", message: "this Worker has no table store" } }]);
  });

  describe("with a table store", () => {
    let dir = "";
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    test("a value that is not rows fails its call as RESULT_NOT_ROWS, not retried; rows of good calls are in the table", async () => {
      dir = mkdtempSync(join(tmpdir(), "runner-"));
      const tables = new SqliteTableStore(join(dir, "t.sqlite"), { inline: true });
      const r = rig({ tables });
      run(r, task("t10", [1, 2], { outputs: [{ handler: { $case: "normalTableWrite", normalTableWrite: { table: "rows" } } }] }));
      r.pool.call("t10/0/1").finish({ value: [{ n: 1 }] });
      await settle();
      r.pool.call("t10/1/1").finish({ value: "not rows" });
      await settle();
      expect(ends(r)).toEqual([expect.objectContaining({ type: "taskFailed", error: expect.objectContaining({ code: "RESULT_NOT_ROWS" }) })]);
      expect(r.pool.started).toEqual(["t10/0/1", "t10/1/1"]);
      expect(r.runner.result("t10")?.writes).toMatchObject([{ table: "rows" }]);
      await tables.close();
    });

    test("a commit in flight when its task is stopped lands; writesSettled resolves only after it; the cancelled call writes nothing", async () => {
      dir = mkdtempSync(join(tmpdir(), "runner-"));
      const path = join(dir, "t.sqlite");
      // The store's own thread, as in a Worker; another connection holds the file's write lock.
      const tables = new SqliteTableStore(path, { busyTimeoutMs: 30_000 });
      const r = rig({ tables });
      const outputs: Task["outputs"] = [{ handler: { $case: "normalTableWrite", normalTableWrite: { table: "rows" } } }];
      run(r, task("t11", [1, 2, 3], { outputs }));
      r.pool.call("t11/0/1").finish({ value: [{ n: 1 }] });
      await settle();
      await r.runner.writesSettled("t11"); // the thread has opened the file and made the table
      const holder = new Database(path);
      holder.exec("BEGIN IMMEDIATE");
      r.pool.call("t11/1/1").finish({ value: [{ n: 2 }] });
      await settle();
      expect(r.runner.hasPendingWrites("t11")).toBe(true);
      r.runner.stop("t11"); // cancelled while call 1's commit waits on the lock
      let settled = false;
      const done = r.runner.writesSettled("t11").then(() => (settled = true));
      await Bun.sleep(200);
      expect(settled).toBe(false);
      holder.exec("COMMIT");
      holder.close();
      await done;
      expect(r.runner.hasPendingWrites("t11")).toBe(false);
      const raw = new Database(path, { readonly: true });
      expect(raw.query("SELECT n FROM rows ORDER BY n").all()).toEqual([{ n: 1 }, { n: 2 }]);
      raw.close();
      expect(ends(r)).toEqual([]); // a stop reports nothing
      await tables.close();
    });
  });

  test("executors are shared by one authenticated identity's tasks, never across identities, and per task without one", () => {
    const r = rig();
    const start = (id: string, identity: string) => {
      expect(r.runner.accept(planTask(task(id, [1]), blockWorkerProfile, null), "label", identity)).toBe(true);
      r.runner.start(id);
    };
    start("a1", "client/alice");
    start("a2", "client/alice");
    start("b1", "client/bob");
    start("anon1", "");
    start("anon2", "");
    const key = (id: string) => r.pool.ownerKeys.get(`${id}/0/1`);
    expect(key("a1")).toBe("identity:client/alice");
    expect(key("a2")).toBe(key("a1"));
    expect(key("b1")).toBe("identity:client/bob");
    // Under BLOCKX_INSECURE the owner label is a name anyone may send: it never joins two tasks.
    expect(key("anon1")).toBe("task:anon1");
    expect(key("anon2")).toBe("task:anon2");
  });

  test("EXECUTOR_OWNER_WITHOUT_IDENTITY=shared: tasks without an identity share one owner, apart from every authenticated identity", () => {
    const r = rig({ ownerWithoutIdentity: "shared" });
    for (const [id, identity] of [["anon1", ""], ["anon2", ""], ["a1", "client/alice"]] as const) {
      expect(r.runner.accept(planTask(task(id, [1]), blockWorkerProfile, null), "label", identity)).toBe(true);
      r.runner.start(id);
    }
    const key = (id: string) => r.pool.ownerKeys.get(`${id}/0/1`);
    expect(key("anon1")).toBe(UNAUTHENTICATED_OWNER);
    expect(key("anon2")).toBe(UNAUTHENTICATED_OWNER);
    expect(key("a1")).toBe("identity:client/alice");
  });
});

describe("TaskRunner: a call's first IO request fetched ahead (IoPrefetchPlan)", () => {
  /** A call asks for its block first, as a block function does: `{n: <its input>}` of backend b, op `op`. */
  async function askFirst(r: Rig, callId: string, op = "get") {
    const c = r.pool.call(callId);
    return c.owner.io!({ kind: "io", backend: "b", op, params: { n: c.args } }, callId);
  }
  /** teach lets each of these calls ask for its block first, then finishes it: what the plan learns from. */
  async function teach(r: Rig, callIds: string[]) {
    for (const id of callIds) {
      await askFirst(r, id);
      r.pool.call(id).finish({ value: 1 });
      await settle();
    }
  }
  /** IO that records what was asked, answers `{block: n}` and says only `get` reads. */
  function recordingIo() {
    const asked: JsonValue[] = [];
    const io: RigIo = {
      call: async (_backend, op, params) => {
        asked.push(params);
        return op === "broken" ? { ok: false, error: { type: "BackendDown", message: "down" }, ioMs: 1 } : { ok: true, value: { block: (params as { n: number }).n }, ioMs: 3 };
      },
      isReadOp: (_backend, op) => op !== "put",
    };
    return { asked, io };
  }

  test("after two calls asked for their own block first, each next call is sent with its block fetched ahead; taken, prefetching goes on", async () => {
    const { asked, io } = recordingIo();
    // One owner for tasks without an identity (shared): its tasks share what the function's calls taught.
    const r = rig({ taskWindow: 1, io, ownerWithoutIdentity: "shared" });
    run(r, task("pf", [10, 11, 12, 13]));
    for (const id of ["pf/0/1", "pf/1/1"]) {
      expect(r.pool.call(id).prefetched).toBeUndefined(); // still learning
      await askFirst(r, id);
      r.pool.call(id).finish({ value: 1 });
      await settle();
    }
    for (const [id, n] of [["pf/2/1", 12], ["pf/3/1", 13]] as const) {
      expect(r.pool.call(id).prefetched).toEqual({ request: { kind: "io", backend: "b", op: "get", params: { n } }, answer: { ok: true, value: { block: n }, ioMs: 3 } });
      r.pool.call(id).finish({ value: 1, prefetchUsed: true });
      await settle();
    }
    expect(asked).toEqual([{ n: 10 }, { n: 11 }, { n: 12 }, { n: 13 }]); // each block asked once: the ahead ones by the runner
    expect(ends(r).map((e) => e.type)).toEqual(["taskSucceeded"]);

    // The next task of the same function starts with what this one learned: its first call already has its block.
    run(r, task("pf2", [20, 21]));
    await settle();
    expect(r.pool.call("pf2/0/1").prefetched?.request.params).toEqual({ n: 20 });
    // Another function learns on its own.
    run(r, task("other", [30], { source: "def main(ctx, x):\n    return ctx.io('b', 'get', {'n': x})\n" }));
    await settle();
    expect(r.pool.call("other/0/1").prefetched).toBeUndefined();

    // Every task its own owner (the default without an identity): nothing one taught steers another.
    const apart = rig({ taskWindow: 1, io });
    run(apart, task("a1", [10, 11, 12]));
    await teach(apart, ["a1/0/1", "a1/1/1"]);
    expect(apart.pool.call("a1/2/1").prefetched?.request.params).toEqual({ n: 12 });
    run(apart, task("a2", [20]));
    await settle();
    expect(apart.pool.call("a2/0/1").prefetched).toBeUndefined();
  });

  test("never for a write op, nor with TASK_IO_PREFETCH=false, nor after three answers in a row not taken, nor when the answer failed", async () => {
    // asks: requests the backend got, the calls' own and those fetched ahead (a failing backend gets 3 extra, then no more).
    const none = [undefined, undefined, undefined, undefined, undefined, undefined];
    const cases: { name: string; op: string; ioPrefetch?: boolean; taken: boolean; want: (string | undefined)[]; asks: number }[] = [
      { name: "write op", op: "put", taken: true, want: none, asks: 6 },
      { name: "switched off", op: "get", ioPrefetch: false, taken: true, want: none, asks: 6 },
      { name: "not taken", op: "get", taken: false, want: [undefined, undefined, "get", "get", "get", undefined], asks: 6 },
      { name: "failed answers", op: "broken", taken: true, want: none, asks: 9 },
    ];
    for (const c of cases) {
      const { io, asked } = recordingIo();
      const r = rig({ taskWindow: 1, io, ...(c.ioPrefetch !== undefined ? { ioPrefetch: c.ioPrefetch } : {}) });
      run(r, task(`x-${c.op}`, [1, 2, 3, 4, 5, 6]));
      const got: (string | undefined)[] = [];
      for (let i = 0; i < 6; i++) {
        const id = `x-${c.op}/${i}/1`;
        const held = r.pool.call(id);
        got.push(held.prefetched?.request.op);
        if (!held.prefetched) await askFirst(r, id, c.op);
        held.finish({ value: 1, prefetchUsed: held.prefetched ? c.taken : undefined });
        await settle();
      }
      expect({ name: c.name, got, asks: asked.length }).toEqual({ name: c.name, got: c.want, asks: c.asks });
    }
  });

  test("a task whose fetches ahead keep failing stops fetching; the next task of the function fetches again", async () => {
    let failing = true;
    const asked: JsonValue[] = [];
    const io: RigIo = {
      call: async (_b, _op, params) => {
        asked.push(params);
        return failing ? { ok: false, error: { type: "BackendDown", message: "down" }, ioMs: 1 } : { ok: true, value: "block", ioMs: 1 };
      },
      isReadOp: () => true,
    };
    const r = rig({ taskWindow: 1, io, ownerWithoutIdentity: "shared" });
    // Two calls teach the plan (their own requests fail: the calls catch it).
    run(r, task("down", [1, 2, 3, 4, 5, 6]));
    const got: (JsonValue | undefined)[] = [];
    for (let i = 0; i < 6; i++) {
      const held = r.pool.call(`down/${i}/1`);
      got.push(held.prefetched?.request.params);
      if (i < 2) await askFirst(r, held.callId);
      held.finish({ value: 1 });
      await settle();
    }
    expect(got).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]); // none could be fetched
    expect(asked.length).toBe(2 + 3); // the calls' two, then three failed fetches ahead, then none
    failing = false;
    run(r, task("up", [7]));
    await settle();
    expect(r.pool.call("up/0/1").prefetched?.request.params).toEqual({ n: 7 });
  });

  test("a task stopped while its next call's answer is being fetched never sends that call", async () => {
    let release: (a: IoAnswer) => void = () => {};
    const io: RigIo = {
      call: (_b, _op, params) => ((params as { n: number }).n < 3 ? Promise.resolve({ ok: true, value: null, ioMs: 0 }) : new Promise<IoAnswer>((resolve) => (release = resolve))),
      isReadOp: () => true,
    };
    const r = rig({ taskWindow: 1, io });
    run(r, task("stop", [1, 2, 3]));
    await teach(r, ["stop/0/1", "stop/1/1"]);
    expect(r.pool.started).toEqual(["stop/0/1", "stop/1/1"]); // the third is fetching its answer
    r.runner.stop("stop");
    release({ ok: true, value: "late", ioMs: 0 });
    await settle();
    expect(r.pool.started).toEqual(["stop/0/1", "stop/1/1"]);
  });
});
