import type { Logger } from "../logging/logger";
import type { MetricsRegistry } from "./metrics";
import { splitListenAddr } from "../net/listen-addr";

export interface MetricsServer {
  /** host:port actually bound (the port is resolved when 0 was asked for). */
  readonly addr: string;
  stop(): void;
}

/** startMetricsServer serves the registry at `path` on `listenAddr`; an empty addr disables it. */
export function startMetricsServer(
  registry: MetricsRegistry,
  listenAddr: string,
  path: string,
  log: Logger,
): MetricsServer | null {
  if (listenAddr === "") return null;
  const { host, port } = splitListenAddr(listenAddr);
  const server = Bun.serve({
    hostname: host,
    port,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname !== path) return new Response("not found\n", { status: 404 });
      return new Response(registry.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
    },
  });
  const addr = `${host}:${server.port}`;
  log.info({ component: "metrics", addr, path }, "metrics listening");
  return { addr, stop: () => server.stop(true) };
}
