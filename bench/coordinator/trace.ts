/**
 * What COORDINATOR_TRACE costs a reservation: the same in-process CoordinatorServer (real core,
 * real ReservationCore, a Worker that answers at once) with the no-op tracer and with a recording
 * one, in interleaved rounds of the same run; prints ns per reservation of each and the ratio
 * on / off (median of the rounds). The Worker's RPC is left out on purpose: against a real one
 * (150-400 µs over loopback) the tracer's share would be smaller still.
 *
 *   bun bench/coordinator/trace.ts [--rounds 7] [--reservations 20000]
 */
import { parseArgs } from "node:util";
import { silentLogger } from "../../src/common/logging/logger";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import { NOOP_TRACER, RecordingTracer, type Tracer } from "../../src/common/trace/tracer";
import { CoordinatorServer } from "../../src/coordinator/adapters/coordinator-server";
import type { RequestTaskSlotArgs, SlotReservation } from "../../src/coordinator/adapters/slot-reserver";
import { defaultCoordinatorCoreConfig } from "../../src/coordinator/core/config";
import { CoordinatorCore } from "../../src/coordinator/core/coordinator-core";
import { TaskSnapshot, TaskState } from "../../src/gen/worker/v1/worker";
import { testHeartbeat } from "../../test/support/heartbeat";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "7" }, reservations: { type: "string", default: "20000" } } });
const ROUNDS = Number(values.rounds);
const N = Number(values.reservations);
const NOW = 1_700_000_000_000;
const WORKERS = 100;

const heartbeat = (i: number): WorkerHeartbeat => testHeartbeat(`w${i}:1`, { taskSlots: 100_000, lastHeartbeatMs: NOW });

const instantWorker = {
  async requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
    return { snapshot: TaskSnapshot.create({ taskId: args.taskId, slotId: `s-${args.taskId}`, workerAddr, state: TaskState.ALLOCATED }) };
  },
};

interface Rig {
  server: CoordinatorServer;
  core: CoordinatorCore;
  tracer: Tracer;
}

function server(tracer: Tracer): Rig {
  const config = defaultCoordinatorCoreConfig();
  const core = new CoordinatorCore(config);
  const s = new CoordinatorServer(core, instantWorker, { maxTimeoutRetries: 1, workerRpcTimeoutMs: 3000 }, config.slotTtlMs, config.maxCandidates, silentLogger(), undefined, () => NOW, tracer);
  return { server: s, core, tracer };
}

/**
 * round: ns per reservation over N serial reservations, the view reloaded first (fresh capacity);
 * each in its RPC's span as the gRPC handler (`serve`) opens and ends it.
 */
async function round(s: Rig, tag: string): Promise<number> {
  s.core.handle({ type: "workerListLoaded", workers: Array.from({ length: WORKERS }, (_, i) => heartbeat(i)) }, NOW);
  const started = Bun.nanoseconds();
  for (let i = 0; i < N; i++) {
    const taskId = `${tag}-${i}`;
    const span = s.tracer.span("ReserveWorkerSlot", { taskId });
    await s.server.reserveWorkerSlot(taskId, () => false, "", span);
    span.end({ code: "OK" });
  }
  return (Bun.nanoseconds() - started) / N;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const off = server(NOOP_TRACER);
const recording = new RecordingTracer(process.pid);
const on = server(recording);
await round(off, "warm-off");
await round(on, "warm-on");
const offNs: number[] = [];
const onNs: number[] = [];
const ratios: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const a = await round(off, `off-${r}`);
  const b = await round(on, `on-${r}`);
  offNs.push(a);
  onNs.push(b);
  ratios.push(b / a);
  console.log(`round ${r + 1}: off ${a.toFixed(0)} ns, on ${b.toFixed(0)} ns per reservation (${(b / a).toFixed(2)}x)`);
}
console.log(
  `tracing off ${median(offNs).toFixed(0)} ns, on ${median(onNs).toFixed(0)} ns per reservation; on / off = ${median(ratios).toFixed(2)}x (median of ${ROUNDS} rounds of ${N}); ` +
    `events kept ${recording.ring.size} of ${recording.ring.capacity}, dropped ${recording.ring.dropped}`,
);
