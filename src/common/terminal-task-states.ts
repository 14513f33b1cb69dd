import { TaskState } from "../gen/worker/v1/worker";

/**
 * TERMINAL_TASK_STATES: the four `worker.v1.TaskState`s a task never leaves (SYSTEM.md: the slot is
 * freed on entering one). Defined once for the Worker's service and every client; the Worker's core
 * has the same rule over its own state names (`isTerminal` in task-transitions.ts).
 */
export const TERMINAL_TASK_STATES: ReadonlySet<TaskState> = new Set([TaskState.SUCCEEDED, TaskState.FAILED, TaskState.TIMED_OUT, TaskState.CANCELLED]);
