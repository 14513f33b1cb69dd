import { describe, expect, test } from "bun:test";
import { mulberry32 } from "../../../test/support/mulberry32";
import { AdmissionCore } from "./admission-core";
import type { AdmissionEvent } from "./admission-core-events";
import type { AdmissionInstruction } from "./admission-core-instructions";

/** step feeds one event and checks the invariants afterwards. */
function stepper(capacity: number, queueMax: number) {
  const core = new AdmissionCore({ capacity, queueMax });
  return {
    core,
    step(event: AdmissionEvent, nowMs: number): AdmissionInstruction[] {
      const d = core.handle(event, nowMs);
      core.validateState();
      expect(d.wakeAtMs).toBe(core.nextDeadlineMs());
      return [...d.instructions];
    },
  };
}

const arrive = (id: string, deadlineMs = Infinity): AdmissionEvent => ({ type: "requestArrived", id, deadlineMs });

describe("AdmissionCore", () => {
  test("an idle invoker starts a request at once; the next ones queue while every executor is busy", () => {
    const { core, step } = stepper(2, 3);
    expect(step(arrive("a"), 0)).toEqual([{ type: "startCall", id: "a", queuedMs: 0 }]);
    expect(step(arrive("b"), 1)).toEqual([{ type: "startCall", id: "b", queuedMs: 0 }]);
    expect(step(arrive("c"), 2)).toEqual([]);
    expect(core.counts()).toEqual({ running: 2, queued: 1 });
  });

  test("a finished call hands its executor to the oldest queued request (FIFO) with its wait", () => {
    const { step } = stepper(1, 5);
    step(arrive("a"), 0);
    step(arrive("b"), 10);
    step(arrive("c"), 20);
    expect(step({ type: "callFinished", id: "a" }, 50)).toEqual([{ type: "startCall", id: "b", queuedMs: 40 }]);
    expect(step({ type: "callFinished", id: "b" }, 70)).toEqual([{ type: "startCall", id: "c", queuedMs: 50 }]);
  });

  test("a full queue refuses the next request at once, naming the bound", () => {
    const { core, step } = stepper(1, 2);
    step(arrive("a"), 0);
    step(arrive("b"), 0);
    step(arrive("c"), 0);
    expect(step(arrive("d"), 0)).toEqual([{ type: "rejectQueueFull", id: "d", queueMax: 2 }]);
    expect(core.counts()).toEqual({ running: 1, queued: 2 });
  });

  test("queueMax 0: nothing waits; a request either starts or is refused", () => {
    const { step } = stepper(1, 0);
    expect(step(arrive("a"), 0)).toEqual([{ type: "startCall", id: "a", queuedMs: 0 }]);
    expect(step(arrive("b"), 0)).toEqual([{ type: "rejectQueueFull", id: "b", queueMax: 0 }]);
  });

  test("a queued request whose caller's deadline passes is dropped without running, at the timer", () => {
    const { core, step } = stepper(1, 5);
    step(arrive("a"), 0);
    step(arrive("b", 100), 0);
    step(arrive("c", 300), 0);
    expect(core.nextDeadlineMs()).toBe(100);
    expect(step({ type: "timeAdvanced" }, 99)).toEqual([]);
    expect(step({ type: "timeAdvanced" }, 100)).toEqual([{ type: "dropExpired", id: "b", queuedMs: 100 }]);
    expect(core.nextDeadlineMs()).toBe(300);
    // The expired request never starts, even when the executor frees up.
    expect(step({ type: "callFinished", id: "a" }, 150)).toEqual([{ type: "startCall", id: "c", queuedMs: 150 }]);
    expect(core.nextDeadlineMs()).toBeNull();
  });

  test("an expiry seen at the same moment as a free executor drops first, then starts the next live one", () => {
    const { step } = stepper(1, 5);
    step(arrive("a"), 0);
    step(arrive("b", 100), 0);
    step(arrive("c", 1000), 0);
    expect(step({ type: "callFinished", id: "a" }, 200)).toEqual([
      { type: "dropExpired", id: "b", queuedMs: 200 },
      { type: "startCall", id: "c", queuedMs: 200 },
    ]);
  });

  test("a request arriving already past its deadline is dropped, even with an idle executor", () => {
    const { step } = stepper(1, 5);
    expect(step(arrive("late", 10), 10)).toEqual([{ type: "dropExpired", id: "late", queuedMs: 0 }]);
  });

  test("a caller that hangs up while queued leaves the queue; one that hangs up while running keeps its executor until the call ends", () => {
    const { core, step } = stepper(1, 5);
    step(arrive("a"), 0);
    step(arrive("b"), 0);
    expect(step({ type: "requestAbandoned", id: "b" }, 1)).toEqual([]);
    expect(core.counts()).toEqual({ running: 1, queued: 0 });
    expect(step({ type: "requestAbandoned", id: "a" }, 2)).toEqual([]);
    expect(core.counts()).toEqual({ running: 1, queued: 0 });
    step({ type: "callFinished", id: "a" }, 3);
    expect(core.counts()).toEqual({ running: 0, queued: 0 });
  });

  test("once draining, new requests are refused while queued ones still run", () => {
    const { step } = stepper(1, 5);
    step(arrive("a"), 0);
    step(arrive("b"), 0);
    step({ type: "drainingStarted" }, 1);
    expect(step(arrive("c"), 2)).toEqual([{ type: "rejectDraining", id: "c" }]);
    expect(step({ type: "callFinished", id: "a" }, 3)).toEqual([{ type: "startCall", id: "b", queuedMs: 3 }]);
  });

  test("a duplicate id is the adapter's bug and throws", () => {
    const { step } = stepper(1, 5);
    step(arrive("a"), 0);
    expect(() => step(arrive("a"), 0)).toThrow("arrived twice");
  });

  test("bad configuration is refused", () => {
    expect(() => new AdmissionCore({ capacity: 0, queueMax: 1 })).toThrow("capacity");
    expect(() => new AdmissionCore({ capacity: 1, queueMax: -1 })).toThrow("queueMax");
  });

  test("random interleavings keep every invariant and account for every request exactly once", () => {
    for (let seed = 1; seed <= 50; seed++) {
      const rand = mulberry32(seed);
      const { core, step } = stepper(1 + Math.floor(rand() * 4), Math.floor(rand() * 6));
      const outcome = new Map<string, string>();
      const running: string[] = [];
      const queued = new Set<string>();
      let now = 0;
      let next = 0;
      const apply = (out: AdmissionInstruction[]) => {
        for (const i of out) {
          expect(outcome.has(i.id) && outcome.get(i.id) !== "queued").toBe(false);
          queued.delete(i.id);
          outcome.set(i.id, i.type);
          if (i.type === "startCall") running.push(i.id);
        }
      };
      for (let n = 0; n < 300; n++) {
        now += Math.floor(rand() * 20);
        const r = rand();
        if (r < 0.45) {
          const id = `r${next++}`;
          const out = step(arrive(id, rand() < 0.5 ? Infinity : now + Math.floor(rand() * 100)), now);
          if (out.every((i) => i.id !== id)) {
            queued.add(id);
            outcome.set(id, "queued");
          }
          apply(out);
        } else if (r < 0.8 && running.length > 0) {
          const id = running.splice(Math.floor(rand() * running.length), 1)[0]!;
          apply(step({ type: "callFinished", id }, now));
        } else if (r < 0.85 && queued.size > 0) {
          const id = [...queued][0]!;
          queued.delete(id);
          outcome.set(id, "abandoned");
          apply(step({ type: "requestAbandoned", id }, now));
        } else {
          apply(step({ type: "timeAdvanced" }, now));
        }
        expect(core.counts()).toEqual({ running: running.length, queued: queued.size });
      }
    }
  });
});
