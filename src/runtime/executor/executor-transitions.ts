/** ExecutorState: an executor slot's state in ExecutorPoolCore. */
export type ExecutorState = "STARTING" | "READY" | "DEAD";

/**
 * EXECUTOR_TRANSITIONS lists every move a slot may make (WorkerCore's TASK_TRANSITIONS is the
 * model); any other is a bug and throws.
 *
 * - DEAD -> STARTING: its restart fell due (a fresh pool's slots are all due at once).
 * - STARTING -> READY: the executor said a valid Hello.
 * - STARTING -> DEAD: it died (or was killed as hung) before its Hello.
 * - READY -> DEAD: it died, was killed (hung, memory, wall clock) or was recycled for another owner.
 */
export const EXECUTOR_TRANSITIONS: Readonly<Record<ExecutorState, readonly ExecutorState[]>> = {
  DEAD: ["STARTING"],
  STARTING: ["READY", "DEAD"],
  READY: ["DEAD"],
};

/** assertExecutorTransition throws unless EXECUTOR_TRANSITIONS allows from -> to for slot `index`. */
export function assertExecutorTransition(index: number, from: ExecutorState, to: ExecutorState): void {
  if (!EXECUTOR_TRANSITIONS[from].includes(to)) throw new Error(`ExecutorPoolCore: illegal transition of slot ${index}: ${from} -> ${to}`);
}
