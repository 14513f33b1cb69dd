import { ErrorCode } from "../../common/error-code";
import { taskIdProblem } from "../../common/task-id";
import { CoordinatorError } from "./coordinator-error";

/**
 * validateReserveRequest checks a ReserveWorkerSlot request before anything else happens (the
 * seed's `core.ValidateReserveRequest`): a non-empty `taskId` (ErrInvalidArgument, as in the seed),
 * at most MAX_TASK_ID_LENGTH long (the bound every role shares; also ErrInvalidArgument). A
 * whitespace-only id is accepted on purpose, as in the seed; the Coordinator never interprets task
 * ids. Returns null when the request is valid.
 */
export function validateReserveRequest(taskId: string): CoordinatorError | null {
  const problem = taskIdProblem(taskId);
  return problem === null ? null : new CoordinatorError(ErrorCode.ErrInvalidArgument, problem);
}
