import { compileTlsInto, type TlsSetting } from "../../common/tls/tls-setting";
import { compileEtcdAccessInto, type EtcdAccess } from "../../common/etcd/etcd-access";
import { etcdAccessVars } from "../../common/etcd/etcd-vars";
import { commonVars } from "../../common/config/common-vars";
import { z } from "zod";
import { ConfigError, envVar, intSchema, listSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";
import { clientVars } from "../../sdk/client-config";

/** proxyVars: the `blockx proxy` role's configuration (the upstream addresses are the client's). */
export const proxyVars = {
  socketPath: envVar("PROXY_SOCKET_PATH", "blockx-proxy.sock", "a file path", "Unix socket the proxy listens on (removed on SIGTERM)", stringSchema().refine((s) => s.trim().length > 0)),
  coordinatorAddrs: clientVars.coordinatorAddrs,
  bundleCoordinatorAddrs: clientVars.bundleCoordinatorAddrs,
  syncInvokerAddr: clientVars.syncInvokerAddr,
  etcdEndpoints: envVar("ETCD_ENDPOINTS", "localhost:2379", "comma-separated host:port list", "etcd with the Worker registry: worker.v1 calls go only to Workers registered there", listSchema()),
  ...etcdAccessVars,
  socketMode: envVar("PROXY_SOCKET_MODE", "0660", "an octal file mode from 0600 to 0666", "mode of the socket file, set before it accepts calls (who may use the proxy)", z
    .string()
    .trim()
    .regex(/^0?[0-7]{3}$/)
    .transform((s) => parseInt(s, 8))
    .pipe(z.number().int().min(0o600).max(0o666))),
  socketGroup: envVar("PROXY_SOCKET_GROUP", "", "a group name or gid, or empty for the proxy's own group", "group of the socket file (with mode 0660: the users allowed to call through the proxy)", stringSchema()),
  upstreamIdleMs: envVar("PROXY_UPSTREAM_IDLE_MS", "60000", "an integer from 1000 to 86400000", "close a channel to a Coordinator, Worker or Sync Invoker after this long without calls", intSchema(1_000, 86_400_000)),
  shutdownGraceMs: envVar("PROXY_SHUTDOWN_GRACE_MS", "5000", "an integer from 0 to 3600000", "on SIGTERM, how long calls in flight may finish", intSchema(0, 3_600_000)),
  ...commonVars,
};

/** ProxyConfig: the variables, the compiled TLS setting of the proxy's upstream hops and its etcd access. */
export type ProxyConfig = EnvValues<typeof proxyVars> & { readonly tls: TlsSetting; readonly etcd: EtcdAccess };

export function loadProxyConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[]): ProxyConfig {
  const v = loadEnvConfig(proxyVars, env, argv);
  const problems: string[] = [];
  const tls = compileTlsInto(v, problems);
  const etcd = compileEtcdAccessInto(v, v.etcdEndpoints, problems);
  if (problems.length > 0 || tls === null || etcd === null) throw new ConfigError(problems);
  return Object.freeze({ ...v, tls, etcd });
}
