import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { testHeartbeat } from "../../../test/support/heartbeat";
import { TaskSnapshot } from "../../gen/worker/v1/worker";
import { defaultCoordinatorCoreConfig } from "./config";
import { CoordinatorCore } from "./coordinator-core";
import { CLIENT_CANCELLED, type ReservationDecision, type ReservationInstruction, ReservationCore } from "./reservation-core";
import type { SlotReservation } from "./slot-reservation";

const NOW = 1_700_000_000_000;
const hb = (workerAddr: string, free: number) => testHeartbeat(workerAddr, { taskSlots: 10, reservedSlots: 10 - free, lastHeartbeatMs: NOW });
const slot = (slotId: string): SlotReservation => ({ snapshot: TaskSnapshot.create({ slotId }) });
const rejected = (code: ErrorCode): SlotReservation => ({ err: { code, message: "no", mayHaveAllocated: false } });
const uncertain: SlotReservation = { err: { code: ErrorCode.ErrSlotUncertain, message: "deadline exceeded", mayHaveAllocated: true } };

function setup(opts: { maxCandidates?: number; maxTimeoutRetries?: number } = {}) {
  const core = new CoordinatorCore({ ...defaultCoordinatorCoreConfig(), maxCandidates: opts.maxCandidates ?? 3 });
  core.handle({ type: "workerListLoaded", workers: [hb("a:1", 9), hb("b:1", 5), hb("c:1", 1)] }, NOW);
  const r = new ReservationCore(core, { maxCandidates: opts.maxCandidates ?? 3, maxTimeoutRetries: opts.maxTimeoutRetries ?? 1, workerRpcTimeoutMs: 3000, slotTtlMs: 5000 });
  return { core, r };
}

/** play feeds the answers in order and returns every instruction, the reply last. */
/** one: a decision as the one thing it amounts to: the reply once the reservation is over, else the request to send. */
function one(r: ReservationCore, d: ReservationDecision): ReservationInstruction {
  r.validateState();
  expect(d.wakeAtMs).toBeNull();
  expect(d.instructions.length + (d.reply ? 1 : 0)).toBe(1);
  return d.reply ?? d.instructions[0]!;
}

function play(r: ReservationCore, taskId: string, answers: SlotReservation[]): ReservationInstruction[] {
  const out = [one(r, r.handle({ type: "reservationRequested", reservationId: 1, taskId }, NOW))];
  for (const answer of answers) out.push(one(r, r.handle({ type: "workerAnswered", reservationId: 1, answer }, NOW)));
  return out;
}
const asked = (xs: ReservationInstruction[]) => xs.flatMap((x) => (x.type === "requestSlot" ? [x.workerAddr] : []));
const last = (xs: ReservationInstruction[]) => xs.at(-1)!;

describe("ReservationCore", () => {
  test("the best candidate first; its slot is the reply", () => {
    const { r } = setup();
    const xs = play(r, "t1", [slot("s1")]);
    expect(xs[0]).toEqual({ type: "requestSlot", reservationId: 1, workerAddr: "a:1", taskId: "t1", ttlMs: 5000, timeoutMs: 3000 });
    expect(last(xs)).toEqual({ type: "reply", reservationId: 1, outcome: "reserved", result: { ok: true, response: { taskId: "t1", workerAddr: "a:1", slotId: "s1" } } });
    expect(r.openReservations).toBe(0);
  });

  test("an explicit rejection moves on; all rejected is RESOURCE_EXHAUSTED naming each", () => {
    const { core, r } = setup();
    const xs = play(r, "t1", [rejected(ErrorCode.ErrNoSlot), rejected(ErrorCode.ErrSlotConflict), rejected(ErrorCode.ErrNoSlot)]);
    expect(asked(xs)).toEqual(["a:1", "b:1", "c:1"]);
    const reply = last(xs);
    expect(reply.type === "reply" && !reply.result.ok && [reply.outcome, reply.result.err.code]).toEqual(["all_rejected", ErrorCode.ErrNoSlot]);
    expect(reply.type === "reply" && !reply.result.ok && reply.result.err.rawMessage).toBe("all candidates rejected: a:1: NO_SLOT (no); b:1: SLOT_CONFLICT (no); c:1: NO_SLOT (no)");
    expect(core.getWorkerView("b:1")?.recentFailureCount).toBe(1); // a conflict counts against the breaker; backpressure does not
    expect(core.getWorkerView("a:1")?.recentFailureCount).toBe(0);
  });

  test("an uncertain answer is retried on the same Worker, then ABORTED; never another Worker", () => {
    const { core, r } = setup({ maxTimeoutRetries: 2 });
    const xs = play(r, "t1", [uncertain, uncertain, uncertain]);
    expect(asked(xs)).toEqual(["a:1", "a:1", "a:1"]);
    const reply = last(xs);
    expect(reply.type === "reply" && !reply.result.ok && [reply.outcome, reply.result.err.code]).toEqual(["uncertain", ErrorCode.ErrSlotUncertain]);
    expect(core.getWorkerView("a:1")?.recentFailureCount).toBe(1);
    // An explicit answer during the retries ends them: here a slot on the second try.
    const again = setup({ maxTimeoutRetries: 2 }).r;
    expect(asked(play(again, "t2", [uncertain, slot("s9")]))).toEqual(["a:1", "a:1"]);
  });

  test("a success without a slot id proves nothing: it is retried like an uncertain answer", () => {
    const { r } = setup({ maxTimeoutRetries: 1 });
    const xs = play(r, "t1", [slot(""), slot("s2")]);
    expect(asked(xs)).toEqual(["a:1", "a:1"]);
    expect(last(xs)).toMatchObject({ outcome: "reserved" });
  });

  test("maxCandidates bounds the Workers tried", () => {
    const { r } = setup({ maxCandidates: 1 });
    const xs = play(r, "t1", [rejected(ErrorCode.ErrNoSlot)]);
    expect(asked(xs)).toEqual(["a:1"]);
    expect(last(xs)).toMatchObject({ outcome: "all_rejected" });
  });

  test("an empty task id, an untrusted view, and a cancelled client each get their reply at once", () => {
    const { core, r } = setup();
    expect(play(r, "", [])[0]).toMatchObject({ type: "reply", outcome: "invalid_argument" });
    core.handle({ type: "watchDisconnected" }, NOW - 20_000);
    expect(play(r, "t1", [])[0]).toMatchObject({ type: "reply", outcome: "unavailable" });
    core.handle({ type: "watchReconnected" }, NOW);
    expect(one(r, r.handle({ type: "reservationRequested", reservationId: 7, taskId: "t7" }, NOW)).type).toBe("requestSlot");
    const cancelled = r.handle({ type: "clientCancelled", reservationId: 7 }, NOW).reply!;
    expect(cancelled.outcome).toBe("cancelled");
    expect(!cancelled.result.ok && cancelled.result.err.rawMessage).toBe(CLIENT_CANCELLED);
    expect(r.openReservations).toBe(0);
  });

  test("an answer for a reservation that is not open is a bug in the adapter", () => {
    const { r } = setup();
    expect(() => r.handle({ type: "workerAnswered", reservationId: 42, answer: uncertain }, NOW)).toThrow("no open reservation 42");
  });
});
