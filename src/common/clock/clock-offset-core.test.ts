import { describe, expect, test } from "bun:test";
import { mulberry32 } from "../../../test/support/mulberry32";
import { boundsOf, ClockOffsetCore, type ClockEvent, type ClockReading, type ClockSample } from "./clock-offset-core";

/**
 * exchange: what a host whose clock is `offsetMs` ahead of etcd's sees when it sends at local
 * `sentMs`, etcd writes its Date `serverDelayMs` later and the answer takes `backMs` more.
 */
function exchange(offsetMs: number, sentMs: number, serverDelayMs: number, backMs: number): ClockSample {
  const stampedLocal = sentMs + serverDelayMs;
  const referenceMs = stampedLocal - offsetMs;
  return { sentMs, receivedMs: stampedLocal + backMs, referenceSecondMs: Math.floor(referenceMs / 1000) * 1000 };
}

/** read: one step, the invariants checked, the reading it answers. */
function read(core: ClockOffsetCore, event: ClockEvent): ClockReading {
  const d = core.handle(event);
  core.validateState();
  expect(d.instructions).toEqual([]);
  expect(d.wakeAtMs).toBeNull();
  return d.reply;
}

describe("ClockOffsetCore", () => {
  test("one sample bounds the offset to its second plus the round trip", () => {
    // A host 300 ms ahead asks once; the 1-second Date alone says little more than "within a second".
    const core = new ClockOffsetCore({ maxOffsetMs: 2500, window: 8 });
    const d = read(core, { type: "sampled", sample: exchange(300, 1_000_250, 4, 4) });
    expect(d.state).toBe("OK");
    expect(d.transition).toEqual({ from: "UNKNOWN", to: "OK" });
    expect(d.estimate!.uncertaintyMs).toBe(504);
    expect(Math.abs(d.estimate!.offsetMs - 300)).toBeLessThanOrEqual(504);
  });

  test("samples at spread phases narrow a 3.2 s skew down to well under a second, and it is SKEWED once", () => {
    // A Worker host 3.2 s ahead of etcd, sampling every 379 ms of phase: the bounds close in.
    const core = new ClockOffsetCore({ maxOffsetMs: 2500, window: 8 });
    const transitions = [];
    let last;
    for (let i = 0; i < 8; i++) {
      last = read(core, { type: "sampled", sample: exchange(3200, 5_000_000 + i * 1379, 2, 2) });
      if (last.transition) transitions.push(last.transition);
    }
    expect(transitions).toEqual([{ from: "UNKNOWN", to: "SKEWED" }]);
    expect(last!.estimate!.samples).toBe(8);
    expect(last!.estimate!.uncertaintyMs).toBeLessThan(150);
    expect(Math.abs(last!.estimate!.offsetMs - 3200)).toBeLessThanOrEqual(last!.estimate!.uncertaintyMs);
  });

  test("a clock stepped back into line forgets the samples it contradicts and recovers", () => {
    // NTP steps a 5 s fast clock back: the next sample disagrees with every older one.
    const core = new ClockOffsetCore({ maxOffsetMs: 2500, window: 8 });
    for (let i = 0; i < 5; i++) read(core, { type: "sampled", sample: exchange(5000, 10_000_000 + i * 1379, 1, 1) });
    const d = read(core, { type: "sampled", sample: exchange(0, 10_010_000, 1, 1) });
    expect(d.transition).toEqual({ from: "SKEWED", to: "OK" });
    expect(d.estimate!.samples).toBe(1);
    expect(Math.abs(d.estimate!.offsetMs)).toBeLessThanOrEqual(d.estimate!.uncertaintyMs);
  });

  test("a failed sample (etcd away) keeps the last estimate and state", () => {
    const core = new ClockOffsetCore({ maxOffsetMs: 2500, window: 8 });
    const before = read(core, { type: "sampled", sample: exchange(-4000, 2_000_100, 1, 1) });
    expect(before.state).toBe("SKEWED");
    const d = read(core, { type: "sampleFailed", reason: "connection refused" });
    expect(d).toEqual({ estimate: before.estimate, state: "SKEWED", transition: null });
  });

  test("randomized: the true offset lies within the estimate's bounds, and again within a window of samples after a step", () => {
    // 2,000 seeded histories of skew, round trips and etcd's processing delay; half step the clock
    // at sample 10. A step smaller than the bounds' width cannot be told from noise, so the
    // promise after a step is: once `window` newer samples are in, the bounds hold the truth again.
    const rnd = mulberry32(24);
    for (let run = 0; run < 2000; run++) {
      const window = 1 + Math.floor(rnd() * 8);
      const core = new ClockOffsetCore({ maxOffsetMs: 2500, window });
      let offset = Math.round((rnd() - 0.5) * 20_000);
      let steppedAt = Infinity;
      let t = 1_700_000_000_000 + Math.floor(rnd() * 1e6);
      for (let i = 0; i < 30; i++) {
        if (i === 10 && rnd() < 0.5) {
          offset += Math.round((rnd() - 0.5) * 10_000);
          steppedAt = i;
        }
        t += 50 + Math.floor(rnd() * 3000);
        const d = read(core, { type: "sampled", sample: exchange(offset, t, Math.floor(rnd() * 30), Math.floor(rnd() * 30)) });
        const e = d.estimate!;
        const settled = i < steppedAt || i >= steppedAt + window - 1;
        if (settled && Math.abs(offset - e.offsetMs) > e.uncertaintyMs + 1e-9) {
          throw new Error(`run ${run} step ${i}: offset ${offset} outside ${e.offsetMs} ± ${e.uncertaintyMs}`);
        }
        expect(d.state).toBe(Math.abs(e.offsetMs) > 2500 ? "SKEWED" : "OK");
      }
    }
  });

  test("boundsOf: the Date's second and the round trip bracket the offset", () => {
    expect(boundsOf({ sentMs: 10_000, receivedMs: 10_020, referenceSecondMs: 9_000 })).toEqual({ lowMs: 0, highMs: 1020 });
  });
});
