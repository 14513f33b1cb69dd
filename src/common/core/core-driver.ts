import type { Logger } from "../logging/logger";
import type { Decision, DecidingCore } from "./decision";

/** Timers the driver arms; tests pass their own to step time by hand. */
export interface DriverTimers {
  set(fn: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

const REAL_TIMERS: DriverTimers = {
  set: (fn, delayMs) => setTimeout(fn, delayMs),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** setTimeout's longest delay; a later wake-up is armed at this and re-armed when it fires. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

export interface CoreDriverOptions<E, I> {
  /** Names the core in the log. */
  readonly name: string;
  /** Carries out one instruction; it may `post` events (applied after the current step). */
  readonly carryOut: (instruction: I) => void;
  /** The core's clock (monotonic milliseconds, as the core's `nowMs`). */
  readonly nowMs: () => number;
  /** The event the timer sends when it fires. */
  readonly timeAdvanced: E;
  readonly log?: Logger;
  /** Call the core's validateState() after every step (tests and simulations). */
  readonly validate?: boolean;
  readonly timers?: DriverTimers;
}

/**
 * CoreDriver runs a decision core for its adapter: it feeds the core one event at a time,
 * carries out each decision's instructions in order, applies the events those instructions posted
 * after them (a core is never re-entered mid-step, and no instruction overtakes an earlier one),
 * logs the notes of steps that changed nothing, and keeps one timer at the core's latest
 * `wakeAtMs`, which sends `timeAdvanced`.
 *
 * A timer already armed for that time or an earlier one is kept: at worst it fires early, the core
 * finds nothing due and the timer is re-armed. (Re-arming after every step, a clearTimeout and a
 * setTimeout per event, was 4% of a busy Worker's CPU.)
 */
export class CoreDriver<E, I> {
  private readonly queued: E[] = [];
  private applying = false;
  private timer: unknown = null;
  private timerAtMs = Number.POSITIVE_INFINITY;
  private wakeAtMs: number | null = null;
  private stopped = false;
  private readonly timers: DriverTimers;

  constructor(
    private readonly core: DecidingCore<E, I>,
    private readonly opts: CoreDriverOptions<E, I>,
  ) {
    this.timers = opts.timers ?? REAL_TIMERS;
  }

  /**
   * decide hands the core one event and returns its decision without carrying it out, for an
   * adapter that must act between the two (answer a client first, then start the work); pass the
   * decision to `apply` next, before any other event.
   */
  decide<R = unknown>(event: E): Decision<I, R> {
    const d = this.core.handle(event, this.opts.nowMs()) as Decision<I, R>;
    if (this.opts.validate) this.core.validateState();
    this.wakeAtMs = d.wakeAtMs;
    if (d.note) this.opts.log?.debug({ core: this.opts.name, reason: d.note.reason }, d.note.message);
    return d;
  }

  /** apply carries out a decision, then the events its instructions posted, and re-arms the timer; it returns the reply. */
  apply<R>(decision: Decision<I, R>): R | undefined {
    const outer = !this.applying;
    this.applying = true;
    try {
      for (const i of decision.instructions) this.opts.carryOut(i);
      if (outer) {
        while (this.queued.length > 0) {
          for (const i of this.decide(this.queued.shift()!).instructions) this.opts.carryOut(i);
        }
      }
    } finally {
      if (outer) {
        this.applying = false;
        this.arm();
      }
    }
    return decision.reply;
  }

  /** send: decide and apply one event now; returns the core's reply. */
  send<R = unknown>(event: E): R | undefined {
    return this.apply(this.decide<R>(event));
  }

  /** post: an event to apply after the step being carried out (at once when none is). */
  post(event: E): void {
    this.queued.push(event);
    if (!this.applying) this.apply({ instructions: [], wakeAtMs: this.wakeAtMs });
  }

  /** advance applies what is due as of now (the timer does this; so may reads that must not see the past). */
  advance(): void {
    this.send(this.opts.timeAdvanced);
  }

  /** stop disarms the timer for good (shutdown); events sent after still get decisions. */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private disarm(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.timerAtMs = Number.POSITIVE_INFINITY;
  }

  private arm(): void {
    const at = this.stopped ? null : this.wakeAtMs;
    if (at === null) return; // an armed timer stays: it fires, finds nothing and is not re-armed
    if (this.timer !== null && this.timerAtMs <= at) return;
    this.disarm();
    this.timerAtMs = at;
    const delay = Math.min(MAX_TIMER_DELAY_MS, Math.max(0, Math.ceil(at - this.opts.nowMs())));
    this.timer = this.timers.set(() => {
      this.timer = null;
      this.timerAtMs = Number.POSITIVE_INFINITY;
      if (!this.stopped) this.advance();
    }, delay);
  }
}
