import { compileTlsSetting, type TlsSetting } from "../../common/tls/tls-setting";
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

/** ProxyConfig: the variables and the compiled TLS setting of the proxy's upstream hops. */
export type ProxyConfig = EnvValues<typeof proxyVars> & { readonly tls: TlsSetting };

export function loadProxyConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[]): ProxyConfig {
  const v = loadEnvConfig(proxyVars, env, argv);
  return Object.freeze({ ...v, tls: compileTlsSetting(v) });
}
