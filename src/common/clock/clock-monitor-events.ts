import type { ClockSample } from "./clock-offset-core";

/** ClockMonitorEvent: what the monitor's adapter reports. */
export type ClockMonitorEvent =
  /** The role started: take the start-up burst. */
  | { readonly type: "started" }
  /** The heartbeat loop went round: a sample is due unless one is recent or under way. */
  | { readonly type: "heartbeatCycle" }
  | { readonly type: "sampled"; readonly sample: ClockSample }
  | { readonly type: "sampleFailed"; readonly reason: string }
  /** The driver's timer fired (at the decision's wakeAtMs, or earlier). */
  | { readonly type: "timeAdvanced" };
