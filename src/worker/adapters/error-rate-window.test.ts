import { describe, expect, test } from "bun:test";
import { ErrorRateWindow } from "./error-rate-window";

describe("ErrorRateWindow", () => {
  test("a Worker with no finished calls has an error rate of 0", () => {
    expect(new ErrorRateWindow().rate(1_000_000)).toBe(0);
  });

  test("failures over all calls within the window", () => {
    const w = new ErrorRateWindow(60_000);
    for (let i = 0; i < 3; i++) w.record(false, 10_000 + i);
    w.record(true, 20_000);
    expect(w.rate(20_000)).toBe(0.25);
  });

  test("calls older than the window stop counting; a reused bucket starts from zero", () => {
    const w = new ErrorRateWindow(10_000);
    w.record(true, 0);
    w.record(false, 5_000);
    expect(w.rate(9_999)).toBe(0.5);
    expect(w.rate(10_500)).toBe(0); // the failure at 0 s has left the window; the success at 5 s has not
    w.record(true, 10_000); // same bucket index as second 0: starts afresh
    expect(w.rate(10_000)).toBe(0.5);
    expect(w.rate(30_000)).toBe(0);
  });
});
