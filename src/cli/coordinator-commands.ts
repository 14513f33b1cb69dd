import { coordinatorVars, loadCoordinatorRuntimeConfigFromEnv } from "../coordinator/app/config";
import { blockProfile, bundleProfile, type Profile } from "../coordinator/app/profile";
import { maybeRunUnderCpuProfiler } from "../common/lifecycle/cpu-profile";
import type { Command } from "./command";

function coordinatorCommand(name: string, summary: string, profile: Profile): Command {
  return {
    name,
    summary,
    vars: coordinatorVars(profile),
    async run(argv) {
      const config = loadCoordinatorRuntimeConfigFromEnv(profile, process.env, argv);
      if (await maybeRunUnderCpuProfiler(config.cpuProfile)) return;
      // Imported here so that `--help` and other roles never load etcd3 and grpc.
      const { runCoordinator } = await import("../coordinator/app/run");
      await runCoordinator(config);
    },
  };
}

export const coordinatorCommands: Command[] = [
  coordinatorCommand("coordinator", "block Coordinator: reserves Worker slots for the block cluster", blockProfile),
  coordinatorCommand("bundle-coordinator", "bundle Coordinator: reserves Worker slots for the bundle cluster", bundleProfile),
];
