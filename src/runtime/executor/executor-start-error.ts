/**
 * ExecutorStartError: an executor pool that cannot start, with a code and a message that names
 * the cause (a path, the executor's own stderr). Commands print the message and exit 1 instead
 * of a stack trace.
 */
export type ExecutorStartCode =
  /** The binary carries no executor files. */
  | "EXECUTOR_CODE_MISSING"
  /** The executor code or the pool's socket folder is out of EXECUTOR_USER's reach. */
  | "EXECUTOR_CODE_UNREADABLE"
  /** A fresh copy of the executor code could not be made safe (another user could change it). */
  | "EXECUTOR_CODE_UNTRUSTED"
  /** EXECUTOR_SANDBOX=on, but bubblewrap cannot build the sandbox here (missing, or no user namespaces). */
  | "EXECUTOR_SANDBOX_UNAVAILABLE"
  /** EXECUTOR_MEMORY_CGROUP=required, but no memory cgroup can be made here (no delegated v2, no writable v1). */
  | "EXECUTOR_MEMORY_CGROUP_UNAVAILABLE"
  /** Every executor that could have become ready died before saying Hello. */
  | "EXECUTORS_DIED_AT_START"
  /** Executors neither said Hello nor died within the start timeout. */
  | "EXECUTORS_START_TIMEOUT";

export class ExecutorStartError extends Error {
  constructor(
    readonly code: ExecutorStartCode,
    message: string,
    /** The cause in its own words, without the advice around it (what bwrap said): for a caller that gives its own advice. */
    readonly said: string = message,
  ) {
    super(`${code}: ${message}`);
    this.name = "ExecutorStartError";
  }
}
