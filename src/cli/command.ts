import type { EnvVars } from "../common/config/env-config";

/** Command is one `blockx` subcommand: its help text and its entry point. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  /** Usage lines and the command's own flags, printed by --help (optional). */
  readonly usage?: string;
  /** Variables listed by `--help`; empty for commands without configuration. */
  readonly vars: EnvVars;
  /** Runs the command with the arguments after its name. */
  run(argv: readonly string[]): Promise<void>;
}
