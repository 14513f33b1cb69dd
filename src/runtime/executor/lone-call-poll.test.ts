import { describe, expect, test } from "bun:test";
import { LoneCallPoll } from "./lone-call-poll";

/** A poll on a hand-driven clock and scheduler: `turns` runs what is scheduled, one loop turn at a time. */
function harness(windowUs: number) {
  let now = 0;
  let queue: (() => void)[] = [];
  const poll = new LoneCallPoll(windowUs, (f) => queue.push(f), () => now);
  return {
    poll,
    advance: (us: number) => (now += us),
    /** turns: how many loop turns ran until nothing was scheduled (each turn advances the clock by `stepUs`). */
    turns(stepUs = 10, max = 10_000): number {
      let n = 0;
      while (queue.length > 0 && n < max) {
        const q = queue;
        queue = [];
        for (const f of q) f();
        now += stepUs;
        n++;
      }
      return n;
    },
    pending: () => queue.length,
  };
}

/** expectWindowRunsOut: the poll under way ends by itself once its 250 µs window has passed (turns of 10 µs). */
function expectWindowRunsOut(h: ReturnType<typeof harness>): void {
  const turns = h.turns(10);
  expect(turns).toBeGreaterThanOrEqual(25);
  expect(turns).toBeLessThanOrEqual(27);
  expect(h.pending()).toBe(0);
}

describe("LoneCallPoll", () => {
  test("a lone call's frame keeps the loop polling until its answer is heard", () => {
    const h = harness(250);
    h.poll.sent(true);
    expect(h.pending()).toBe(1);
    h.turns(10, 5); // 5 turns, 50 µs: still polling
    expect(h.pending()).toBe(1);
    h.poll.heard();
    expect(h.turns()).toBe(1); // the turn that sees the answer ends the poll
    expect(h.pending()).toBe(0);
    expect(h.poll.polled).toBe(1);
  });

  test("the poll stops once the window has passed without an answer", () => {
    const h = harness(250);
    h.poll.sent(true);
    expectWindowRunsOut(h);
  });

  test("with more than one call in the pool there is no poll", () => {
    const h = harness(250);
    h.poll.sent(false);
    expect(h.pending()).toBe(0);
    expect(h.poll.polled).toBe(0);
  });

  test("after an answer that came late, lone calls are not polled for until one answers within the window", () => {
    const h = harness(250);
    h.poll.sent(true);
    h.turns(10); // the window passes
    h.advance(1000);
    h.poll.heard(); // late
    h.poll.sent(true);
    expect(h.pending()).toBe(0); // not worth polling
    h.advance(400);
    h.poll.heard(); // late again
    h.poll.sent(true);
    expect(h.pending()).toBe(0);
    h.advance(40);
    h.poll.heard(); // in time: polling is worth it again
    h.poll.sent(true);
    expect(h.pending()).toBe(1);
  });

  test("one poll at a time: frames sent while polling extend it, they do not start another", () => {
    const h = harness(250);
    h.poll.sent(true);
    h.turns(10, 20); // 200 µs
    h.poll.heard();
    h.poll.sent(true); // a resume after a suspension: the window starts again
    expect(h.pending()).toBe(1);
    expect(h.poll.polled).toBe(2);
    expectWindowRunsOut(h); // counted from the resume, not from the first frame
  });

  test("a window of 0 never polls, and a stopped poll never polls again", () => {
    const off = harness(0);
    off.poll.sent(true);
    expect(off.pending()).toBe(0);
    const h = harness(250);
    h.poll.sent(true);
    h.poll.stop();
    h.turns();
    h.poll.sent(true);
    expect(h.pending()).toBe(0);
  });
});
