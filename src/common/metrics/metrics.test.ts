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

  test("series are told apart by their label values, with no label, one or several", () => {
    const r = new MetricsRegistry();
    const none = r.counter("blockx_none_total", "n");
    const one = r.counter("blockx_one_total", "o", ["outcome"]);
    const two = r.histogram("blockx_two_seconds", "t", ["outcome", "worker"], [1]);
    none.inc();
    none.inc({}, 2);
    for (const outcome of ["granted", "no_slot", "granted", ""]) one.inc({ outcome });
    one.inc({});
    two.observe({ outcome: "granted", worker: "a" }, 0.5);
    two.observe({ outcome: "granted", worker: "b" }, 2);
    two.observe({ outcome: "granted", worker: "a" }, 0.25);
    expect(none.value()).toBe(3);
    expect([one.value({ outcome: "granted" }), one.value({ outcome: "no_slot" }), one.value({})]).toEqual([2, 1, 2]);
    expect([two.count({ outcome: "granted", worker: "a" }), two.count({ outcome: "granted", worker: "b" }), two.count({ outcome: "granted" })]).toEqual([2, 1, 0]);
    const text = r.render();
    expect(text).toContain('blockx_one_total{outcome="granted"} 2');
    expect(text).toContain('blockx_one_total{outcome=""} 2');
    expect(text).toContain('blockx_two_seconds_bucket{outcome="granted",worker="a",le="1"} 2');
    expect(text).toContain('blockx_two_seconds_bucket{outcome="granted",worker="b",le="1"} 0');
  });
});
