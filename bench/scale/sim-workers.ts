/**
 * bench/scale/sim-workers.ts: many simulated Workers in one process, for bench/scale/scale.ts.
 *
 * Each simulated Worker runs the real HeartbeatPublisher (src/worker/adapters/heartbeat-publisher.ts)
 * on this process's etcd client: a lease of its own, kept alive by etcd3 exactly as a Worker's is,
 * and puts of real WorkerHeartbeat values. Its slot counts change as a real Worker's do under the
 * workload: one gRPC server (worker.v1.WorkerService.RequestTaskSlot) answers for every simulated
 * Worker of the process, telling them apart by the `:authority` the Coordinator dialled (each
 * Worker's address is its own loopback IP, 127.x.y.z, on this server's port). A granted slot is
 * ALLOCATED, turns RUNNING shortly after (the client's SubmitTask) and is freed when its task ends
 * (a seeded duration).
 *
 * It records, for every change of a Worker's free capacity, how long until the Worker sampled it
 * into a heartbeat (the publishing side of view staleness; the Coordinator reports the rest as
 * blockx_coordinator_registry_update_age_seconds).
 *
 * Run by scale.ts only: argv[2] is a JSON SimConfig; IPC messages "mark" and "report".
 */
import * as grpc from "@grpc/grpc-js";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { silentLogger } from "../../src/common/logging/logger";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import { GRPC_SERVER_OPTIONS } from "../../src/common/grpc/grpc-server";
import { TaskSnapshot, TaskState, WorkerServiceService, type WorkerServiceServer } from "../../src/gen/worker/v1/worker";
import { HeartbeatPublisher } from "../../src/worker/adapters/heartbeat-publisher";
import type { HeartbeatPublishMode } from "../../src/worker/core/heartbeat-schedule";
import { mulberry32 } from "../../test/support/mulberry32";

export interface SimConfig {
  readonly etcd: string;
  readonly prefix: string;
  /** Index of this process: its Workers' addresses are 127.<2 + procIndex>.x.y. */
  readonly procIndex: number;
  readonly workers: number;
  readonly intervalMs: number;
  readonly mode: HeartbeatPublishMode;
  readonly refreshMs: number;
  readonly taskSlots: number;
  /** A task runs between these (seeded uniform). */
  readonly taskMinMs: number;
  readonly taskMaxMs: number;
  readonly seed: number;
}

export type SimMessage =
  | { type: "ready"; port: number; workers: number }
  | { type: "report"; publishDelaysMs: number[]; puts: number; samples: number; changes: number };

const cfg = JSON.parse(process.argv[2]!) as SimConfig;
/** Noise of the host figures (cpu, memory, RSS). */
const rnd = mulberry32(cfg.seed);

/** taskFraction: a number in [0, 1) fixed by the task id, so both publishing modes run the same tasks. */
function taskFraction(taskId: string): number {
  let h = cfg.seed >>> 0;
  for (let i = 0; i < taskId.length; i++) h = Math.imul(h ^ taskId.charCodeAt(i), 0x9e3779b1) >>> 0;
  return mulberry32(h)();
}
const SUBMIT_AFTER_MS = 10;

interface SimWorker {
  readonly addr: string;
  reserved: number;
  running: number;
  /** Times of free-capacity changes not sampled yet. */
  changedAtMs: number[];
  lastSampledFree: number;
  publisher: HeartbeatPublisher;
}

const workers = new Map<string, SimWorker>();
let publishDelaysMs: number[] = [];
let changes = 0;
let putsAtMark = 0;
let samplesAtMark = 0;

function changed(w: SimWorker): void {
  w.changedAtMs.push(Date.now());
  changes++;
}

function sample(w: SimWorker): WorkerHeartbeat {
  const now = Date.now();
  const free = cfg.taskSlots - w.reserved - w.running;
  if (free !== w.lastSampledFree) {
    for (const c of w.changedAtMs) publishDelaysMs.push(now - c);
    w.lastSampledFree = free;
  }
  w.changedAtMs.length = 0;
  const load = (w.reserved + w.running) / cfg.taskSlots;
  return {
    workerAddr: w.addr,
    taskSlots: cfg.taskSlots,
    reservedSlots: w.reserved,
    runningTasks: w.running,
    // What a real Worker reports moves all the time; under the red lines here.
    cpuPercent: Math.min(0.85, 0.05 + 0.6 * load + 0.1 * rnd()),
    memoryPercent: 0.3 + 0.05 * rnd(),
    memoryAvailableBytes: 8e9 + Math.floor(rnd() * 1e8),
    memoryTotalBytes: 16e9,
    processRssBytes: 2e8 + Math.floor(rnd() * 1e7),
    errorRate: 0,
    lastHeartbeatMs: now,
  };
}

const server = new grpc.Server(GRPC_SERVER_OPTIONS);
const impl: Partial<WorkerServiceServer> = {
  requestTaskSlot: (call, callback) => {
    const w = workers.get(call.getHost());
    if (!w) return callback({ code: grpc.status.NOT_FOUND, details: `no simulated worker at ${call.getHost()}` });
    if (cfg.taskSlots - w.reserved - w.running <= 0) return callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: "no free slot" });
    w.reserved++;
    changed(w);
    const durationMs = cfg.taskMinMs + taskFraction(call.request.taskId) * (cfg.taskMaxMs - cfg.taskMinMs);
    setTimeout(() => {
      w.reserved--;
      w.running++; // free capacity unchanged: not a change a Coordinator decides on
      setTimeout(() => {
        w.running--;
        changed(w);
      }, durationMs);
    }, SUBMIT_AFTER_MS);
    callback(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `sim-${call.request.taskId}`, workerAddr: w.addr, state: TaskState.ALLOCATED }));
  },
};
server.addService(WorkerServiceService, impl as WorkerServiceServer);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("0.0.0.0:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);

const client = await createEtcdClient({ endpoints: [cfg.etcd], dialTimeoutMs: 10_000 });
const log = silentLogger();
for (let j = 0; j < cfg.workers; j++) {
  const addr = `127.${2 + cfg.procIndex}.${Math.floor(j / 250)}.${(j % 250) + 1}:${port}`;
  const w: SimWorker = { addr, reserved: 0, running: 0, changedAtMs: [], lastSampledFree: cfg.taskSlots, publisher: undefined as never };
  w.publisher = new HeartbeatPublisher(
    client,
    { prefix: cfg.prefix, workerAddr: addr, intervalMs: cfg.intervalMs, leaseTtlSeconds: 10, mode: cfg.mode, refreshMs: cfg.refreshMs },
    () => sample(w),
    log,
  );
  workers.set(addr, w);
}
// Workers start at random phases of one interval, as independently started processes do.
for (const w of workers.values()) setTimeout(() => w.publisher.start(), rnd() * cfg.intervalMs);

const totalPuts = () => {
  let n = 0;
  for (const w of workers.values()) n += w.publisher.published;
  return n;
};
const totalSamples = () => {
  let n = 0;
  for (const w of workers.values()) n += w.publisher.sampled;
  return n;
};

// Ready once every Worker has put its first heartbeat.
for (;;) {
  let all = true;
  for (const w of workers.values()) {
    if (w.publisher.published === 0) {
      all = false;
      break;
    }
  }
  if (all) break;
  await Bun.sleep(100);
}
process.send!({ type: "ready", port, workers: workers.size } satisfies SimMessage);

process.on("message", (m: { type: string }) => {
  if (m.type === "mark") {
    publishDelaysMs = [];
    changes = 0;
    putsAtMark = totalPuts();
    samplesAtMark = totalSamples();
  } else if (m.type === "report") {
    process.send!({
      type: "report",
      publishDelaysMs,
      puts: totalPuts() - putsAtMark,
      samples: totalSamples() - samplesAtMark,
      changes,
    } satisfies SimMessage);
  }
});
