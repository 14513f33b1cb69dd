import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

/** Why a heartbeat is put (a label of blockx_worker_heartbeat_puts_total). */
export type PutReason =
  | "FIRST" // nothing was put under the current lease yet
  | "EVERY_INTERVAL" // mode EVERY_INTERVAL puts every sample
  | "CAPACITY_CHANGED" // taskSlots or free capacity differs from the last put
  | "RED_LINE_CROSSED" // cpu, memory or error rate is on the other side of its red line
  | "REFRESH" // nothing changed, but the last put is refreshMs old
  | "RETRY"; // the previous put failed

/** HeartbeatScheduleInstruction: what the adapter must do, imperatively. */
export type HeartbeatScheduleInstruction = TakeSample | PutHeartbeat;

/** Sample the Worker's state now and report sampleTaken (or sampleFailed). */
export interface TakeSample {
  readonly type: "takeSample";
}

/** Put this value at the Worker's key under the current lease, then report putSucceeded/putFailed. */
export interface PutHeartbeat {
  readonly type: "putHeartbeat";
  readonly heartbeat: WorkerHeartbeat;
  readonly reason: PutReason;
}
