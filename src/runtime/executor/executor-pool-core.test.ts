import { describe, expect, test } from "bun:test";
import { ExecutorPoolCore, type PoolCoreTiming } from "./executor-pool-core";

const timing: PoolCoreTiming = {
  pingIntervalMs: 1000,
  pingTimeoutMs: 5000,
  startTimeoutMs: 15000,
  backoffBaseMs: 100,
  backoffMaxMs: 10_000,
  healthyAfterMs: 30_000,
  maxInflightPerExecutor: 2,
};

function readyPool(n: number): ExecutorPoolCore {
  const core = new ExecutorPoolCore(n, timing);
  for (let i = 0; i < n; i++) {
    core.starting(i, 0);
    core.ready(i, 0);
  }
  return core;
}

describe("ExecutorPoolCore", () => {
  test("a fresh pool has every slot due to start, none ready", () => {
    const core = new ExecutorPoolCore(3, timing);
    expect(core.tick(0)).toEqual({ ping: [], hung: [], start: [0, 1, 2] });
    expect(core.pickExecutor()).toBeNull();
  });

  test("calls go to the least-loaded ready executor; a full executor takes no more", () => {
    const core = readyPool(3);
    const picks: number[] = [];
    for (let i = 0; i < 6; i++) {
      const p = core.pickExecutor()!;
      picks.push(p);
      core.callAssigned(p);
    }
    expect(picks).toEqual([0, 1, 2, 0, 1, 2]);
    expect(core.pickExecutor()).toBeNull(); // all at maxInflightPerExecutor = 2
    core.callFinished(1);
    expect(core.pickExecutor()).toBe(1);
  });

  test("starting executors get no calls until they are ready; ids carry the generation", () => {
    const core = new ExecutorPoolCore(1, timing);
    expect(core.starting(0, 0)).toBe("0.1");
    expect(core.pickExecutor()).toBeNull();
    core.ready(0, 10);
    expect(core.pickExecutor()).toBe(0);
    core.died(0, 20);
    expect(core.starting(0, 200)).toBe("0.2");
  });

  test("pings go out every interval; no pong within the timeout marks the executor hung", () => {
    const core = readyPool(1);
    expect(core.tick(999).ping).toEqual([]);
    expect(core.tick(1000).ping).toEqual([0]);
    expect(core.tick(1500).ping).toEqual([]);
    core.heard(0, 1200);
    expect(core.tick(6200).hung).toEqual([]);
    expect(core.tick(6201).hung).toEqual([0]);
  });

  test("an executor that never says hello within the start timeout is hung", () => {
    const core = new ExecutorPoolCore(1, timing);
    core.starting(0, 0);
    expect(core.tick(15_000).hung).toEqual([]);
    expect(core.tick(15_001).hung).toEqual([0]);
  });

  test("restarts back off exponentially up to the cap, and a healthy spell forgives earlier deaths", () => {
    const core = new ExecutorPoolCore(1, timing);
    let now = 0;
    const delays: number[] = [];
    for (let i = 0; i < 9; i++) {
      core.starting(0, now);
      core.ready(0, now);
      const at = core.died(0, now);
      delays.push(at - now);
      expect(core.tick(at - 1).start).toEqual([]);
      expect(core.tick(at).start).toEqual([0]);
      now = at;
    }
    expect(delays).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
    core.starting(0, now);
    core.ready(0, now);
    expect(core.died(0, now + 30_000) - (now + 30_000)).toBe(100);
  });

  test("died is idempotent for one incarnation and clears its in-flight count", () => {
    const core = readyPool(1);
    core.callAssigned(0);
    const at = core.died(0, 50);
    expect(core.died(0, 60)).toBe(at);
    expect(core.slots[0]!.inflight).toBe(0);
    core.callFinished(0);
    expect(core.slots[0]!.inflight).toBe(0);
  });

  test("a start is hopeless once every executor that is not ready has died before its Hello", () => {
    // Three executors start from one interpreter and one PYTHONPATH; two die at start, one is slow.
    const core = new ExecutorPoolCore(3, timing);
    for (const i of [0, 1, 2]) core.starting(i, 0);
    core.died(0, 100);
    core.died(1, 120);
    expect(core.startHopeless(1)).toBe(false); // executor 2 may still say Hello
    expect(core.startHopeless(3)).toBe(true); // waiting for all three cannot succeed
    core.died(2, 150);
    expect(core.startHopeless(1)).toBe(true);
    // A slot that later comes up clears its start death; a death after Hello is no start death.
    core.starting(0, 300);
    core.ready(0, 350);
    expect(core.startHopeless(1)).toBe(false);
    core.died(0, 400);
    expect(core.slots[0]!.diedAtStart).toBe(false);
  });
});
