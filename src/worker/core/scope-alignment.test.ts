import { describe, expect, test } from "bun:test";
import { mulberry32 } from "../../../test/support/mulberry32";
import { blockBundleCalls } from "./call-builder";
import { alignBundles, type ExistingScope } from "./scope-alignment";

const all = <C>(p: { total: number; source(): { next(): { call: C } | null } }) => {
  const out: C[] = [];
  const s = p.source();
  for (let n = s.next(); n; n = s.next()) out.push(n.call);
  return out;
};

describe("alignBundles: a rerun's bundles never cut a scope written before", () => {
  test("the issue's rerun: bundles of 10 over 500..574, then 505..574: widened to 500..574 on the same bundles (75 blocks, none lost)", () => {
    const earlier = all(blockBundleCalls("eth", 500, 574, 10)).map((b) => ({ fromBlock: b.fromBlock, toBlock: b.toBlock }));
    const overlapping = earlier.filter((s) => s.toBlock >= 505);
    const a = alignBundles("eth", 505, 574, 10, overlapping);
    expect([a.fromBlock, a.toBlock]).toEqual([500, 574]);
    expect(all(a.calls).map((b) => [b.fromBlock, b.toBlock])).toEqual(earlier.map((s) => [s.fromBlock, s.toBlock]));
  });

  test("no earlier scopes: exactly the plain bundles", () => {
    for (const [f, t, n] of [
      [0, 0, 1],
      [10, 99, 7],
      [5, 1004, 100],
    ] as const) {
      const a = alignBundles("eth", f, t, n, []);
      expect(all(a.calls)).toEqual(all(blockBundleCalls("eth", f, t, n)));
      expect(a.calls.total).toBe(blockBundleCalls("eth", f, t, n).total);
    }
  });

  test("another bundle size over earlier bundles: a bundle reaching into an earlier one takes it whole", () => {
    const earlier: ExistingScope[] = [
      { fromBlock: 100, toBlock: 109 },
      { fromBlock: 110, toBlock: 119 },
      { fromBlock: 120, toBlock: 129 },
    ];
    const a = alignBundles("eth", 100, 129, 15, earlier);
    expect(all(a.calls).map((b) => [b.fromBlock, b.toBlock])).toEqual([
      [100, 119],
      [120, 129],
    ]);
  });

  test("random ranges, bundle sizes and earlier scopes of two tables (overlapping each other): contiguous cover of a widened range, no scope cut, plain bundles elsewhere, at() agrees with the source", () => {
    const rand = mulberry32(20261206);
    const int = (n: number) => Math.floor(rand() * n);
    for (let round = 0; round < 500; round++) {
      const scopes: ExistingScope[] = [];
      for (let table = 0; table < 2; table++) {
        // Each table's scopes are disjoint (the store replaces overlapping ones); the two tables' overlap each other.
        for (let b = int(20); b < 400; b += 2 + int(30)) {
          const width = 1 + int(25);
          if (rand() < 0.6) scopes.push({ fromBlock: b, toBlock: b + width });
          b += width;
        }
      }
      const fromBlock = int(300);
      const toBlock = fromBlock + int(200);
      const size = 1 + int(20);
      const overlapping = scopes.filter((s) => s.toBlock >= fromBlock && s.fromBlock <= toBlock);
      const a = alignBundles("eth", fromBlock, toBlock, size, overlapping);
      const bundles = all(a.calls);
      expect(a.calls.total).toBe(bundles.length);
      bundles.forEach((b, i) => expect(a.calls.at(i)).toEqual(b));
      expect(a.fromBlock).toBeLessThanOrEqual(fromBlock);
      expect(a.toBlock).toBeGreaterThanOrEqual(toBlock);
      expect(bundles[0]!.fromBlock).toBe(a.fromBlock);
      expect(bundles.at(-1)!.toBlock).toBe(a.toBlock);
      for (let i = 1; i < bundles.length; i++) expect(bundles[i]!.fromBlock).toBe(bundles[i - 1]!.toBlock + 1);
      for (const s of overlapping) {
        const holding = bundles.filter((b) => b.toBlock >= s.fromBlock && b.fromBlock <= s.toBlock);
        expect([round, s, holding.length]).toEqual([round, s, 1]);
        expect(holding[0]!.fromBlock <= s.fromBlock && holding[0]!.toBlock >= s.toBlock).toBe(true);
      }
      // Bundles that hold no earlier scope are plain ones (the last may be shorter).
      for (const [i, b] of bundles.entries()) {
        const holds = overlapping.some((s) => b.toBlock >= s.fromBlock && b.fromBlock <= s.toBlock);
        if (!holds && i < bundles.length - 1) expect(b.toBlock - b.fromBlock + 1).toBe(size);
      }
    }
  });
});
