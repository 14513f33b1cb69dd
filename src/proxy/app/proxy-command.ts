import { roleCommand } from "../../cli/command";
import { loadProxyConfig, proxyVars } from "./config";

/** `blockx proxy`: the local UDS gRPC proxy, configured from env and flags. */
export const proxyCommand = roleCommand({
  name: "proxy",
  summary: "local UDS gRPC proxy: Coordinator calls by service, Worker calls by the x-blockx-worker-addr header",
  vars: proxyVars,
  loadConfig: loadProxyConfig,
  start: async (config) => (await import("./run")).runProxy(config),
});
