/**
 * ErrorCode is the business error classification shared by the Coordinator and the Worker
 * (the seed's `commontypes.ErrorCode`). Each component wraps it in its own error class and
 * maps it to a gRPC status in exactly one place (`coordCodeToGRPC`, `workerCodeToGRPC`).
 */
export const ErrorCode = {
  /** The request is malformed (empty task id, bad field). Not retryable as is. */
  ErrInvalidArgument: "INVALID_ARGUMENT",
  /** The Coordinator's view cannot be trusted yet (or any more): retry now. */
  ErrUnavailable: "UNAVAILABLE",
  /** The trusted view holds no Worker with free capacity that passes the filters. */
  ErrNoExecutableSlot: "NO_EXECUTABLE_SLOT",
  /** A reservation may or may not have happened on the Worker (timeout, cancel, abort). */
  ErrSlotUncertain: "SLOT_UNCERTAIN",
  /** The Worker has no FREE slot (backpressure: does not count toward the breaker). */
  ErrNoSlot: "NO_SLOT",
  /** The slot id is unknown to the Worker: expired, reclaimed, or from an earlier incarnation. */
  ErrSlotNotFound: "SLOT_NOT_FOUND",
  /** The slot is bound to another task, or the task is in a state that forbids the step. */
  ErrSlotConflict: "SLOT_CONFLICT",
  /** The Worker could not be reached at all (connection refused): nothing was allocated. */
  ErrWorkerUnreachable: "WORKER_UNREACHABLE",
  /**
   * The caller's identity may not do this: the task or slot belongs to another identity, or the
   * certificate's role may not call the method. Not retryable.
   */
  ErrPermissionDenied: "PERMISSION_DENIED",
  /**
   * SubmitTask: a run of this task id is current on another Worker (or the task already
   * SUCCEEDED there): the task is not run twice. The message names that Worker
   * (runElsewhereMessage); follow it there, or resubmit to replace that run. Not retryable as is.
   */
  ErrTaskRunElsewhere: "TASK_RUN_ELSEWHERE",
  /** A bug or an unexpected failure inside the component. */
  ErrInternal: "INTERNAL",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
