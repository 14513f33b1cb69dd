import { describe, expect, test } from "bun:test";
import { DEFAULT_RETRY_POLICY, ReservePolicy } from "./retry-policy";

const cfg = { ...DEFAULT_RETRY_POLICY, slotTtlMs: 5000, backoffBaseMs: 100, backoffMaxMs: 1600, unavailableJitterMs: 50 };

describe("ReservePolicy", () => {
  test("Unavailable: a client with three Coordinators retries at once (jitter only) on each next one, then backs off after a full round", () => {
    const p = new ReservePolicy(cfg, 3);
    const ds = [1, 2, 3, 4, 5].map(() => p.decide("UNAVAILABLE", 0, 60_000, 1));
    expect(ds.slice(0, 3)).toEqual([1, 2, 3].map(() => ({ kind: "retry", delayMs: 50, nextCoordinator: true })));
    expect(ds[3]).toEqual({ kind: "retry", delayMs: 100, nextCoordinator: true });
    expect(ds[4]).toEqual({ kind: "retry", delayMs: 100, nextCoordinator: true });
    expect(p.decide("UNAVAILABLE", 0, 60_000, 1)).toEqual({ kind: "retry", delayMs: 100, nextCoordinator: true });
    expect(p.decide("UNAVAILABLE", 0, 60_000, 1)).toEqual({ kind: "retry", delayMs: 200, nextCoordinator: true });
  });

  test("ResourceExhausted: exponential back-off with jitter between half and the whole, capped, on the same Coordinator", () => {
    const p = new ReservePolicy(cfg, 2);
    const full = [0, 1, 2, 3, 4, 5].map(() => p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1));
    expect(full.map((d) => (d.kind === "retry" ? d.delayMs : -1))).toEqual([100, 200, 400, 800, 1600, 1600]);
    expect(full.every((d) => d.kind === "retry" && !d.nextCoordinator)).toBe(true);
    const q = new ReservePolicy(cfg, 2);
    expect(q.decide("RESOURCE_EXHAUSTED", 0, 60_000, 0)).toEqual({ kind: "retry", delayMs: 50, nextCoordinator: false });
  });

  test("a success resets the back-off", () => {
    const p = new ReservePolicy(cfg, 1);
    p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1);
    p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1);
    p.succeeded();
    expect(p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1)).toMatchObject({ delayMs: 100 });
  });

  test("ResourceExhausted near the deadline: the last wait ends at the deadline, then the client gives up with NO_CAPACITY", () => {
    const p = new ReservePolicy(cfg, 1);
    for (let i = 0; i < 4; i++) p.decide("RESOURCE_EXHAUSTED", 0, 60_000, 1);
    expect(p.decide("RESOURCE_EXHAUSTED", 59_900, 60_000, 1)).toEqual({ kind: "retry", delayMs: 100, nextCoordinator: false });
    expect(p.decide("RESOURCE_EXHAUSTED", 60_000, 60_000, 1)).toEqual({ kind: "giveUp", code: "NO_CAPACITY" });
  });

  test("Aborted: waits at least one slot TTL (up to 20% more), and gives up when that would pass the deadline", () => {
    const p = new ReservePolicy(cfg, 1);
    expect(p.decide("ABORTED", 0, 60_000, 0)).toEqual({ kind: "retry", delayMs: 5000, nextCoordinator: false });
    expect(p.decide("ABORTED", 0, 60_000, 0.5)).toEqual({ kind: "retry", delayMs: 5500, nextCoordinator: false });
    expect(p.decide("ABORTED", 56_000, 60_000, 0)).toEqual({ kind: "giveUp", code: "NO_CAPACITY" });
  });

  test("Unavailable past the deadline gives up with UNREACHABLE", () => {
    expect(new ReservePolicy(cfg, 2).decide("UNAVAILABLE", 10, 10, 0)).toEqual({ kind: "giveUp", code: "UNREACHABLE" });
  });
});
