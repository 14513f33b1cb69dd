import type { SlotReservation } from "../core/slot-reservation";

export type { SlotError, SlotReservation } from "../core/slot-reservation";

export interface RequestTaskSlotArgs {
  readonly taskId: string;
  readonly ttlMs: number;
  /** Per-attempt deadline for the Worker RPC. */
  readonly timeoutMs: number;
  /** The identity key of the client the slot is for ("" = anonymous, BLOCKX_INSECURE). */
  readonly clientIdentity: string;
}

/**
 * SlotReserver asks one Worker for a slot. The gRPC implementation is WorkerRPCClient;
 * handler tests plug in a scripted one. It never throws: every outcome is a SlotReservation.
 */
export interface SlotReserver {
  requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation>;
}
