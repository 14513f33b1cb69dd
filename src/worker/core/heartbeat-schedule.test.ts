import { describe, expect, test } from "bun:test";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { mulberry32 } from "../../../test/support/mulberry32";
import { testHeartbeat } from "../../../test/support/heartbeat";
import {
  DEFAULT_RED_LINES,
  HeartbeatScheduleCore,
  validateHeartbeatScheduleConfig,
  type HeartbeatPublishMode,
  type HeartbeatScheduleConfig,
  type HeartbeatScheduleEvent,
  type HeartbeatScheduleInstruction,
} from "./heartbeat-schedule";

const ADDR = "10.0.0.1:9090";
const cfg = (mode: HeartbeatPublishMode, over: Partial<HeartbeatScheduleConfig> = {}): HeartbeatScheduleConfig => ({
  mode,
  intervalMs: 200,
  refreshMs: 1_000,
  redLines: DEFAULT_RED_LINES,
  ...over,
});
const hb = (nowMs: number, over: Partial<WorkerHeartbeat> = {}) => testHeartbeat(ADDR, { taskSlots: 10, lastHeartbeatMs: nowMs, ...over });

/** A decision read as a list: its instructions, then its wake-up as an `armTimer` step (the driver arms one timer there). */
type Step = HeartbeatScheduleInstruction | { type: "armTimer"; atMs: number };

/** step feeds one event, checks the invariants and returns the decision as steps. */
function step(core: HeartbeatScheduleCore, event: HeartbeatScheduleEvent, nowMs: number): Step[] {
  const d = core.handle(event, nowMs);
  core.validateState();
  return [...d.instructions, ...(d.wakeAtMs !== null ? [{ type: "armTimer" as const, atMs: d.wakeAtMs }] : [])];
}

/** sampleAndPut feeds a sample; if the core asks for a put, reports it as succeeded. Returns all steps. */
function sampleAndPut(core: HeartbeatScheduleCore, sample: WorkerHeartbeat, nowMs: number): Step[] {
  const first = step(core, { type: "sampleTaken", sample }, nowMs);
  const put = first.find((i) => i.type === "putHeartbeat");
  if (!put) return first;
  return [...first, ...step(core, { type: "putSucceeded", heartbeat: sample }, nowMs)];
}

describe("HeartbeatScheduleCore", () => {
  test("a Worker that starts puts its first sample, then stays quiet while nothing a Coordinator reads changes, and refreshes at refreshMs exactly", () => {
    const core = new HeartbeatScheduleCore(cfg("ON_CHANGE"));
    expect(sampleAndPut(core, hb(0), 0)).toEqual([
      { type: "putHeartbeat", heartbeat: hb(0), reason: "FIRST" },
      { type: "armTimer", atMs: 200 },
    ]);
    // cpu and memory move, but stay under their red lines; reserved turns into running (same free).
    expect(sampleAndPut(core, hb(200, { cpuPercent: 0.5 }), 200)).toEqual([{ type: "armTimer", atMs: 400 }]);
    expect(sampleAndPut(core, hb(800, { memoryPercent: 0.7 }), 800)).toEqual([{ type: "armTimer", atMs: 1_000 }]);
    // The next tick would be at 1,200: the refresh deadline (0 + 1,000) comes first.
    expect(sampleAndPut(core, hb(1_000), 1_000)).toEqual([
      { type: "putHeartbeat", heartbeat: hb(1_000), reason: "REFRESH" },
      { type: "armTimer", atMs: 1_200 },
    ]);
  });

  test("free capacity, taskSlots and each red line side are changes put with the first sample after them", () => {
    const core = new HeartbeatScheduleCore(cfg("ON_CHANGE"));
    sampleAndPut(core, hb(0, { reservedSlots: 1 }), 0);
    // ALLOCATED -> RUNNING: free stays 9, nothing to put.
    expect(sampleAndPut(core, hb(200, { runningTasks: 1 }), 200).map((i) => i.type)).toEqual(["armTimer"]);
    const cases: Array<[Partial<WorkerHeartbeat>, string]> = [
      [{ runningTasks: 2 }, "CAPACITY_CHANGED"],
      [{ runningTasks: 2, taskSlots: 12 }, "CAPACITY_CHANGED"],
      [{ runningTasks: 2, taskSlots: 12, cpuPercent: 0.95 }, "RED_LINE_CROSSED"],
      [{ runningTasks: 2, taskSlots: 12, cpuPercent: 0.95, memoryPercent: 0.91 }, "RED_LINE_CROSSED"],
      [{ runningTasks: 2, taskSlots: 12, cpuPercent: 0.95, memoryPercent: 0.91, errorRate: 0.6 }, "RED_LINE_CROSSED"],
      [{ runningTasks: 2, taskSlots: 12, cpuPercent: 0.2, memoryPercent: 0.91, errorRate: 0.6 }, "RED_LINE_CROSSED"],
    ];
    let now = 200;
    for (const [over, reason] of cases) {
      now += 200;
      const out = sampleAndPut(core, hb(now, over), now);
      expect(out[0]).toEqual({ type: "putHeartbeat", heartbeat: hb(now, over), reason: reason as never });
    }
    // A value exactly at a red line is not over it (the Coordinator filters cpu > red line).
    now += 200;
    expect(sampleAndPut(core, hb(now, { runningTasks: 2, taskSlots: 12, cpuPercent: 0.9, memoryPercent: 0.91, errorRate: 0.6 }), now)[0]!.type).toBe("armTimer");
  });

  test("EVERY_INTERVAL puts every sample (the behaviour before issue 22)", () => {
    const core = new HeartbeatScheduleCore(cfg("EVERY_INTERVAL"));
    const reasons: string[] = [];
    for (let t = 0; t <= 1_000; t += 200) {
      const out = sampleAndPut(core, hb(t), t);
      for (const i of out) if (i.type === "putHeartbeat") reasons.push(i.reason);
      expect(out.at(-1)).toEqual({ type: "armTimer", atMs: t + 200 });
    }
    expect(reasons).toEqual(["FIRST", "EVERY_INTERVAL", "EVERY_INTERVAL", "EVERY_INTERVAL", "EVERY_INTERVAL", "EVERY_INTERVAL"]);
  });

  test("a failed put is retried at the next tick even if nothing changed; a new lease gets a put at once", () => {
    const core = new HeartbeatScheduleCore(cfg("ON_CHANGE"));
    sampleAndPut(core, hb(0), 0);
    expect(step(core, { type: "sampleTaken", sample: hb(1_000) }, 1_000)[0]!.type).toBe("putHeartbeat");
    expect(step(core, { type: "putFailed" }, 1_010)).toEqual([{ type: "armTimer", atMs: 1_210 }]);
    expect(step(core, { type: "sampleTaken", sample: hb(1_210) }, 1_210)).toEqual([{ type: "putHeartbeat", heartbeat: hb(1_210), reason: "RETRY" }]);
    step(core, { type: "putSucceeded", heartbeat: hb(1_210) }, 1_220);
    expect(sampleAndPut(core, hb(1_400), 1_400)[0]!.type).toBe("armTimer");
    // The lease expired (etcd lost it during an outage): the key went with it; the core wakes at once.
    expect(step(core, { type: "leaseReplaced" }, 1_500)).toEqual([{ type: "armTimer", atMs: 1_500 }]);
    expect(core.lastPublished).toBeNull();
    expect(step(core, { type: "timeAdvanced" }, 1_500)).toEqual([{ type: "takeSample" }]);
    expect(sampleAndPut(core, hb(1_600), 1_600)[0]).toEqual({ type: "putHeartbeat", heartbeat: hb(1_600), reason: "FIRST" });
  });

  test("the core asks for each sample at its wake-up: the first at once, none while a sample or a put is awaited, none on an early timer", () => {
    const core = new HeartbeatScheduleCore(cfg("ON_CHANGE"));
    expect(step(core, { type: "timeAdvanced" }, 0)).toEqual([{ type: "takeSample" }]);
    expect(step(core, { type: "timeAdvanced" }, 5)).toEqual([]); // the sample is awaited
    expect(step(core, { type: "sampleTaken", sample: hb(5) }, 5)).toEqual([{ type: "putHeartbeat", heartbeat: hb(5), reason: "FIRST" }]);
    expect(step(core, { type: "timeAdvanced" }, 9)).toEqual([]); // the put is awaited
    expect(step(core, { type: "putSucceeded", heartbeat: hb(5) }, 10)).toEqual([{ type: "armTimer", atMs: 210 }]);
    expect(step(core, { type: "timeAdvanced" }, 200)).toEqual([{ type: "armTimer", atMs: 210 }]); // early
    expect(step(core, { type: "timeAdvanced" }, 210)).toEqual([{ type: "takeSample" }]);
    expect(step(core, { type: "sampleFailed" }, 211)).toEqual([{ type: "armTimer", atMs: 411 }]);
  });

  test("a misused core says so: a sample while a put is in flight, an outcome with no put", () => {
    const core = new HeartbeatScheduleCore(cfg("ON_CHANGE"));
    expect(() => core.handle({ type: "putSucceeded", heartbeat: hb(0) }, 0)).toThrow(/no put in flight/);
    expect(() => core.handle({ type: "putFailed" }, 0)).toThrow(/no put in flight/);
    core.handle({ type: "sampleTaken", sample: hb(0) }, 0);
    expect(() => core.handle({ type: "sampleTaken", sample: hb(1) }, 1)).toThrow(/in flight/);
  });

  test("config rules: refreshMs >= intervalMs, red lines in (0, 1]", () => {
    expect(validateHeartbeatScheduleConfig(cfg("ON_CHANGE"))).toEqual([]);
    expect(validateHeartbeatScheduleConfig(cfg("ON_CHANGE", { refreshMs: 100 }))).toEqual(["refreshMs: expected an integer >= intervalMs (200), got 100"]);
    expect(validateHeartbeatScheduleConfig(cfg("ON_CHANGE", { intervalMs: 0 }))[0]).toMatch(/intervalMs/);
    expect(validateHeartbeatScheduleConfig(cfg("ON_CHANGE", { redLines: { cpu: 0, memory: 1, errorRate: 1.5 } }))).toEqual([
      "redLines.cpu: expected a number in (0, 1], got 0",
      "redLines.errorRate: expected a number in (0, 1], got 1.5",
    ]);
    expect(() => new HeartbeatScheduleCore(cfg("ON_CHANGE", { refreshMs: 1 }))).toThrow(/invalid HeartbeatScheduleConfig/);
  });

  test("randomized: after every wake the last put holds the sample's capacity and red-line sides, and is never older than refreshMs", () => {
    for (let seed = 1; seed <= 30; seed++) {
      const rnd = mulberry32(seed);
      const config = cfg("ON_CHANGE", { intervalMs: 1 + Math.floor(rnd() * 300), refreshMs: 0 });
      const c: HeartbeatScheduleConfig = { ...config, refreshMs: config.intervalMs + Math.floor(rnd() * 3_000) };
      const core = new HeartbeatScheduleCore(c);
      let now = 1_000;
      let state = hb(now);
      let puts = 0;
      let wakes = 0;
      let lastPutAt = -Infinity;
      for (let step = 0; step < 400; step++) {
        // Between wakes the Worker's state moves (often not at all).
        if (rnd() < 0.3) {
          const running = Math.floor(rnd() * 11);
          state = { ...state, runningTasks: running, reservedSlots: Math.floor(rnd() * (11 - running)) };
        }
        if (rnd() < 0.2) state = { ...state, cpuPercent: rnd(), memoryPercent: rnd(), errorRate: rnd() };
        const sample = { ...state, lastHeartbeatMs: now };
        const out = sampleAndPut(core, sample, now);
        wakes++;
        if (out[0]!.type === "putHeartbeat") {
          puts++;
          lastPutAt = now;
        }
        const last = core.lastPublished!;
        const free = (h: WorkerHeartbeat) => h.taskSlots - h.reservedSlots - h.runningTasks;
        expect(free(last)).toBe(free(sample));
        expect(last.cpuPercent > 0.9).toBe(sample.cpuPercent > 0.9);
        expect(last.memoryPercent > 0.9).toBe(sample.memoryPercent > 0.9);
        expect(last.errorRate > 0.5).toBe(sample.errorRate > 0.5);
        const arm = out.at(-1)!;
        expect(arm.type).toBe("armTimer");
        const at = (arm as { atMs: number }).atMs;
        expect(at).toBeLessThanOrEqual(now + c.intervalMs);
        expect(at - lastPutAt).toBeLessThanOrEqual(c.refreshMs);
        now = at; // the adapter wakes when asked
      }
      expect(wakes).toBe(400);
      expect(puts).toBeLessThan(wakes);
    }
  });
});
