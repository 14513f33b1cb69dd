/**
 * Every command of the binary, in process: the list `blockx --help` shows, and each command's
 * --help (its usage, summary and every variable it lists). test/cli/help-cli.test.ts checks the
 * same against the compiled binary.
 */
import { describe, expect, test } from "bun:test";
import { flagName } from "./common/config/env-config";
import { runCli } from "./cli/run-cli";
import { blockxCommands } from "./commands";

const COMMAND_NAMES = [
  "coordinator", "bundle-coordinator", "worker", "bundle-worker", "syncinvoker",
  "submit", "watch", "result", "cancel", "logs", "tasks", "invoke", "precheck", "workers", "table", "verify",
  "follow",
  "proxy", "exec", "localchain", "ui", "version", "install", "uninstall", "doctor", "certs", "etcd-roles", "dev",
];

async function help(argv: string[]): Promise<{ code: number | undefined; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, blockxCommands(), { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("blockx commands", () => {
  test("blockx --help lists every command, in this order, each with its summary", async () => {
    const registry = blockxCommands();
    expect(registry.list().map((c) => c.name)).toEqual(COMMAND_NAMES);
    const { code, out } = await help(["--help"]);
    expect(code).toBe(0);
    for (const c of registry.list()) expect(out).toContain(`\n  ${c.name.padEnd(18)}  ${c.summary}\n`);
  });

  test("blockx <command> --help, for every command: its usage, its summary, every variable it lists with default and flag", async () => {
    for (const c of blockxCommands().list()) {
      const { code, out, err } = await help([c.name, "--help"]);
      expect({ name: c.name, code, err }).toEqual({ name: c.name, code: 0, err: "" });
      expect(out).toStartWith(`usage: blockx ${c.name}`);
      expect(out).toContain(`\n\n${c.summary}`);
      for (const v of Object.values(c.vars)) expect(out).toMatch(new RegExp(`\\n  ${v.name} +default .*\\n.*; flag ${flagName(v.name)}\\)`));
    }
  });
});
