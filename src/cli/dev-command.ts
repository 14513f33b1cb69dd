import { devVars, loadDevConfig } from "../dev/app/config";
import { DevError } from "../dev/core/dev-error";
import type { Command } from "./command";

/**
 * devCommand: `blockx dev`, the whole system on one machine. It looks at the other commands of
 * this build to decide whether syncinvoker and proxy exist, and to learn their variables.
 */
export function devCommand(allCommands: () => readonly Command[]): Command {
  return {
    name: "dev",
    summary: "the whole system on one machine: etcd, both Coordinators, Workers, syncinvoker and proxy when built in (Ctrl-C stops all)",
    vars: devVars,
    async run(argv) {
      const config = loadDevConfig(process.env, argv);
      const commands = allCommands();
      const { runDev } = await import("../dev/app/run-dev");
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
