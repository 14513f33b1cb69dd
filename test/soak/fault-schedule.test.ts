import { describe, expect, test } from "bun:test";
import { countByKind, FAULT_KINDS, faultSchedule, type ScheduleOptions } from "./fault-schedule";

const base: ScheduleOptions = { seed: 7, startMs: 5_000, endMs: 600_000, workers: 3, coordinators: 2, meanGapMs: 6_000 };

describe("faultSchedule", () => {
  test("is a pure function of the seed: same seed, same plan; another seed, another plan", () => {
    expect(faultSchedule(base)).toEqual(faultSchedule({ ...base }));
    expect(faultSchedule({ ...base, seed: 8 })).not.toEqual(faultSchedule(base));
  });

  test("every kind appears at least once, even in a short window, for many seeds", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const events = faultSchedule({ ...base, seed, endMs: 5_000 + 90_000 });
      const counts = countByKind(events);
      for (const k of FAULT_KINDS) expect(counts[k]).toBeGreaterThanOrEqual(1);
    }
  });

  test("faults do not overlap, stay inside the window and hit existing targets", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const events = faultSchedule({ ...base, seed });
      expect(events.length).toBeGreaterThan(FAULT_KINDS.length);
      let free = base.startMs;
      for (const e of events) {
        expect(e.atMs).toBeGreaterThanOrEqual(free);
        expect(e.atMs + e.durationMs).toBeLessThan(base.endMs);
        free = e.atMs + e.durationMs;
        const targets = e.kind === "coordinatorRestart" ? base.coordinators : e.kind === "etcdRestart" || e.kind === "backendDegrade" ? 1 : base.workers;
        expect(e.target).toBeGreaterThanOrEqual(0);
        expect(e.target).toBeLessThan(targets);
        if (e.kind === "backendDegrade") {
          expect(e.errorRate).toBeGreaterThan(0);
          expect(e.errorRate).toBeLessThan(1);
        }
      }
    }
  });

  test("a window too short for one fault of each kind is refused with a clear message", () => {
    expect(() => faultSchedule({ ...base, endMs: base.startMs + 10_000 })).toThrow(/too short for one fault of each kind/);
  });
});
