import type { ClockOffsetEstimate } from "./clock-offset-core";

/** ClockMonitorInstruction: what the adapter does. */
export type ClockMonitorInstruction =
  /** Exchange with etcd endpoint number `k` (modulo the endpoints) and report sampled or sampleFailed. */
  | { readonly type: "takeSample"; readonly k: number }
  /** Export the estimate (the blockx_clock_offset_seconds gauge). */
  | { readonly type: "reportOffset"; readonly offsetSeconds: number }
  /** The clock became skewed (log an error) or came back within tolerance (log info). */
  | { readonly type: "logSkewed"; readonly estimate: ClockOffsetEstimate }
  | { readonly type: "logRecovered"; readonly estimate: ClockOffsetEstimate };
