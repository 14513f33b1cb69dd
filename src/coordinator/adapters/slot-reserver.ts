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

export type SlotReservation = { readonly snapshot: TaskSnapshot; readonly err?: undefined } | { readonly snapshot?: undefined; readonly err: SlotError };

export interface RequestTaskSlotArgs {
  readonly taskId: string;
  readonly ttlMs: number;
  /** Per-attempt deadline for the Worker RPC. */
  readonly timeoutMs: number;
}

/**
 * SlotReserver asks one Worker for a slot. The gRPC implementation is WorkerRPCClient;
 * handler tests plug in a scripted one. It never throws: every outcome is a SlotReservation.
 */
export interface SlotReserver {
  requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation>;
}
