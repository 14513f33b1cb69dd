import { describe, expect, test } from "bun:test";
import { IoWindow } from "./io-window";

describe("IoWindow", () => {
  test("up to the limit requests start at once; the rest wait and get freed slots in FIFO order", () => {
    const w = new IoWindow<string>(2);
    expect(w.acquire("a")).toBe(true);
    expect(w.acquire("b")).toBe(true);
    expect(w.acquire("c")).toBe(false);
    expect(w.acquire("d")).toBe(false);
    expect({ inflight: w.inflight, queued: w.queued }).toEqual({ inflight: 2, queued: 2 });
    expect(w.release()).toBe("c");
    expect(w.release()).toBe("d");
    expect(w.inflight).toBe(2);
    expect(w.release()).toBeUndefined();
    expect(w.release()).toBeUndefined();
    expect(w.inflight).toBe(0);
  });

  test("a newcomer does not overtake the queue when a slot is free but others wait", () => {
    const w = new IoWindow<string>(1);
    w.acquire("a");
    w.acquire("b");
    expect(w.release()).toBe("b"); // the slot goes straight to b
    expect(w.acquire("c")).toBe(false);
  });

  test("in flight never exceeds the limit over a long run, and order is kept across compactions", () => {
    const w = new IoWindow<number>(3);
    const started: number[] = [];
    for (let i = 0; i < 5000; i++) if (w.acquire(i)) started.push(i);
    for (;;) {
      const next = w.release();
      expect(w.inflight).toBeLessThanOrEqual(3);
      if (next === undefined) {
        if (w.inflight === 0) break;
        continue;
      }
      started.push(next);
    }
    expect(started).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  test("drain empties the queue (the task ended); a release without acquire is a bug", () => {
    const w = new IoWindow<string>(1);
    w.acquire("a");
    w.acquire("b");
    w.acquire("c");
    expect(w.drain()).toEqual(["b", "c"]);
    expect(w.queued).toBe(0);
    expect(w.release()).toBeUndefined();
    expect(() => w.release()).toThrow("release without acquire");
    expect(() => new IoWindow(0)).toThrow("limit must be an integer >= 1");
  });
});
