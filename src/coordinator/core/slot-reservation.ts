import type { ErrorCode } from "../../common/error-code";
import type { TaskSnapshot } from "../../gen/worker/v1/worker";

/**
 * SlotError is a Worker's answer to RequestTaskSlot that carries no slot. `mayHaveAllocated`
 * says the request may have reached the Worker (timeout, cancel, abort, broken stream): the
 * Coordinator must then retry the same Worker with the same task id, never switch Workers.
 */
export interface SlotError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly mayHaveAllocated: boolean;
}

/** SlotReservation: a Worker's answer to RequestTaskSlot, a snapshot (with its slot id) or a SlotError. */
export type SlotReservation = { readonly snapshot: TaskSnapshot; readonly err?: undefined } | { readonly snapshot?: undefined; readonly err: SlotError };
