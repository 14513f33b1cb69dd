/**
 * Decision is what every decision core's `handle(event, nowMs)` returns: the one shape of a step.
 *
 * - `instructions`: what the adapter carries out, in order (IO, timers, replies to third parties).
 * - `reply`: the answer to the event, for events that ask something (a request's snapshot, a
 *   call's retry decision); absent for events that only report a fact.
 * - `wakeAtMs`: when the core next wants `timeAdvanced` (an expiry, a deadline, a sample due), on
 *   the same clock as `nowMs`; null when nothing is due until another event arrives. It is always
 *   the core's state after this step, so the latest decision's value is the one that counts.
 * - `note`: why the event changed nothing (a late or duplicate report, a request refused), for
 *   the driver's debug log.
 */
export interface Decision<I, R = undefined> {
  readonly instructions: readonly I[];
  readonly reply?: R;
  readonly wakeAtMs: number | null;
  readonly note?: DecisionNote;
}

/** DecisionNote: a machine-readable reason and a sentence for a person. */
export interface DecisionNote {
  readonly reason: string;
  readonly message: string;
}

/**
 * DecidingCore is a sans-IO decision core: one doorway, `handle(event, nowMs)`, time passed in and
 * wake-ups handed out as data; `validateState()` throws on a broken invariant (tests and
 * simulations call it after every step; the driver does when asked to).
 */
export interface DecidingCore<E, I> {
  handle(event: E, nowMs: number): Decision<I, unknown>;
  validateState(): void;
}
