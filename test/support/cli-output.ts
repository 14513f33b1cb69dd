import { expect } from "bun:test";
import { BlockxProcess } from "./blockx-process";

/** runToExit runs the compiled binary to its exit and returns its code and everything it printed. */
export async function runToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  const p = BlockxProcess.spawn(args, env);
  const code = await p.exited;
  return { code, out: p.lines.map((l) => l.msg).join("\n") + p.stderr };
}

/** expectHelpDefaults checks that `--help` output lists each variable with its default. */
export function expectHelpDefaults(out: string, defaults: readonly (readonly [string, string])[]): void {
  for (const [name, dflt] of defaults) expect(out).toMatch(new RegExp(`${name} +default ${dflt.replace(/[()]/g, "\\$&")}\\n`));
}
