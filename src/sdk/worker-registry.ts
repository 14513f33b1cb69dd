import { createEtcdClient } from "../common/etcd/etcd-client";
import { compileEtcdAccess } from "../common/etcd/etcd-access";
import type { EtcdAccessValues } from "../common/etcd/etcd-vars";
import { parseRegistryPrefix, type WorkerKind } from "../common/registry/registry-prefix";
import { parseWorkerHeartbeat, type WorkerHeartbeat } from "../common/registry/worker-heartbeat";
import type { ClientConfig } from "./client-config";
import { BlockxError } from "./sdk-error";

export interface RegisteredWorker {
  readonly addr: string;
  readonly cluster: WorkerKind;
  readonly prefix: string;
  readonly lane: string;
  readonly freeSlots: number;
  readonly heartbeat: WorkerHeartbeat;
  readonly heartbeatAgeMs: number;
}

/** registeredWorkers reads every heartbeat key under /blockx/ whose prefix is a registry prefix. */
export function registeredWorkers(kv: Record<string, string>, nowMs: number): RegisteredWorker[] {
  const out: RegisteredWorker[] = [];
  for (const [key, value] of Object.entries(kv)) {
    const cut = key.lastIndexOf("/") + 1;
    let prefix;
    try {
      prefix = parseRegistryPrefix(key.slice(0, cut));
    } catch {
      continue;
    }
    const hb = parseWorkerHeartbeat(value);
    if (!hb.ok) continue;
    const h = hb.heartbeat;
    out.push({
      addr: key.slice(cut),
      cluster: prefix.kind,
      prefix: prefix.prefix,
      lane: prefix.lane ? `${prefix.env}/${prefix.lane}` : "legacy",
      freeSlots: Math.max(0, h.taskSlots - h.reservedSlots - h.runningTasks),
      heartbeat: h,
      heartbeatAgeMs: Math.max(0, nowMs - h.lastHeartbeatMs),
    });
  }
  return out.sort((a, b) => a.cluster.localeCompare(b.cluster) || a.lane.localeCompare(b.lane) || a.addr.localeCompare(b.addr));
}

/**
 * readRegisteredWorkers reads every Worker registered in etcd (ETCD_ENDPOINTS), whatever its
 * cluster or lane: what `blockx workers` shows and where `blockx tasks` and a task without
 * `--worker` are looked for. UNREACHABLE when etcd does not answer within BLOCKX_RPC_TIMEOUT_MS.
 */
export async function readRegisteredWorkers(config: EtcdReadConfig): Promise<RegisteredWorker[]> {
  return registeredWorkers(await readEtcdPrefix(config, "/blockx/"), Date.now());
}

/** What a client needs to read etcd: its endpoints, access (TLS, user) and patience. */
export type EtcdReadConfig = Pick<ClientConfig, "etcdEndpoints" | "rpcTimeoutMs" | keyof EtcdAccessValues>;

/**
 * readEtcdPrefix reads every key under `prefix` as text, with the client's etcd access, in one
 * range read. UNREACHABLE when etcd does not answer within BLOCKX_RPC_TIMEOUT_MS or refuses.
 */
export async function readEtcdPrefix(config: EtcdReadConfig, prefix: string): Promise<Record<string, string>> {
  const etcd = await createEtcdClient({ endpoints: config.etcdEndpoints, dialTimeoutMs: config.rpcTimeoutMs, access: compileEtcdAccess(config, config.etcdEndpoints) });
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BlockxError("UNREACHABLE", `etcd at ${config.etcdEndpoints.join(",")} did not answer within ${config.rpcTimeoutMs} ms`)), config.rpcTimeoutMs);
    });
    return await Promise.race([etcd.getAll().prefix(prefix).strings(), timeout]).finally(() => clearTimeout(timer));
  } catch (e) {
    if (e instanceof BlockxError) throw e;
    throw new BlockxError("UNREACHABLE", `etcd at ${config.etcdEndpoints.join(",")}: ${(e as Error).message}`);
  } finally {
    etcd.close();
  }
}
