import type { Command } from "../../cli/command";
import { loadWorkerRuntimeConfigFromEnv, workerVars } from "./config";
import { blockWorkerProfile, bundleWorkerProfile, type WorkerProfile } from "./profile";

function workerCommand(name: string, summary: string, profile: WorkerProfile): Command {
  return {
    name,
    summary,
    vars: workerVars(profile),
    async run(args) {
      const config = loadWorkerRuntimeConfigFromEnv(profile, process.env, args.configArgv);
      const { runWorker } = await import("./run");
      await runWorker(config);
    },
  };
}

/** `blockx worker` and `blockx bundle-worker`: one Worker of either cluster, configured from env and flags. */
export const workerCommands: Command[] = [
  workerCommand("worker", "block-cluster Worker: slots, tasks, executor pool, etcd heartbeat", blockWorkerProfile),
  workerCommand("bundle-worker", "bundle-cluster Worker: the same, with the bundle profile", bundleWorkerProfile),
];
