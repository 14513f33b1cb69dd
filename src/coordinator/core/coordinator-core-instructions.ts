import type { Decision } from "../../common/core/decision";
import type { CoordinatorError } from "./coordinator-error";
import type { CandidateRequested, CoordinatorEvent } from "./coordinator-core-events";

/**
 * CandidateResult is the reply to candidateRequested: a Worker address, or the reason there is
 * none (UNAVAILABLE or NO_EXECUTABLE_SLOT).
 */
export type CandidateResult = { workerAddr: string; err?: undefined } | { workerAddr?: undefined; err: CoordinatorError };

/** ReplyOf is the reply type of an event: CandidateResult for candidateRequested, undefined otherwise. */
export type ReplyOf<E extends CoordinatorEvent> = E extends CandidateRequested ? CandidateResult : undefined;

/**
 * CoordinatorDecision is what one step of CoordinatorCore returns (the cores' one Decision shape).
 * The core holds the Worker view and does no work of its own in the world (no instructions, no
 * timer: the grace period and heartbeat ages are judged when a candidate is requested): its whole
 * output is the reply to candidateRequested, which ReservationCore turns into a requestSlot or a
 * reply to the client. The other events answer `reply: undefined`.
 */
export type CoordinatorDecision<R = CandidateResult | undefined> = Decision<never, R> & { readonly reply: R };
