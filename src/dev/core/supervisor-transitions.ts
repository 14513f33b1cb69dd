import { SupervisorError } from "./supervisor-error";

/** SupervisorState is `blockx dev`'s own state (SupervisorCore). */
export type SupervisorState = "IDLE" | "STARTING" | "RUNNING" | "STOPPING" | "STOPPED";

/**
 * SUPERVISOR_TRANSITIONS lists every move dev may make; any other is a bug (SupervisorError).
 *
 * - IDLE -> STARTING: started; the first stage is spawned.
 * - STARTING -> RUNNING: the last stage is ready; the endpoints are announced.
 * - STARTING / RUNNING -> STOPPING: a stop request, a child that exited, or a stage not ready in time.
 * - STOPPING -> STOPPED: the last live child ended; dev exits.
 * - STARTING -> STOPPED is not a move: a stop always passes STOPPING, which ends at once when no child lives.
 */
export const SUPERVISOR_TRANSITIONS: Readonly<Record<SupervisorState, readonly SupervisorState[]>> = {
  IDLE: ["STARTING"],
  STARTING: ["RUNNING", "STOPPING"],
  RUNNING: ["STOPPING"],
  STOPPING: ["STOPPED"],
  STOPPED: [],
};

/** assertSupervisorTransition throws SupervisorError unless SUPERVISOR_TRANSITIONS allows from -> to. */
export function assertSupervisorTransition(from: SupervisorState, to: SupervisorState): void {
  if (!SUPERVISOR_TRANSITIONS[from].includes(to)) throw new SupervisorError(`illegal supervisor transition ${from} -> ${to}`);
}
