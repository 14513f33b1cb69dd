import { describe, expect, test } from "bun:test";
import { mulberry32 } from "../../../test/support/mulberry32";
import { ExecutorPoolCore, type PoolCoreTiming } from "./executor-pool-core";
import type { ExecutorPoolEvent } from "./executor-pool-core-events";
import type { ExecutorPoolInstruction } from "./executor-pool-core-instructions";

const timing: PoolCoreTiming = {
  pingIntervalMs: 1000,
  pingTimeoutMs: 5000,
  startTimeoutMs: 15000,
  backoffBaseMs: 100,
  backoffMaxMs: 10_000,
  healthyAfterMs: 30_000,
  maxInflightPerExecutor: 2,
  spread: 256, // every executor: the tests of spreading set their own
  stallMs: 100,
  wallClockCeilingMs: 3000,
  memoryLimitBytes: 1000,
  memorySampleMs: 50,
};

/** step feeds one event and checks every invariant after it. */
function step(core: ExecutorPoolCore, event: ExecutorPoolEvent, nowMs: number): ExecutorPoolInstruction[] {
  const d = core.handle(event, nowMs);
  core.validateState();
  // Once time was applied, the next wake-up is in the future: a driver never spins on a due deadline.
  if (event.type === "timeAdvanced" && d.wakeAtMs !== null) expect(d.wakeAtMs).toBeGreaterThan(nowMs);
  return d.instructions.filter((i) => i.type !== "sampleMemory");
}

/** indexes of the instructions of one type. */
function of(out: ExecutorPoolInstruction[], type: ExecutorPoolInstruction["type"]): number[] {
  return out.filter((i) => i.type === type).map((i) => i.index);
}

/** sent: the sendCall instructions as [callId, index]. */
function sent(out: ExecutorPoolInstruction[]): [string, number][] {
  return out.flatMap((i) => (i.type === "sendCall" ? [[i.callId, i.index] as [string, number]] : []));
}

function readyPool(n: number, t: PoolCoreTiming = timing): ExecutorPoolCore {
  const core = new ExecutorPoolCore(n, t);
  step(core, { type: "timeAdvanced" }, 0);
  for (let i = 0; i < n; i++) step(core, { type: "executorIntroduced", index: i }, 0);
  return core;
}

describe("ExecutorPoolCore wake-ups", () => {
  test("each decision says when the next thing falls due: starts, pings, a silent executor's end, a call's ceiling, the memory sample", () => {
    const core = new ExecutorPoolCore(1, timing);
    const wake = (e: ExecutorPoolEvent, t: number) => core.handle(e, t).wakeAtMs;
    expect(wake({ type: "timeAdvanced" }, 0)).toBe(50); // started: the Hello deadline (15001) and the first memory sample
    expect(wake({ type: "timeAdvanced" }, 50)).toBe(100);
    expect(wake({ type: "executorIntroduced", index: 0 }, 60)).toBe(100);
    const sampleFree: PoolCoreTiming = { ...timing, memoryLimitBytes: Number.POSITIVE_INFINITY };
    const quiet = new ExecutorPoolCore(1, sampleFree);
    expect(quiet.handle({ type: "timeAdvanced" }, 0).wakeAtMs).toBe(15_001); // no limit, nothing sampled: the Hello deadline
    expect(quiet.handle({ type: "executorIntroduced", index: 0 }, 10).wakeAtMs).toBe(1_000); // the first ping
    expect(quiet.handle({ type: "timeAdvanced" }, 1_000).wakeAtMs).toBe(2_000);
    quiet.handle({ type: "callSubmitted", callId: "c" }, 1_100);
    expect(quiet.handle({ type: "executorHeardFrom", index: 0 }, 1_500).wakeAtMs).toBe(2_000);
    expect(quiet.handle({ type: "callRunning", callId: "c" }, 1_600).wakeAtMs).toBe(2_000);
    // Heard of at each ping, the executor's next deadline is its call's ceiling.
    for (let t = 2_000; t <= 4_000; t += 1_000) {
      quiet.handle({ type: "executorHeardFrom", index: 0 }, t);
      quiet.handle({ type: "timeAdvanced" }, t);
    }
    expect(quiet.handle({ type: "executorHeardFrom", index: 0 }, 4_500).wakeAtMs).toBe(4_601); // 1600 + 3000 + 1
    const killed = quiet.handle({ type: "timeAdvanced" }, 4_601);
    expect(killed.instructions.map((i) => i.type)).toEqual(["killExecutor"]);
    expect(killed.wakeAtMs).toBeNull(); // told to die: nothing until its death is reported
    expect(quiet.handle({ type: "executorDied", index: 0 }, 4_700).wakeAtMs).toBe(4_800); // the restart, after its backoff
  });
});

describe("ExecutorPoolCore kills", () => {
  const kills = (out: ExecutorPoolInstruction[]) => out.filter((i) => i.type === "killExecutor");

  test("an executor over its memory limit is killed once per incarnation; its next incarnation is judged afresh", () => {
    const core = readyPool(2);
    expect(step(core, { type: "memorySampled", index: 0, rssBytes: 1000 }, 1)).toEqual([]); // at the limit: kept
    expect(step(core, { type: "memorySampled", index: 0, rssBytes: 1001 }, 2)).toEqual([{ type: "killExecutor", index: 0, executorId: "0.1", cause: "OVER_MEMORY", rssBytes: 1001 }]);
    expect(step(core, { type: "memorySampled", index: 0, rssBytes: 5000 }, 3)).toEqual([]); // told once
    expect(kills(step(core, { type: "memorySampled", index: 1, rssBytes: 10 }, 3))).toEqual([]);
    step(core, { type: "executorDied", index: 0 }, 4);
    expect(step(core, { type: "memorySampled", index: 0, rssBytes: 5000 }, 5)).toEqual([]); // dead: nothing to kill
    expect(of(step(core, { type: "timeAdvanced" }, 200), "startExecutor")).toEqual([0]);
    expect(step(core, { type: "memorySampled", index: 0, rssBytes: 5000 }, 201)).toEqual([{ type: "killExecutor", index: 0, executorId: "0.2", cause: "OVER_MEMORY", rssBytes: 5000 }]);
  });

  test("a call's wall clock runs while it runs and stops while it waits for IO; past the ceiling its executor is killed once, naming it", () => {
    const core = readyPool(1);
    expect(sent(step(core, { type: "callSubmitted", callId: "c" }, 0))).toEqual([["c", 0]]);
    const heard = (t: number) => step(core, { type: "executorHeardFrom", index: 0 }, t);
    step(core, { type: "callRunning", callId: "c" }, 10);
    heard(2000);
    expect(kills(step(core, { type: "timeAdvanced" }, 2000))).toEqual([]);
    step(core, { type: "callWaiting", callId: "c" }, 2500); // ran 2490 ms
    heard(6000);
    expect(kills(step(core, { type: "timeAdvanced" }, 6000))).toEqual([]); // waiting does not count
    step(core, { type: "callRunning", callId: "c" }, 6000);
    heard(9000);
    expect(kills(step(core, { type: "timeAdvanced" }, 9000))).toEqual([]); // 3000 ms: at the ceiling
    expect(kills(step(core, { type: "timeAdvanced" }, 9001))).toEqual([{ type: "killExecutor", index: 0, executorId: "0.1", cause: "WALL_CLOCK", callId: "c", ranMs: 3001 }]);
    expect(kills(step(core, { type: "timeAdvanced" }, 9500))).toEqual([]); // told once
    // The call ends with its executor: nothing of it stays.
    step(core, { type: "executorDied", index: 0 }, 9600);
    step(core, { type: "callEnded", callId: "c" }, 9600);
    step(core, { type: "callRunning", callId: "c" }, 9601); // late: an ended call does not run
    expect(kills(step(core, { type: "timeAdvanced" }, 20_000))).toEqual([]);
  });
});

describe("ExecutorPoolCore", () => {
  test("a fresh pool has every slot due to start, none ready: a call waits", () => {
    const core = new ExecutorPoolCore(3, timing);
    expect(step(core, { type: "timeAdvanced" }, 0)).toEqual([
      { type: "startExecutor", index: 0, executorId: "0.1" },
      { type: "startExecutor", index: 1, executorId: "1.1" },
      { type: "startExecutor", index: 2, executorId: "2.1" },
    ]);
    expect(step(core, { type: "callSubmitted", callId: "c" }, 1)).toEqual([]);
    expect(core.queuedCount()).toBe(1);
    expect(core.readyCount()).toBe(0);
  });

  test("calls go to the least-loaded ready executor; a full executor takes no more", () => {
    const core = readyPool(3);
    const picks: number[] = [];
    for (let i = 0; i < 6; i++) picks.push(...sent(step(core, { type: "callSubmitted", callId: `c${i}` }, 1)).map(([, index]) => index));
    expect(picks).toEqual([0, 1, 2, 0, 1, 2]);
    expect(step(core, { type: "callSubmitted", callId: "c6" }, 1)).toEqual([]); // all at maxInflightPerExecutor = 2
    expect(core.queuedCount()).toBe(1);
    expect(step(core, { type: "callEnded", callId: "c1" }, 2)).toEqual([{ type: "sendCall", callId: "c6", index: 1, executorId: "1.1" }]);
    expect(core.slots().map((s) => s.inflight)).toEqual([2, 2, 2]);
  });

  test("waiting calls leave in arrival order; one that ends while waiting leaves the queue", () => {
    const core = readyPool(1);
    step(core, { type: "callSubmitted", callId: "a" }, 0);
    step(core, { type: "callSubmitted", callId: "b" }, 0);
    for (const id of ["w1", "w2", "w3"]) expect(step(core, { type: "callSubmitted", callId: id }, 0)).toEqual([]);
    expect(step(core, { type: "callEnded", callId: "w2" }, 1)).toEqual([]); // cancelled while waiting
    expect(core.queuedCount()).toBe(2);
    expect(sent(step(core, { type: "callEnded", callId: "a" }, 2))).toEqual([["w1", 0]]);
    expect(sent(step(core, { type: "callEnded", callId: "b" }, 3))).toEqual([["w3", 0]]);
    expect(step(core, { type: "callEnded", callId: "nobody" }, 4)).toEqual([]);
  });

  test("starting executors get no calls until they are ready; ids carry the generation", () => {
    const core = new ExecutorPoolCore(1, timing);
    expect(step(core, { type: "timeAdvanced" }, 0)).toEqual([{ type: "startExecutor", index: 0, executorId: "0.1" }]);
    expect(step(core, { type: "callSubmitted", callId: "c" }, 5)).toEqual([]);
    expect(step(core, { type: "executorIntroduced", index: 0 }, 10)).toEqual([{ type: "sendCall", callId: "c", index: 0, executorId: "0.1" }]);
    expect(step(core, { type: "executorDied", index: 0 }, 20)).toEqual([{ type: "scheduleRestart", index: 0, executorId: "0.1", restartAtMs: 120 }]);
    expect(step(core, { type: "timeAdvanced" }, 200)).toEqual([{ type: "startExecutor", index: 0, executorId: "0.2" }]);
    expect(core.executorId(0)).toBe("0.2");
  });

  test("a Hello from a slot that is not STARTING changes nothing (its executor was already counted dead)", () => {
    // The soak's race: the executor's exit is seen before the Hello it sent just before dying.
    const core = new ExecutorPoolCore(1, timing);
    step(core, { type: "timeAdvanced" }, 0);
    step(core, { type: "callSubmitted", callId: "c" }, 1);
    step(core, { type: "executorDied", index: 0 }, 2);
    expect(step(core, { type: "executorIntroduced", index: 0 }, 3)).toEqual([]);
    expect(core.slots()[0]!.state).toBe("DEAD");
    expect(core.readyCount()).toBe(0);
    expect(core.queuedCount()).toBe(1);
  });

  test("pings go out every interval; no message within the timeout marks the executor hung", () => {
    const core = readyPool(1);
    expect(of(step(core, { type: "timeAdvanced" }, 999), "pingExecutor")).toEqual([]);
    expect(step(core, { type: "timeAdvanced" }, 1000)).toEqual([{ type: "pingExecutor", index: 0, executorId: "0.1" }]);
    expect(of(step(core, { type: "timeAdvanced" }, 1500), "pingExecutor")).toEqual([]);
    step(core, { type: "executorHeardFrom", index: 0 }, 1200);
    expect(of(step(core, { type: "timeAdvanced" }, 6200), "killHungExecutor")).toEqual([]);
    expect(step(core, { type: "timeAdvanced" }, 6201)).toEqual([{ type: "killHungExecutor", index: 0, executorId: "0.1", cause: "NO_PONG" }]);
  });

  test("an executor that never says hello within the start timeout is hung", () => {
    const core = new ExecutorPoolCore(1, timing);
    step(core, { type: "timeAdvanced" }, 0);
    expect(step(core, { type: "timeAdvanced" }, 15_000)).toEqual([]);
    expect(step(core, { type: "timeAdvanced" }, 15_001)).toEqual([{ type: "killHungExecutor", index: 0, executorId: "0.1", cause: "NO_HELLO" }]);
  });

  test("one step lists the hung executors first, then the starts, then the pings", () => {
    const core = new ExecutorPoolCore(3, timing);
    step(core, { type: "timeAdvanced" }, 0);
    step(core, { type: "executorIntroduced", index: 0 }, 0);
    step(core, { type: "executorIntroduced", index: 2 }, 0);
    step(core, { type: "executorDied", index: 0 }, 0); // due to start again at 100
    step(core, { type: "executorHeardFrom", index: 2 }, 14_000);
    expect(step(core, { type: "timeAdvanced" }, 15_001).map((i) => [i.type, i.index])).toEqual([
      ["killHungExecutor", 1],
      ["startExecutor", 0],
      ["pingExecutor", 2],
    ]);
  });

  test("restarts back off exponentially up to the cap, and a healthy spell forgives earlier deaths", () => {
    const core = new ExecutorPoolCore(1, timing);
    let now = 0;
    step(core, { type: "timeAdvanced" }, now);
    const delays: number[] = [];
    for (let i = 0; i < 9; i++) {
      step(core, { type: "executorIntroduced", index: 0 }, now);
      const [restart] = step(core, { type: "executorDied", index: 0 }, now);
      if (restart?.type !== "scheduleRestart") throw new Error("expected a scheduleRestart");
      const at = restart.restartAtMs;
      delays.push(at - now);
      expect(of(step(core, { type: "timeAdvanced" }, at - 1), "startExecutor")).toEqual([]);
      expect(of(step(core, { type: "timeAdvanced" }, at), "startExecutor")).toEqual([0]);
      now = at;
    }
    expect(delays).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
    step(core, { type: "executorIntroduced", index: 0 }, now);
    expect(step(core, { type: "executorDied", index: 0 }, now + 30_000)).toEqual([
      { type: "scheduleRestart", index: 0, executorId: "0.10", restartAtMs: now + 30_000 + 100 },
    ]);
  });

  test("executorDied is idempotent for one incarnation, clears its calls, and their late ends change nothing", () => {
    const core = readyPool(1);
    step(core, { type: "callSubmitted", callId: "c" }, 0);
    const first = step(core, { type: "executorDied", index: 0 }, 50);
    expect(first).toEqual([{ type: "scheduleRestart", index: 0, executorId: "0.1", restartAtMs: 150 }]);
    expect(step(core, { type: "executorDied", index: 0 }, 60)).toEqual([]);
    expect(core.slots()[0]!.inflight).toBe(0);
    expect(core.slots()[0]!.restartAtMs).toBe(150);
    expect(step(core, { type: "callEnded", callId: "c" }, 70)).toEqual([]);
    expect(core.slots()[0]!.inflight).toBe(0);
  });

  test("a start is hopeless once every executor that is not ready has died before its Hello", () => {
    // Three executors start from one interpreter and one PYTHONPATH; two die at start, one is slow.
    const core = new ExecutorPoolCore(3, timing);
    step(core, { type: "timeAdvanced" }, 0);
    step(core, { type: "executorDied", index: 0 }, 100);
    step(core, { type: "executorDied", index: 1 }, 120);
    expect(core.startHopeless(1)).toBe(false); // executor 2 may still say Hello
    expect(core.startHopeless(3)).toBe(true); // waiting for all three cannot succeed
    step(core, { type: "executorDied", index: 2 }, 150);
    expect(core.startHopeless(1)).toBe(true);
    // A slot that later comes up clears its start death; a death after Hello is no start death.
    expect(of(step(core, { type: "timeAdvanced" }, 300), "startExecutor")).toEqual([0, 1, 2]);
    step(core, { type: "executorIntroduced", index: 0 }, 350);
    expect(core.startHopeless(1)).toBe(false);
    step(core, { type: "executorDied", index: 0 }, 400);
    expect(core.slots()[0]!.diedAtStart).toBe(false);
  });

  test("misuse is refused: a call submitted twice, a slot that does not exist, no slots at all", () => {
    const core = readyPool(1);
    step(core, { type: "callSubmitted", callId: "c" }, 0);
    expect(() => core.handle({ type: "callSubmitted", callId: "c" }, 1)).toThrow("submitted twice");
    expect(() => core.handle({ type: "executorDied", index: 1 }, 1)).toThrow("no executor slot 1");
    expect(() => new ExecutorPoolCore(0, timing)).toThrow("count must be an integer >= 1");
    expect(() => new ExecutorPoolCore(2, { ...timing, spread: 0 })).toThrow("spread must be an integer >= 1");
  });

  test("random events keep every invariant; every call is sent at most once, to a READY executor with room", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = mulberry32(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const n = 1 + int(4);
      const core = new ExecutorPoolCore(n, { ...timing, spread: 1 + int(3) });
      let now = 0;
      let nextCall = 0;
      const live = new Set<string>();
      const sentTo = new Map<string, string>();
      for (let k = 0; k < 2000; k++) {
        now += int(400);
        const roll = rnd();
        let event: ExecutorPoolEvent;
        if (roll < 0.25) event = { type: "callSubmitted", callId: `c${nextCall++}` };
        else if (roll < 0.45 && live.size > 0) event = { type: "callEnded", callId: [...live][int(live.size)]! };
        else if (roll < 0.6) event = { type: "executorIntroduced", index: int(n) };
        else if (roll < 0.7) event = { type: "executorDied", index: int(n) };
        else if (roll < 0.8) event = { type: "executorHeardFrom", index: int(n) };
        else event = { type: "timeAdvanced" };
        const before = core.slots();
        const out = step(core, event, now);
        if (event.type === "callSubmitted") live.add(event.callId);
        if (event.type === "callEnded") live.delete(event.callId);
        for (const i of out) {
          if (i.type !== "sendCall") continue;
          expect(sentTo.has(i.callId)).toBe(false);
          expect(live.has(i.callId)).toBe(true);
          sentTo.set(i.callId, i.executorId);
          expect(core.slots()[i.index]!.state).toBe("READY");
          expect(i.executorId).toBe(core.executorId(i.index));
        }
        if (event.type === "executorDied" && before[event.index]!.state !== "DEAD") {
          // The dead executor's calls are gone from the core: the adapter fails them.
          for (const [id, exec] of sentTo) if (exec === `${event.index}.${before[event.index]!.generation}`) live.delete(id);
        }
        expect(core.slots().reduce((sum, s) => sum + s.inflight, 0) + core.queuedCount()).toBeLessThanOrEqual(live.size);
      }
    }
  });
});

describe("ExecutorPoolCore: one owner per executor incarnation", () => {
  const submit = (core: ExecutorPoolCore, callId: string, ownerKey: string, at = 1) => step(core, { type: "callSubmitted", callId, ownerKey }, at);

  test("a fresh executor takes the first owner's call; that owner's calls spread over fresh and own executors, least loaded first", () => {
    const core = readyPool(3);
    expect(sent(submit(core, "a1", "A"))).toEqual([["a1", 0]]);
    expect(sent(submit(core, "a2", "A"))).toEqual([["a2", 1]]);
    expect(sent(submit(core, "b1", "B"))).toEqual([["b1", 2]]);
    expect(core.slots().map((s) => s.owner)).toEqual(["A", "A", "B"]);
    // A's executors are full (2 each) only after two more; B never gets A's executors.
    expect(sent(submit(core, "a3", "A"))).toEqual([["a3", 0]]);
    expect(sent(submit(core, "a4", "A"))).toEqual([["a4", 1]]);
    expect(submit(core, "a5", "A")).toEqual([]);
    expect(sent(submit(core, "b2", "B"))).toEqual([["b2", 2]]);
    expect(core.queuedCount()).toBe(1);
  });

  test("a call of a new owner waits while every executor serves calls of others, then recycles the first idle one; no backoff", () => {
    const core = readyPool(2);
    submit(core, "a1", "A");
    submit(core, "b1", "B");
    expect(submit(core, "c1", "C", 2)).toEqual([]); // both busy: nothing to recycle yet
    expect(step(core, { type: "callEnded", callId: "a1" }, 3)).toEqual([{ type: "recycleExecutor", index: 0, executorId: "0.1" }]);
    expect(core.slots()[0]).toMatchObject({ state: "DEAD", owner: null, restartAtMs: 3, inflight: 0 });
    // The adapter's kill reports the death of the recycled incarnation: nothing more happens.
    expect(step(core, { type: "executorDied", index: 0 }, 3)).toEqual([]);
    expect(step(core, { type: "timeAdvanced" }, 3)).toEqual([{ type: "startExecutor", index: 0, executorId: "0.2" }]);
    expect(sent(step(core, { type: "executorIntroduced", index: 0 }, 4))).toEqual([["c1", 0]]);
    expect(core.slots().map((s) => s.owner)).toEqual(["C", "B"]);
  });

  test("a waiting call that cannot be placed does not hold back a later call of an owner that can", () => {
    const core = readyPool(2);
    submit(core, "a1", "A");
    submit(core, "a2", "A");
    submit(core, "a3", "A");
    submit(core, "a4", "A");
    expect(submit(core, "a5", "A")).toEqual([]); // A's executors are full
    expect(sent(step(core, { type: "callEnded", callId: "a1" }, 2))).toEqual([["a5", 0]]);
    expect(submit(core, "a6", "A")).toEqual([]);
    expect(submit(core, "b1", "B")).toEqual([]); // B has none: one of A's drains for it
    expect(sent(step(core, { type: "callEnded", callId: "a2" }, 3))).toEqual([["a6", 1]]); // A's call, waiting first, passes
    expect(core.queuedCount()).toBe(1);
  });

  test("an executor that dies forgets its owner; its restart takes any owner", () => {
    const core = readyPool(1);
    submit(core, "a1", "A");
    step(core, { type: "executorDied", index: 0 }, 10);
    step(core, { type: "callEnded", callId: "a1" }, 10);
    expect(core.slots()[0]!.owner).toBeNull();
    step(core, { type: "timeAdvanced" }, 200);
    step(core, { type: "executorIntroduced", index: 0 }, 200);
    expect(sent(submit(core, "b1", "B", 201))).toEqual([["b1", 0]]);
  });

  test("calls without an owner share one (the empty owner), as before owners existed", () => {
    const core = readyPool(2);
    expect(sent(step(core, { type: "callSubmitted", callId: "x" }, 1))).toEqual([["x", 0]]);
    expect(sent(submit(core, "y", "", 1))).toEqual([["y", 1]]);
    expect(core.slots().map((s) => s.owner)).toEqual(["", ""]);
  });
});

test("an owner waiting behind executors another owner keeps busy gets one drained: it takes no new calls, and is recycled once empty", () => {
  const core = readyPool(2);
  const submit = (callId: string, ownerKey: string, at = 1) => step(core, { type: "callSubmitted", callId, ownerKey }, at);
  submit("big1", "BIG");
  submit("big2", "BIG");
  expect(submit("small1", "SMALL")).toEqual([]);
  expect(core.slots().map((s) => s.owner)).toEqual(["BIG", "BIG"]);
  // BIG keeps submitting: its new calls go to the executor that is not draining.
  expect(sent(submit("big3", "BIG"))).toEqual([["big3", 1]]);
  expect(sent(submit("big4", "BIG"))).toEqual([]); // executor 1 is full (2), executor 0 drains
  // The drained executor empties, is recycled, restarts, and SMALL runs there.
  expect(step(core, { type: "callEnded", callId: "big1" }, 2)).toEqual([{ type: "recycleExecutor", index: 0, executorId: "0.1" }]);
  step(core, { type: "timeAdvanced" }, 2);
  expect(sent(step(core, { type: "executorIntroduced", index: 0 }, 3))).toEqual([["small1", 0]]);
});

describe("ExecutorPoolCore: an owner's calls spread over `spread` executors that keep up", () => {
  const submit = (core: ExecutorPoolCore, callId: string, at: number) => sent(step(core, { type: "callSubmitted", callId }, at));

  test("calls go to the least loaded of the first `spread` executors; the others stay idle", () => {
    const core = readyPool(4, { ...timing, spread: 2, maxInflightPerExecutor: 8 });
    const picks = ["c0", "c1", "c2", "c3", "c4", "c5"].flatMap((id) => submit(core, id, 1).map(([, index]) => index));
    expect(picks).toEqual([0, 1, 0, 1, 0, 1]);
    expect(core.slots().map((s) => s.inflight)).toEqual([3, 3, 0, 0]);
  });

  test("a full executor is out of reach: the next one in order counts instead", () => {
    const core = readyPool(3, { ...timing, spread: 1 });
    expect(["c0", "c1", "c2"].flatMap((id) => submit(core, id, 1))).toEqual([["c0", 0], ["c1", 0], ["c2", 1]]);
  });

  test("an executor none of whose calls ended for stallMs is stalled: it takes no calls, and the spread reaches one more", () => {
    const core = readyPool(4, { ...timing, spread: 2, maxInflightPerExecutor: 8 });
    expect(submit(core, "c0", 0)).toEqual([["c0", 0]]);
    expect(submit(core, "c1", 0)).toEqual([["c1", 1]]);
    expect(submit(core, "c2", 99)).toEqual([["c2", 0]]); // 99 ms without an end: still keeping up
    // At 100 ms both are stalled (a long step, a slow backend): executors 2 and 3 are in reach.
    expect(submit(core, "c3", 100)).toEqual([["c3", 2]]);
    expect(submit(core, "c4", 100)).toEqual([["c4", 3]]);
    // A call of executor 1 ends: it keeps up again, and it is the least loaded in reach.
    step(core, { type: "callEnded", callId: "c1" }, 150);
    expect(submit(core, "c5", 150)).toEqual([["c5", 1]]);
    // An end also restarts the count of an executor that still holds calls.
    step(core, { type: "callEnded", callId: "c2" }, 160);
    expect(submit(core, "c6", 160)).toEqual([["c6", 0]]);
  });

  test("an idle executor's stall counts from its first call, not from its last end", () => {
    const core = readyPool(2, { ...timing, spread: 1, maxInflightPerExecutor: 8 });
    expect(submit(core, "c0", 0)).toEqual([["c0", 0]]);
    step(core, { type: "callEnded", callId: "c0" }, 1);
    expect(submit(core, "c1", 5000)).toEqual([["c1", 0]]);
    expect(submit(core, "c2", 5050)).toEqual([["c2", 0]]);
  });

  test("when every executor in reach is stalled, the least loaded of them takes the call, as without a spread", () => {
    const core = readyPool(2, { ...timing, spread: 1, maxInflightPerExecutor: 8 });
    expect(submit(core, "c0", 0)).toEqual([["c0", 0]]);
    expect(submit(core, "c1", 100)).toEqual([["c1", 1]]); // executor 0 stalled
    expect(submit(core, "c2", 200)).toEqual([["c2", 0]]); // both stalled, one call each: the lowest index
    expect(submit(core, "c3", 200)).toEqual([["c3", 1]]);
  });

  test("each owner spreads over its own executors and fresh ones; the rest are left for other owners", () => {
    const core = readyPool(4, { ...timing, spread: 2, maxInflightPerExecutor: 8 });
    const own = (callId: string, ownerKey: string) => sent(step(core, { type: "callSubmitted", callId, ownerKey }, 1));
    expect([own("a1", "A"), own("a2", "A"), own("a3", "A"), own("b1", "B"), own("b2", "B"), own("b3", "B")].flat()).toEqual([
      ["a1", 0],
      ["a2", 1],
      ["a3", 0],
      ["b1", 2],
      ["b2", 3],
      ["b3", 2],
    ]);
    expect(core.slots().map((s) => s.owner)).toEqual(["A", "A", "B", "B"]);
  });
});
