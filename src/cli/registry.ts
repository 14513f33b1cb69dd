import { flagName } from "../common/config/env-config";
import type { ArgSpec } from "./args";
import type { Command } from "./command";

const NAME = /^[a-z][a-z0-9-]*$/;
/** Names the dispatcher answers itself, before any command sees its arguments. */
const RESERVED_COMMANDS = new Set(["help"]);
const RESERVED_FLAGS = new Set(["help"]);

/**
 * CommandRegistry is the list of `blockx` commands, in the order `blockx --help` shows them.
 * `register` refuses a definition that could not work (a duplicate name, an own flag that
 * shadows a configuration flag, a name `--help` takes): such a mistake fails at start-up and in
 * the registry's tests, never at a user's command line.
 */
export class CommandRegistry {
  private readonly byName = new Map<string, Command>();

  constructor(commands: readonly Command[] = []) {
    for (const c of commands) this.register(c);
  }

  register(command: Command): this {
    const problem = definitionProblem(command, this.byName);
    if (problem) throw new TypeError(`command ${JSON.stringify(command.name)}: ${problem}`);
    this.byName.set(command.name, command);
    return this;
  }

  get(name: string): Command | undefined {
    return this.byName.get(name);
  }

  list(): readonly Command[] {
    return [...this.byName.values()];
  }
}

/** argSpecOf: what a command's line may hold (its own flags, every variable it accepts, its positionals). */
export function argSpecOf(c: Command): ArgSpec {
  return { flags: c.flags ?? {}, vars: { ...c.vars, ...c.acceptedVars }, positionals: c.positionals ?? {} };
}

function definitionProblem(c: Command, existing: ReadonlyMap<string, Command>): string | null {
  if (!NAME.test(c.name)) return "a command name is kebab-case";
  if (RESERVED_COMMANDS.has(c.name)) return "the name is the dispatcher's";
  if (existing.has(c.name)) return "registered twice";
  const configFlags = new Set(Object.values(argSpecOf(c).vars ?? {}).map((v) => flagName(v.name).slice(2)));
  for (const flag of Object.keys(c.flags ?? {})) {
    if (!NAME.test(flag)) return `flag --${flag}: a flag name is kebab-case without dashes in front`;
    if (RESERVED_FLAGS.has(flag)) return `flag --${flag}: --help is the dispatcher's`;
    if (configFlags.has(flag)) return `flag --${flag} shadows the configuration variable of the same flag`;
  }
  const positionals = [...(c.positionals?.required ?? []), ...(c.positionals?.optional ?? [])];
  if (positionals.some((p) => p.trim() === "")) return "a positional argument needs a name (for messages)";
  return null;
}
