import { ErrorCode } from "../../common/error-code";

/**
 * WorkerError is the one error class of the Worker. Like CoordinatorError (and connect-es's
 * ConnectError), `message` starts with the code in brackets (`[NO_SLOT] ...`) and `rawMessage`
 * holds the text without it. The gRPC adapter maps `code` to a status in exactly one place
 * (`workerCodeToGRPC`), the inverse of the Coordinator's `grpcErrToSlotError`.
 *
 * WorkerCore returns WorkerErrors as the reply to a client's request ("the peer asked for something
 * that cannot be done"); it throws one only when the adapter misused it (see IllegalTransitionError
 * and the progress-event checks), which is a bug.
 */
export class WorkerError extends Error {
  override readonly name: string = "WorkerError";
  readonly code: ErrorCode;
  readonly rawMessage: string;

  constructor(code: ErrorCode, rawMessage: string) {
    super(`[${code}] ${rawMessage}`);
    this.code = code;
    this.rawMessage = rawMessage;
  }
}

/**
 * IllegalTransitionError is thrown when WorkerCore is asked to move a task along an edge that
 * TASK_TRANSITIONS does not list. It always means a bug in the core (code INTERNAL): every public
 * path checks the state before it moves.
 */
export class IllegalTransitionError extends WorkerError {
  override readonly name = "IllegalTransitionError";
  readonly taskId: string;
  readonly from: string;
  readonly to: string;

  constructor(taskId: string, from: string, to: string) {
    super(ErrorCode.ErrInternal, `illegal task transition ${from} -> ${to} for task ${JSON.stringify(taskId)}`);
    this.taskId = taskId;
    this.from = from;
    this.to = to;
  }
}
