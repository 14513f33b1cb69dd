/**
 * A simulation with no IO: Coordinator cores (CoordinatorCore + ReservationCore) wired to Worker
 * cores (WorkerCore) through a seeded, randomized message scheduler on a virtual clock. Requests
 * and answers are delayed, dropped, delivered late (after the RPC deadline, so a slot is allocated
 * that no Coordinator hears of) and duplicated; Workers restart with a new incarnation; the etcd
 * watch breaks and heals; clients repeat task ids and abandon or submit their slots. After every
 * step it checks: no Worker ever holds more slots than it has; a granted slot is held by exactly
 * one task; and at the end every reservation ended in a grant, RESOURCE_EXHAUSTED, ABORTED or
 * UNAVAILABLE. The real mappings between them are used: WorkerError -> gRPC status on the Worker,
 * gRPC status -> SlotError on the Coordinator. A failing seed prints its transcript.
 */
import * as grpc from "@grpc/grpc-js";
import { describe, expect, test } from "bun:test";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import { coordCodeToGRPC } from "../../src/coordinator/adapters/coord-code-to-grpc";
import { grpcErrToSlotError } from "../../src/coordinator/adapters/worker-rpc-client";
import { defaultCoordinatorCoreConfig } from "../../src/coordinator/core/config";
import { CoordinatorCore } from "../../src/coordinator/core/coordinator-core";
import { type ReservationDecision, type ReservationInstruction, ReservationCore } from "../../src/coordinator/core/reservation-core";

/** one: a reservation step as the one thing it amounts to: the reply once it is over, else the request to send. */
const one = (d: ReservationDecision): ReservationInstruction => d.reply ?? d.instructions[0]!;
import type { SlotReservation } from "../../src/coordinator/core/slot-reservation";
import { workerCodeToGRPC } from "../../src/worker/adapters/worker-code-to-grpc";
import { WorkerCore } from "../../src/worker/core/worker-core";
import { testHeartbeat } from "../support/heartbeat";
import { mulberry32 } from "../support/mulberry32";

interface SimOptions {
  readonly seed: number;
  readonly steps: number;
  /** Test of the test: every Worker core is built with one slot more than the Worker has. */
  readonly overGrantingWorkers?: boolean;
}

/** The statuses a client may see from ReserveWorkerSlot besides a grant (the seed's client rules). */
const ALLOWED_FAILURES = new Set([grpc.status.RESOURCE_EXHAUSTED, grpc.status.ABORTED, grpc.status.UNAVAILABLE]);

class SimulationFailure extends Error {}

interface SimWorker {
  readonly addr: string;
  readonly taskSlots: number;
  core: WorkerCore;
  incarnation: string;
  up: boolean;
  /** Bumped at each restart: events of an earlier generation are void. */
  gen: number;
}

interface SimCoordinator {
  readonly name: string;
  readonly core: CoordinatorCore;
  readonly reservations: ReservationCore;
  watchUp: boolean;
}

interface Reservation {
  readonly id: number;
  readonly coordinator: SimCoordinator;
  readonly taskId: string;
  ended?: string;
}

/** runSimulation plays one seed; it throws SimulationFailure with the transcript's tail on a broken promise. */
function runSimulation(o: SimOptions) {
  const rnd = mulberry32(o.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const chance = (p: number) => rnd() < p;
  const transcript: string[] = [];
  let now = 0;
  const note = (s: string) => transcript.push(`${String(now).padStart(6)} ms  ${s}`);
  const fail = (why: string): never => {
    throw new SimulationFailure(`seed ${o.seed}, at ${now} ms: ${why}\n--- last steps ---\n${transcript.slice(-80).join("\n")}`);
  };

  // The event queue: (time, insertion order), so equal times keep their order.
  const queue: { at: number; seq: number; label: string; run: () => void }[] = [];
  let seq = 0;
  const at = (time: number, label: string, run: () => void) => {
    const e = { at: time, seq: seq++, label, run };
    let i = queue.length;
    while (i > 0 && (queue[i - 1]!.at > e.at || (queue[i - 1]!.at === e.at && queue[i - 1]!.seq > e.seq))) i--;
    queue.splice(i, 0, e);
  };

  const slotTtlMs = 500;
  const rpcTimeoutMs = 100;
  // Every start of a Worker gets an incarnation never used before (the real one is random).
  let incarnations = 0;
  const startCore = (addr: string, taskSlots: number) => {
    const incarnation = `inc${++incarnations}`;
    return { incarnation, core: new WorkerCore({ taskSlots: taskSlots + (o.overGrantingWorkers ? 1 : 0), retentionMs: 2_000, workerAddr: addr }, incarnation) };
  };
  const workers: SimWorker[] = Array.from({ length: int(2, 4) }, (_, i) => {
    const addr = `10.0.0.${i + 1}:9090`;
    const taskSlots = int(1, 3);
    return { addr, taskSlots, ...startCore(addr, taskSlots), up: true, gen: 0 };
  });
  const maxCandidates = int(1, 3);
  const maxTimeoutRetries = int(0, 2);
  const heartbeatOf = (w: SimWorker): WorkerHeartbeat => {
    const c = w.core.slotCounts();
    return testHeartbeat(w.addr, { taskSlots: c.taskSlots, reservedSlots: c.reservedSlots, runningTasks: c.runningTasks, lastHeartbeatMs: now });
  };
  const coordinators: SimCoordinator[] = Array.from({ length: int(1, 2) }, (_, i) => {
    const core = new CoordinatorCore({
      ...defaultCoordinatorCoreConfig(),
      heartbeatTimeoutMs: 1_000,
      watchGracePeriodMs: 600,
      slotTtlMs,
      maxCandidates,
      circuitBreakerCooldownMs: 400,
    });
    core.handle({ type: "workerListLoaded", workers: workers.map(heartbeatOf) }, now);
    return { name: `c${i + 1}`, core, reservations: new ReservationCore(core, { maxCandidates, maxTimeoutRetries, workerRpcTimeoutMs: rpcTimeoutMs, slotTtlMs }), watchUp: true };
  });
  note(`${workers.length} Workers (slots ${workers.map((w) => w.taskSlots).join(", ")}), ${coordinators.length} Coordinators, maxCandidates ${maxCandidates}, maxTimeoutRetries ${maxTimeoutRetries}`);

  const reservations = new Map<number, Reservation>();
  /** `${workerAddr} ${slotId}` -> the task it was granted to. */
  const grants = new Map<string, string>();
  const outcomes = new Map<string, number>();
  let nextReservation = 0;
  let nextTask = 0;
  const recentTasks: string[] = [];

  const checkWorkers = () => {
    for (const w of workers) {
      if (!w.up) continue;
      const c = w.core.slotCounts();
      if (c.reservedSlots + c.runningTasks > w.taskSlots) fail(`${w.addr} holds ${c.reservedSlots} allocated + ${c.runningTasks} running slots, more than its ${w.taskSlots}`);
      try {
        w.core.validateState();
      } catch (e) {
        fail(`${w.addr}: ${(e as Error).message}`);
      }
    }
  };

  /** execute carries out one ReservationCore instruction: a request on the simulated network, or a reply to the client. */
  const execute = (r: Reservation, instr: ReservationInstruction): void => {
    if (instr.type === "reply") {
      r.ended = instr.result.ok ? "granted" : grpc.status[coordCodeToGRPC(instr.result.err.code)]!;
      outcomes.set(r.ended, (outcomes.get(r.ended) ?? 0) + 1);
      if (!instr.result.ok) {
        const status = coordCodeToGRPC(instr.result.err.code);
        note(`${r.coordinator.name} r${r.id} ${r.taskId}: ${grpc.status[status]} (${instr.result.err.rawMessage.slice(0, 80)})`);
        if (!ALLOWED_FAILURES.has(status)) fail(`reservation r${r.id} ended with ${grpc.status[status]}: ${instr.result.err.message}`);
        return;
      }
      const { workerAddr, slotId } = instr.result.response;
      note(`${r.coordinator.name} r${r.id} ${r.taskId}: granted ${workerAddr} slot ${slotId}`);
      const key = `${workerAddr} ${slotId}`;
      const holder = grants.get(key);
      if (holder !== undefined && holder !== r.taskId) fail(`slot ${slotId} of ${workerAddr} granted to ${holder} and to ${r.taskId}`);
      grants.set(key, r.taskId);
      const w = workers.find((x) => x.addr === workerAddr)!;
      // On the Worker, that slot (if it still exists) belongs to this task and to no other.
      if (w.up && slotId.startsWith(`${w.incarnation}.`)) {
        const snap = w.core.snapshotOf(r.taskId);
        if (snap && snap.slotId !== "" && snap.slotId !== slotId && snap.state <= 2) {
          fail(`${r.taskId} was granted ${slotId} but holds ${snap.slotId} on ${workerAddr}`);
        }
      }
      // The client submits most grants (the task runs, then ends); it abandons the rest (the TTL reclaims them).
      if (chance(0.8)) {
        const gen = w.gen;
        at(now + int(1, 150), `submit ${r.taskId}`, () => {
          if (!w.up || w.gen !== gen) return note(`submit ${r.taskId} to ${w.addr}: Worker restarted, refused`);
          const d = w.core.handle({ type: "taskSubmitted", task: { taskId: r.taskId, timeoutMs: 0 }, slotId }, now);
          const started = d.instructions.some((i) => i.type === "startTask");
          note(`submit ${r.taskId} slot ${slotId} to ${w.addr}: ${d.reply.err ? d.reply.err.message.slice(0, 70) : started ? "started" : "accepted again"}`);
          if (started) {
            at(now + int(20, 400), `end ${r.taskId}`, () => {
              if (w.up && w.gen === gen) w.core.handle({ type: "taskSucceeded", taskId: r.taskId }, now);
            });
          }
        });
      }
      return;
    }
    // requestSlot: exactly one answer reaches the Coordinator, the Worker's reply or the deadline's.
    const w = workers.find((x) => x.addr === instr.workerAddr);
    if (!w) return fail(`${r.coordinator.name} asked a Worker it cannot know: ${instr.workerAddr}`);
    let settled = false;
    const answer = (a: SlotReservation, why: string) => {
      if (settled) return;
      settled = true;
      note(`${r.coordinator.name} r${r.id} <- ${w.addr}: ${why}`);
      execute(r, one(r.coordinator.reservations.handle({ type: "workerAnswered", reservationId: r.id, answer: a }, now)));
    };
    const sentAt = now;
    at(sentAt + instr.timeoutMs, `deadline r${r.id}`, () => answer({ err: grpcErrToSlotError({ code: grpc.status.DEADLINE_EXCEEDED, details: "Deadline exceeded" }) }, "deadline exceeded"));
    const deliver = (copy: string) => {
      if (chance(0.03)) return note(`r${r.id} request to ${w.addr} lost${copy}`);
      const late = chance(0.05);
      at(sentAt + (late ? int(rpcTimeoutMs, 3 * rpcTimeoutMs) : int(1, 40)), `request r${r.id}${copy}`, () => {
        let a: SlotReservation;
        if (!w.up) {
          a = { err: grpcErrToSlotError({ code: grpc.status.UNAVAILABLE, details: "No connection established. Last error: connect ECONNREFUSED" }) };
        } else {
          const d = w.core.handle({ type: "taskSlotRequested", taskId: instr.taskId, ttlMs: instr.ttlMs }, now);
          a = d.reply.snapshot ? { snapshot: d.reply.snapshot } : { err: grpcErrToSlotError({ code: workerCodeToGRPC(d.reply.err.code), details: d.reply.err.message }) };
          note(`${w.addr} RequestTaskSlot ${instr.taskId}${copy}: ${d.reply.snapshot ? `slot ${d.reply.snapshot.slotId}` : d.reply.err.message.slice(0, 70)}`);
        }
        if (copy !== "" || chance(0.03)) return; // a duplicate's answer, or a lost answer, never arrives
        const back = chance(0.05) ? int(rpcTimeoutMs, 2 * rpcTimeoutMs) : int(1, 40);
        at(now + back, `answer r${r.id}`, () => answer(a, a.snapshot ? `slot ${a.snapshot.slotId}` : `${a.err!.code} ${a.err!.message.slice(0, 50)}`));
      });
    };
    deliver("");
    if (chance(0.03)) deliver(" (duplicate)");
  };

  // Clients: a new reservation every few ms; some repeat a recent task id (a client retrying).
  const arrive = () => {
    const c = coordinators[int(0, coordinators.length - 1)]!;
    const taskId = recentTasks.length > 0 && chance(0.1) ? recentTasks[int(0, recentTasks.length - 1)]! : `t${++nextTask}`;
    recentTasks.push(taskId);
    if (recentTasks.length > 20) recentTasks.shift();
    const r: Reservation = { id: ++nextReservation, coordinator: c, taskId };
    reservations.set(r.id, r);
    note(`${c.name} r${r.id} ReserveWorkerSlot ${taskId}`);
    execute(r, one(c.reservations.handle({ type: "reservationRequested", reservationId: r.id, taskId }, now)));
  };

  // Heartbeats (the etcd watch delivers each Worker's put to every Coordinator whose watch is up).
  const heartbeat = (w: SimWorker) => {
    if (w.up) {
      const hb = heartbeatOf(w);
      for (const c of coordinators) {
        if (!c.watchUp) continue;
        at(now + int(1, 30), `heartbeat ${w.addr} -> ${c.name}`, () => c.watchUp && c.core.handle({ type: "workerUpdated", heartbeat: { ...hb } }, now));
      }
    }
  };
  const restart = (w: SimWorker) => {
    if (!w.up) return; // already down: its restart is on the way
    w.up = false;
    w.gen++;
    note(`${w.addr} crashed`);
    at(now + int(50, 300), `lease of ${w.addr} gone`, () => {
      for (const c of coordinators) if (c.watchUp) c.core.handle({ type: "workerRemoved", workerAddr: w.addr }, now);
    });
    at(now + int(100, 600), `${w.addr} back`, () => {
      Object.assign(w, startCore(w.addr, w.taskSlots));
      w.up = true;
      note(`${w.addr} restarted as ${w.incarnation}`);
    });
  };
  const breakWatch = (c: SimCoordinator) => {
    c.watchUp = false;
    c.core.handle({ type: "watchDisconnected" }, now);
    note(`${c.name} watch broken`);
    at(now + int(100, 1_200), `${c.name} watch back`, () => {
      c.watchUp = true;
      c.core.handle({ type: "workerListLoaded", workers: workers.filter((w) => w.up).map(heartbeatOf) }, now);
      c.core.handle({ type: "watchReconnected" }, now);
      note(`${c.name} watch back, full list applied`);
    });
  };

  // The background of the run: arrivals, heartbeats, Worker timers and faults, for o.steps events.
  let steps = 0;
  const tick = () => {
    if (steps >= o.steps) return;
    if (chance(0.5)) arrive();
    for (const w of workers) if (w.up) w.core.handle({ type: "timeAdvanced" }, now);
    if (now % 50 === 0) for (const w of workers) heartbeat(w);
    if (chance(0.002)) restart(workers[int(0, workers.length - 1)]!);
    if (chance(0.001)) breakWatch(coordinators[int(0, coordinators.length - 1)]!);
    at(now + 10, "tick", tick);
  };
  at(0, "tick", tick);
  while (queue.length > 0) {
    const e = queue.shift()!;
    now = e.at;
    if (e.label !== "tick") steps++;
    e.run();
    checkWorkers();
  }

  // Drained: every reservation has ended, and no Coordinator holds one open.
  const open = [...reservations.values()].filter((r) => r.ended === undefined);
  if (open.length > 0) fail(`${open.length} reservations never ended: ${open.slice(0, 5).map((r) => `r${r.id} ${r.taskId}`).join(", ")}`);
  for (const c of coordinators) if (c.reservations.openReservations !== 0) fail(`${c.name} still holds ${c.reservations.openReservations} reservations open`);
  return { steps, reservations: reservations.size, outcomes: Object.fromEntries(outcomes) };
}

describe("reservations between Coordinator and Worker cores over a lossy network (seeded simulation)", () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`seed ${seed}: no Worker over-grants, each granted slot has one task, every reservation ends as the seed allows`, () => {
      const r = runSimulation({ seed, steps: 6_000 });
      console.log(`seed ${seed}: ${r.reservations} reservations, ${JSON.stringify(r.outcomes)}`);
      // The run really exercised every ending (else the checks above could hold vacuously).
      expect(r.steps).toBeGreaterThanOrEqual(6_000);
      expect(r.outcomes.granted ?? 0).toBeGreaterThan(50);
      expect((r.outcomes.RESOURCE_EXHAUSTED ?? 0) + (r.outcomes.ABORTED ?? 0)).toBeGreaterThan(0);
    });
  }

  test("a broken promise fails with the seed and its transcript", () => {
    // Workers whose cores grant one slot more than the Worker has are caught, with the seed and the steps.
    expect(() => runSimulation({ seed: 1, steps: 6_000, overGrantingWorkers: true })).toThrow(/^seed 1, at \d+ ms: .* more than its \d+\n--- last steps ---\n/);
  });
});
