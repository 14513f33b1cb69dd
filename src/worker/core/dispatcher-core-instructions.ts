import type { Decision } from "../../common/core/decision";
import type { DispatchedCall } from "./dispatcher-core-events";

/** StartCall: send this call to the executor pool now. */
export interface StartCall<C> {
  readonly type: "startCall";
  readonly call: DispatchedCall<C>;
}

export type DispatcherInstruction<C> = StartCall<C>;

/** What happens to a finished call or sub-call attempt. */
export type CallDecision =
  | { readonly kind: "done" }
  | { readonly kind: "retryScheduled"; readonly attempt: number; readonly atMs: number }
  | { readonly kind: "failed"; readonly reason: "not_retryable" | "attempts_exhausted" };

/**
 * DispatcherDecision is one step's result (the cores' one Decision shape): `reply` answers
 * callFinished and subCallFinished (absent for other events); `instructions` are the calls that may
 * start now (only timeAdvanced hands calls out, so a runner that fails a task on a call's result
 * never starts more of that task's calls first); `wakeAtMs` is when a retry becomes due (null:
 * none waits), for the runner's one timer.
 */
export type DispatcherDecision<C> = Decision<DispatcherInstruction<C>, CallDecision>;
