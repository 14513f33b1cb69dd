import { describe, expect, test } from "bun:test";
import { DispatcherCore, type CallSource, type DispatcherConfig } from "./dispatcher-core";

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
    d.addTask("big", src);
    const first = d.next(0);
    expect(first.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(src.pulled).toBe(4); // a huge range is never materialised
    expect(d.next(0)).toEqual([]);
    d.callFinished(first[0]!, { ok: true }, 0);
    expect(d.next(0).map((c) => c.index)).toEqual([4]);
  });

  test("a one-call task arriving behind a huge backfill starts at the next free place, not after it", () => {
    const d = new DispatcherCore<number>(config({ taskMaxInflightCalls: 100, maxInflightCalls: 3 }));
    d.addTask("backfill", range(1_000_000));
    const running = d.next(0);
    expect(running).toHaveLength(3);
    d.addTask("small", range(1));
    d.callFinished(running[0]!, { ok: true }, 1);
    const after = d.next(1);
    expect(after.map((c) => c.taskId)).toEqual(["small"]);
  });

  test("tasks take turns one call each while the global window has room", () => {
    const d = new DispatcherCore<number>(config({ maxInflightCalls: 5 }));
    d.addTask("a", range(10));
    d.addTask("b", range(10));
    expect(d.next(0).map((c) => `${c.taskId}${c.index}`)).toEqual(["a0", "b0", "a1", "b1", "a2"]);
  });

  test("a retryable failure is retried with exponential backoff, keeping its index, until maxAttempts", () => {
    const d = new DispatcherCore<number>(config());
    d.addTask("t", range(1));
    const [c1] = d.next(0);
    expect(d.callFinished(c1!, { ok: false, retryable: true }, 1000)).toEqual({ kind: "retryScheduled", attempt: 2, atMs: 1100 });
    expect(d.nextWakeMs()).toBe(1100);
    expect(d.next(1099)).toEqual([]);
    const [c2] = d.next(1100);
    expect(c2).toMatchObject({ index: 0, attempt: 2 });
    expect(d.callFinished(c2!, { ok: false, retryable: true }, 1200)).toEqual({ kind: "retryScheduled", attempt: 3, atMs: 1400 });
    const [c3] = d.next(1400);
    expect(d.callFinished(c3!, { ok: false, retryable: true }, 1500)).toEqual({ kind: "failed", reason: "attempts_exhausted" });
    expect(d.next(9999)).toEqual([]);
    expect(d.isTaskDrained("t")).toBe(true);
  });

  test("a user's error is never retried", () => {
    const d = new DispatcherCore<number>(config());
    d.addTask("t", range(2));
    const [c] = d.next(0);
    expect(d.callFinished(c!, { ok: false, retryable: false }, 0)).toEqual({ kind: "failed", reason: "not_retryable" });
    expect(d.nextWakeMs()).toBeNull();
  });

  test("removing a task frees its share of the global window and drops its retries; late results are harmless", () => {
    const d = new DispatcherCore<number>(config({ maxInflightCalls: 4 }));
    d.addTask("a", range(100));
    const calls = d.next(0);
    expect(d.inflightCalls).toBe(4);
    d.callFinished(calls[0]!, { ok: false, retryable: true }, 0);
    d.removeTask("a");
    expect(d.inflightCalls).toBe(0);
    expect(d.nextWakeMs()).toBeNull();
    expect(d.callFinished(calls[1]!, { ok: true }, 1)).toEqual({ kind: "done" });
    expect(d.inflightCalls).toBe(0);
    d.addTask("b", range(2));
    expect(d.next(2)).toHaveLength(2);
  });

  test("drained only once the source is exhausted and nothing is in flight or waiting to retry", () => {
    const d = new DispatcherCore<number>(config());
    d.addTask("t", range(2));
    const calls = d.next(0);
    expect(d.isTaskDrained("t")).toBe(false);
    for (const c of calls) d.callFinished(c, { ok: true }, 0);
    expect(d.next(0)).toEqual([]);
    expect(d.isTaskDrained("t")).toBe(true);
  });

  test("random interleavings never exceed either window and run every call exactly once when all succeed", () => {
    for (let seed = 1; seed <= 50; seed++) {
      let s = seed;
      const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const cfg = config({ taskMaxInflightCalls: 1 + Math.floor(rand() * 5), maxInflightCalls: 1 + Math.floor(rand() * 8) });
      const d = new DispatcherCore<number>(cfg);
      const sizes = Array.from({ length: 1 + Math.floor(rand() * 5) }, () => Math.floor(rand() * 30));
      sizes.forEach((n, i) => d.addTask(`t${i}`, range(n)));
      const seen = new Set<string>();
      let running: ReturnType<typeof d.next> = [];
      let now = 0;
      for (let step = 0; step < 10_000; step++) {
        running.push(...d.next(now));
        expect(d.inflightCalls).toBeLessThanOrEqual(cfg.maxInflightCalls);
        sizes.forEach((_, i) => expect(d.taskInflight(`t${i}`)).toBeLessThanOrEqual(cfg.taskMaxInflightCalls));
        if (running.length === 0) break;
        const k = Math.floor(rand() * running.length);
        const c = running.splice(k, 1)[0]!;
        const key = `${c.taskId}/${c.index}`;
        expect(seen.has(key)).toBe(false);
        seen.add(key);
        d.callFinished(c, { ok: true }, now++);
      }
      expect(seen.size).toBe(sizes.reduce((a, b) => a + b, 0));
    }
  });

  test("sub-calls take places in the task's window and the Worker's, are never held back, and retry by the same rules", () => {
    const d = new DispatcherCore<number>(config({ taskMaxInflightCalls: 4, maxInflightCalls: 6 }));
    d.addTask("t", range(100));
    const running = d.next(0);
    expect(running).toHaveLength(4);
    // Each running call starts a sub-call: the window is over-full, so no new call starts ...
    for (let i = 0; i < 4; i++) d.subCallStarted("t");
    expect(d.taskInflight("t")).toBe(8);
    expect(d.inflightCalls).toBe(8);
    d.callFinished(running[0]!, { ok: true }, 0);
    expect(d.next(0)).toEqual([]);
    // ... until the sub-calls end.
    expect(d.subCallFinished("t", 1, { ok: true }, 0)).toEqual({ kind: "done" });
    expect(d.subCallFinished("t", 1, { ok: false, retryable: true }, 1_000)).toEqual({ kind: "retryScheduled", attempt: 2, atMs: 1_100 });
    expect(d.subCallFinished("t", 3, { ok: false, retryable: true }, 0)).toEqual({ kind: "failed", reason: "attempts_exhausted" });
    expect(d.subCallFinished("t", 1, { ok: false, retryable: false }, 0)).toEqual({ kind: "failed", reason: "not_retryable" });
    expect(d.taskInflight("t")).toBe(3);
    expect(d.next(0).map((c) => c.index)).toEqual([4]);
    // A sub-call of a task that ended counts nowhere.
    d.removeTask("t");
    d.subCallStarted("t");
    expect(d.subCallFinished("t", 1, { ok: true }, 0)).toEqual({ kind: "done" });
    expect(d.inflightCalls).toBe(0);
  });
});
