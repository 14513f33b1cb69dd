import { expect, test } from "bun:test";
import { attributeDurations } from "./durations";

test("parts that fit are kept as measured", () => {
  expect(attributeDurations({ queueMs: 1, cpuMs: 2, ioMs: 3, totalMs: 10 })).toEqual({ queueMs: 1, cpuMs: 2, ioMs: 3, totalMs: 10 });
});

test("the executor's CPU clock running a little ahead of ours is clamped into the whole", () => {
  const d = attributeDurations({ queueMs: 0.5, cpuMs: 9.7, ioMs: 0, totalMs: 9.6 });
  expect(d).toEqual({ queueMs: 0.5, cpuMs: 9.1, ioMs: 0, totalMs: 9.6 });
});

test("negative, NaN and infinite inputs become 0, and the invariants hold for any input", () => {
  expect(attributeDurations({ queueMs: -1, cpuMs: NaN, ioMs: Infinity, totalMs: 5 })).toEqual({ queueMs: 0, cpuMs: 0, ioMs: 0, totalMs: 5 });
  for (let i = 0; i < 100_000; i++) {
    const r = () => Math.random() * 20 - 2;
    const d = attributeDurations({ queueMs: r(), cpuMs: r(), ioMs: r(), totalMs: r() });
    expect(d.queueMs).toBeLessThanOrEqual(d.totalMs);
    expect(d.cpuMs + d.ioMs).toBeLessThanOrEqual(d.totalMs);
    expect(d.queueMs + d.cpuMs + d.ioMs).toBeLessThanOrEqual(d.totalMs + 1e-9);
    expect(Math.min(d.queueMs, d.cpuMs, d.ioMs, d.totalMs)).toBeGreaterThanOrEqual(0);
  }
});
