import { describe, expect, test } from "bun:test";
import { ConfigError, envVar, intSchema } from "../common/config/env-config";
import { ExecutorStartError } from "../runtime/executor/executor-start-error";
import type { ParsedArgs } from "./args";
import type { Command } from "./command";
import { CommandRegistry } from "./registry";
import { runCli } from "./run-cli";
import { UsageError } from "./usage-error";

const vars = { limit: envVar("DEMO_LIMIT", "5", "an integer >= 1", "how many", intSchema(1)) };

/** A registry of demo commands that record what they were run with, and a buffer for the output. */
function setup(fail?: Error) {
  const calls: { name: string; args: ParsedArgs }[] = [];
  const cmd = (name: string, over: Partial<Command> = {}): Command => ({
    name,
    summary: `the ${name} command`,
    vars: {},
    async run(args) {
      calls.push({ name, args });
      if (fail) throw fail;
    },
    ...over,
  });
  const registry = new CommandRegistry([
    cmd("demo", { vars, flags: { watch: "bool" }, positionals: { optional: ["FILE"] }, usage: "usage: blockx demo [FILE] [--watch]" }),
    cmd("version"),
  ]);
  const out: string[] = [];
  const err: string[] = [];
  const run = (...argv: string[]) => runCli(argv, registry, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { calls, out, err, run };
}

describe("runCli", () => {
  test("no command, --help, -h and help print every command with its summary and the exit codes", async () => {
    for (const argv of [[], ["--help"], ["-h"], ["help"]]) {
      const s = setup();
      expect(await s.run(...argv)).toBe(0);
      expect(s.out.join("\n")).toContain("usage: blockx <command> [--flags]\n\ncommands:\n  demo     the demo command\n  version  the version command\n");
      expect(s.out.join("\n")).toContain("exit codes of the client commands:");
      expect(s.calls).toEqual([]);
    }
  });

  test("an unknown command exits 2, says so on stderr and lists the commands", async () => {
    const s = setup();
    expect(await s.run("frobnicate")).toBe(2);
    expect(s.err.join("\n")).toStartWith('blockx: unknown command "frobnicate"\n\nusage: blockx <command>');
    expect(s.out).toEqual([]);
  });

  test("<command> --help (anywhere on the line) prints its usage, summary and variables, and runs nothing", async () => {
    for (const argv of [["demo", "--help"], ["demo", "x", "-h"], ["demo", "--colour", "--help"]]) {
      const s = setup();
      expect(await s.run(...argv)).toBe(0);
      expect(s.out.join("\n")).toStartWith("usage: blockx demo [FILE] [--watch]\n\nthe demo command\n\nEnvironment variables (each also a flag, e.g. --name=value; flags win):\n  DEMO_LIMIT  default 5\n");
      expect(s.calls).toEqual([]);
    }
    const plain = setup();
    await plain.run("version", "--help");
    expect(plain.out).toEqual(["usage: blockx version [--flags]\n\nthe version command"]);
  });

  test("the command runs with its parsed arguments and ends the process its own way", async () => {
    const s = setup();
    expect(await s.run("demo", "f.py", "--watch", "--demo-limit", "3")).toBeUndefined();
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]!.args).toEqual({ positional: ["f.py"], flags: new Map([["watch", true]]), configArgv: ["--demo-limit=3"] });
  });

  test("--version runs the version command", async () => {
    const s = setup();
    expect(await s.run("--version")).toBeUndefined();
    expect(s.calls.map((c) => c.name)).toEqual(["version"]);
  });

  test("a usage error from the parser exits 2 before the command runs, prefixed with the command", async () => {
    const s = setup();
    expect(await s.run("demo", "--colour", "red")).toBe(2);
    expect(s.err).toEqual(['blockx demo: unknown argument "--colour" (see --help)']);
    expect(s.calls).toEqual([]);
    const extra = setup();
    expect(await extra.run("demo", "a", "b")).toBe(2);
    expect(extra.err).toEqual(['blockx demo: unexpected argument "b" (see --help)']);
  });

  test("errors from the command: usage and configuration exit 2, executors that cannot start exit 1, anything else prints its stack and exits 1", async () => {
    const usage = setup(new UsageError("no such file: f.py"));
    expect(await usage.run("demo")).toBe(2);
    expect(usage.err).toEqual(["blockx demo: no such file: f.py"]);
    const config = setup(new ConfigError(['DEMO_LIMIT: expected an integer >= 1, got "0"', "OTHER: bad"]));
    expect(await config.run("demo")).toBe(2);
    expect(config.err).toEqual(['blockx demo: invalid configuration:\n  - DEMO_LIMIT: expected an integer >= 1, got "0"\n  - OTHER: bad']);
    const executors = setup(new ExecutorStartError("EXECUTORS_DIED_AT_START", "python3 said no"));
    expect(await executors.run("demo")).toBe(1);
    expect(executors.err).toEqual(["blockx demo: executors cannot start: EXECUTORS_DIED_AT_START: python3 said no"]);
    const bug = setup(new RangeError("a bug"));
    expect(await bug.run("demo")).toBe(1);
    expect(bug.err[0]).toStartWith("blockx demo: RangeError: a bug\n");
  });
});
