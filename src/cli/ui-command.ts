import { commonVars } from "../common/config/common-vars";
import { envVar, intSchema, listenAddrSchema, loadEnvConfig } from "../common/config/env-config";
import { onShutdownSignal } from "../common/lifecycle/shutdown";
import { createLogger } from "../common/logging/logger";
import { clientVars } from "../sdk/client-config";
import type { Command } from "./command";

/** uiVars: the dashboard's own variables; it reads the cluster with the client's (ETCD_ENDPOINTS, ...). */
export const uiVars = {
  listen: envVar("UI_LISTEN", "127.0.0.1:9300", "host:port or :port", "where the dashboard is served (HTTP, read-only)", listenAddrSchema(false)),
  refreshMs: envVar("UI_REFRESH_MS", "1000", "an integer from 200 to 60000", "how often an open page gets fresh Workers and tasks", intSchema(200, 60_000)),
  maxStreams: envVar("UI_MAX_STREAMS", "32", "an integer from 1 to 1000", "open pages (event streams) at most; more get 503", intSchema(1, 1000)),
  logLevel: commonVars.logLevel,
};

/**
 * `blockx ui` serves the read-only web dashboard of the cluster registered in ETCD_ENDPOINTS:
 * Workers from their heartbeats, tasks from every Worker, one task's story, error and live logs.
 */
export const uiCommand: Command = {
  name: "ui",
  summary: "serve the read-only web dashboard (Workers, tasks, a task's story, traceback and live logs)",
  vars: { ...uiVars, ...clientVars },
  async run(args) {
    const v = loadEnvConfig({ ...uiVars, ...clientVars }, process.env, args.configArgv);
    // Loaded on use, so that `--help` and the other commands never load grpc-js for it.
    const [{ BlockxClient }, { startUiServer }] = await Promise.all([import("../sdk/blockx-client"), import("../ui/ui-server")]);
    const client = new BlockxClient(v);
    const log = createLogger(v.logLevel, { role: "ui" });
    const ui = startUiServer(client, { listenAddr: v.listen, refreshMs: v.refreshMs, maxStreams: v.maxStreams }, log);
    process.stderr.write(`blockx ui: ${ui.url}\n`);
    await new Promise<void>((resolve) =>
      onShutdownSignal(log, 5_000, async () => {
        ui.stop();
        client.close();
        resolve();
      }),
    );
  },
};
