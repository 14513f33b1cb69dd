import type { SlotReservation } from "./slot-reservation";

/**
 * ReservationEvent is everything that happens to one ReserveWorkerSlot call, as the adapter sees
 * it: the request, the answer to the one RequestTaskSlot it has outstanding, and the client going
 * away. Each reservation has at most one request outstanding, so every event gets exactly one
 * instruction back.
 */
export type ReservationEvent = ReservationRequested | WorkerAnswered | ClientCancelled | TimeAdvanced;

/** Time passed. Nothing of a reservation falls due by itself (each RPC carries its deadline); accepted like every core's. */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}

/** A client called ReserveWorkerSlot{task_id}. `reservationId` is the adapter's, unique per call. */
export interface ReservationRequested {
  readonly type: "reservationRequested";
  readonly reservationId: number;
  readonly taskId: string;
}

/** The Worker answered the reservation's outstanding RequestTaskSlot (or its deadline passed: an uncertain SlotError). */
export interface WorkerAnswered {
  readonly type: "workerAnswered";
  readonly reservationId: number;
  readonly answer: SlotReservation;
}

/** The client cancelled the call before the next request went out. */
export interface ClientCancelled {
  readonly type: "clientCancelled";
  readonly reservationId: number;
}
