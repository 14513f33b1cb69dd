import { z } from "zod";
import { tableStoreVars } from "../outputs/stores/table-store-config";
import { tlsVars } from "../common/tls/tls-vars";
import { etcdAccessVars } from "../common/etcd/etcd-vars";
import { envVar, intSchema, listSchema, loadEnvConfig, stringSchema, type EnvValues } from "../common/config/env-config";

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]+):(\d{1,5})$/;

function addrListSchema(): z.ZodType<string[], string> {
  return listSchema().refine((xs) => xs.every((x) => HOST_PORT.test(x)));
}

const MS_RULE = "an integer from 1 to 86400000";

/**
 * clientVars: the configuration every client command and the SDK read (agreed with `blockx dev`,
 * which prints and writes exactly these names). Each is also a flag.
 */
export const clientVars = {
  coordinatorAddrs: envVar("BLOCKX_COORDINATOR_ADDRS", "127.0.0.1:8080", "comma-separated host:port list", "block Coordinators (tried in turn when one is unavailable)", addrListSchema()),
  bundleCoordinatorAddrs: envVar("BLOCKX_BUNDLE_COORDINATOR_ADDRS", "127.0.0.1:8081", "comma-separated host:port list", "bundle Coordinators", addrListSchema()),
  syncInvokerAddr: envVar("BLOCKX_SYNCINVOKER_ADDR", "127.0.0.1:9070", "host:port", "Sync Invoker (invoke, precheck)", stringSchema().refine((s) => HOST_PORT.test(s))),
  proxySocketPath: envVar("PROXY_SOCKET_PATH", "", "a path, or empty", "when set, every call goes through the `blockx proxy` Unix socket instead of direct", stringSchema()),
  etcdEndpoints: envVar("ETCD_ENDPOINTS", "localhost:2379", "comma-separated host:port list", "etcd endpoints (the `workers` command)", listSchema()),
  ...etcdAccessVars,
  ...tableStoreVars,
  slotTtlMs: envVar("BLOCKX_SLOT_TTL_MS", "5000", MS_RULE, "after Aborted, wait at least this long (the slot TTL) before retrying", intSchema(1, 86_400_000)),
  rpcTimeoutMs: envVar("BLOCKX_RPC_TIMEOUT_MS", "10000", MS_RULE, "deadline of each unary call", intSchema(1, 86_400_000)),
  workerLostAfterMs: envVar("BLOCKX_WORKER_LOST_AFTER_MS", "3000", MS_RULE, "a Worker unreachable this long while running a task counts as lost", intSchema(1, 86_400_000)),
  keepaliveTimeMs: envVar("BLOCKX_KEEPALIVE_TIME_MS", "10000", "an integer from 5000 to 86400000", "ping idle connections this often; a Worker that stops answering (hung, cut off) is noticed within this + 5 s", intSchema(5000, 86_400_000)),
  maxAttempts: envVar("BLOCKX_MAX_ATTEMPTS", "3", "an integer from 1 to 100", "runs of one task at most (resubmissions after a lost Worker + 1)", intSchema(1, 100)),
  ...tlsVars,
};

export type ClientConfig = EnvValues<typeof clientVars>;

/** loadClientConfig reads clientVars from flags, then the environment, then the defaults. */
export function loadClientConfig(env: Readonly<Record<string, string | undefined>>, argv: readonly string[] = []): ClientConfig {
  return loadEnvConfig(clientVars, env, argv);
}
