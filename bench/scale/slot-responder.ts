/**
 * bench/scale/slot-responder.ts: the Worker side of a reservation for every simulated Worker, in a
 * process of its own (for bench/scale/scale.ts).
 *
 * One gRPC server (worker.v1.WorkerService.RequestTaskSlot) answers for every simulated Worker,
 * telling them apart by the `:authority` the Coordinator dialled (each Worker's address is its own
 * loopback IP, 127.x.y.z, on this server's port). A granted slot is ALLOCATED, turns RUNNING
 * shortly after (the client's SubmitTask) and is freed when its task ends (a seeded duration).
 *
 * Why not in the simulator processes that publish the heartbeats: on this 2-core machine they also
 * keep up to 10,000 leases alive and put a thousand heartbeats a second, so a RequestTaskSlot
 * waited behind that work and the reservation latency measured the simulator, not the Coordinator
 * (bench/README.md, issue 22). Here nothing else runs on the event loop. Each change of a Worker's
 * free capacity goes to the parent (IPC), which hands it to the simulator that publishes that
 * Worker's heartbeats, with the time it happened (the publishing side of view staleness).
 *
 * A RequestTaskSlot whose task id starts with BARE_TASK_PREFIX is scale.ts's baseline: answered
 * at once, nothing reserved.
 *
 * Run by scale.ts only: argv[2] is a JSON SlotResponderConfig.
 */
import * as grpc from "@grpc/grpc-js";
import { GRPC_SERVER_OPTIONS } from "../../src/common/grpc/grpc-server";
import { TaskSnapshot, TaskState, WorkerServiceService, type WorkerServiceServer } from "../../src/gen/worker/v1/worker";
import { mulberry32 } from "../../test/support/mulberry32";
import { BARE_TASK_PREFIX } from "./bare-baseline";

export interface SlotResponderConfig {
  readonly taskSlots: number;
  /** A task runs between these (uniform, fixed by the task id). */
  readonly taskMinMs: number;
  readonly taskMaxMs: number;
  readonly seed: number;
}

/** What a simulator needs to publish a Worker's heartbeat: its slot counts, and when they changed. */
export interface SlotChange {
  readonly addr: string;
  readonly reserved: number;
  readonly running: number;
  /** Date.now() of the change when free capacity changed; null when it did not (ALLOCATED -> RUNNING). */
  readonly freeChangedAtMs: number | null;
}

export type SlotResponderMessage = { type: "ready"; port: number } | { type: "changes"; changes: SlotChange[] };

const cfg = JSON.parse(process.argv[2]!) as SlotResponderConfig;

/** taskFraction: a number in [0, 1) fixed by the task id, so both publishing modes run the same tasks. */
function taskFraction(taskId: string): number {
  let h = cfg.seed >>> 0;
  for (let i = 0; i < taskId.length; i++) h = Math.imul(h ^ taskId.charCodeAt(i), 0x9e3779b1) >>> 0;
  return mulberry32(h)();
}
const SUBMIT_AFTER_MS = 10;

const slots = new Map<string, { reserved: number; running: number }>();
let pending: SlotChange[] = [];

/** note queues a change for the parent; changes of one event-loop turn go in one message. */
function note(addr: string, s: { reserved: number; running: number }, freeChanged: boolean): void {
  if (pending.length === 0) queueMicrotask(flush);
  pending.push({ addr, reserved: s.reserved, running: s.running, freeChangedAtMs: freeChanged ? Date.now() : null });
}

function flush(): void {
  const changes = pending;
  pending = [];
  process.send!({ type: "changes", changes } satisfies SlotResponderMessage);
}

const server = new grpc.Server(GRPC_SERVER_OPTIONS);
const impl: Partial<WorkerServiceServer> = {
  requestTaskSlot: (call, callback) => {
    const addr = call.getHost();
    // The bench's bare baseline (scale.ts): the same RPC answered the same way, with no slot taken.
    if (call.request.taskId.startsWith(BARE_TASK_PREFIX)) {
      return callback(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: "bare", workerAddr: addr, state: TaskState.ALLOCATED }));
    }
    let s = slots.get(addr);
    if (!s) slots.set(addr, (s = { reserved: 0, running: 0 }));
    if (cfg.taskSlots - s.reserved - s.running <= 0) return callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: "no free slot" });
    s.reserved++;
    note(addr, s, true);
    const durationMs = cfg.taskMinMs + taskFraction(call.request.taskId) * (cfg.taskMaxMs - cfg.taskMinMs);
    const slot = s;
    setTimeout(() => {
      slot.reserved--;
      slot.running++; // free capacity unchanged: not a change a Coordinator decides on
      note(addr, slot, false);
      setTimeout(() => {
        slot.running--;
        note(addr, slot, true);
      }, durationMs);
    }, SUBMIT_AFTER_MS);
    callback(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `sim-${call.request.taskId}`, workerAddr: addr, state: TaskState.ALLOCATED }));
  },
};
server.addService(WorkerServiceService, impl as WorkerServiceServer);
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync("0.0.0.0:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);
process.send!({ type: "ready", port } satisfies SlotResponderMessage);
