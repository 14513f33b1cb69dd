import { describe, expect, test } from "bun:test";
import { RESERVATION_OUTCOMES, ReservationOutcomeLog, type ReservationRecord } from "./reservation-outcome-log";
import type { ReservationOutcome } from "./reservation-core-instructions";

const T0 = 1_700_000_000_000;

function rec(atMs: number, outcome: ReservationOutcome, taskId = `t-${atMs}`): ReservationRecord {
  return { atMs, taskId, outcome, workerAddr: outcome === "reserved" ? "10.0.0.1:9000" : "", workersAsked: 1, durationMs: 1.5, reason: outcome === "reserved" ? "" : `why ${outcome}` };
}

function count(log: ReservationOutcomeLog, nowMs: number, outcome: ReservationOutcome) {
  return log.snapshot(nowMs, 0).counts.find((c) => c.outcome === outcome)!;
}

describe("ReservationOutcomeLog", () => {
  test("lists every outcome, seen or not, with zero counts at start", () => {
    const s = new ReservationOutcomeLog(T0).snapshot(T0, 100);
    expect(s.startedAtMs).toBe(T0);
    expect(s.total).toBe(0);
    expect(s.counts.map((c) => c.outcome)).toEqual([...RESERVATION_OUTCOMES]);
    expect(s.counts.every((c) => c.sinceStart === 0 && c.lastMinute === 0)).toBe(true);
    expect(s.recent).toEqual([]);
  });

  test("counts per outcome since start and over the last minute; a record 60 s old has left the minute", () => {
    const log = new ReservationOutcomeLog(T0);
    log.record(rec(T0, "reserved"));
    log.record(rec(T0 + 500, "reserved"));
    log.record(rec(T0 + 30_000, "no_executable_slot"));
    log.record(rec(T0 + 59_000, "reserved"));
    expect(count(log, T0 + 59_999, "reserved")).toEqual({ outcome: "reserved", sinceStart: 3, lastMinute: 3 });
    expect(count(log, T0 + 60_000, "reserved")).toEqual({ outcome: "reserved", sinceStart: 3, lastMinute: 1 });
    expect(count(log, T0 + 60_000, "no_executable_slot").lastMinute).toBe(1);
    expect(count(log, T0 + 90_000, "no_executable_slot")).toEqual({ outcome: "no_executable_slot", sinceStart: 1, lastMinute: 0 });
    expect(log.snapshot(T0 + 90_000, 0).total).toBe(4);
  });

  test("a bucket reused a minute later starts again from zero", () => {
    const log = new ReservationOutcomeLog(T0);
    for (let i = 0; i < 5; i++) log.record(rec(T0 + i, "uncertain"));
    log.record(rec(T0 + 60_000, "uncertain")); // the same bucket, the next minute
    expect(count(log, T0 + 60_000, "uncertain")).toEqual({ outcome: "uncertain", sinceStart: 6, lastMinute: 1 });
  });

  test("recent is newest first, limited, and keeps only the last `capacity` records", () => {
    const log = new ReservationOutcomeLog(T0, 3);
    for (let i = 0; i < 5; i++) log.record(rec(T0 + i, "reserved", `t${i}`));
    expect(log.snapshot(T0 + 10, 100).recent.map((r) => r.taskId)).toEqual(["t4", "t3", "t2"]);
    expect(log.snapshot(T0 + 10, 2).recent.map((r) => r.taskId)).toEqual(["t4", "t3"]);
    expect(log.snapshot(T0 + 10, 0).recent).toEqual([]);
    expect(log.snapshot(T0 + 10, 0).total).toBe(5);
  });

  test("before the ring fills, recent still starts at the newest", () => {
    const log = new ReservationOutcomeLog(T0, 10);
    log.record(rec(T0, "reserved", "a"));
    log.record(rec(T0 + 1, "all_rejected", "b"));
    expect(log.snapshot(T0 + 2, 10).recent.map((r) => `${r.taskId}:${r.outcome}`)).toEqual(["b:all_rejected", "a:reserved"]);
  });

  test("a hostile task id or reason is cut, saying how long it was", () => {
    const log = new ReservationOutcomeLog(T0);
    log.record({ ...rec(T0, "invalid_argument"), taskId: "x".repeat(100_000), reason: "y".repeat(5_000) });
    const r = log.snapshot(T0, 1).recent[0]!;
    expect(r.taskId.length).toBeLessThan(300);
    expect(r.taskId).toEndWith("… (100000 characters)");
    expect(r.reason).toEndWith("… (5000 characters)");
  });

  test("refuses a capacity that is not a positive integer", () => {
    expect(() => new ReservationOutcomeLog(T0, 0)).toThrow(/positive integer/);
  });
});
