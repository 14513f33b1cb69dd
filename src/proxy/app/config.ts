import { commonVars } from "../../common/config/common-vars";
import { envVar, intSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";
import { clientVars } from "../../sdk/client-config";

/** proxyVars: the `blockx proxy` role's configuration (the upstream addresses are the client's). */
export const proxyVars = {
  socketPath: envVar("PROXY_SOCKET_PATH", "blockx-proxy.sock", "a file path", "Unix socket the proxy listens on (removed on SIGTERM)", stringSchema().refine((s) => s.trim().length > 0)),
  coordinatorAddrs: clientVars.coordinatorAddrs,
  bundleCoordinatorAddrs: clientVars.bundleCoordinatorAddrs,
  syncInvokerAddr: clientVars.syncInvokerAddr,
  shutdownGraceMs: envVar("PROXY_SHUTDOWN_GRACE_MS", "5000", "an integer from 0 to 3600000", "on SIGTERM, how long calls in flight may finish", intSchema(0, 3_600_000)),
  ...commonVars,
};

export type ProxyConfig = EnvValues<typeof proxyVars>;

export function loadProxyConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[]): ProxyConfig {
  return loadEnvConfig(proxyVars, env, argv);
}
