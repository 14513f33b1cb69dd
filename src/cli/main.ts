#!/usr/bin/env bun
import { buildInfo } from "../common/build-info";
import { ConfigError, renderEnvHelp } from "../common/config/env-config";
import { EXIT_CODES_HELP } from "./client/exit-codes";
import { clientCommands } from "./client-commands";
import type { Command } from "./command";
import { coordinatorCommands } from "./coordinator-commands";
import { devCommand } from "./dev-command";
import { execCommand, UsageError } from "./exec-command";
import { localchainCommand } from "./localchain-command";
import { syncInvokerCommand } from "./syncinvoker-command";
import { uiCommand } from "./ui-command";
import { workerCommands } from "./worker-commands";
import { ExecutorStartError } from "../runtime/executor/executor-start-error";

const versionCommand: Command = {
  name: "version",
  summary: "print version, commit, Bun version and the digest of the sources built",
  vars: {},
  async run() {
    console.log(`blockx ${buildInfo.version} (commit ${buildInfo.commit}, bun ${buildInfo.bunVersion}, sources ${buildInfo.sourceDigest})`);
  },
};

const commands: Command[] = [...coordinatorCommands, ...workerCommands, syncInvokerCommand, ...clientCommands, execCommand, localchainCommand, uiCommand, versionCommand];
commands.push(devCommand(() => commands));

function usage(): string {
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

function commandHelp(c: Command): string {
  const lines = c.usage ? [c.usage, "", c.summary] : [`usage: blockx ${c.name} [--flags]`, "", c.summary];
  if (Object.keys(c.vars).length > 0) {
    lines.push("", "Environment variables (each also a flag, e.g. --name=value; flags win):", renderEnvHelp(c.vars));
  }
  return lines.join("\n");
}

/** main dispatches `blockx <command>`; a bad configuration exits 2 with every problem named. */
export async function main(argv: readonly string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return;
  }
  if (name === "--version") return versionCommand.run([]);
  const command = commands.find((c) => c.name === name);
  if (!command) {
    console.error(`blockx: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
    process.exit(2);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(commandHelp(command));
    return;
  }
  try {
    await command.run(rest);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`blockx ${command.name}: invalid configuration:\n${e.problems.map((p) => `  - ${p}`).join("\n")}`);
      process.exit(2);
    }
    if (e instanceof UsageError) {
      console.error(`blockx ${command.name}: ${e.message}`);
      process.exit(2);
    }
    if (e instanceof ExecutorStartError) {
      // The executors could not start: the message names the path or carries their stderr.
      console.error(`blockx ${command.name}: executors cannot start: ${e.message}`);
      process.exit(1);
    }
    throw e;
  }
}

await main(process.argv.slice(2));
