/** SupervisorEvent: facts the dev adapters feed into SupervisorCore, each at a `nowMs`. */
export type SupervisorEvent =
  /** The supervisor was asked to start the plan. */
  | { readonly type: "started" }
  /** A child is serving; `endpoint` is what clients use (host:port or a socket path). */
  | { readonly type: "childReady"; readonly id: string; readonly endpoint: string }
  /** A child process ended (code null when a signal ended it). */
  | { readonly type: "childExited"; readonly id: string; readonly code: number | null; readonly signal: string | null }
  /** The operator asked to stop (Ctrl-C or SIGTERM). */
  | { readonly type: "stopRequested"; readonly signal: string }
  /** Time passed (the driver's timer, at the decision's wakeAtMs): deadlines (readiness, stop grace) are checked. */
  | { readonly type: "timeAdvanced" };
