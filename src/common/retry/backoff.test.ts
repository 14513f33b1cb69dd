import { describe, expect, test } from "bun:test";
import { backoffMs } from "./backoff";

describe("backoffMs", () => {
  test("base, then doubled per failure up to the cap; a negative count is the base; a long streak keeps the cap", () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(100, 1_000, n))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoffMs(100, 1_000, -3)).toBe(100);
    expect(backoffMs(100, 1_000, 10_000)).toBe(1_000);
    expect(backoffMs(0, 1_000, 5)).toBe(0);
    expect(backoffMs(1, Number.MAX_SAFE_INTEGER, 10_000)).toBe(2 ** 30);
  });
});
