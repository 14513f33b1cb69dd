/**
 * AdmissionInstruction is work AdmissionCore hands back for the AdmissionGate to do, in the
 * imperative. The union is closed; each names the request it is about, and each request gets
 * exactly one of them over its life (or none, when its caller abandoned it while queued).
 */
export type AdmissionInstruction = StartCall | RejectQueueFull | DropExpired | RejectDraining;

/** StartCall: the request may run now; it waited `queuedMs` (0: it never queued). */
export interface StartCall {
  readonly type: "startCall";
  readonly id: string;
  readonly queuedMs: number;
}

/** RejectQueueFull: every slot is busy and `queueMax` requests already wait; refuse it at once. */
export interface RejectQueueFull {
  readonly type: "rejectQueueFull";
  readonly id: string;
  readonly queueMax: number;
}

/** DropExpired: the request's deadline passed after `queuedMs` of waiting; it must not run. */
export interface DropExpired {
  readonly type: "dropExpired";
  readonly id: string;
  readonly queuedMs: number;
}

/** RejectDraining: the request arrived after draining started. */
export interface RejectDraining {
  readonly type: "rejectDraining";
  readonly id: string;
}
