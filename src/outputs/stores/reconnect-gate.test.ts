import { describe, expect, test } from "bun:test";
import { ReconnectGate } from "./reconnect-gate";

describe("ReconnectGate", () => {
  test("a database that stays down is tried after 100, 200, 400 ms, capped at the maximum; one success resets it", () => {
    const g = new ReconnectGate(100, 300);
    expect(g.mayTry(0)).toBe(0);
    expect(g.failed(1000)).toBe(100);
    expect(g.mayTry(1050)).toBe(50);
    expect(g.mayTry(1100)).toBe(0);
    expect(g.failed(1100)).toBe(200);
    expect(g.failed(1300)).toBe(300); // capped
    expect(g.failed(1600)).toBe(300);
    expect(g.consecutiveFailures).toBe(4);
    g.succeeded();
    expect(g.mayTry(1601)).toBe(0);
    expect(g.failed(2000)).toBe(100);
  });

  test("a backoff range that is not one is refused", () => {
    expect(() => new ReconnectGate(500, 100)).toThrow("expected 0 <= min <= max");
  });
});
