/**
 * The compiled binary's help, for every command: `blockx --help` lists each command of the build
 * with its summary, and `blockx <command> --help` prints (exit 0, nothing on stderr) exactly what
 * the registry renders in process, so the binary carries every command and its whole help.
 */
import { describe, expect, test } from "bun:test";
import { renderCommandHelp } from "../../src/cli/help";
import { blockxCommands } from "../../src/commands";
import { BLOCKX_BINARY } from "../support/blockx-process";

function blockx(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([BLOCKX_BINARY, ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

const commands = blockxCommands().list();

describe("blockx help (compiled binary)", () => {
  test("blockx --help lists every command of the registry with its summary", () => {
    const r = blockx(["--help"]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    const listed = [...r.stdout.matchAll(/^ {2}([a-z][a-z-]*) {2,}(.*)$/gm)].map((m) => [m[1], m[2]]);
    expect(listed).toEqual(commands.map((c) => [c.name, c.summary]));
  });

  test.each(commands.map((c) => [c.name]))("blockx %s --help prints the command's whole help, exit 0", (name) => {
    const r = blockx([name, "--help"]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect(r.stdout).toBe(`${renderCommandHelp(commands.find((c) => c.name === name)!)}\n`);
  });

  test("a usage error exits 2 naming the command and the argument; an unknown command exits 2", () => {
    expect(blockx(["workers", "--colour=red"])).toMatchObject({ code: 2, stdout: "", stderr: 'blockx workers: unknown argument "--colour=red" (see --help)\n' });
    expect(blockx(["worker", "stray"])).toMatchObject({ code: 2, stderr: 'blockx worker: unexpected argument "stray" (see --help)\n' });
    expect(blockx(["exec"])).toMatchObject({ code: 2, stderr: "blockx exec: missing FILE (see --help)\n" });
    expect(blockx(["frobnicate"])).toMatchObject({ code: 2, stdout: "" });
  });
});
