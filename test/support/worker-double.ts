import * as grpc from "@grpc/grpc-js";
import type { Etcd3, Lease } from "etcd3";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { suiteServerCredentials } from "./suite-tls";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import {
  TaskSnapshot,
  TaskState,
  WorkerServiceService,
  type RequestTaskSlotRequest,
  type WorkerServiceServer,
} from "../../src/gen/worker/v1/worker";

export type SlotBehaviour = "grant" | "hang" | { code: grpc.status; details: string };

/**
 * WorkerDouble is a real gRPC server speaking worker.v1.WorkerService.RequestTaskSlot, with a
 * scriptable answer, for Coordinator tests over the network. It records every request.
 */
export class WorkerDouble {
  readonly requests: RequestTaskSlotRequest[] = [];
  behaviour: SlotBehaviour = "grant";
  private readonly server = new grpc.Server();
  private readonly hanging: (() => void)[] = [];
  addr = "";

  static async start(): Promise<WorkerDouble> {
    const d = new WorkerDouble();
    const impl: Partial<WorkerServiceServer> = {
      requestTaskSlot: (call, callback) => {
        d.requests.push(call.request);
        const b = d.behaviour;
        if (b === "grant") {
          callback(
            null,
            TaskSnapshot.create({
              taskId: call.request.taskId,
              slotId: `slot-${call.request.taskId}`,
              workerAddr: d.addr,
              state: TaskState.ALLOCATED,
            }),
          );
        } else if (b === "hang") {
          d.hanging.push(() => callback({ code: grpc.status.UNAVAILABLE, details: "double shutting down" }));
        } else {
          callback({ code: b.code, details: b.details });
        }
      },
    };
    d.server.addService(WorkerServiceService, impl as WorkerServiceServer);
    const credentials = await suiteServerCredentials("worker");
    const port = await new Promise<number>((resolve, reject) =>
      d.server.bindAsync("127.0.0.1:0", credentials, (e, p) => (e ? reject(e) : resolve(p))),
    );
    d.addr = `127.0.0.1:${port}`;
    return d;
  }

  heartbeat(overrides: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
    return {
      workerAddr: this.addr,
      taskSlots: 50,
      reservedSlots: 0,
      runningTasks: 0,
      cpuPercent: 0.1,
      memoryPercent: 0.2,
      memoryAvailableBytes: 8e9,
      memoryTotalBytes: 16e9,
      processRssBytes: 1e8,
      errorRate: 0,
      lastHeartbeatMs: Date.now(),
      ...overrides,
    };
  }

  async stop(): Promise<void> {
    for (const h of this.hanging.splice(0)) h();
    this.server.forceShutdown();
  }
}

/** Registrar puts Worker heartbeats into a real etcd under a lease, as a Worker would. */
export class Registrar {
  private constructor(
    readonly client: Etcd3,
    private readonly lease: Lease,
  ) {}

  static async connect(endpoint: string): Promise<Registrar> {
    const client = await createEtcdClient({ endpoints: [endpoint], dialTimeoutMs: 2_000 });
    const lease = client.lease(30, { autoKeepAlive: true });
    lease.on("lost", () => {});
    return new Registrar(client, lease);
  }

  async register(prefix: string, hb: WorkerHeartbeat): Promise<void> {
    await this.lease.put(prefix + hb.workerAddr).value(JSON.stringify(hb));
  }

  async deregister(prefix: string, workerAddr: string): Promise<void> {
    await this.client.delete().key(prefix + workerAddr);
  }

  close(): void {
    void this.lease.revoke().catch(() => {});
    this.client.close();
  }
}

export function randomLanePrefix(kind: "block" | "bundle"): string {
  return `/blockx/test/lanes/t${Math.random().toString(36).slice(2, 10)}/${kind}-workers/`;
}

/**
 * scrapedWorkerEnv: the environment of a compiled test Worker on the shared etcd, with 2 executors,
 * a SQLite table store at `tablesPath` and /metrics on a free port (its address is logged).
 */
export function scrapedWorkerEnv(tablesPath: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
    BLOCKX_LOG_LEVEL: "info",
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: "2",
    TABLE_STORE_PATH: tablesPath,
    BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0",
    ...extra,
  };
}

/** metricSample reads one sample of a Prometheus text page (0 when absent). */
export function metricSample(page: string, name: string, labels = ""): number {
  const line = page.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}
