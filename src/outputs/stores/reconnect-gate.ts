import { backoffMs } from "../../common/retry/backoff";

/**
 * ReconnectGate decides, without IO or a clock of its own, whether a table store may try the
 * database now. After a failure that says the database is unreachable it closes for a backoff that
 * doubles from `minMs` to `maxMs`; while closed, calls fail fast (retryable) instead of each waiting
 * out a connect timeout; the first success opens it again and resets the backoff.
 */
export class ReconnectGate {
  private failures = 0;
  private closedUntilMs = 0;

  constructor(
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {
    if (!(minMs >= 0 && maxMs >= minMs)) throw new RangeError(`reconnect backoff: expected 0 <= min <= max, got ${minMs}..${maxMs}`);
  }

  /** mayTry: 0 when a call may go to the database now, else the ms until it may. */
  mayTry(nowMs: number): number {
    return Math.max(0, this.closedUntilMs - nowMs);
  }

  /** failed: the database was unreachable at nowMs; returns the backoff it now waits. */
  failed(nowMs: number): number {
    const backoff = backoffMs(this.minMs, this.maxMs, this.failures);
    this.failures++;
    this.closedUntilMs = nowMs + backoff;
    return backoff;
  }

  succeeded(): void {
    this.failures = 0;
    this.closedUntilMs = 0;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
