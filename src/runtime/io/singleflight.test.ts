import { describe, expect, test } from "bun:test";
import { SingleflightTable } from "./singleflight";

describe("SingleflightTable", () => {
  test("N identical requests: the first leads, all N get the one answer", () => {
    const t = new SingleflightTable<string>();
    const joins = Array.from({ length: 100 }, (_, i) => t.join("k", "task", `w${i}`));
    expect(joins.filter((j) => j.lead).length).toBe(1);
    expect(joins[0]!.lead).toBe(true);
    expect(new Set(joins.map((j) => j.flight)).size).toBe(1);
    expect(t.settle(joins[0]!.flight)).toEqual(Array.from({ length: 100 }, (_, i) => `w${i}`));
    expect(t.size).toBe(0);
    expect(t.tasks).toBe(0);
  });

  test("an error is shared the same way: settle hands back every waiter once; a second settle hands back none", () => {
    const t = new SingleflightTable<number>();
    const { flight } = t.join("k", "a", 1);
    t.join("k", "b", 2);
    t.join("k", "a", 3);
    expect(t.settle(flight).sort()).toEqual([1, 2, 3]);
    expect(t.settle(flight)).toEqual([]);
  });

  test("different keys are different flights; after a settle the same key leads anew", () => {
    const t = new SingleflightTable<number>();
    expect(t.join("a", "x", 1).lead).toBe(true);
    expect(t.join("b", "x", 2).lead).toBe(true);
    const first = t.join("a", "x", 3).flight;
    t.settle(first);
    expect(t.join("a", "x", 4).lead).toBe(true);
  });

  test("no leak after cancel: dropping a task removes its waiters and forgets flights nobody else waits on", () => {
    const t = new SingleflightTable<string>();
    const own = t.join("mine", "a", "a1").flight;
    t.join("mine", "a", "a2");
    const shared = t.join("shared", "a", "a3").flight;
    t.join("shared", "b", "b1");
    expect(t.dropTask("a").sort()).toEqual(["a1", "a2", "a3"]);
    expect(t.isLive(own)).toBe(false);
    expect(t.isLive(shared)).toBe(true);
    expect(t.size).toBe(1);
    expect(t.tasks).toBe(1);
    // The dropped flight's late answer reaches nobody; the shared one still reaches task b.
    expect(t.settle(own)).toEqual([]);
    expect(t.settle(shared)).toEqual(["b1"]);
    expect(t.size).toBe(0);
    expect(t.tasks).toBe(0);
    expect(t.dropTask("a")).toEqual([]);
  });

  test("after a dropped flight, a new identical request starts a new flight that the old answer cannot settle", () => {
    const t = new SingleflightTable<string>();
    const old = t.join("k", "a", "a1").flight;
    t.dropTask("a");
    const fresh = t.join("k", "b", "b1");
    expect(fresh.lead).toBe(true);
    expect(t.settle(old)).toEqual([]);
    expect(t.isLive(fresh.flight)).toBe(true);
    expect(t.settle(fresh.flight)).toEqual(["b1"]);
  });

  test("many tasks joining and leaving at random leave the table empty", () => {
    const t = new SingleflightTable<number>();
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const flights = new Set<ReturnType<typeof t.join>["flight"]>();
    for (let i = 0; i < 5000; i++) {
      const r = rnd(10);
      if (r < 6) flights.add(t.join(`k${rnd(20)}`, `t${rnd(8)}`, i).flight);
      else if (r < 8) t.dropTask(`t${rnd(8)}`);
      else {
        const f = [...flights][rnd(flights.size || 1)];
        if (f) t.settle(f);
      }
    }
    for (let i = 0; i < 8; i++) t.dropTask(`t${i}`);
    expect(t.size).toBe(0);
    expect(t.tasks).toBe(0);
  });
});
