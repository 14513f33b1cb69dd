import { describe, expect, test } from "bun:test";
import { DashboardHistory, type TaskSample } from "./dashboard-history";

const W = "127.0.0.1:7001";
const sample = (o: Partial<TaskSample>): TaskSample => ({
  workerAddr: W,
  taskId: "t1",
  acceptedAtMs: 10_000,
  updatedAtMs: 0,
  finishedAtMs: 0,
  callsDone: 0,
  callsTimed: 0,
  callSeconds: 0,
  ...o,
});

describe("DashboardHistory: a task over its life", () => {
  test("a backfill seen first 10 s after it started, then speeding up, then finished: its rate and latency per interval, from its acceptance on", () => {
    const h = new DashboardHistory();
    // The dashboard opens at 20 s: 50 calls done since acceptance at 10 s, 50 timed at 40 ms each.
    h.observeTasks([sample({ updatedAtMs: 20_000, callsDone: 50, callsTimed: 50, callSeconds: 2 })], 20_500);
    // At 22 s: 150 more calls in 2 s, each 10 ms (one retried attempt among them, also 10 ms).
    h.observeTasks([sample({ updatedAtMs: 22_000, callsDone: 200, callsTimed: 201, callSeconds: 3.51 })], 22_500);
    // The same update seen again at the next refresh: no new point.
    h.observeTasks([sample({ updatedAtMs: 22_000, callsDone: 200, callsTimed: 201, callSeconds: 3.51 })], 23_500);
    // It ends at 23 s with 100 more calls; later samples repeat its end.
    h.observeTasks([sample({ updatedAtMs: 23_000, finishedAtMs: 23_000, callsDone: 300, callsTimed: 301, callSeconds: 4.51 })], 24_500);
    h.observeTasks([sample({ updatedAtMs: 23_000, finishedAtMs: 23_000, callsDone: 300, callsTimed: 301, callSeconds: 4.51 })], 30_000);
    const c = h.taskCharts(W, "t1");
    expect(c.rate).toEqual([
      [20_000, 5],
      [22_000, 75],
      [23_000, 100],
    ]);
    expect(c.latencyMs.map(([t, v]) => [t, Number(v.toFixed(6))])).toEqual([
      [20_000, 40],
      [22_000, 10],
      [23_000, 10],
    ]);
  });

  test("calls timed after the Worker last reported its counts are kept with that report (the pool's sums move on between reports)", () => {
    const h = new DashboardHistory();
    h.observeTasks([sample({ updatedAtMs: 20_000, callsDone: 10, callsTimed: 10, callSeconds: 0.1 })], 20_000);
    h.observeTasks([sample({ updatedAtMs: 20_000, callsDone: 10, callsTimed: 14, callSeconds: 0.14 })], 21_000);
    h.observeTasks([sample({ updatedAtMs: 22_000, callsDone: 30, callsTimed: 30, callSeconds: 0.5 })], 22_000);
    expect(h.taskCharts(W, "t1").latencyMs.map(([t, v]) => [t, Number(v.toFixed(6))])).toEqual([
      [20_000, 10],
      [22_000, 22.5],
    ]);
  });

  test("a task not accepted yet has no chart; the same id on another Worker is another task", () => {
    const h = new DashboardHistory();
    h.observeTasks([sample({ acceptedAtMs: 0 })], 1_000);
    expect(h.taskCount).toBe(0);
    h.observeTasks([sample({ updatedAtMs: 11_000, callsDone: 10 }), sample({ workerAddr: "127.0.0.1:7002", updatedAtMs: 12_000, callsDone: 4 })], 12_000);
    expect(h.taskCharts(W, "t1").rate).toEqual([[11_000, 10]]);
    expect(h.taskCharts("127.0.0.1:7002", "t1").rate).toEqual([[12_000, 2]]);
    expect(h.taskCharts(W, "unknown")).toEqual({ rate: [], latencyMs: [] });
  });

  test("a long task keeps its whole life at a coarser grain, and rates stay right after thinning", () => {
    const h = new DashboardHistory({ pointsPerTask: 8, tasks: 10, workerWindowMs: 60_000, forgetTaskAfterMs: 60_000 });
    // 10 calls a second for 30 s, one sample a second.
    for (let s = 1; s <= 30; s++) h.observeTasks([sample({ acceptedAtMs: 1_000, updatedAtMs: (s + 1) * 1000, callsDone: s * 10 })], (s + 1) * 1000);
    const rate = h.taskCharts(W, "t1").rate;
    expect(rate.length).toBeLessThanOrEqual(8);
    expect(rate[rate.length - 1]![0]).toBe(31_000);
    for (const [, v] of rate) expect(v).toBeCloseTo(10, 6);
  });

  test("tasks not seen for a while are forgotten, and at most `tasks` are followed, the least recently seen going first", () => {
    const h = new DashboardHistory({ pointsPerTask: 8, tasks: 2, workerWindowMs: 60_000, forgetTaskAfterMs: 5_000 });
    h.observeTasks([sample({ taskId: "a", updatedAtMs: 11_000 }), sample({ taskId: "b", updatedAtMs: 11_000 })], 11_000);
    h.observeTasks([sample({ taskId: "a", updatedAtMs: 12_000 })], 12_000);
    h.observeTasks([sample({ taskId: "c", updatedAtMs: 13_000 })], 13_000);
    expect(h.taskCharts(W, "b").rate).toEqual([]); // b was seen longest ago
    expect(h.taskCharts(W, "a").rate.length).toBe(2);
    h.observeTasks([sample({ taskId: "c", updatedAtMs: 18_500 })], 18_500);
    expect(h.taskCount).toBe(1); // a: last seen at 12 s
  });
});

describe("DashboardHistory: each Worker's busy executors", () => {
  test("one point per heartbeat, the last ten minutes only", () => {
    const h = new DashboardHistory();
    h.observeWorkers([{ addr: W, heartbeatAtMs: 1_000, busy: 0, total: 4 }], 1_500);
    h.observeWorkers([{ addr: W, heartbeatAtMs: 1_000, busy: 0, total: 4 }], 2_500); // the same heartbeat
    h.observeWorkers([{ addr: W, heartbeatAtMs: 6_000, busy: 3, total: 4 }], 6_500);
    expect(h.workerBusy(W)).toEqual({ busy: [[1_000, 0], [6_000, 3]], total: 4 });
    h.observeWorkers([{ addr: W, heartbeatAtMs: 601_500, busy: 4, total: 4 }], 602_000);
    expect(h.workerBusy(W).busy).toEqual([[6_000, 3], [601_500, 4]]); // 1 s is more than ten minutes ago
    // A Worker gone (no heartbeat any more) drops out once its points are older than the window.
    h.observeWorkers([], 1_300_000);
    expect(h.workerBusy(W)).toEqual({ busy: [], total: 0 });
  });
});
