import { loadWorkerRuntimeConfigFromEnv, workerVars } from "../worker/app/config";
import { blockWorkerProfile, bundleWorkerProfile, type WorkerProfile } from "../worker/app/profile";
import type { Command } from "./command";

function workerCommand(name: string, summary: string, profile: WorkerProfile): Command {
  return {
    name,
    summary,
    vars: workerVars(profile),
    async run(argv) {
      const config = loadWorkerRuntimeConfigFromEnv(profile, process.env, argv);
      const { runWorker } = await import("../worker/app/run");
      await runWorker(config);
    },
  };
}

export const workerCommands: Command[] = [
  workerCommand("worker", "block-cluster Worker: slots, tasks, executor pool, etcd heartbeat", blockWorkerProfile),
  workerCommand("bundle-worker", "bundle-cluster Worker: the same, with the bundle profile", bundleWorkerProfile),
];
