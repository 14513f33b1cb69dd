import { coordCodeToGRPC } from "./coord-code-to-grpc";
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { silentLogger } from "../../common/logging/logger";
import { MetricsRegistry } from "../../common/metrics/metrics";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { TaskSnapshot, TaskState } from "../../gen/worker/v1/worker";
import { defaultCoordinatorCoreConfig } from "../core/config";
import { CoordinatorCore } from "../core/coordinator-core";
import { CoordinatorError } from "../core/coordinator-error";
import { CoordinatorServer } from "./coordinator-server";
import type { RequestTaskSlotArgs, SlotError, SlotReservation, SlotReserver } from "./slot-reserver";

const NOW = 1_700_000_000_000;

function hb(workerAddr: string, freeSlots: number): WorkerHeartbeat {
  return {
    workerAddr,
    taskSlots: 50,
    reservedSlots: 50 - freeSlots,
    runningTasks: 0,
    cpuPercent: 0.1,
    memoryPercent: 0.1,
    memoryAvailableBytes: 1e9,
    memoryTotalBytes: 2e9,
    processRssBytes: 1e8,
    errorRate: 0,
    lastHeartbeatMs: NOW,
  };
}

type Reply = { slotId: string } | SlotError;
const reject = (code: SlotError["code"], message = ""): SlotError => ({ code, message, mayHaveAllocated: false });
const uncertain = (message = "deadline exceeded"): SlotError => ({ code: ErrorCode.ErrSlotUncertain, message, mayHaveAllocated: true });

/** ScriptedReserver answers each Worker from a queue of replies and records every call. */
class ScriptedReserver implements SlotReserver {
  readonly calls: { workerAddr: string; args: RequestTaskSlotArgs }[] = [];
  constructor(private readonly script: Record<string, Reply[]>) {}
  async requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
    this.calls.push({ workerAddr, args });
    const reply = this.script[workerAddr]?.shift();
    if (!reply) throw new Error(`unscripted call to ${workerAddr}`);
    if ("slotId" in reply) {
      return { snapshot: TaskSnapshot.create({ taskId: args.taskId, slotId: reply.slotId, workerAddr, state: TaskState.ALLOCATED }) };
    }
    return { err: reply };
  }
  get addrs(): string[] {
    return this.calls.map((c) => c.workerAddr);
  }
}

/** A ready core with workers ranked a > b > c > d by free capacity. */
function setup(script: Record<string, Reply[]>, opts: { maxTimeoutRetries?: number; maxCandidates?: number; workers?: WorkerHeartbeat[] } = {}) {
  const config = { ...defaultCoordinatorCoreConfig(), maxCandidates: opts.maxCandidates ?? 3 };
  const core = new CoordinatorCore(config);
  core.handle({ type: "workerListLoaded", workers: opts.workers ?? [hb("a:1", 40), hb("b:1", 30), hb("c:1", 20), hb("d:1", 10)] }, NOW);
  const reserver = new ScriptedReserver(script);
  const registry = new MetricsRegistry();
  const metrics = {
    reservations: registry.counter("reservations_total", "", ["outcome"]),
    reservationSeconds: registry.histogram("reservation_seconds", "", ["outcome"]),
    workerRpcs: registry.counter("worker_rpcs_total", "", ["result"]),
  };
  const server = new CoordinatorServer(
    core,
    reserver,
    { maxTimeoutRetries: opts.maxTimeoutRetries ?? 1, workerRpcTimeoutMs: 3000 },
    config.slotTtlMs,
    config.maxCandidates,
    silentLogger(),
    metrics,
    () => NOW,
  );
  return { core, reserver, server, metrics };
}

async function reserveError(server: CoordinatorServer, taskId: string): Promise<CoordinatorError> {
  try {
    await server.reserveWorkerSlot(taskId);
  } catch (e) {
    expect(e).toBeInstanceOf(CoordinatorError);
    return e as CoordinatorError;
  }
  throw new Error("expected reserveWorkerSlot to fail");
}

describe("CoordinatorServer.reserveWorkerSlot", () => {
  test("the best Worker grants a slot: its address and slot id go back to the client, and its failures reset", async () => {
    const { core, reserver, server } = setup({ "a:1": [{ slotId: "s-1" }] });
    // Earlier rejections on a:1 gave it a penalty that a success must clear.
    core.handle({ type: "slotRejected", workerAddr: "a:1" }, NOW);
    core.handle({ type: "slotRejected", workerAddr: "a:1" }, NOW);
    expect(core.getWorkerView("a:1")).toMatchObject({ recentFailureCount: 2, penalty: 2 });
    const res = await server.reserveWorkerSlot("t1");
    expect(res).toEqual({ taskId: "t1", workerAddr: "a:1", slotId: "s-1" });
    expect(reserver.calls).toEqual([{ workerAddr: "a:1", args: { taskId: "t1", ttlMs: 5000, timeoutMs: 3000, clientIdentity: "" } }]);
    expect(core.getWorkerView("a:1")).toMatchObject({ recentFailureCount: 0, penalty: 0, circuitBreakerDeadlineMs: 0 });
  });

  test("an explicit rejection moves on to the next candidate and counts against the rejecting Worker", async () => {
    const { core, reserver, server } = setup({
      "a:1": [reject(ErrorCode.ErrSlotConflict, "slot bound to another task")],
      "b:1": [{ slotId: "s-b" }],
    });
    const res = await server.reserveWorkerSlot("t1");
    expect(res.workerAddr).toBe("b:1");
    expect(reserver.addrs).toEqual(["a:1", "b:1"]);
    expect(core.getWorkerView("a:1")).toMatchObject({ recentFailureCount: 1, penalty: 1 });
  });

  test("a Worker without free slots (ResourceExhausted) is backpressure: next candidate, no penalty, no breaker", async () => {
    const { core, reserver, server } = setup({
      "a:1": [reject(ErrorCode.ErrNoSlot, "no free slot")],
      "b:1": [{ slotId: "s-b" }],
    });
    expect((await server.reserveWorkerSlot("t1")).workerAddr).toBe("b:1");
    expect(reserver.addrs).toEqual(["a:1", "b:1"]);
    expect(core.getWorkerView("a:1")).toMatchObject({ recentFailureCount: 0, penalty: 0 });
  });

  test("an uncertain result is retried on the same Worker with the same task id, never on another Worker", async () => {
    const { reserver, server } = setup({ "a:1": [uncertain(), { slotId: "s-a" }] });
    const res = await server.reserveWorkerSlot("t1");
    expect(res).toEqual({ taskId: "t1", workerAddr: "a:1", slotId: "s-a" });
    expect(reserver.calls.map((c) => [c.workerAddr, c.args.taskId])).toEqual([
      ["a:1", "t1"],
      ["a:1", "t1"],
    ]);
  });

  test("still uncertain after MaxTimeoutRetries: Aborted, the timeout is recorded, and no other Worker is tried", async () => {
    const { core, reserver, server } = setup({ "a:1": [uncertain(), uncertain(), uncertain()] }, { maxTimeoutRetries: 2 });
    const err = await reserveError(server, "t1");
    expect(err.code).toBe(ErrorCode.ErrSlotUncertain);
    expect(err.message).toContain("unable to confirm slot reservation");
    expect(reserver.addrs).toEqual(["a:1", "a:1", "a:1"]);
    expect(core.getWorkerView("a:1")).toMatchObject({ recentFailureCount: 1, penalty: 1 });
  });

  test("MaxTimeoutRetries = 0: one uncertain answer is final", async () => {
    const { reserver, server } = setup({ "a:1": [uncertain()] }, { maxTimeoutRetries: 0 });
    expect((await reserveError(server, "t1")).code).toBe(ErrorCode.ErrSlotUncertain);
    expect(reserver.addrs).toEqual(["a:1"]);
  });

  test("a rejection during the retry ends the retries and moves to the next candidate", async () => {
    const { reserver, server } = setup({
      "a:1": [uncertain(), reject(ErrorCode.ErrNoSlot)],
      "b:1": [{ slotId: "s-b" }],
    });
    expect((await server.reserveWorkerSlot("t1")).workerAddr).toBe("b:1");
    expect(reserver.addrs).toEqual(["a:1", "a:1", "b:1"]);
  });

  test("a success with an empty slot id proves nothing: it is retried like a timeout", async () => {
    const { reserver, server } = setup({ "a:1": [{ slotId: "" }, { slotId: "s-a" }] });
    expect((await server.reserveWorkerSlot("t1")).slotId).toBe("s-a");
    expect(reserver.addrs).toEqual(["a:1", "a:1"]);
  });

  test("empty slot ids until the retries run out: Aborted", async () => {
    const { reserver, server } = setup({ "a:1": [{ slotId: "" }, { slotId: "" }] });
    expect((await reserveError(server, "t1")).code).toBe(ErrorCode.ErrSlotUncertain);
    expect(reserver.addrs).toEqual(["a:1", "a:1"]);
  });

  test("MaxCandidates Workers all reject: ResourceExhausted 'all candidates rejected', and the fourth Worker is never asked", async () => {
    const { reserver, server } = setup({
      "a:1": [reject(ErrorCode.ErrNoSlot)],
      "b:1": [reject(ErrorCode.ErrSlotConflict)],
      "c:1": [reject(ErrorCode.ErrWorkerUnreachable, "connect ECONNREFUSED")],
    });
    const err = await reserveError(server, "t1");
    expect(err.code).toBe(ErrorCode.ErrNoSlot);
    expect(err.message).toContain("all candidates rejected");
    expect(err.message).toContain("c:1: WORKER_UNREACHABLE");
    expect(reserver.addrs).toEqual(["a:1", "b:1", "c:1"]);
  });

  test("fewer Workers than MaxCandidates, all rejecting: ResourceExhausted after trying each once", async () => {
    const { reserver, server } = setup(
      { "a:1": [reject(ErrorCode.ErrNoSlot)], "b:1": [reject(ErrorCode.ErrNoSlot)] },
      { maxCandidates: 5, workers: [hb("a:1", 5), hb("b:1", 3)] },
    );
    const err = await reserveError(server, "t1");
    expect(err.code).toBe(ErrorCode.ErrNoSlot);
    expect(reserver.addrs).toEqual(["a:1", "b:1"]);
  });

  test("an empty task id is InvalidArgument and no Worker is contacted", async () => {
    const { reserver, server } = setup({});
    const err = await reserveError(server, "");
    expect(err.code).toBe(ErrorCode.ErrInvalidArgument);
    expect(err.message).toContain("task_id");
    expect(reserver.calls).toEqual([]);
  });

  test("a task id over 256 characters is InvalidArgument, alone or in a batch, and no Worker is contacted", async () => {
    const { reserver, server } = setup({});
    const long = "t".repeat(257);
    const err = await reserveError(server, long);
    expect(err.code).toBe(ErrorCode.ErrInvalidArgument);
    expect(err.message).toContain("task_id: at most 256 characters, got 257");
    const batch = await server.reserveWorkerSlots([long]);
    expect(batch.grants[0]).toMatchObject({ code: ErrorCode.ErrInvalidArgument, status: coordCodeToGRPC(ErrorCode.ErrInvalidArgument) });
    expect(reserver.calls).toEqual([]);
  });

  test("before the first full list the Coordinator answers Unavailable without contacting anyone", async () => {
    const config = defaultCoordinatorCoreConfig();
    const core = new CoordinatorCore(config);
    const reserver = new ScriptedReserver({});
    const server = new CoordinatorServer(core, reserver, { maxTimeoutRetries: 1, workerRpcTimeoutMs: 3000 }, 5000, 3, silentLogger(), undefined, () => NOW);
    expect((await reserveError(server, "t1")).code).toBe(ErrorCode.ErrUnavailable);
    expect(reserver.calls).toEqual([]);
  });

  test("no Worker with free capacity: NoExecutableSlot before any Worker RPC", async () => {
    const { reserver, server } = setup({}, { workers: [hb("a:1", 0), hb("b:1", 0)] });
    expect((await reserveError(server, "t1")).code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(reserver.calls).toEqual([]);
  });

  test("three rejections in a row open a Worker's breaker: the next request skips it", async () => {
    const script: Record<string, Reply[]> = {
      "a:1": [reject(ErrorCode.ErrSlotConflict), reject(ErrorCode.ErrSlotConflict), reject(ErrorCode.ErrSlotConflict)],
      "b:1": [{ slotId: "1" }, { slotId: "2" }, { slotId: "3" }, { slotId: "4" }],
    };
    const { core, reserver, server } = setup(script);
    for (const t of ["t1", "t2", "t3"]) expect((await server.reserveWorkerSlot(t)).workerAddr).toBe("b:1");
    expect(core.getWorkerView("a:1")!.circuitBreakerDeadlineMs).toBe(NOW + 10_000);
    reserver.calls.length = 0;
    expect((await server.reserveWorkerSlot("t4")).workerAddr).toBe("b:1");
    expect(reserver.addrs).toEqual(["b:1"]);
  });

  test("a client that went away stops the loop before the next attempt", async () => {
    const { reserver, server, metrics } = setup({ "a:1": [uncertain(), { slotId: "s" }] });
    let cancelled = false;
    const orig = reserver.requestTaskSlot.bind(reserver);
    reserver.requestTaskSlot = async (addr, args) => {
      const r = await orig(addr, args);
      cancelled = true;
      return r;
    };
    await expect(server.reserveWorkerSlot("t1", () => cancelled)).rejects.toThrow("client cancelled");
    expect(reserver.addrs).toEqual(["a:1"]);
    expect(metrics.reservations.value({ outcome: "cancelled" })).toBe(1);
    expect(metrics.reservations.value({ outcome: "uncertain" })).toBe(0);
  });
});

describe("CoordinatorServer.reservationOutcomes (GetReservationOutcomes)", () => {
  test("records each answer with its outcome, the Worker that granted or was last asked, how many were asked, and why not", async () => {
    const { server } = setup({
      "a:1": [{ slotId: "s-1" }, reject(ErrorCode.ErrSlotConflict, "taken"), reject(ErrorCode.ErrSlotConflict, "taken")],
      "b:1": [reject(ErrorCode.ErrNoSlot, "no free slot")],
      "c:1": [reject(ErrorCode.ErrNoSlot, "no free slot")],
    });
    await server.reserveWorkerSlot("granted");
    await reserveError(server, "rejected");
    await reserveError(server, "");
    const o = server.reservationOutcomes({ limit: 0 });
    expect(o.total).toBe(3);
    expect(Object.fromEntries(o.counts.filter((c) => c.sinceStart > 0).map((c) => [c.outcome, c.sinceStart]))).toEqual({ reserved: 1, all_rejected: 1, invalid_argument: 1 });
    expect(o.recent.map((r) => [r.taskId, r.outcome, r.workerAddr, r.workersAsked])).toEqual([
      ["", "invalid_argument", "", 0],
      ["rejected", "all_rejected", "c:1", 3],
      ["granted", "reserved", "a:1", 1],
    ]);
    expect(o.recent[0]!.reason).toContain("INVALID_ARGUMENT");
    expect(o.recent[2]!.reason).toBe("");
    expect(server.reservationOutcomes({ limit: 1 }).recent).toHaveLength(1);
  });

  test("a Worker's PERMISSION_DENIED (the task id is another client's) is recorded as such, and the client hears PERMISSION_DENIED", async () => {
    const { server } = setup({ "a:1": [reject(ErrorCode.ErrPermissionDenied, "task owned-2 belongs to client/alice")] });
    const err = await reserveError(server, "owned-2");
    expect(err.code).toBe(ErrorCode.ErrPermissionDenied);
    const o = server.reservationOutcomes({ limit: 1 });
    expect(o.counts.find((c) => c.outcome === "permission_denied")?.sinceStart).toBe(1);
    expect(o.recent[0]).toMatchObject({ taskId: "owned-2", outcome: "permission_denied", workerAddr: "a:1", workersAsked: 1 });
  });

  test("a limit over the 1,000 kept is InvalidArgument, saying so", () => {
    const { server } = setup({});
    try {
      server.reservationOutcomes({ limit: 1001 });
      throw new Error("expected InvalidArgument");
    } catch (e) {
      expect((e as CoordinatorError).code).toBe(ErrorCode.ErrInvalidArgument);
      expect((e as Error).message).toContain("at most 1000 recent reservations are kept, asked for 1001");
    }
  });
});
