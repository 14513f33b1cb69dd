import type { Command } from "../../cli/command";
import { DevError } from "../core/dev-error";
import { devVars, loadDevConfig } from "./config";

/**
 * devCommand: `blockx dev`, the whole system on one machine. It looks at the other commands of
 * this build to decide whether syncinvoker and proxy exist, and to learn their variables.
 */
export function devCommand(allCommands: () => readonly Command[]): Command {
  return {
    name: "dev",
    summary: "the whole system on one machine: etcd, both Coordinators, Workers, syncinvoker and proxy when built in (Ctrl-C stops all)",
    vars: devVars,
    flags: { keep: "bool" },
    async run(args) {
      const config = loadDevConfig(process.env, args.flags.has("keep") ? [...args.configArgv, "--keep"] : args.configArgv);
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
