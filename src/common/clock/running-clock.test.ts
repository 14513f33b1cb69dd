import { describe, expect, test } from "bun:test";
import { RunningClock } from "./running-clock";

function clockAt(startMs: number) {
  let now = startMs;
  const clock = new RunningClock(() => now, 100);
  return { clock, advance: (ms: number) => (now += ms) };
}

describe("RunningClock", () => {
  test("ticks on time: it reads as the monotonic clock and counts no stall", () => {
    const { clock, advance } = clockAt(1_000);
    for (let i = 0; i < 40; i++) {
      advance(25);
      clock.tick();
    }
    expect(clock.nowMs()).toBe(2_000);
    expect(clock.stalledTotalMs()).toBe(0);
  });

  test("a late tick within the tolerance is not a stall; past it, only the part past it counts", () => {
    const { clock, advance } = clockAt(0);
    advance(100);
    clock.tick();
    expect(clock.stalledTotalMs()).toBe(0);
    advance(350);
    clock.tick();
    expect(clock.stalledTotalMs()).toBe(250);
    expect(clock.nowMs()).toBe(200);
  });

  test("a stall is seen by the first reading after it, before the tick has run, and the tick does not count it twice", () => {
    const { clock, advance } = clockAt(0);
    advance(20);
    clock.tick();
    advance(7_000); // stopped
    expect(clock.stalledTotalMs()).toBe(6_900);
    expect(clock.nowMs()).toBe(120);
    clock.tick();
    expect(clock.stalledTotalMs()).toBe(6_900);
    expect(clock.nowMs()).toBe(120);
    advance(30);
    expect(clock.nowMs()).toBe(150);
  });

  test("readings never go backwards through a stall and its tick", () => {
    const { clock, advance } = clockAt(0);
    let last = clock.nowMs();
    for (const step of [10, 90, 120, 5_000, 1, 30, 400, 25, 25]) {
      advance(step);
      const during = clock.nowMs();
      expect(during).toBeGreaterThanOrEqual(last);
      clock.tick();
      expect(clock.nowMs()).toBe(during);
      last = during;
    }
  });
});
