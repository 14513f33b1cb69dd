import { commonVars } from "../common/config/common-vars";
import { envVar, intSchema, listenAddrSchema, loadEnvConfig, stringSchema } from "../common/config/env-config";
import { splitListenAddr } from "../common/net/listen-addr";
import { onShutdownSignal } from "../common/lifecycle/shutdown";
import { createLogger } from "../common/logging/logger";
import { clientVars } from "../sdk/client-config";
import { isLoopbackHost, isWildcardHost } from "../ui/core/ui-access";
import type { Command } from "./command";

/** uiVars: the dashboard's own variables; it reads the cluster with the client's (ETCD_ENDPOINTS, ...). */
export const uiVars = {
  listen: envVar(
    "UI_LISTEN",
    "127.0.0.1:9300",
    "host:port or :port",
    "where the dashboard is served (HTTP, read-only); anything but loopback is warned about at start (:port is every interface)",
    listenAddrSchema(false),
  ),
  token: envVar(
    "UI_TOKEN",
    "",
    "empty, or 16 to 200 of A-Z a-z 0-9 - _",
    "the token the dashboard's URL carries (then its cookie); empty: a random one at each start",
    stringSchema().refine((s) => s === "" || /^[A-Za-z0-9_-]{16,200}$/.test(s)),
    { secret: "value" },
  ),
  hosts: envVar(
    "UI_HOSTS",
    "",
    "comma-separated host names, or empty",
    "Host names requests may use besides loopback and UI_LISTEN's host (a tunnel's or a reverse proxy's); any other Host is refused (DNS rebinding)",
    stringSchema().transform((s) => s.split(",").map((x) => x.trim()).filter((x) => x !== "")),
  ),
  refreshMs: envVar("UI_REFRESH_MS", "1000", "an integer from 200 to 60000", "how often an open page gets fresh Workers and tasks", intSchema(200, 60_000)),
  maxStreams: envVar("UI_MAX_STREAMS", "32", "an integer from 1 to 1000", "open pages (event streams) at most; more get 503", intSchema(1, 1000)),
  logLevel: commonVars.logLevel,
};

/** widerBindWarning: the one-line warning for a bind beyond loopback, naming it; null on loopback. */
export function widerBindWarning(listen: string): string | null {
  const { host } = splitListenAddr(listen);
  if (isLoopbackHost(host)) return null;
  const what = isWildcardHost(host) ? "every interface of this host" : `${host}, reachable from other hosts`;
  return `UI_LISTEN=${listen} serves the dashboard on ${what}: anyone who reaches it and holds the token reads every task this client may read (inputs, tracebacks, logs), over plain HTTP; prefer 127.0.0.1 and an SSH tunnel`;
}

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
    const wider = widerBindWarning(v.listen);
    if (wider) {
      process.stderr.write(`blockx ui: warning: ${wider}\n`);
      log.warn({ component: "ui", listen: v.listen }, wider);
    }
    const ui = startUiServer(client, { listenAddr: v.listen, refreshMs: v.refreshMs, maxStreams: v.maxStreams, token: v.token, hosts: v.hosts }, log);
    // The one place the token is shown: the operator's terminal (the log line has the address only).
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
