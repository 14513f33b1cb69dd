import { renderEnvHelp } from "../common/config/env-config";
import { EXIT_CODES_HELP } from "./client/exit-codes";
import type { Command } from "./command";

/** renderUsage: `blockx --help`, every command with its summary, then the client exit codes. */
export function renderUsage(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    "usage: blockx <command> [--flags]",
    "",
    "commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run `blockx <command> --help` for the command's environment variables and flags.",
    "",
    EXIT_CODES_HELP,
  ].join("\n");
}

/** renderCommandHelp: `blockx <command> --help`, its usage, summary and every variable it lists. */
export function renderCommandHelp(c: Command): string {
  const lines = c.usage ? [c.usage, "", c.summary] : [`usage: blockx ${c.name} [--flags]`, "", c.summary];
  if (Object.keys(c.vars).length > 0) {
    lines.push("", "Environment variables (each also a flag, e.g. --name=value; flags win):", renderEnvHelp(c.vars));
  }
  return lines.join("\n");
}
