import { loadSyncInvokerConfig, syncInvokerVars } from "../syncinvoker/app/config";
import type { Command } from "./command";

export const syncInvokerCommand: Command = {
  name: "syncinvoker",
  summary: "Sync Invoker: Invoke, DebugInvoke and Precheck one function now (own executor pool, read-only IO)",
  vars: syncInvokerVars,
  async run(argv) {
    const config = loadSyncInvokerConfig(process.env, argv);
    const { runSyncInvoker } = await import("../syncinvoker/app/run");
    await runSyncInvoker(config);
  },
};
