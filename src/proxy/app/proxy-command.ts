import type { Command } from "../../cli/command";
import { loadProxyConfig, proxyVars } from "./config";

/** `blockx proxy`: the local UDS gRPC proxy, configured from env and flags. */
export const proxyCommand: Command = {
  name: "proxy",
  summary: "local UDS gRPC proxy: Coordinator calls by service, Worker calls by the x-blockx-worker-addr header",
  vars: proxyVars,
  async run(args) {
    const config = loadProxyConfig(process.env, args.configArgv);
    const { runProxy } = await import("./run");
    await runProxy(config);
  },
};
