import { describe, expect, test } from "bun:test";
import { BoundedLabel, MetricsRegistry } from "./metrics";
import { registerProcessMetrics } from "./process-metrics";

describe("metrics registry", () => {
  test("HELP text escapes backslash and newline, so a scraper reads one line per HELP", () => {
    const r = new MetricsRegistry();
    r.counter("blockx_x_total", "a\\b\nc");
    expect(r.render()).toContain("# HELP blockx_x_total a\\\\b\\nc\n# TYPE blockx_x_total counter");
  });

  test("process_cpu_seconds_total is a counter and never goes down; setTotal ignores a smaller total", () => {
    const r = new MetricsRegistry();
    registerProcessMetrics(r, "worker");
    expect(r.render()).toContain("# TYPE process_cpu_seconds_total counter");
    const c = r.counter("blockx_y_total", "y");
    c.setTotal({}, 5);
    c.setTotal({}, 3);
    expect(c.value()).toBe(5);
    expect(() => c.inc({}, -1)).toThrow("increment must be >= 0");
  });

  test("a bounded label keeps its first values and folds the rest into _other", () => {
    const l = new BoundedLabel(2);
    expect(["a", "b", "c", "a", "d"].map((v) => l.value(v))).toEqual(["a", "b", "_other", "a", "_other"]);
  });
});
