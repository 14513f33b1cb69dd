import { describe, expect, test } from "bun:test";
import { ClockMonitorCore, phaseDelayMs, type ClockMonitorEvent, type ClockMonitorInstruction } from "./clock-monitor-core";
import type { ClockSample } from "./clock-offset-core";

const OPTS = { maxOffsetMs: 2500, startSamples: 3, minSpacingMs: 1_000, window: 8 };

/** A sample of a host `offsetMs` ahead of etcd, taken at local `atMs`. */
const sample = (offsetMs: number, atMs: number): ClockSample => ({ sentMs: atMs, receivedMs: atMs + 2, referenceSecondMs: Math.floor((atMs + 1 - offsetMs) / 1000) * 1000 });

function rig() {
  const core = new ClockMonitorCore(OPTS);
  const step = (e: ClockMonitorEvent, t: number): { out: ClockMonitorInstruction[]; wake: number | null } => {
    const d = core.handle(e, t);
    core.validateState();
    if (d.wakeAtMs !== null) expect(d.wakeAtMs).toBeGreaterThan(t);
    return { out: [...d.instructions], wake: d.wakeAtMs };
  };
  return { core, step };
}

describe("ClockMonitorCore", () => {
  test("a burst at start: one sample at a time, each 200 ms plus a fifth of a phase step after the last ended", () => {
    const { step } = rig();
    expect(step({ type: "started" }, 0).out).toEqual([{ type: "takeSample", k: 1 }]);
    const first = step({ type: "sampled", sample: sample(0, 10) }, 12);
    expect(first.out.map((i) => i.type)).toEqual(["reportOffset"]);
    expect(first.wake).toBe(12 + 200 + phaseDelayMs(1) / 5);
    expect(step({ type: "heartbeatCycle" }, 100).out).toEqual([]); // the burst's next sample is planned: no second one
    expect(step({ type: "timeAdvanced" }, first.wake!).out).toEqual([{ type: "takeSample", k: 2 }]);
    expect(step({ type: "timeAdvanced" }, first.wake! + 1)).toEqual({ out: [], wake: null }); // under way
    const second = step({ type: "sampleFailed", reason: "etcd away" }, 400);
    expect(second.out).toEqual([{ type: "reportOffset", offsetSeconds: expect.any(Number) }]); // the last estimate stands
    expect(step({ type: "timeAdvanced" }, second.wake!).out).toEqual([{ type: "takeSample", k: 3 }]);
    expect(step({ type: "sampled", sample: sample(0, 700) }, 702).wake).toBeNull(); // the burst is over
  });

  test("after the burst: at most one sample per heartbeat cycle and minSpacingMs, at a rotating phase", () => {
    const { step } = rig();
    step({ type: "started" }, 0);
    for (let k = 1; k <= 3; k++) {
      const t = k * 1_000;
      step({ type: "timeAdvanced" }, t);
      step({ type: "sampled", sample: sample(0, t) }, t + 2);
    }
    expect(step({ type: "heartbeatCycle" }, 3_500).wake).toBeNull(); // within minSpacingMs of the last
    const cycle = step({ type: "heartbeatCycle" }, 4_100);
    expect(cycle.wake).toBe(4_100 + phaseDelayMs(3));
    expect(step({ type: "heartbeatCycle" }, 4_200).wake).toBe(cycle.wake); // one planned at a time
    expect(step({ type: "timeAdvanced" }, cycle.wake!).out).toEqual([{ type: "takeSample", k: 4 }]);
  });

  test("a clock that becomes skewed is reported once, and again when it recovers", () => {
    const { step } = rig();
    const kinds: string[] = [];
    let t = 0;
    const take = (offset: number) => {
      t += 2_379;
      step({ type: "heartbeatCycle" }, t);
      step({ type: "timeAdvanced" }, t + 1_000);
      for (const i of step({ type: "sampled", sample: sample(offset, t + 1_000) }, t + 1_002).out) if (i.type !== "reportOffset") kinds.push(i.type);
    };
    for (let i = 0; i < 4; i++) take(4_000);
    for (let i = 0; i < 4; i++) take(0);
    expect(kinds).toEqual(["logSkewed", "logRecovered"]);
  });

  test("a report with no sample asked for is a bug", () => {
    const { core } = rig();
    expect(() => core.handle({ type: "sampleFailed", reason: "x" }, 0)).toThrow("no sample asked for");
  });
});
