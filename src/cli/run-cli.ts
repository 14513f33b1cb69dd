import { ConfigError } from "../common/config/env-config";
import { redactSecrets } from "../common/config/secret-text";
import { ExecutorStartError } from "../runtime/executor/executor-start-error";
import { parseCommandArgs } from "./args";
import { renderCommandHelp, renderUsage } from "./help";
import { argSpecOf, type CommandRegistry } from "./registry";
import { UsageError } from "./usage-error";

/** CliOutput: where the dispatcher prints (the process's stdout and stderr; a test's buffers). */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

/**
 * Every error passes `redactSecrets`: one quoting a secret the configuration read prints `***` instead.
 * stdout carries help (declarations, never values: its `postgres://user:password@` example stays).
 */
const consoleOutput: CliOutput = { out: (t) => console.log(t), err: (t) => console.error(redactSecrets(t)) };

/**
 * runCli dispatches `blockx <command> [args]`. It answers `--help` (anywhere on the line) and
 * `--version` itself, parses the command's arguments, and runs it. It returns the exit code the
 * process must end with now (0 after help, 2 for an unknown command, a usage error or a bad
 * configuration with every problem named, 1 when executors cannot start), or undefined when the
 * command ran and ends the process its own way (a server runs until stopped; a client command
 * sets `process.exitCode`).
 */
export async function runCli(argv: readonly string[], registry: CommandRegistry, output: CliOutput = consoleOutput): Promise<number | undefined> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    output.out(renderUsage(registry.list()));
    return 0;
  }
  const command = registry.get(name === "--version" ? "version" : name);
  if (!command) {
    output.err(`blockx: unknown command ${JSON.stringify(name)}\n\n${renderUsage(registry.list())}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    output.out(renderCommandHelp(command));
    return 0;
  }
  try {
    await command.run(parseCommandArgs(name === "--version" ? [] : rest, argSpecOf(command)));
    return undefined;
  } catch (e) {
    if (e instanceof ConfigError) {
      output.err(`blockx ${command.name}: invalid configuration:\n${e.problems.map((p) => `  - ${p}`).join("\n")}`);
      return 2;
    }
    if (e instanceof UsageError) {
      output.err(`blockx ${command.name}: ${e.message}`);
      return 2;
    }
    if (e instanceof ExecutorStartError) {
      // The executors could not start: the message names the path or carries their stderr.
      output.err(`blockx ${command.name}: executors cannot start: ${e.message}`);
      return 1;
    }
    // Anything else: its message and stack, redacted (the runtime's own report would quote secrets).
    output.err(`blockx ${command.name}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 1;
  }
}
