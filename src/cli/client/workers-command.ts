import { createEtcdClient } from "../../common/etcd/etcd-client";
import { parseRegistryPrefix, type WorkerKind } from "../../common/registry/registry-prefix";
import { parseWorkerHeartbeat, type WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { BlockxError } from "../../sdk/sdk-error";
import { UsageError } from "../usage-error";
import { flagValue } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";

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

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

const pct = (f: number) => `${(f * 100).toFixed(0)}%`;

export const workersRun: ClientCommandRun = async (args, _client, config) => {
  const cluster = flagValue(args, "cluster");
  if (cluster !== undefined && cluster !== "block" && cluster !== "bundle") throw new UsageError(`--cluster: expected block or bundle, got ${JSON.stringify(cluster)}`);
  const etcd = await createEtcdClient({ endpoints: config.etcdEndpoints, dialTimeoutMs: config.rpcTimeoutMs });
  let kv: Record<string, string>;
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BlockxError("UNREACHABLE", `etcd at ${config.etcdEndpoints.join(",")} did not answer within ${config.rpcTimeoutMs} ms`)), config.rpcTimeoutMs);
    });
    kv = await Promise.race([etcd.getAll().prefix("/blockx/").strings(), timeout]).finally(() => clearTimeout(timer));
  } catch (e) {
    if (e instanceof BlockxError) throw e;
    throw new BlockxError("UNREACHABLE", `etcd at ${config.etcdEndpoints.join(",")}: ${(e as Error).message}`);
  } finally {
    etcd.close();
  }
  const workers = registeredWorkers(kv, Date.now()).filter((w) => !cluster || w.cluster === cluster);
  if (args.flags.has("json")) {
    console.log(JSON.stringify(workers));
    return EXIT.OK;
  }
  if (workers.length === 0) {
    console.log(`no Workers registered in etcd at ${config.etcdEndpoints.join(",")}`);
    return EXIT.OK;
  }
  const rows = [["ADDRESS", "CLUSTER", "LANE", "FREE/SLOTS", "RUNNING", "CPU", "MEMORY", "ERRORS", "HEARTBEAT"]];
  for (const w of workers) {
    const h = w.heartbeat;
    rows.push([w.addr, w.cluster, w.lane, `${w.freeSlots}/${h.taskSlots}`, String(h.runningTasks), pct(h.cpuPercent), pct(h.memoryPercent), pct(h.errorRate), `${(w.heartbeatAgeMs / 1000).toFixed(1)} s ago`]);
  }
  console.log(table(rows));
  return EXIT.OK;
};
