import type { Decision } from "../core/decision";
import type { ClockMonitorEvent } from "./clock-monitor-events";
import type { ClockMonitorInstruction } from "./clock-monitor-instructions";
import { ClockOffsetCore } from "./clock-offset-core";

export type { ClockMonitorEvent } from "./clock-monitor-events";
export type { ClockMonitorInstruction } from "./clock-monitor-instructions";

/**
 * phaseDelayMs: the k-th sample's delay within its cycle, spread over a second (steps of 379 ms
 * mod 1000), so that samples land at different phases of etcd's second whatever the heartbeat
 * interval (2000 ms would otherwise sample the same phase forever) and their bounds narrow.
 */
export function phaseDelayMs(k: number): number {
  return (k * 379) % 1000;
}

export interface ClockMonitorCoreOptions {
  readonly maxOffsetMs: number;
  /** Samples taken at start, a phase step apart. */
  readonly startSamples: number;
  /** A heartbeat cycle takes no sample within this long of the last one (bounds etcd's load). */
  readonly minSpacingMs: number;
  /** Samples the estimate intersects. */
  readonly window: number;
}

/**
 * ClockMonitorCore decides when a long-running role samples its clock against etcd's: a burst of
 * `startSamples` at start (each 200 ms + a fifth of a phase step after the last ended), then at
 * most one per heartbeat cycle and per `minSpacingMs`, delayed by a rotating phase; one sample at
 * a time. It feeds ClockOffsetCore (the estimator) and turns its readings into the gauge and a log
 * line when the state changes. It never stops the role: a skewed Worker still serves, loudly.
 */
export class ClockMonitorCore {
  private readonly estimator: ClockOffsetCore;
  private k = 0;
  private burstLeft = 0;
  /** A sample was asked for and not yet reported. */
  private inFlight = false;
  /** When the next sample is due (null: none planned). */
  private dueAtMs: number | null = null;
  private lastSampleMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly opts: ClockMonitorCoreOptions) {
    this.estimator = new ClockOffsetCore({ maxOffsetMs: opts.maxOffsetMs, window: opts.window });
  }

  handle(event: ClockMonitorEvent, nowMs: number): Decision<ClockMonitorInstruction> {
    const out: ClockMonitorInstruction[] = [];
    switch (event.type) {
      case "started":
        this.burstLeft = this.opts.startSamples;
        if (this.burstLeft > 0 && !this.inFlight) this.dueAtMs = nowMs;
        break;
      case "heartbeatCycle":
        if (!this.inFlight && this.dueAtMs === null && nowMs - this.lastSampleMs >= this.opts.minSpacingMs) this.dueAtMs = nowMs + phaseDelayMs(this.k);
        break;
      case "sampled":
      case "sampleFailed": {
        if (!this.inFlight) throw new Error(`ClockMonitorCore: ${event.type} with no sample asked for`);
        this.inFlight = false;
        this.lastSampleMs = nowMs;
        const reading = this.estimator.handle(event).reply;
        const est = reading.estimate;
        if (est) out.push({ type: "reportOffset", offsetSeconds: est.offsetMs / 1000 });
        if (reading.transition && est) {
          if (reading.state === "SKEWED") out.push({ type: "logSkewed", estimate: est });
          else if (reading.transition.from === "SKEWED") out.push({ type: "logRecovered", estimate: est });
        }
        if (this.burstLeft > 0) this.dueAtMs = nowMs + 200 + phaseDelayMs(this.k) / 5;
        break;
      }
      case "timeAdvanced":
        break;
    }
    if (!this.inFlight && this.dueAtMs !== null && nowMs >= this.dueAtMs) {
      this.inFlight = true;
      this.dueAtMs = null;
      if (this.burstLeft > 0) this.burstLeft--;
      out.push({ type: "takeSample", k: ++this.k });
    }
    return { instructions: out, wakeAtMs: this.inFlight ? null : this.dueAtMs };
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    if (this.inFlight && this.dueAtMs !== null) throw new Error("a sample is planned while one is under way");
    if (this.burstLeft < 0 || this.burstLeft > this.opts.startSamples) throw new Error(`${this.burstLeft} burst samples left`);
    this.estimator.validateState();
  }
}
