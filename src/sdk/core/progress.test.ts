import { describe, expect, test } from "bun:test";
import { ProgressMeter } from "./progress";

const counts = (total: number, ok: number, failed = 0) => ({ callsTotal: total, callsSucceeded: ok, callsFailed: failed });

describe("ProgressMeter", () => {
  test("rate and ETA from the window; done counts failed calls too", () => {
    const m = new ProgressMeter(5000);
    expect(m.update(counts(100, 0), 0)).toEqual({ done: 0, total: 100, failed: 0, ratePerS: 0, etaMs: undefined, fraction: 0 });
    expect(m.update(counts(100, 10), 1000)).toEqual({ done: 10, total: 100, failed: 0, ratePerS: 10, etaMs: 9000, fraction: 0.1 });
    expect(m.update(counts(100, 18, 2), 2000)).toMatchObject({ done: 20, ratePerS: 10, etaMs: 8000, fraction: 0.2, failed: 2 });
  });
  test("old samples leave the window, so a slowdown shows", () => {
    const m = new ProgressMeter(2000);
    m.update(counts(1000, 0), 0);
    m.update(counts(1000, 500), 1000);
    m.update(counts(1000, 510), 4000);
    expect(m.update(counts(1000, 520), 5000).ratePerS).toBeCloseTo(10);
  });
  test("a finished task has ETA 0 and fraction 1; an unknown total shows 0", () => {
    const m = new ProgressMeter();
    expect(m.update(counts(0, 0), 0)).toMatchObject({ fraction: 0 });
    expect(m.update(counts(5, 5), 10)).toMatchObject({ fraction: 1, etaMs: 0 });
  });
});
