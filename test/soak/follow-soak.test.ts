/**
 * The pure parts of the soak's follower variant (`make soak REORGS=1`): the seeded plan of
 * reorganisations, and the lag figures with the faults that coincide with each excursion.
 */
import { describe, expect, test } from "bun:test";
import { followerStepTimes } from "../support/follow-lag";
import { coinciding, lagFigures, percentile } from "./lag-stats";
import { reorgSchedule, type ReorgScheduleOptions } from "./reorg-schedule";

const base: ReorgScheduleOptions = { seed: 7, startMs: 5_000, endMs: 600_000, meanGapMs: 15_000, maxDepth: 3, rollbackShare: 0.25 };

describe("reorgSchedule", () => {
  test("is a pure function of the seed: same seed, same plan; another seed, another plan", () => {
    expect(reorgSchedule(base)).toEqual(reorgSchedule({ ...base }));
    expect(reorgSchedule({ ...base, seed: 8 })).not.toEqual(reorgSchedule(base));
  });

  test("a few per minute, in order, inside the window, gaps of at least minGapMs, depths 1..3, reorgs and rollbacks both", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const events = reorgSchedule({ ...base, seed });
      // 595 s at a mean gap of 15 s: about 40; a Poisson count stays well inside 20..70.
      expect(events.length).toBeGreaterThan(20);
      expect(events.length).toBeLessThan(70);
      let t = base.startMs;
      for (const e of events) {
        expect(e.atMs - t).toBeGreaterThanOrEqual(1_000);
        expect(e.atMs).toBeLessThan(base.endMs);
        expect([1, 2, 3]).toContain(e.depth);
        t = e.atMs;
      }
      expect(events.some((e) => e.kind === "rollback")).toBe(true);
      expect(events.some((e) => e.kind === "reorg")).toBe(true);
    }
    const all = Array.from({ length: 50 }, (_, i) => reorgSchedule({ ...base, seed: i + 1 })).flat();
    for (const d of [1, 2, 3]) expect(all.filter((e) => e.depth === d).length).toBeGreaterThan(all.length / 5);
  });

  test("a window shorter than the first gap has none", () => {
    expect(reorgSchedule({ ...base, endMs: base.startMs + 500 })).toEqual([]);
  });
});

describe("lagFigures", () => {
  test("a follower two blocks behind at worst is within the limit: no time beyond, no excursion", () => {
    const f = lagFigures([0, 1, 2, 1, 0, 2].map((lag, i) => ({ atMs: i * 100, lag })), 2);
    expect(f).toEqual({ samples: 6, spanMs: 500, max: 2, p50: 1, p99: 2, limit: 2, beyondMs: 0, excursions: [] });
  });

  test("a fault leaves it 30 blocks behind for 300 ms, then it catches up: the excursion, its peak and its time", () => {
    const lags = [1, 1, 5, 30, 12, 2, 1, 3];
    const f = lagFigures(lags.map((lag, i) => ({ atMs: 1_000 + i * 100, lag })), 2);
    expect(f.max).toBe(30);
    expect(f.beyondMs).toBe(300); // samples 2, 3 and 4 hold 100 ms each; the last one (3) ends the samples
    expect(f.excursions).toEqual([
      { fromMs: 1_200, toMs: 1_500, maxLag: 30 },
      { fromMs: 1_700, toMs: 1_700, maxLag: 3 },
    ]);
  });

  test("a sample before a gap (samples left out of the stretch) holds at most maxHoldMs", () => {
    const samples = [
      { atMs: 0, lag: 0 },
      { atMs: 100, lag: 3 },
      { atMs: 1_300, lag: 1 },
      { atMs: 1_400, lag: 0 },
    ];
    expect(lagFigures(samples, 2).beyondMs).toBe(1_200);
    expect(lagFigures(samples, 2, 200).beyondMs).toBe(200);
  });

  test("percentiles are nearest-rank over the samples", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1)]).toEqual([50, 99, 100]);
    expect(percentile([], 0.5)).toBe(0);
    expect(lagFigures([], 2)).toMatchObject({ samples: 0, max: 0, p50: 0, beyondMs: 0, excursions: [] });
  });
});

describe("coinciding", () => {
  test("a fault coincides with an excursion that begins while it lasts or within the recovery time after it heals", () => {
    const e = { fromMs: 10_000, toMs: 12_000, maxLag: 20 };
    const happenings = [
      { fromMs: 2_000, toMs: 4_000, what: "healed long before" },
      { fromMs: 5_000, toMs: 8_000, what: "healed 2 s before" },
      { fromMs: 9_000, toMs: 9_500, what: "just before" },
      { fromMs: 11_000, toMs: 15_000, what: "during" },
      { fromMs: 12_500, toMs: 13_000, what: "after" },
    ];
    expect(coinciding(e, happenings, 3_000).map((h) => h.what)).toEqual(["healed 2 s before", "just before", "during"]);
  });
});

describe("followerStepTimes", () => {
  test("the follower's debug lines by step within the stretch: the task alone, the task with the ledger read, the rest by name", () => {
    const lines = [
      { level: "debug", msg: "task run", step: "runTask", ms: 10, time: 1_000 },
      { level: "debug", msg: "follower step done", step: "writeRange", ms: 12, time: 1_001 },
      { level: "debug", msg: "follower step done", step: "readHeaders", ms: 1, time: 1_002 },
      { level: "debug", msg: "follower step done", step: "readHeaders", ms: 3, time: 5_000 },
      { level: "info", msg: "following", time: 1_003 },
    ];
    expect(followerStepTimes(lines, 0, 2_000)).toEqual({
      task: { n: 1, p50: 10, p99: 10 },
      "task and ledger read": { n: 1, p50: 12, p99: 12 },
      readHeaders: { n: 1, p50: 1, p99: 1 },
    });
    expect(followerStepTimes(lines).readHeaders).toEqual({ n: 2, p50: 1, p99: 3 });
  });
});
