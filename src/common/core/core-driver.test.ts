import { describe, expect, test } from "bun:test";
import { CoreDriver, type DriverTimers } from "./core-driver";
import type { Decision } from "./decision";

type Ev = { type: "add"; n: number } | { type: "echo"; s: string } | { type: "pair"; s: string } | { type: "timeAdvanced" } | { type: "noop" };
type Ins = { type: "say"; s: string };

/** A toy core: `add` schedules a wake-up n ms later; timeAdvanced says "due" for each due one; `echo` replies. */
class ToyCore {
  due: number[] = [];
  steps = 0;
  validations = 0;
  broken = false;
  handle(e: Ev, nowMs: number): Decision<Ins, string> {
    this.steps++;
    const out: Ins[] = [];
    let reply: string | undefined;
    switch (e.type) {
      case "add":
        this.due.push(nowMs + e.n);
        out.push({ type: "say", s: `added ${e.n}` });
        break;
      case "echo":
        reply = e.s;
        out.push({ type: "say", s: `echo ${e.s}` });
        break;
      case "pair":
        out.push({ type: "say", s: `${e.s}1` }, { type: "say", s: `${e.s}2` });
        break;
      case "timeAdvanced":
        for (const d of this.due.filter((d) => d <= nowMs)) out.push({ type: "say", s: `due ${d}` });
        this.due = this.due.filter((d) => d > nowMs);
        break;
      case "noop":
        return { instructions: [], wakeAtMs: this.wake(), note: { reason: "nothing", message: "a noop changes nothing" } };
    }
    return { instructions: out, reply, wakeAtMs: this.wake() };
  }
  wake(): number | null {
    return this.due.length ? Math.min(...this.due) : null;
  }
  validateState(): void {
    this.validations++;
    if (this.broken) throw new Error("broken");
  }
}

class ManualTimers implements DriverTimers {
  armed: { fn: () => void; at: number; id: number }[] = [];
  private next = 0;
  constructor(private readonly clock: { now: number }) {}
  set(fn: () => void, delayMs: number): unknown {
    const id = this.next++;
    this.armed.push({ fn, at: this.clock.now + delayMs, id });
    return id;
  }
  clear(h: unknown): void {
    this.armed = this.armed.filter((t) => t.id !== h);
  }
  /** runUntil moves the clock to `ms`, firing due timers in order. */
  runUntil(ms: number): void {
    for (;;) {
      const t = this.armed.filter((x) => x.at <= ms).sort((a, b) => a.at - b.at)[0];
      if (!t) break;
      this.armed = this.armed.filter((x) => x !== t);
      this.clock.now = t.at;
      t.fn();
    }
    this.clock.now = ms;
  }
}

function rig(validate = false) {
  const clock = { now: 0 };
  const timers = new ManualTimers(clock);
  const core = new ToyCore();
  const said: string[] = [];
  const logged: unknown[] = [];
  const log = { debug: (o: unknown, m: string) => logged.push([o, m]) } as never;
  let driver!: CoreDriver<Ev, Ins>;
  const carry = { hook: (_s: string) => {} };
  driver = new CoreDriver<Ev, Ins>(core, {
    name: "toy",
    carryOut: (i) => {
      said.push(i.s);
      carry.hook(i.s);
    },
    nowMs: () => clock.now,
    timeAdvanced: { type: "timeAdvanced" },
    log,
    validate,
    timers,
  });
  return { clock, timers, core, said, logged, driver, carry };
}

describe("CoreDriver", () => {
  test("send carries out the decision's instructions and returns its reply", () => {
    const { driver, said } = rig();
    expect(driver.send<string>({ type: "echo", s: "hi" })).toBe("hi");
    expect(said).toEqual(["echo hi"]);
  });

  test("events posted while instructions are carried out are applied after them, in order, never mid-step", () => {
    const { driver, said, carry } = rig();
    carry.hook = (s) => {
      if (s === "echo a") {
        driver.post({ type: "echo", s: "b" });
        driver.post({ type: "echo", s: "c" });
      }
    };
    driver.send({ type: "echo", s: "a" });
    expect(said).toEqual(["echo a", "echo b", "echo c"]);
    // Posted while the first of two instructions is carried out: after the second, not between.
    said.length = 0;
    carry.hook = (s) => {
      if (s === "p1") driver.post({ type: "echo", s: "late" });
    };
    driver.send({ type: "pair", s: "p" });
    expect(said).toEqual(["p1", "p2", "echo late"]);
  });

  test("a post outside a step is applied at once", () => {
    const { driver, said } = rig();
    driver.post({ type: "echo", s: "x" });
    expect(said).toEqual(["echo x"]);
  });

  test("one timer at the core's wakeAtMs sends timeAdvanced; an earlier timer is kept, a later deadline waits for it", () => {
    const { driver, said, timers } = rig();
    driver.send({ type: "add", n: 100 });
    expect(timers.armed.map((t) => t.at)).toEqual([100]);
    driver.send({ type: "add", n: 300 }); // later: the timer at 100 stays, no second timer
    expect(timers.armed.map((t) => t.at)).toEqual([100]);
    driver.send({ type: "add", n: 50 }); // earlier: re-armed
    expect(timers.armed.map((t) => t.at)).toEqual([50]);
    timers.runUntil(1_000);
    expect(said.filter((s) => s.startsWith("due"))).toEqual(["due 50", "due 100", "due 300"]);
    expect(timers.armed).toEqual([]);
  });

  test("stop disarms the timer and nothing fires after", () => {
    const { driver, said, timers } = rig();
    driver.send({ type: "add", n: 10 });
    driver.stop();
    timers.runUntil(100);
    expect(said).toEqual(["added 10"]);
    driver.send({ type: "add", n: 10 });
    expect(timers.armed).toEqual([]);
  });

  test("decide then apply: the adapter acts between the decision and its instructions", () => {
    const { driver, said } = rig();
    const d = driver.decide<string>({ type: "echo", s: "q" });
    expect(said).toEqual([]);
    expect(driver.apply(d)).toBe("q");
    expect(said).toEqual(["echo q"]);
  });

  test("a note is logged with the core's name; validate runs validateState after every step and surfaces a broken one", () => {
    const { driver, logged, core } = rig(true);
    driver.send({ type: "noop" });
    expect(logged).toEqual([[{ core: "toy", reason: "nothing" }, "a noop changes nothing"]]);
    expect(core.validations).toBe(1);
    core.broken = true;
    expect(() => driver.send({ type: "noop" })).toThrow("broken");
  });

  test("an instruction that throws leaves the driver usable", () => {
    const { driver, said, carry } = rig();
    carry.hook = (s) => {
      if (s === "echo boom") throw new Error("boom");
    };
    expect(() => driver.send({ type: "echo", s: "boom" })).toThrow("boom");
    driver.post({ type: "echo", s: "after" });
    expect(said).toEqual(["echo boom", "echo after"]);
  });
});
