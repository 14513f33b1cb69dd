import type { Decision } from "../../common/core/decision";
import type { ReserveWorkerSlotResponse } from "../../gen/coordinator/v1/coordinator";
import type { CoordinatorError } from "./coordinator-error";

/**
 * ReservationDecision: one step of ReservationCore (the cores' one Decision shape): the requestSlot
 * to send, if any, and, once the reservation is over, its Reply.
 */
export type ReservationDecision = Decision<RequestSlot, Reply>;

/** ReservationInstruction: what a step amounts to: ask one Worker for a slot, or answer the client (the reservation is then over). */
export type ReservationInstruction = RequestSlot | Reply;

export interface RequestSlot {
  readonly type: "requestSlot";
  readonly reservationId: number;
  readonly workerAddr: string;
  readonly taskId: string;
  readonly ttlMs: number;
  /** Deadline of this one RPC; past it the adapter reports an uncertain answer. */
  readonly timeoutMs: number;
}

/** Outcome labels of blockx_coordinator_reservations_total. */
export type ReservationOutcome = "reserved" | "invalid_argument" | "unavailable" | "no_executable_slot" | "all_rejected" | "permission_denied" | "uncertain" | "cancelled";

export interface Reply {
  readonly type: "reply";
  readonly reservationId: number;
  readonly result: { readonly ok: true; readonly response: ReserveWorkerSlotResponse } | { readonly ok: false; readonly err: CoordinatorError };
  readonly outcome: ReservationOutcome;
}
