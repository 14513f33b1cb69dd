import { describe, expect, test } from "bun:test";
import { DispatcherCore, type CallResult, type CallSource, type DispatchedCall, type DispatcherConfig } from "./dispatcher-core";

/** checked: the core, validated after every step these helpers take. */
function checked<C>(d: DispatcherCore<C>): Pick<DispatcherCore<C>, "handle"> {
  return {
    handle: (e, nowMs) => {
      const out = d.handle(e, nowMs);
      d.validateState();
      expect(out.wakeAtMs).toBe(d.nextWakeMs());
      return out;
    },
  };
}

// One line per event, so that each test reads as the story of its events.
const add = <C>(d: DispatcherCore<C>, taskId: string, source: CallSource<C>) => checked(d).handle({ type: "taskAdded", taskId, source }, 0);
const remove = <C>(d: DispatcherCore<C>, taskId: string) => checked(d).handle({ type: "taskRemoved", taskId }, 0);
const next = <C>(d: DispatcherCore<C>, nowMs: number): DispatchedCall<C>[] => checked(d).handle({ type: "timeAdvanced" }, nowMs).instructions.map((i) => i.call);
const finish = <C>(d: DispatcherCore<C>, call: DispatchedCall<C>, result: CallResult, nowMs: number) => checked(d).handle({ type: "callFinished", call, result }, nowMs).reply!;
const subStarted = <C>(d: DispatcherCore<C>, taskId: string) => checked(d).handle({ type: "subCallStarted", taskId }, 0);
const subFinished = <C>(d: DispatcherCore<C>, taskId: string, attempt: number, result: CallResult, nowMs: number) =>
  checked(d).handle({ type: "subCallFinished", taskId, attempt, result }, nowMs).reply!;

function range(n: number): CallSource<number> & { pulled: number } {
  const s = {
    pulled: 0,
    next(): { call: number } | null {
      if (s.pulled >= n) return null;
      return { call: s.pulled++ };
    },
  };
  return s;
}

const config = (o: Partial<DispatcherConfig> = {}): DispatcherConfig => ({
  taskMaxInflightCalls: 4,
  maxInflightCalls: 6,
  maxAttempts: 3,
  retryBackoffBaseMs: 100,
  retryBackoffMaxMs: 1000,
  ...o,
});

describe("DispatcherCore", () => {
  test("a task's calls come in index order, at most taskMaxInflightCalls at once, pulled lazily", () => {
    const d = new DispatcherCore<number>(config());
    const src = range(1_000_000);
    add(d, "big", src);
    const first = next(d, 0);
    expect(first.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(src.pulled).toBe(4); // a huge range is never materialised
    expect(next(d, 0)).toEqual([]);
    finish(d, first[0]!, { ok: true }, 0);
    expect(next(d, 0).map((c) => c.index)).toEqual([4]);
  });

  test("a one-call task arriving behind a huge backfill starts at the next free place, not after it", () => {
    const d = new DispatcherCore<number>(config({ taskMaxInflightCalls: 100, maxInflightCalls: 3 }));
    add(d, "backfill", range(1_000_000));
    const running = next(d, 0);
    expect(running).toHaveLength(3);
    add(d, "small", range(1));
    finish(d, running[0]!, { ok: true }, 1);
    const after = next(d, 1);
    expect(after.map((c) => c.taskId)).toEqual(["small"]);
  });

  test("tasks take turns one call each while the global window has room", () => {
    const d = new DispatcherCore<number>(config({ maxInflightCalls: 5 }));
    add(d, "a", range(10));
    add(d, "b", range(10));
    expect(next(d, 0).map((c) => `${c.taskId}${c.index}`)).toEqual(["a0", "b0", "a1", "b1", "a2"]);
  });

  test("a retryable failure is retried with exponential backoff, keeping its index, until maxAttempts", () => {
    const d = new DispatcherCore<number>(config());
    add(d, "t", range(1));
    const [c1] = next(d, 0);
    expect(finish(d, c1!, { ok: false, retryable: true }, 1000)).toEqual({ kind: "retryScheduled", attempt: 2, atMs: 1100 });
    expect(d.nextWakeMs()).toBe(1100);
    expect(next(d, 1099)).toEqual([]);
    const [c2] = next(d, 1100);
    expect(c2).toMatchObject({ index: 0, attempt: 2 });
    expect(finish(d, c2!, { ok: false, retryable: true }, 1200)).toEqual({ kind: "retryScheduled", attempt: 3, atMs: 1400 });
    const [c3] = next(d, 1400);
    expect(finish(d, c3!, { ok: false, retryable: true }, 1500)).toEqual({ kind: "failed", reason: "attempts_exhausted" });
    expect(next(d, 9999)).toEqual([]);
    expect(d.isTaskDrained("t")).toBe(true);
  });

  test("a user's error is never retried", () => {
    const d = new DispatcherCore<number>(config());
    add(d, "t", range(2));
    const [c] = next(d, 0);
    expect(finish(d, c!, { ok: false, retryable: false }, 0)).toEqual({ kind: "failed", reason: "not_retryable" });
    expect(d.nextWakeMs()).toBeNull();
  });

  test("removing a task frees its share of the global window and drops its retries; late results are harmless", () => {
    const d = new DispatcherCore<number>(config({ maxInflightCalls: 4 }));
    add(d, "a", range(100));
    const calls = next(d, 0);
    expect(d.inflightCalls).toBe(4);
    finish(d, calls[0]!, { ok: false, retryable: true }, 0);
    remove(d, "a");
    expect(d.inflightCalls).toBe(0);
    expect(d.nextWakeMs()).toBeNull();
    expect(finish(d, calls[1]!, { ok: true }, 1)).toEqual({ kind: "done" });
    expect(d.inflightCalls).toBe(0);
    add(d, "b", range(2));
    expect(next(d, 2)).toHaveLength(2);
  });

  test("drained only once the source is exhausted and nothing is in flight or waiting to retry", () => {
    const d = new DispatcherCore<number>(config());
    add(d, "t", range(2));
    const calls = next(d, 0);
    expect(d.isTaskDrained("t")).toBe(false);
    for (const c of calls) finish(d, c, { ok: true }, 0);
    expect(next(d, 0)).toEqual([]);
    expect(d.isTaskDrained("t")).toBe(true);
  });

  test("random interleavings never exceed either window and run every call exactly once when all succeed", () => {
    for (let seed = 1; seed <= 50; seed++) {
      let s = seed;
      const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const cfg = config({ taskMaxInflightCalls: 1 + Math.floor(rand() * 5), maxInflightCalls: 1 + Math.floor(rand() * 8) });
      const d = new DispatcherCore<number>(cfg);
      const sizes = Array.from({ length: 1 + Math.floor(rand() * 5) }, () => Math.floor(rand() * 30));
      sizes.forEach((n, i) => add(d, `t${i}`, range(n)));
      const seen = new Set<string>();
      let running: DispatchedCall<number>[] = [];
      let now = 0;
      for (let step = 0; step < 10_000; step++) {
        running.push(...next(d, now));
        expect(d.inflightCalls).toBeLessThanOrEqual(cfg.maxInflightCalls);
        sizes.forEach((_, i) => expect(d.taskInflight(`t${i}`)).toBeLessThanOrEqual(cfg.taskMaxInflightCalls));
        if (running.length === 0) break;
        const k = Math.floor(rand() * running.length);
        const c = running.splice(k, 1)[0]!;
        const key = `${c.taskId}/${c.index}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
        finish(d, c, { ok: true }, now++);
      }
      expect(seen.size).toBe(sizes.reduce((a, b) => a + b, 0));
    }
  });

  test("sub-calls take places in the task's window and the Worker's, are never held back, and retry by the same rules", () => {
    const d = new DispatcherCore<number>(config({ taskMaxInflightCalls: 4, maxInflightCalls: 6 }));
    add(d, "t", range(100));
    const running = next(d, 0);
    expect(running).toHaveLength(4);
    // Each running call starts a sub-call: the window is over-full, so no new call starts ...
    for (let i = 0; i < 4; i++) subStarted(d, "t");
    expect(d.taskInflight("t")).toBe(8);
    expect(d.inflightCalls).toBe(8);
    finish(d, running[0]!, { ok: true }, 0);
    expect(next(d, 0)).toEqual([]);
    // ... until the sub-calls end.
    expect(subFinished(d, "t", 1, { ok: true }, 0)).toEqual({ kind: "done" });
    expect(subFinished(d, "t", 1, { ok: false, retryable: true }, 1_000)).toEqual({ kind: "retryScheduled", attempt: 2, atMs: 1_100 });
    expect(subFinished(d, "t", 3, { ok: false, retryable: true }, 0)).toEqual({ kind: "failed", reason: "attempts_exhausted" });
    expect(subFinished(d, "t", 1, { ok: false, retryable: false }, 0)).toEqual({ kind: "failed", reason: "not_retryable" });
    expect(d.taskInflight("t")).toBe(3);
    expect(next(d, 0).map((c) => c.index)).toEqual([4]);
    // A sub-call of a task that ended counts nowhere.
    remove(d, "t");
    subStarted(d, "t");
    expect(subFinished(d, "t", 1, { ok: true }, 0)).toEqual({ kind: "done" });
    expect(d.inflightCalls).toBe(0);
  });

  test("one shape: only timeAdvanced hands calls out, every decision says when the next retry is due", () => {
    const d = new DispatcherCore<number>(config({ retryBackoffBaseMs: 100 }));
    const added = add(d, "t", range(3));
    // Adding a task starts nothing by itself: the runner decides when to pump.
    expect(added).toEqual({ reply: undefined, instructions: [], wakeAtMs: null });
    const out = d.handle({ type: "timeAdvanced" }, 0);
    expect(out.instructions.map((i) => [i.type, i.call.index])).toEqual([["startCall", 0], ["startCall", 1], ["startCall", 2]]);
    // A finished call's decision is the reply; a retry makes the wake time the retry's due time.
    const failed = d.handle({ type: "callFinished", call: out.instructions[1]!.call, result: { ok: false, retryable: true } }, 50);
    expect(failed).toEqual({ reply: { kind: "retryScheduled", attempt: 2, atMs: 150 }, instructions: [], wakeAtMs: 150 });
    expect(d.handle({ type: "timeAdvanced" }, 149).instructions).toEqual([]);
    expect(d.handle({ type: "timeAdvanced" }, 150).instructions.map((i) => [i.call.index, i.call.attempt])).toEqual([[1, 2]]);
    // A task id is added once: a second add is an adapter bug, not a silent reset of its calls.
    expect(() => add(d, "t", range(1))).toThrow("already dispatching");
  });
});
