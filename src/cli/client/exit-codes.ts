import type { BlockxErrorCode } from "../../sdk/sdk-error";
import type { TaskStateName } from "../../sdk/blockx-client";

/** Exit codes of the client commands, the same for all of them (listed by `blockx --help`). */
export const EXIT = Object.freeze({
  OK: 0,
  /** The task failed, timed out or was cancelled; its Worker was lost; a call returned an error. */
  TASK_FAILED: 1,
  /** Bad flags, configuration or request. */
  USAGE: 2,
  /** No Coordinator/Worker answered, or no capacity, before the deadline. */
  UNREACHABLE: 3,
});

export const EXIT_CODES_HELP = [
  "exit codes of the client commands:",
  "  0  succeeded (submit without --watch: accepted)",
  "  1  the task failed, timed out or was cancelled, its Worker was lost, or the call returned an error",
  "  2  usage or configuration error, or a request the server rejected as invalid",
  "  3  cluster unreachable, or no capacity before the deadline",
  "  130  submit --watch or watch interrupted by Ctrl-C: the task keeps running (the message says how to watch or cancel it)",
].join("\n");

export function exitCodeOfError(code: BlockxErrorCode): number {
  switch (code) {
    case "INVALID_ARGUMENT":
      return EXIT.USAGE;
    case "UNREACHABLE":
    case "NO_CAPACITY":
    case "DEADLINE_EXCEEDED":
    case "UNSUPPORTED":
      return EXIT.UNREACHABLE;
    case "WORKER_LOST":
    case "NOT_FOUND":
    case "RPC_FAILED":
      return EXIT.TASK_FAILED;
  }
}

export function exitCodeOfState(state: TaskStateName): number {
  return state === "FAILED" || state === "TIMED_OUT" || state === "CANCELLED" ? EXIT.TASK_FAILED : EXIT.OK;
}
