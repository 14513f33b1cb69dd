/**
 * BlockxErrorCode says why the SDK gave up, in terms a caller can act on:
 * - INVALID_ARGUMENT: the task or a call is malformed (fix the request; retrying will not help).
 * - UNREACHABLE: no Coordinator or Worker answered before the deadline.
 * - NO_CAPACITY: the cluster stayed full (ResourceExhausted / Aborted) until the deadline.
 * - DEADLINE_EXCEEDED: the caller's deadline passed while the task was still running.
 * - WORKER_LOST: the Worker running the task went away and the task could not be resubmitted.
 * - NOT_FOUND: the Worker does not know the task (finished long ago, or another Worker).
 * - UNSUPPORTED: the server does not implement the call (e.g. no Sync Invoker there).
 * - RPC_FAILED: any other gRPC failure, with its status in `grpcCode`.
 */
export type BlockxErrorCode =
  | "INVALID_ARGUMENT"
  | "UNREACHABLE"
  | "NO_CAPACITY"
  | "DEADLINE_EXCEEDED"
  | "WORKER_LOST"
  | "NOT_FOUND"
  | "UNSUPPORTED"
  | "RPC_FAILED";

/** BlockxError is the one error type of the SDK; its message starts with the code. */
export class BlockxError extends Error {
  constructor(
    readonly code: BlockxErrorCode,
    message: string,
    /** The gRPC status behind the failure, when there was one. */
    readonly grpcCode?: number,
  ) {
    super(`${code}: ${message}`);
    this.name = "BlockxError";
  }
}
