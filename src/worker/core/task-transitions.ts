import { IllegalTransitionError } from "./worker-error";

/**
 * TaskStateName is a task's state as WorkerCore keeps it; the names match the proto enum
 * `worker.v1.TaskState`. ALLOCATED and RUNNING hold a slot; the other four are terminal and hold
 * none (the slot is freed the moment the task becomes terminal, independent of retention).
 */
export type TaskStateName = "ALLOCATED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "CANCELLED";

/** TerminalStateName is one of the four states a task never leaves (except to be forgotten). */
export type TerminalStateName = Exclude<TaskStateName, "ALLOCATED" | "RUNNING">;

/**
 * TaskLifeState adds the two ends of a record's life to TaskStateName: NEW (not yet known to the
 * core) and FORGOTTEN (dropped: an ALLOCATED slot expired unused, or retention ran out). A task id
 * that was forgotten may start a new life as NEW.
 */
export type TaskLifeState = "NEW" | TaskStateName | "FORGOTTEN";

/**
 * TASK_TRANSITIONS lists every move a task may make. Any other move is a bug and throws an
 * IllegalTransitionError. Why each edge exists:
 *
 * - NEW -> ALLOCATED: RequestTaskSlot bound a FREE slot to the task id.
 * - NEW -> RUNNING: SubmitTask without a slot id allocated one inline and accepted the task.
 * - ALLOCATED -> RUNNING: SubmitTask into the task's slot.
 * - ALLOCATED -> CANCELLED: CancelTask before SubmitTask; retained, so a late SubmitTask is an
 *   idempotent hit on the cancelled task instead of starting it.
 * - ALLOCATED -> FORGOTTEN: the slot's TTL ran out without SubmitTask; nothing was accepted, so
 *   nothing is retained.
 * - RUNNING -> SUCCEEDED / FAILED: the pipeline finished.
 * - RUNNING -> TIMED_OUT: the task deadline (acceptance + timeout) passed.
 * - RUNNING -> CANCELLED: CancelTask.
 * - terminal -> FORGOTTEN: retention ran out.
 */
export const TASK_TRANSITIONS: Readonly<Record<TaskLifeState, readonly TaskLifeState[]>> = {
  NEW: ["ALLOCATED", "RUNNING"],
  ALLOCATED: ["RUNNING", "CANCELLED", "FORGOTTEN"],
  RUNNING: ["SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"],
  SUCCEEDED: ["FORGOTTEN"],
  FAILED: ["FORGOTTEN"],
  TIMED_OUT: ["FORGOTTEN"],
  CANCELLED: ["FORGOTTEN"],
  FORGOTTEN: [],
};

/** assertTransition throws IllegalTransitionError unless TASK_TRANSITIONS allows from -> to. */
export function assertTransition(taskId: string, from: TaskLifeState, to: TaskLifeState): void {
  if (!TASK_TRANSITIONS[from].includes(to)) throw new IllegalTransitionError(taskId, from, to);
}

/** holdsSlot is true for the two states that occupy one of the TASK_SLOTS. */
export function holdsSlot(s: TaskLifeState): s is "ALLOCATED" | "RUNNING" {
  return s === "ALLOCATED" || s === "RUNNING";
}

/** isTerminal is true for SUCCEEDED, FAILED, TIMED_OUT and CANCELLED. */
export function isTerminal(s: TaskLifeState): s is TerminalStateName {
  return s === "SUCCEEDED" || s === "FAILED" || s === "TIMED_OUT" || s === "CANCELLED";
}

/** TaskPhaseName is a RUNNING task's pipeline phase; the names match the proto enum `worker.v1.TaskPhase`. */
export type TaskPhaseName = "BUILD" | "EXECUTE" | "WRITE";

/**
 * PHASE_TRANSITIONS lists the forward moves of a task's phase. A phase never goes backwards; it
 * may skip EXECUTE (a task whose builder produced no calls goes straight to WRITE). A phase event
 * that is not listed here (repeated or backwards) is ignored, not applied.
 */
export const PHASE_TRANSITIONS: Readonly<Record<TaskPhaseName, readonly TaskPhaseName[]>> = {
  BUILD: ["EXECUTE", "WRITE"],
  EXECUTE: ["WRITE"],
  WRITE: [],
};
