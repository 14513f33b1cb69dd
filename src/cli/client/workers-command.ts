import { readRegisteredWorkers } from "../../sdk/worker-registry";
import { UsageError } from "../usage-error";
import { flagValue } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { textTable } from "./text-table";


const pct = (f: number) => `${(f * 100).toFixed(0)}%`;

export const workersRun: ClientCommandRun = async (args, _client, config) => {
  const cluster = flagValue(args, "cluster");
  if (cluster !== undefined && cluster !== "block" && cluster !== "bundle") throw new UsageError(`--cluster: expected block or bundle, got ${JSON.stringify(cluster)}`);
  const workers = (await readRegisteredWorkers(config)).filter((w) => !cluster || w.cluster === cluster);
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
  console.log(textTable(rows));
  return EXIT.OK;
};
