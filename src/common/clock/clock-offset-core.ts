/**
 * How far this host's clock is from etcd's, from HTTP exchanges with etcd (its `Date` header):
 * the pure part. Coordinators compare a Worker's `lastHeartbeatMs` with their own clock, so a Worker
 * whose clock is off by a good part of the heartbeat timeout looks stale (or fresh when dead).
 *
 * Offsets are this host's clock minus the reference's (positive: this host is ahead).
 */
import type { Decision } from "../core/decision";

/** ClockSample is one exchange: local send and receive times, and the reference's `Date` (whole seconds, in ms). */
export interface ClockSample {
  readonly sentMs: number;
  readonly receivedMs: number;
  readonly referenceSecondMs: number;
}

/** OffsetBounds: the offset lies in (lowMs, highMs]. */
export interface OffsetBounds {
  readonly lowMs: number;
  readonly highMs: number;
}

export interface ClockOffsetEstimate {
  /** The middle of the bounds every recent sample agrees on. */
  readonly offsetMs: number;
  /** Half the width of those bounds: the offset is offsetMs ± this. */
  readonly uncertaintyMs: number;
  /** Samples the estimate rests on. */
  readonly samples: number;
}

/**
 * boundsOf: the reference wrote its `Date` D at some instant between our send and receive, when its
 * clock read somewhere in [D, D + 1000). So local − reference lies in (sent − D − 1000, received − D].
 */
export function boundsOf(s: ClockSample): OffsetBounds {
  return { lowMs: s.sentMs - s.referenceSecondMs - 1000, highMs: s.receivedMs - s.referenceSecondMs };
}

export type ClockEvent = { readonly type: "sampled"; readonly sample: ClockSample } | { readonly type: "sampleFailed"; readonly reason: string } | { readonly type: "timeAdvanced" };

export type ClockState = "UNKNOWN" | "OK" | "SKEWED";

/** ClockReading: the estimate after the event and the state; `transition` is set when the state changed (the adapter logs it). */
export interface ClockReading {
  readonly estimate: ClockOffsetEstimate | null;
  readonly state: ClockState;
  readonly transition: { readonly from: ClockState; readonly to: ClockState } | null;
}

export interface ClockOffsetCoreOptions {
  /** An offset beyond ± this is SKEWED (CLOCK_MAX_OFFSET_MS). */
  readonly maxOffsetMs: number;
  /** Recent samples kept; their bounds are intersected (a sample's alone is ± 500 ms or more). */
  readonly window: number;
}

/**
 * ClockOffsetCore keeps the bounds of the last `window` samples and intersects them, newest first,
 * stopping at the first older sample that disagrees (the clock was stepped, or the reference's):
 * samples taken at different phases of the reference's second narrow a 1-second `Date` down to
 * about the spread of those phases plus the round trip. The state is SKEWED when the estimate's
 * middle lies beyond ± maxOffsetMs. A failed sample changes nothing (etcd may be away; the last
 * estimate stands).
 */
export class ClockOffsetCore {
  private readonly recent: OffsetBounds[] = [];
  private state: ClockState = "UNKNOWN";
  private estimate: ClockOffsetEstimate | null = null;

  constructor(private readonly opts: ClockOffsetCoreOptions) {
    if (!(opts.window >= 1) || !(opts.maxOffsetMs >= 0)) throw new RangeError("ClockOffsetCore: window >= 1 and maxOffsetMs >= 0");
  }

  /**
   * handle applies one event; the decision's reply is the reading after it. The estimator asks for
   * no work and no wake-up (ClockMonitorCore decides when to sample). Time plays no part: a
   * sample carries its own.
   */
  handle(event: ClockEvent, _nowMs = 0): Decision<never, ClockReading> & { readonly reply: ClockReading } {
    return { instructions: [], reply: this.apply(event), wakeAtMs: null };
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    if (this.recent.length > this.opts.window) throw new Error(`${this.recent.length} samples kept, over the window of ${this.opts.window}`);
    if ((this.estimate === null) !== (this.state === "UNKNOWN")) throw new Error(`state ${this.state} with${this.estimate ? "" : "out"} an estimate`);
    if (this.estimate && this.estimate.uncertaintyMs < 0) throw new Error("an estimate of negative width");
  }

  private apply(event: ClockEvent): ClockReading {
    if (event.type !== "sampled") return { estimate: this.estimate, state: this.state, transition: null };
    this.recent.push(boundsOf(event.sample));
    if (this.recent.length > this.opts.window) this.recent.shift();
    let low = -Infinity;
    let high = Infinity;
    let used = 0;
    for (let i = this.recent.length - 1; i >= 0; i--) {
      const b = this.recent[i]!;
      const nextLow = Math.max(low, b.lowMs);
      const nextHigh = Math.min(high, b.highMs);
      if (nextLow > nextHigh) {
        this.recent.splice(0, i + 1); // older samples disagree with the newer ones: forget them
        break;
      }
      low = nextLow;
      high = nextHigh;
      used++;
    }
    this.estimate = { offsetMs: (low + high) / 2, uncertaintyMs: (high - low) / 2, samples: used };
    const next: ClockState = Math.abs(this.estimate.offsetMs) > this.opts.maxOffsetMs ? "SKEWED" : "OK";
    const transition = next === this.state ? null : { from: this.state, to: next };
    this.state = next;
    return { estimate: this.estimate, state: next, transition };
  }
}
