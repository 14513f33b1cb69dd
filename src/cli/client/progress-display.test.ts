import { describe, expect, test } from "bun:test";
import { ProgressDisplay, renderBar, renderPlain } from "./progress-display";

const line = (done: number, total: number, state = "RUNNING", attempt = 1) => ({
  progress: { done, total, failed: 0, ratePerS: 12.5, etaMs: 8000, fraction: total ? done / total : 0 },
  state,
  attempt,
});

describe("progress rendering", () => {
  test("the bar shows percent, calls, rate, ETA and state; a resubmitted task shows its attempt", () => {
    expect(renderBar(line(50, 100), 10)).toBe("[#####.....]  50%  50/100 calls  12.5/s  ETA 00:08  RUNNING");
    expect(renderBar(line(100, 100, "SUCCEEDED", 2), 10)).toBe("[##########] 100%  100/100 calls  12.5/s  ETA 00:08  SUCCEEDED  attempt 2");
    expect(renderPlain(line(1, 4))).toBe("progress: 1/4 calls (25%), 12.5 calls/s, ETA 00:08, RUNNING");
  });

  test("on a terminal the line is redrawn in place; in a pipe, plain lines at most every interval and on state changes", () => {
    let t = 0;
    const tty = { text: "", isTTY: true, write(s: string) { this.text += s; } };
    const d = new ProgressDisplay(tty, () => t, 100, 2000);
    d.update(line(1, 10));
    t = 50;
    d.update(line(2, 10)); // too soon to redraw
    t = 200;
    d.update(line(3, 10));
    d.finish();
    expect(tty.text.split("\r\x1b[2K").filter(Boolean).map((s) => s.slice(0, 16))).toEqual(["[##..............", "[#######.........", "[#######........."].map((s) => s.slice(0, 16)));
    expect(tty.text.endsWith("\n")).toBe(true);

    t = 0;
    const pipe = { text: "", write(s: string) { this.text += s; } };
    const p = new ProgressDisplay(pipe, () => t, 100, 2000);
    p.update(line(1, 10));
    t = 500;
    p.update(line(2, 10));
    t = 600;
    p.update(line(10, 10, "SUCCEEDED"));
    p.finish();
    expect(pipe.text).not.toContain("\r");
    expect(pipe.text.trim().split("\n").map((l) => l.split(",")[0])).toEqual(["progress: 1/10 calls (10%)", "progress: 10/10 calls (100%)", "progress: 10/10 calls (100%)"]);
  });
});
