import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

/**
 * CoordinatorEvent is everything that can happen to CoordinatorCore: facts, in the past tense, that
 * the adapters feed through `CoordinatorCore.handle(event, nowMs)`. The union is closed; `handle`
 * switches over it exhaustively.
 *
 * Five events come from the registry watcher (WorkerViewEvent), four from the reservation loop
 * (the Worker's answer to one RequestTaskSlot), and one is the reservation loop asking for a
 * candidate: candidateRequested, the only event with a reply (a CandidateResult).
 */
export type CoordinatorEvent = WorkerViewEvent | CandidateRequested | SlotFeedbackEvent | TimeAdvanced;

/** Time passed. Nothing in the core falls due by itself (its decisions never ask to wake); accepted like every core's. */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}

/** WorkerViewEvent: the events of the registry watcher (EtcdWorkerWatcher feeds exactly these). */
export type WorkerViewEvent = WorkerListLoaded | WorkerUpdated | WorkerRemoved | WatchDisconnected | WatchReconnected;

/** SlotFeedbackEvent: how a Worker answered one RequestTaskSlot. Each names the Worker's address. */
export type SlotFeedbackEvent = SlotReserved | SlotRejected | WorkerWasFull | SlotUnconfirmed;

/**
 * A full etcd list of every prefix arrived: it replaces the view. Workers already known keep their
 * three local fields (failure count, penalty, breaker); Workers missing from it are dropped; an
 * address listed twice: the later entry wins. Marks the core initialized, for good. O(n log n).
 */
export interface WorkerListLoaded {
  readonly type: "workerListLoaded";
  readonly workers: readonly WorkerHeartbeat[];
}

/**
 * The watch saw one Worker's heartbeat (a put). A Worker seen for the first time starts with zero
 * local fields. The heartbeat must satisfy WorkerHeartbeatSchema (the adapter parses it); it is
 * copied, never retained.
 */
export interface WorkerUpdated {
  readonly type: "workerUpdated";
  readonly heartbeat: WorkerHeartbeat;
}

/**
 * A Worker's key left etcd under every prefix. Its local fields are forgotten: if it comes back,
 * it starts from zero. An unknown address changes nothing.
 */
export interface WorkerRemoved {
  readonly type: "workerRemoved";
  readonly workerAddr: string;
}

/**
 * A watch broke. Only the FIRST disconnect counts: later ones before watchReconnected leave the
 * time alone, so the grace period runs from the first.
 */
export interface WatchDisconnected {
  readonly type: "watchDisconnected";
}

/** Every prefix is listed again and watching: the disconnect is cleared. */
export interface WatchReconnected {
  readonly type: "watchReconnected";
}

/**
 * One attempt of a ReserveWorkerSlot request needs a Worker: the reply is the first, by
 * candidateRanksBefore, of the Workers that pass every hard filter (not in `excludeAddrs`,
 * `now - lastHeartbeatMs <= heartbeatTimeoutMs`, cpu/memory/error rate not above their red lines,
 * breaker not open, freeCapacity > 0). Deterministic: `taskId` does not affect the pick. Errors:
 * UNAVAILABLE when not ready or when the view is non-empty and every heartbeat is stale;
 * NO_EXECUTABLE_SLOT otherwise when nothing passes (including an empty view).
 *
 * It moves Workers whose breaker expired by `nowMs` back into the index; that is bookkeeping, the
 * reply is a function of the events so far and the arguments only.
 */
export interface CandidateRequested {
  readonly type: "candidateRequested";
  readonly taskId: string;
  readonly excludeAddrs: ReadonlySet<string>;
}

/** The Worker granted a slot: its failure count, penalty and breaker are cleared. Unknown address: nothing. */
export interface SlotReserved {
  readonly type: "slotReserved";
  readonly workerAddr: string;
}

/** The Worker explicitly rejected the request: it counts toward the penalty and the breaker. Unknown address: nothing. */
export interface SlotRejected {
  readonly type: "slotRejected";
  readonly workerAddr: string;
}

/**
 * The Worker had no free slot (NO_SLOT). It changes nothing: a full Worker is healthy, and its next
 * heartbeat will show the capacity.
 */
export interface WorkerWasFull {
  readonly type: "workerWasFull";
  readonly workerAddr: string;
}

/**
 * The reservation could not be confirmed on the Worker after every retry (timeouts, answers without
 * a slot id): it counts toward the penalty and the breaker. Unknown address: nothing.
 */
export interface SlotUnconfirmed {
  readonly type: "slotUnconfirmed";
  readonly workerAddr: string;
}
