/**
 * SyncInvokerErrorCode classifies why the Sync Invoker could not give a call's outcome. A
 * function's own failure (USER_ERROR, SYNTAX_ERROR, BUDGET_EXCEEDED, ...) is not one of these:
 * it is an outcome, answered with status OK and `error` set (see the README's error mapping).
 * These codes are about the request itself or the invoker, and each becomes one gRPC status in
 * exactly one place (syncInvokerCodeToGRPC).
 */
export const SyncInvokerErrorCode = {
  /** The request is malformed: args not JSON, name and source both set, a bad entry name. */
  InvalidArgument: "INVALID_ARGUMENT",
  /** No function of that name in FUNCTIONS_DIR. */
  FunctionNotFound: "FUNCTION_NOT_FOUND",
  /** Every executor is busy and the queue is full: back off and retry. */
  QueueFull: "QUEUE_FULL",
  /** The caller's deadline (or timeout_ms) passed while the request waited: it never ran. */
  DeadlineExceeded: "DEADLINE_EXCEEDED",
  /** The function attempted a write IO op; the Sync Invoker is read-only. */
  WriteRejected: "WRITE_REJECTED",
  /** Draining, or the executor died under the call (a system failure): retry. */
  Unavailable: "UNAVAILABLE",
  /** The caller cancelled the RPC. */
  Cancelled: "CANCELLED",
  /** A bug or an unexpected failure inside the invoker. */
  Internal: "INTERNAL",
} as const;
export type SyncInvokerErrorCode = (typeof SyncInvokerErrorCode)[keyof typeof SyncInvokerErrorCode];

/**
 * SyncInvokerError is the one error class of the Sync Invoker. Like WorkerError, `message`
 * starts with the code in brackets and `rawMessage` is the text a person reads in the status.
 */
export class SyncInvokerError extends Error {
  override readonly name = "SyncInvokerError";
  readonly code: SyncInvokerErrorCode;
  readonly rawMessage: string;

  constructor(code: SyncInvokerErrorCode, rawMessage: string) {
    super(`[${code}] ${rawMessage}`);
    this.code = code;
    this.rawMessage = rawMessage;
  }
}
