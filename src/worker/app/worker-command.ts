import { roleCommand, type Command } from "../../cli/command";
import { loadWorkerRuntimeConfigFromEnv, workerVars } from "./config";
import { blockWorkerProfile, bundleWorkerProfile, type WorkerProfile } from "../core/profile";

const workerCommand = (name: string, summary: string, profile: WorkerProfile): Command =>
  roleCommand({
    name,
    summary,
    vars: workerVars(profile),
    loadConfig: (env, argv) => loadWorkerRuntimeConfigFromEnv(profile, env, argv),
    start: async (config) => (await import("./run")).runWorker(config),
  });

/** `blockx worker` and `blockx bundle-worker`: one Worker of either cluster, configured from env and flags. */
export const workerCommands: Command[] = [
  workerCommand("worker", "block-cluster Worker: slots, tasks, executor pool, etcd heartbeat", blockWorkerProfile),
  workerCommand("bundle-worker", "bundle-cluster Worker: the same, with the bundle profile", bundleWorkerProfile),
];
