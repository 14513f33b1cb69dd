/**
 * AdmissionEvent is everything that can happen to AdmissionCore: facts, in the past tense, that
 * the AdmissionGate feeds through `AdmissionCore.handle(event, nowMs)`. The union is closed;
 * `handle` switches over it exhaustively.
 */
export type AdmissionEvent = RequestArrived | CallFinished | RequestAbandoned | TimeAdvanced | DrainingStarted;

/** A request arrived; `deadlineMs` is when its caller stops waiting (Infinity: never). Ids are unique. */
export interface RequestArrived {
  readonly type: "requestArrived";
  readonly id: string;
  readonly deadlineMs: number;
}

/** An admitted request's call ended (any outcome). */
export interface CallFinished {
  readonly type: "callFinished";
  readonly id: string;
}

/** The caller went away (cancelled the RPC) before its request finished. */
export interface RequestAbandoned {
  readonly type: "requestAbandoned";
  readonly id: string;
}

/** The adapter's timer fired (at or after `nextDeadlineMs()`), or the adapter just wants time applied. */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}

/** Shutdown began: no new request is admitted from now on; queued ones still run. */
export interface DrainingStarted {
  readonly type: "drainingStarted";
}
