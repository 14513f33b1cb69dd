import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

/** HeartbeatScheduleEvent: the facts the publisher adapter reports, in the past tense. */
export type HeartbeatScheduleEvent = TimeAdvanced | SampleTaken | SampleFailed | PutSucceeded | PutFailed | LeaseReplaced;

/** The driver's timer fired (at the decision's wakeAtMs, or earlier: then nothing is due yet). */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}

/** The adapter sampled the Worker's state (after a takeSample). */
export interface SampleTaken {
  readonly type: "sampleTaken";
  readonly sample: WorkerHeartbeat;
}

/** Sampling threw (a bug in a gauge): nothing to put; sample again a tick later. */
export interface SampleFailed {
  readonly type: "sampleFailed";
}

/** The put the core asked for is in etcd. */
export interface PutSucceeded {
  readonly type: "putSucceeded";
  readonly heartbeat: WorkerHeartbeat;
}

/** The put failed (etcd away, lease unknown to etcd). */
export interface PutFailed {
  readonly type: "putFailed";
}

/** The lease was lost or dropped: the key is gone (or will be) with it, whatever was put under it. */
export interface LeaseReplaced {
  readonly type: "leaseReplaced";
}
