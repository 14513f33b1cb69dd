import { describe, expect, test } from "bun:test";
import type { CallOutcome } from "../../runtime/calls/call";
import type { CallPool } from "../../runtime/calls/call-owner";
import { TaskCallTimes } from "./task-call-times";

const fn = { name: "f", entry: "main", source: "", digest: "d" } as never;
const owner = {} as never;

/** A pool whose every call ends at once with the times the test gives it (by call id), failing when told to. */
function pool(times: Record<string, { totalMs: number; queueMs: number; fails?: boolean }>): CallPool & { cancelled: string[] } {
  const cancelled: string[] = [];
  return {
    cancelled,
    async execute(request) {
      const t = times[request.callId]!;
      const common = { callId: request.callId, cpuMs: 1, ioMs: 0, queueMs: t.queueMs, totalMs: t.totalMs, output: "", logs: [], executorId: "e", compiled: false, suspensions: 0 };
      return (t.fails
        ? { ...common, ok: false, error: { code: "USER_ERROR", message: "boom", traceback: "", line: 0, column: 0, retryable: false } }
        : { ...common, ok: true, value: null }) as CallOutcome;
    },
    cancel(callId) {
      cancelled.push(callId);
    },
  };
}

describe("TaskCallTimes", () => {
  test("a task's calls count with the pool's times, failures and retries included; sub-calls are not counted again", async () => {
    // A task whose first call took 6 ms (1 of them waiting for an executor), whose second failed
    // after 7 ms and was retried (3 ms), while the first call's sub-call ran 2 ms inside it.
    const inner = pool({
      "t1/0/1": { totalMs: 6, queueMs: 1 },
      "t1/0/1/sub-1": { totalMs: 2, queueMs: 0 },
      "t1/1/1": { totalMs: 7, queueMs: 3, fails: true },
      "t1/1/2": { totalMs: 3, queueMs: 0 },
    });
    const times = new TaskCallTimes();
    const timed = times.wrap(inner);
    for (const id of ["t1/0/1", "t1/0/1/sub-1", "t1/1/1", "t1/1/2"]) await timed.execute({ callId: id, fn, args: 0 }, owner);
    const t = times.of("t1")!;
    expect(t.calls).toBe(3);
    expect(t.seconds).toBeCloseTo(0.016, 9);
    expect(times.of("t2")).toBeUndefined();
    timed.cancel("t1/9/1", "task ended");
    expect(inner.cancelled).toEqual(["t1/9/1"]);
  });

  test("at most maxTasks tasks are kept, the first timed going first", async () => {
    const times = new TaskCallTimes(2);
    const timed = times.wrap(pool({ "a/0/1": { totalMs: 1, queueMs: 0 }, "b/0/1": { totalMs: 1, queueMs: 0 }, "c/0/1": { totalMs: 1, queueMs: 0 } }));
    for (const id of ["a", "b", "c"]) await timed.execute({ callId: `${id}/0/1`, fn, args: 0 }, owner);
    expect([times.of("a"), times.of("b")?.calls, times.of("c")?.calls]).toEqual([undefined, 1, 1]);
  });
});
