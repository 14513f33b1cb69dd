import type { BlockxErrorCode } from "../sdk-error";

/** The retryable answers of ReserveWorkerSlot / SubmitTask (SYSTEM.md section 2). */
export type RetryableFailure = "UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "ABORTED";

export interface RetryPolicyConfig {
  /** Aborted: a slot may dangle on some Worker until its TTL passes; wait at least this long. */
  readonly slotTtlMs: number;
  /** ResourceExhausted: first back-off; doubles per consecutive refusal up to backoffMaxMs. */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** Unavailable: retried at once, spread by up to this much jitter. */
  readonly unavailableJitterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicyConfig = Object.freeze({
  slotTtlMs: 5000,
  backoffBaseMs: 100,
  backoffMaxMs: 5000,
  unavailableJitterMs: 50,
});

export type RetryDecision =
  | { readonly kind: "retry"; readonly delayMs: number; readonly nextCoordinator: boolean }
  | { readonly kind: "giveUp"; readonly code: BlockxErrorCode };

/**
 * ReservePolicy decides what a client does after a retryable refusal, following the client
 * rules of SYSTEM.md section 2: Unavailable -> retry now with jitter on the next Coordinator
 * of the list (after a full round of the list, back off so a dead cluster is not spun on);
 * ResourceExhausted -> exponential back-off with jitter; Aborted -> wait at least one slot TTL.
 * It never retries past the deadline. Pure: time and randomness (`rand` in [0, 1)) come in.
 */
export class ReservePolicy {
  private consecutiveUnavailable = 0;
  private consecutiveExhausted = 0;

  constructor(
    private readonly config: RetryPolicyConfig,
    private readonly coordinatorCount: number,
  ) {}

  /** succeeded resets the back-off after a reservation went through. */
  succeeded(): void {
    this.consecutiveUnavailable = 0;
    this.consecutiveExhausted = 0;
  }

  decide(failure: RetryableFailure, nowMs: number, deadlineMs: number, rand: number): RetryDecision {
    const left = deadlineMs - nowMs;
    const giveUp: RetryDecision = { kind: "giveUp", code: failure === "RESOURCE_EXHAUSTED" ? "NO_CAPACITY" : "UNREACHABLE" };
    if (left <= 0) return giveUp;
    if (failure === "UNAVAILABLE") {
      this.consecutiveUnavailable++;
      const rounds = Math.floor((this.consecutiveUnavailable - 1) / Math.max(1, this.coordinatorCount));
      const delayMs =
        rounds === 0 ? rand * this.config.unavailableJitterMs : this.backoff(rounds - 1, rand);
      return { kind: "retry", delayMs: Math.min(delayMs, left), nextCoordinator: true };
    }
    if (failure === "RESOURCE_EXHAUSTED") {
      const delayMs = this.backoff(this.consecutiveExhausted++, rand);
      return { kind: "retry", delayMs: Math.min(delayMs, left), nextCoordinator: false };
    }
    // ABORTED: retrying before the TTL could meet our own dangling slot; past the deadline, give up.
    const delayMs = this.config.slotTtlMs * (1 + 0.2 * rand);
    if (delayMs >= left) return { kind: "giveUp", code: "NO_CAPACITY" };
    return { kind: "retry", delayMs, nextCoordinator: false };
  }

  /** backoff: base * 2^n capped, with jitter between half and the whole of it. */
  private backoff(n: number, rand: number): number {
    const full = Math.min(this.config.backoffMaxMs, this.config.backoffBaseMs * 2 ** Math.min(n, 30));
    return full * (0.5 + 0.5 * rand);
  }
}
