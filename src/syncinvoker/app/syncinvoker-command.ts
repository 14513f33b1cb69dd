import type { Command } from "../../cli/command";
import { loadSyncInvokerConfig, syncInvokerVars } from "./config";

/** `blockx syncinvoker`: the Sync Invoker, configured from env and flags. */
export const syncInvokerCommand: Command = {
  name: "syncinvoker",
  summary: "Sync Invoker: Invoke, DebugInvoke and Precheck one function now (own executor pool, read-only IO)",
  vars: syncInvokerVars,
  async run(args) {
    const config = loadSyncInvokerConfig(process.env, args.configArgv);
    const { runSyncInvoker } = await import("./run");
    await runSyncInvoker(config);
  },
};
