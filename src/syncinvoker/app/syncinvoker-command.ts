import { roleCommand } from "../../cli/command";
import { loadSyncInvokerConfig, syncInvokerVars } from "./config";

/** `blockx syncinvoker`: the Sync Invoker, configured from env and flags. */
export const syncInvokerCommand = roleCommand({
  name: "syncinvoker",
  summary: "Sync Invoker: Invoke, DebugInvoke and Precheck one function now (own executor pool, read-only IO)",
  vars: syncInvokerVars,
  loadConfig: loadSyncInvokerConfig,
  start: async (config) => (await import("./run")).runSyncInvoker(config),
});
