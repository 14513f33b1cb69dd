/**
 * Task ids arrive on every task RPC of the Workers and the Coordinators; each one is checked here,
 * before it is stored, logged or forwarded, so that a request cannot park megabytes under one key.
 */

/** The longest task id any role accepts, in UTF-16 code units (JavaScript's length). */
export const MAX_TASK_ID_LENGTH = 256;

/**
 * taskIdProblem: why `taskId` is not acceptable (empty, or longer than MAX_TASK_ID_LENGTH), as a
 * message naming `field`; null when it is. Each caller wraps it in its own INVALID_ARGUMENT error.
 */
export function taskIdProblem(taskId: string, field = "task_id"): string | null {
  if (taskId.length === 0) return `${field} is required`;
  if (taskId.length > MAX_TASK_ID_LENGTH) return `${field}: at most ${MAX_TASK_ID_LENGTH} characters, got ${taskId.length}`;
  return null;
}
