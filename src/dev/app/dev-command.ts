import type { ParsedArgs } from "../../cli/args";
import type { Command } from "../../cli/command";
import { DevError } from "../core/dev-error";
import { devVars, loadDevConfig, type DevConfig } from "./config";

/** devConfigFrom: dev's configuration from the environment and its command line (`--keep` is DEV_KEEP=true, `--postgres` DEV_POSTGRES=true). */
export function devConfigFrom(args: ParsedArgs, env: Readonly<Record<string, string | undefined>>): DevConfig {
  const switches = (["keep", "postgres"] as const).filter((s) => args.flags.has(s)).map((s) => `--${s}`);
  return loadDevConfig(env, [...args.configArgv, ...switches]);
}

/**
 * devCommand: `blockx dev`, the whole system on one machine. It looks at the other commands of
 * this build to decide whether syncinvoker and proxy exist, and to learn their variables.
 */
export function devCommand(allCommands: () => readonly Command[]): Command {
  return {
    name: "dev",
    summary: "the whole system on one machine: etcd, both Coordinators, Workers, syncinvoker and proxy when built in (Ctrl-C stops all)",
    vars: devVars,
    flags: { keep: "bool", postgres: "bool" },
    async run(args) {
      const config = devConfigFrom(args, process.env);
      const commands = allCommands();
      const { runDev } = await import("./run-dev");
      try {
        const code = await runDev(config, {
          commands: new Set(commands.map((c) => c.name)),
          declaredVars: (role) => new Set(Object.values(commands.find((c) => c.name === role)?.vars ?? {}).map((v) => v.name)),
        });
        process.exit(code);
      } catch (e) {
        if (!(e instanceof DevError)) throw e;
        console.error(`blockx dev: ${e.message}`);
        process.exit(2);
      }
    },
  };
}
