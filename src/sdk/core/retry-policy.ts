import type { BlockxErrorCode } from "../sdk-error";
import { backoffMs } from "../../common/retry/backoff";

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
 * It never waits past the deadline. Pure: time and randomness (`rand` in [0, 1)) come in.
 */
export class ReservePolicy {
  private consecutiveUnavailable = 0;
  private consecutiveExhausted = 0;
  /** A capacity refusal (ResourceExhausted, Aborted) was seen: giving up then means NO_CAPACITY. */
  private sawCapacityRefusal = false;

  constructor(
    private readonly config: RetryPolicyConfig,
    private readonly coordinatorCount: number,
  ) {}

  /** succeeded resets the back-off after a reservation went through. */
  succeeded(): void {
    this.consecutiveUnavailable = 0;
    this.consecutiveExhausted = 0;
    this.sawCapacityRefusal = false;
  }

  /**
   * decide: retry after `delayMs`, or give up when the wait would reach the deadline (a call
   * made at the deadline could not succeed). Giving up says NO_CAPACITY when the cluster refused
   * for capacity at least once since the last success, UNREACHABLE when it never answered.
   */
  decide(failure: RetryableFailure, nowMs: number, deadlineMs: number, rand: number): RetryDecision {
    if (failure !== "UNAVAILABLE") this.sawCapacityRefusal = true;
    const left = deadlineMs - nowMs;
    let delayMs: number;
    let nextCoordinator = false;
    if (failure === "UNAVAILABLE") {
      this.consecutiveUnavailable++;
      const rounds = Math.floor((this.consecutiveUnavailable - 1) / Math.max(1, this.coordinatorCount));
      delayMs = rounds === 0 ? rand * this.config.unavailableJitterMs : this.backoff(rounds - 1, rand);
      nextCoordinator = true;
    } else if (failure === "RESOURCE_EXHAUSTED") {
      delayMs = this.backoff(this.consecutiveExhausted++, rand);
    } else {
      // ABORTED: retrying before the TTL could meet our own dangling slot.
      delayMs = this.config.slotTtlMs * (1 + 0.2 * rand);
    }
    if (delayMs >= left) return { kind: "giveUp", code: this.sawCapacityRefusal ? "NO_CAPACITY" : "UNREACHABLE" };
    return { kind: "retry", delayMs, nextCoordinator };
  }

  /** backoff: base * 2^n capped, with jitter between half and the whole of it. */
  private backoff(n: number, rand: number): number {
    const full = backoffMs(this.config.backoffBaseMs, this.config.backoffMaxMs, n);
    return full * (0.5 + 0.5 * rand);
  }
}
