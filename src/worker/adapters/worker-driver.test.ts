import { afterEach, describe, expect, test } from "bun:test";
import { createLogger } from "../../common/logging/logger";
import { TaskState, type Task } from "../../gen/worker/v1/worker";
import { InMemoryPool } from "../../../test/support/in-memory-pool";
import { blockWorkerProfile } from "../core/profile";
import { WorkerCore } from "../core/worker-core";
import { ANONYMOUS } from "../core/worker-core-events";
import { planTask } from "../core/task-plan";
import { TaskRunner } from "./task-runner";
import { WorkerDriver } from "./worker-driver";
import { eventually } from "../../../test/support/eventually";

const log = createLogger("fatal");
const RETENTION_MS = 10_000;

function task(id: string, inputs: unknown[], taskTimeoutMs = 0): Task {
  return {
    taskId: id,
    taskTimeoutMs,
    functionCallConfig: {
      function: { name: "", source: "def main(ctx, x):\n    return x\n", entry: "", filename: "" },
      config: { $case: "inputs", inputs: { inputs: inputs.map((v) => Buffer.from(JSON.stringify(v))) } },
    },
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
  };
}

const drivers: WorkerDriver[] = [];
afterEach(() => {
  for (const d of drivers.splice(0)) d.stop();
});

/**
 * A driver over a real WorkerCore and TaskRunner, an in-memory pool and a clock the test moves
 * (or, with `realClock`, the process's monotonic clock, for tests of the driver's own timer).
 */
function rig(o: { realClock?: boolean } = {}) {
  const now = { ms: 1_000_000 };
  const nowMs = o.realClock ? () => Math.floor(performance.now()) : () => now.ms;
  const pool = new InMemoryPool();
  const runner = new TaskRunner({
    pool,
    dispatcher: { taskMaxInflightCalls: 100, maxInflightCalls: 1000, maxAttempts: 3, retryBackoffBaseMs: 1, retryBackoffMaxMs: 1 },
    io: { forTask: () => ({ call: async () => ({ answer: { ok: true, value: null, ioMs: 0 } }) as never, isReadOp: () => false, end: () => {} }) },
    tables: null,
    log,
    nowMs,
  });
  const core = new WorkerCore({ taskSlots: 4, retentionMs: RETENTION_MS, workerAddr: "127.0.0.1:1" }, "inc1");
  const driver = new WorkerDriver(core, runner, (t) => planTask(t!, blockWorkerProfile, null), log, nowMs);
  drivers.push(driver);
  return { now, pool, driver };
}

/** Lets the runner see finished calls (their promises). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("WorkerDriver", () => {
  test("story answers as of now: past a finished task's retention it is gone even before the timer fires, as the result is", async () => {
    const { now, pool, driver } = rig();
    const slot = driver.requestTaskSlot("t1", 5_000, ANONYMOUS);
    expect(slot.err).toBeUndefined();
    let submitted: TaskState | undefined;
    driver.submitTask(task("t1", [1]), slot.snapshot!.slotId, "me", ANONYMOUS, (r) => (submitted = r.snapshot?.state));
    expect(submitted).toBe(TaskState.RUNNING);
    pool.call("t1/0/1").finish({ value: 1 });
    await settle();
    expect(driver.queryTask("t1", ANONYMOUS).snapshot?.state).toBe(TaskState.SUCCEEDED);
    expect(driver.story("t1").map((e) => e.event)).toContain("taskSucceeded");

    // The clock passes the retention; no timer has run (this is one synchronous turn).
    now.ms += RETENTION_MS + 1;
    expect(driver.story("t1")).toEqual([]);
    expect(driver.queryTask("t1", ANONYMOUS).err?.code).toBe("SLOT_NOT_FOUND");
  });

  // The driver keeps its timer while it is due no later than the core's next deadline: these two
  // cases are where a kept timer could be wrong. Nothing queries the driver (a query applies what
  // is due by itself): only the timer can publish the TIMED_OUT snapshots waited for.
  test("a deadline that arrives earlier than the armed one re-arms the timer", async () => {
    const { driver } = rig({ realClock: true });
    const timedOut = new Set<string>();
    driver.onSnapshot = (s) => void (s.state === TaskState.TIMED_OUT && timedOut.add(s.taskId));
    for (const [id, timeoutMs] of [["late", 60_000], ["soon", 30]] as const) {
      const slot = driver.requestTaskSlot(id, 60_000, ANONYMOUS);
      driver.submitTask(task(id, [1], timeoutMs), slot.snapshot!.slotId, "me", ANONYMOUS, () => {});
    }
    await eventually(() => timedOut.has("soon"), { timeoutMs: 3_000 });
    expect([...timedOut]).toEqual(["soon"]);
  });

  test("when the deadline the timer was armed for goes away, the early wake re-arms for the next one", async () => {
    const { pool, driver } = rig({ realClock: true });
    const timedOut = new Set<string>();
    driver.onSnapshot = (s) => void (s.state === TaskState.TIMED_OUT && timedOut.add(s.taskId));
    // Timeouts long enough that a stalled machine cannot time "first" out before it is finished.
    for (const [id, timeoutMs] of [["first", 1_000], ["second", 1_300]] as const) {
      const slot = driver.requestTaskSlot(id, 60_000, ANONYMOUS);
      driver.submitTask(task(id, [1], timeoutMs), slot.snapshot!.slotId, "me", ANONYMOUS, () => {});
    }
    // "first" ends before its timeout: the timer armed for it fires with nothing due.
    pool.call("first/0/1").finish({ value: 1 });
    await settle();
    await eventually(() => timedOut.has("second"), { timeoutMs: 3_000 });
    expect(timedOut.has("first")).toBe(false);
  });
});

