import { ErrorCode } from "../../common/error-code";
import { CoordinatorError } from "./coordinator-error";

/**
 * validateReserveRequest checks a ReserveWorkerSlot request before anything else happens (the
 * seed's `core.ValidateReserveRequest`): it only requires a non-empty `taskId`. A whitespace-only
 * id is accepted on purpose, as in the seed; the Coordinator never interprets task ids.
 * Returns null when the request is valid.
 */
export function validateReserveRequest(taskId: string): CoordinatorError | null {
  if (taskId.length === 0) return new CoordinatorError(ErrorCode.ErrInvalidArgument, "task_id is required");
  return null;
}
