import type { NowMs } from "./monotonic-clock";

/** How often the clock looks at its event loop, and the lateness of a look that is still not a stall. */
const TICK_MS = 25;
const TOLERANCE_MS = 100;

/**
 * RunningClock: milliseconds during which this process could run, that is monotonic time less the
 * time its event loop stood still beyond a short tolerance (a SIGSTOP, a frozen VM or container,
 * a swap storm). What a Worker charges to a user's call (its IO budget, its wall-clock ceiling)
 * and how long it waits for an executor's pong are measured on it: while the Worker itself was
 * stopped it could neither read an answer nor send the next request, so after it resumes a
 * user's call must not fail as BUDGET_EXCEEDED, and a healthy executor must not be killed as
 * hung, for time the Worker spent frozen (found by the soak: a 7 s SIGSTOP failed a call with
 * "cpu 0 ms + io 7230 ms").
 *
 * A stall is counted at the first read after it, before the clock's own tick has run: on resume
 * the event loop runs due timers and socket reads in an order nobody here controls. A loop busy
 * for longer than the tolerance counts as stalled too: the process could not serve anyone then
 * either. Readings never go backwards.
 */
export class RunningClock {
  private lastTickMs: number;
  private stalledMs = 0;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly monotonicMs: NowMs = () => performance.timeOrigin + performance.now(),
    private readonly toleranceMs: number = TOLERANCE_MS,
  ) {
    this.lastTickMs = monotonicMs();
  }

  /** start ticks every `tickMs` (a timer that does not hold the process open). */
  start(tickMs: number = TICK_MS): this {
    this.timer ??= setInterval(() => this.tick(), tickMs);
    this.timer.unref?.();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** nowMs: monotonic milliseconds less every stall so far, the one being resumed from included. */
  nowMs(): number {
    const now = this.monotonicMs();
    return now - this.stalledMs - this.stallSinceTick(now);
  }

  /** stalledTotalMs: how long this process has stood still so far. */
  stalledTotalMs(): number {
    return this.stalledMs + this.stallSinceTick(this.monotonicMs());
  }

  /** tick records the stall that ends now, if any (the timer calls it; tests may too). */
  tick(): void {
    const now = this.monotonicMs();
    this.stalledMs += this.stallSinceTick(now);
    this.lastTickMs = now;
  }

  private stallSinceTick(now: number): number {
    return Math.max(0, now - this.lastTickMs - this.toleranceMs);
  }
}

let processClock: RunningClock | null = null;

/** processRunningClock: the one RunningClock of this process, started on first use (stalls are process-wide). */
export function processRunningClock(): RunningClock {
  return (processClock ??= new RunningClock().start());
}

/** runningNowMs: this process's RunningClock, epoch-anchored like monotonicNowMs. */
export const runningNowMs: NowMs = () => processRunningClock().nowMs();
