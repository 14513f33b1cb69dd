import { roleCommand, type Command } from "../../cli/command";
import { maybeRunUnderCpuProfiler } from "../../common/lifecycle/cpu-profile";
import { coordinatorVars, loadCoordinatorRuntimeConfigFromEnv } from "./config";
import { blockProfile, bundleProfile, type Profile } from "./profile";

const coordinatorCommand = (name: string, summary: string, profile: Profile): Command =>
  roleCommand({
    name,
    summary,
    vars: coordinatorVars(profile),
    loadConfig: (env, argv) => loadCoordinatorRuntimeConfigFromEnv(profile, env, argv),
    async start(config) {
      if (await maybeRunUnderCpuProfiler(config.cpuProfile)) return;
      // Imported here so that `--help` and other roles never load etcd3 and grpc.
      const { runCoordinator } = await import("./run");
      await runCoordinator(config);
    },
  });

/** `blockx coordinator` and `blockx bundle-coordinator`: one Coordinator each, configured from env and flags. */
export const coordinatorCommands: Command[] = [
  coordinatorCommand("coordinator", "block Coordinator: reserves Worker slots for the block cluster", blockProfile),
  coordinatorCommand("bundle-coordinator", "bundle Coordinator: reserves Worker slots for the bundle cluster", bundleProfile),
];
