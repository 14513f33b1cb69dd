import { describe, expect, test } from "bun:test";
import { countByKind, durationRange, FAULT_KINDS, faultSchedule, firstRoundMs, kindsFor, PAIRABLE_KINDS, type FaultEvent, type ScheduleOptions } from "./fault-schedule";
import { SOAK_THRESHOLDS } from "./soak-cluster";

const t = SOAK_THRESHOLDS;
const base: ScheduleOptions = { seed: 7, startMs: 5_000, endMs: 600_000, workers: 3, coordinators: 2, meanGapMs: 6_000, thresholds: t };

function checkTarget(e: FaultEvent): void {
  const targets = e.kind === "coordinatorRestart" ? base.coordinators : ["etcdRestart", "backendDegrade", "submitAnswerLost", "submitTasksAnswerLost", "twoAtOnce"].includes(e.kind) ? 1 : base.workers;
  expect(e.target).toBeGreaterThanOrEqual(0);
  expect(e.target).toBeLessThan(targets);
}

describe("faultSchedule", () => {
  test("is a pure function of the seed: same seed, same plan; another seed, another plan", () => {
    expect(faultSchedule(base)).toEqual(faultSchedule({ ...base }));
    expect(faultSchedule({ ...base, seed: 8 })).not.toEqual(faultSchedule(base));
  });

  test("every kind appears at least once, even in a window just longer than one of each, for many seeds and both stores", () => {
    for (const store of ["sqlite", "postgres"] as const) {
      const kinds = kindsFor(store);
      for (let seed = 1; seed <= 200; seed++) {
        const events = faultSchedule({ ...base, seed, store, endMs: base.startMs + firstRoundMs(t, store) + 5_000 });
        const counts = countByKind(events, kinds);
        expect(kinds.filter((k) => counts[k] < 1).map((k) => `seed ${seed}: no ${k}`)).toEqual([]);
      }
    }
    // SQLite has no connection to sever.
    expect(kindsFor("sqlite")).not.toContain("storeSevered");
    expect(kindsFor("postgres")).toEqual(FAULT_KINDS);
  });

  test("faults do not overlap (but for a pair, which starts together), stay inside the window and hit existing targets", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const events = faultSchedule({ ...base, seed });
      expect(events.length).toBeGreaterThan(FAULT_KINDS.length);
      let free = base.startMs;
      for (const e of events) {
        expect(e.atMs).toBeGreaterThanOrEqual(free);
        expect(e.atMs + e.durationMs).toBeLessThan(base.endMs);
        free = e.atMs + e.durationMs;
        checkTarget(e);
        if (e.kind === "backendDegrade") {
          expect(e.errorRate).toBeGreaterThan(0);
          expect(e.errorRate).toBeLessThan(1);
        }
        if (e.kind === "twoAtOnce") {
          const [a, b] = e.pair!;
          expect(a.kind).not.toBe(b.kind);
          expect(PAIRABLE_KINDS).toContain(a.kind);
          expect(PAIRABLE_KINDS).toContain(b.kind);
          expect([a.atMs, b.atMs]).toEqual([e.atMs, e.atMs]);
          expect(e.durationMs).toBe(Math.max(a.durationMs, b.durationMs));
          checkTarget(a);
          checkTarget(b);
        } else expect(e.pair).toBeUndefined();
      }
    }
  });

  test("threshold faults cross their thresholds: a partition from etcd and a pause outlast the lease, a client partition the SDK's patience; a pause past the statement timeout, and one past the SDK's patience, stay within the lease", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const all = faultSchedule({ ...base, seed }).flatMap((e) => (e.pair ? [...e.pair] : [e]));
      for (const e of all) {
        if (e.kind === "etcdPartition" || e.kind === "pauseLease") expect(e.durationMs).toBeGreaterThanOrEqual(t.leaseMs + 500);
        if (e.kind === "pausePastPatience") {
          expect(e.durationMs).toBeGreaterThanOrEqual(t.lostAfterMs + 2_500);
          expect(e.durationMs).toBeLessThan((t.leaseMs * 2) / 3);
        }
        if (e.kind === "clientPartition") expect(e.durationMs).toBeGreaterThanOrEqual(t.lostAfterMs + 1_000);
        if (e.kind === "pauseStatement") {
          expect(e.durationMs).toBeGreaterThan(t.statementMs);
          expect(e.durationMs).toBeLessThan(t.leaseMs);
        }
      }
    }
    // A silent Postgres outlasts the Worker's deadline for a silent call by more than a lease renewal's interval
    // (a renewal is surely sent into it); a held SQLite lock outlasts the busy timeout, not the lease.
    expect(durationRange("storeSilent", t, "postgres")[0]).toBeGreaterThan(t.deadlineMs + t.leaseMs / 3);
    const [lo, hi] = durationRange("storeSilent", t, "sqlite");
    expect(lo).toBeGreaterThan(t.statementMs);
    expect(hi).toBeLessThan(t.leaseMs);
  });

  test("a window too short for one fault of each kind is refused with a clear message", () => {
    expect(() => faultSchedule({ ...base, endMs: base.startMs + 10_000 })).toThrow(/too short for one fault of each kind/);
  });
});
