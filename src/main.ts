#!/usr/bin/env bun
import { runCli } from "./cli/run-cli";
import { blockxCommands } from "./commands";

// The binary's entry point (`bun build --compile src/main.ts`): outside src/cli, so that the CLI
// never imports a role; the roles' commands are assembled in src/commands.ts.
const code = await runCli(process.argv.slice(2), blockxCommands());
if (code !== undefined) {
  process.exitCode = code;
  if (code !== 0) process.exit(code);
}
