import { describe, expect, test } from "bun:test";
import { blockBundleCalls, blockTableCalls, inputCalls } from "./call-builder";

function drain<C>(s: { next(): { call: C } | null }, limit = Infinity): C[] {
  const out: C[] = [];
  for (let c = s.next(); c !== null && out.length < limit; c = s.next()) out.push(c.call);
  return out;
}

describe("Call Builder", () => {
  test("a block table range gives one call per block, inclusive, in order", () => {
    const plan = blockTableCalls("eth", 100, 104);
    expect(plan.total).toBe(5);
    expect(drain(plan.source())).toEqual([100, 101, 102, 103, 104].map((blockNumber) => ({ chain: "eth", blockNumber })));
    expect(plan.at(3)).toEqual({ chain: "eth", blockNumber: 103 });
  });

  test("a single-block range is one call", () => {
    expect(drain(blockTableCalls("eth", 7, 7).source())).toEqual([{ chain: "eth", blockNumber: 7 }]);
  });

  test("a 10-million-block range is never materialised: its size is known and calls are computed on demand", () => {
    const plan = blockTableCalls("eth", 10_000_000, 19_999_999);
    expect(plan.total).toBe(10_000_000);
    expect(plan.at(9_999_999)).toEqual({ chain: "eth", blockNumber: 19_999_999 });
    const heapBefore = process.memoryUsage().heapUsed;
    const s = plan.source();
    let last = null;
    for (let i = 0; i < 1_000_000; i++) last = s.next();
    expect(last).toEqual({ call: { chain: "eth", blockNumber: 10_999_999 } });
    // A million calls walked, nothing kept: the heap did not grow by anything like a list of them.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(50 * 1024 * 1024);
  });

  test("bundles are contiguous, aligned to from_block, the last one shorter, covering every block exactly once", () => {
    const plan = blockBundleCalls("eth", 10, 34, 10);
    expect(plan.total).toBe(3);
    expect(drain(plan.source())).toEqual([
      { chain: "eth", fromBlock: 10, toBlock: 19 },
      { chain: "eth", fromBlock: 20, toBlock: 29 },
      { chain: "eth", fromBlock: 30, toBlock: 34 },
    ]);
    const cases: [number, number, number][] = [
      [0, 0, 1],
      [5, 1004, 100],
      [1, 999, 7],
    ];
    for (const [from, to, size] of cases) {
      const bundles = drain(blockBundleCalls("c", from, to, size).source());
      let next = from;
      for (const b of bundles) {
        expect(b.fromBlock).toBe(next);
        expect(b.toBlock - b.fromBlock + 1).toBeLessThanOrEqual(size);
        next = b.toBlock + 1;
      }
      expect(next).toBe(to + 1);
      expect(bundles.length).toBe(blockBundleCalls("c", from, to, size).total);
    }
  });

  test("inputs give one call per input in order, and sources are independent", () => {
    const plan = inputCalls(["a", "b"]);
    const s1 = plan.source();
    expect(s1.next()).toEqual({ call: "a" });
    expect(drain(plan.source())).toEqual(["a", "b"]);
    expect(s1.next()).toEqual({ call: "b" });
    expect(s1.next()).toBeNull();
  });

  test("an input null is a call, not the end of the calls", () => {
    expect(drain(inputCalls([1, null, 3]).source())).toEqual([1, null, 3]);
  });
});
