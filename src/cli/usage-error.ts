/** UsageErrorCode: what was wrong with the command line. */
export type UsageErrorCode =
  /** A `--flag` the command does not know (neither its own nor a configuration variable's). */
  | "UNKNOWN_FLAG"
  /** A flag that takes a value was given none. */
  | "MISSING_VALUE"
  /** A flag that takes no value was given one (`--watch=1`). */
  | "UNEXPECTED_VALUE"
  /** Fewer positional arguments than the command requires. */
  | "MISSING_ARGUMENT"
  /** More positional arguments than the command takes. */
  | "UNEXPECTED_ARGUMENT"
  /** A command name `blockx` does not have. */
  | "UNKNOWN_COMMAND"
  /** An argument or flag value the command refuses (no such file, a bad range, not JSON...). */
  | "BAD_ARGUMENT";

/**
 * UsageError: the command line is wrong. The dispatcher prints `blockx <command>: <message>` and
 * exits 2 (a configuration variable that fails its rule is a ConfigError, also exit 2).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly code: UsageErrorCode = "BAD_ARGUMENT",
  ) {
    super(message);
    this.name = "UsageError";
  }
}
