import type { EnvVars } from "../common/config/env-config";
import type { FlagSpecs, ParsedArgs, PositionalSpec } from "./args";

/**
 * Command is one `blockx` subcommand, a server role and a client command alike: what `--help`
 * shows, what the command line may hold, and the entry point. A component defines its commands
 * in its own folder (e.g. `src/worker/app/worker-command.ts`) as plain objects of this type, and
 * `src/commands.ts` lists them in a CommandRegistry. The dispatcher (`runCli`) answers `--help`,
 * parses the arguments against `flags`, `vars` + `acceptedVars` and `positionals` (anything else
 * is a usage error, exit 2), then calls `run`. Keep the module level light: a command loads
 * what it runs (gRPC, etcd3) inside `run`, so that `--help` and the other roles never load it.
 */
export interface Command {
  /** The subcommand, kebab-case: `blockx <name>`. */
  readonly name: string;
  /** One line for `blockx --help`. */
  readonly summary: string;
  /** Usage lines and the command's own flags, printed by `--help` (default: `usage: blockx <name> [--flags]`). */
  readonly usage?: string;
  /** Configuration variables listed by `--help`, each also accepted as a flag; empty for none. */
  readonly vars: EnvVars;
  /** Variables accepted as flags beyond `vars` but not listed (client commands accept every client variable). */
  readonly acceptedVars?: EnvVars;
  /** The command's own flags (none when absent). */
  readonly flags?: FlagSpecs;
  /** The command's positional arguments (none when absent). */
  readonly positionals?: PositionalSpec;
  /** Runs the command with its parsed arguments; the config loader takes `args.configArgv`. */
  run(args: ParsedArgs): Promise<void>;
}

/** RoleSpec: a server role's command, which has no flags of its own and no positional arguments. */
export interface RoleSpec<C> {
  readonly name: string;
  readonly summary: string;
  readonly vars: EnvVars;
  /** Reads the configuration from the environment and the configuration flags (flags win); throws ConfigError. */
  loadConfig(env: Readonly<Record<string, string | undefined>>, configArgv: readonly string[]): C;
  /** Runs the role until it stops. Import the role here, so that `--help` and the other roles never load it. */
  start(config: C): Promise<void>;
}

/** roleCommand: the Command of a server role: its whole configuration is checked before anything starts. */
export function roleCommand<C>(spec: RoleSpec<C>): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    vars: spec.vars,
    async run(args) {
      await spec.start(spec.loadConfig(process.env, args.configArgv));
    },
  };
}
