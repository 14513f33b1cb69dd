import { ErrorCode } from "../../common/error-code";
import type { ReserveWorkerSlotResponse } from "../../gen/coordinator/v1/coordinator";
import type { ClientCancelled, ReservationEvent, ReservationRequested, WorkerAnswered } from "./reservation-core-events";
import type { Reply, RequestSlot, ReservationDecision, ReservationInstruction, ReservationOutcome } from "./reservation-core-instructions";
import type { SlotError } from "./slot-reservation";
import type { CoordinatorCore } from "./coordinator-core";
import { CoordinatorError } from "./coordinator-error";
import { validateReserveRequest } from "./validate";

export type { ClientCancelled, ReservationEvent, ReservationRequested, WorkerAnswered } from "./reservation-core-events";
export type { Reply, RequestSlot, ReservationDecision, ReservationInstruction, ReservationOutcome } from "./reservation-core-instructions";

export interface ReservationCoreConfig {
  /** Candidates tried one after another (COORDINATOR_MAX_CANDIDATES). */
  readonly maxCandidates: number;
  /** Retries on the same Worker after an uncertain answer (0 allowed). */
  readonly maxTimeoutRetries: number;
  /** Deadline of one RequestTaskSlot. */
  readonly workerRpcTimeoutMs: number;
  /** ttl_ms sent with every RequestTaskSlot. */
  readonly slotTtlMs: number;
}

export const CLIENT_CANCELLED = "client cancelled the reservation";

interface Reservation {
  readonly taskId: string;
  readonly exclude: Set<string>;
  readonly rejections: string[];
  /** Candidates tried so far. */
  candidates: number;
  workerAddr: string;
  /** RequestTaskSlot calls sent to workerAddr so far. */
  tries: number;
}

/**
 * ReservationCore is the seed's ReserveWorkerSlot orchestration loop as a pure state machine:
 * validate, readiness, then up to maxCandidates candidates tried one after another. An explicit
 * rejection moves to the next candidate (recorded as backpressure or a rejection); an uncertain
 * answer is retried on the same Worker with the same task id up to maxTimeoutRetries times and
 * then answered with ErrSlotUncertain (ABORTED), never with a switch of Workers. Each candidate
 * is selected afresh from the CoordinatorCore when it is needed, so no decision is held across
 * a Worker's answer. The adapter (CoordinatorServer) only sends requests and replies.
 */
export class ReservationCore {
  private readonly open = new Map<number, Reservation>();

  constructor(
    private readonly coordinator: CoordinatorCore,
    private readonly config: ReservationCoreConfig,
    /** Told (synchronously, inside `handle`) when a request passed validation and readiness, before the first candidate is selected: a trace splits its stages there. */
    private readonly onValidated: () => void = () => {},
  ) {}

  /**
   * handle applies one event and returns the decision: at most one requestSlot to send, or the
   * reservation's reply once it is over (a cancelled client always gets its reply at once). Nothing
   * here falls due by itself (each RPC carries its own deadline), so no decision asks to wake.
   */
  handle(event: ReservationEvent, nowMs: number): ReservationDecision {
    const next = this.step(event, nowMs);
    if (next === null) return { instructions: [], wakeAtMs: null };
    return next.type === "reply" ? { instructions: [], reply: next, wakeAtMs: null } : { instructions: [next], wakeAtMs: null };
  }

  private step(event: ReservationEvent, nowMs: number): ReservationInstruction | null {
    switch (event.type) {
      case "reservationRequested":
        return this.requested(event, nowMs);
      case "workerAnswered":
        return this.answered(event, nowMs);
      case "clientCancelled":
        return this.reply(event.reservationId, { ok: false, err: new CoordinatorError(ErrorCode.ErrSlotUncertain, CLIENT_CANCELLED) }, "cancelled");
      case "timeAdvanced":
        return null;
    }
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    for (const [id, r] of this.open) {
      if (r.candidates < 1 || r.candidates > this.config.maxCandidates) throw new Error(`reservation ${id} has tried ${r.candidates} candidates (1..${this.config.maxCandidates})`);
      if (r.tries < 1 || r.tries > this.config.maxTimeoutRetries + 1) throw new Error(`reservation ${id} has sent ${r.tries} requests to ${r.workerAddr} (1..${this.config.maxTimeoutRetries + 1})`);
      if (r.workerAddr === "" || r.exclude.has(r.workerAddr)) throw new Error(`reservation ${id} waits for ${JSON.stringify(r.workerAddr)}, which it may not ask`);
    }
  }

  /** openReservations: reservations waiting for a Worker's answer (tests and the simulation check this drains). */
  get openReservations(): number {
    return this.open.size;
  }

  private requested(e: ReservationRequested, nowMs: number): ReservationInstruction {
    if (this.open.has(e.reservationId)) throw new Error(`reservation ${e.reservationId} is already open`);
    const invalid = validateReserveRequest(e.taskId);
    if (invalid) return this.fail(e.reservationId, invalid);
    const notReady = this.coordinator.readinessError(nowMs);
    if (notReady) return this.fail(e.reservationId, notReady);
    this.onValidated();
    const r: Reservation = { taskId: e.taskId, exclude: new Set(), rejections: [], candidates: 0, workerAddr: "", tries: 0 };
    this.open.set(e.reservationId, r);
    return this.nextCandidate(e.reservationId, r, nowMs);
  }

  private answered(e: WorkerAnswered, nowMs: number): ReservationInstruction {
    const r = this.open.get(e.reservationId);
    if (!r) throw new Error(`no open reservation ${e.reservationId}`);
    const a = e.answer;
    if (a.snapshot?.slotId) {
      this.coordinator.handle({ type: "slotReserved", workerAddr: r.workerAddr }, nowMs);
      return this.reply(e.reservationId, { ok: true, response: { taskId: r.taskId, workerAddr: r.workerAddr, slotId: a.snapshot.slotId } }, "reserved");
    }
    // A success without a slot id proves nothing: treat it as uncertain.
    const err: SlotError = a.err ?? { code: ErrorCode.ErrSlotUncertain, message: "worker answered without a slot id", mayHaveAllocated: true };
    if (err.mayHaveAllocated) {
      if (r.tries <= this.config.maxTimeoutRetries) return this.request(e.reservationId, r);
      this.coordinator.handle({ type: "slotUnconfirmed", workerAddr: r.workerAddr }, nowMs);
      return this.fail(
        e.reservationId,
        new CoordinatorError(
          ErrorCode.ErrSlotUncertain,
          `unable to confirm slot reservation on ${r.workerAddr} after ${this.config.maxTimeoutRetries + 1} attempts ` +
            `(${err.message || err.code}); a slot may be held for up to ${this.config.slotTtlMs} ms: wait that long, then retry`,
        ),
      );
    }
    // The task id belongs to another identity on that Worker: no other Worker changes that answer,
    // and the Worker is healthy, so neither the breaker nor the next candidate hears of it.
    if (err.code === ErrorCode.ErrPermissionDenied) return this.fail(e.reservationId, new CoordinatorError(err.code, `${r.workerAddr}: ${err.message}`));
    this.coordinator.handle({ type: err.code === ErrorCode.ErrNoSlot ? "workerWasFull" : "slotRejected", workerAddr: r.workerAddr }, nowMs);
    r.rejections.push(`${r.workerAddr}: ${err.code}${err.message ? ` (${err.message})` : ""}`);
    r.exclude.add(r.workerAddr);
    return this.nextCandidate(e.reservationId, r, nowMs);
  }

  private nextCandidate(id: number, r: Reservation, nowMs: number): ReservationInstruction {
    if (r.candidates < this.config.maxCandidates) {
      const candidate = this.coordinator.handle({ type: "candidateRequested", taskId: r.taskId, excludeAddrs: r.exclude }, nowMs).reply;
      if (!candidate.err) {
        r.candidates++;
        r.workerAddr = candidate.workerAddr;
        r.tries = 0;
        return this.request(id, r);
      }
      // Nothing tried yet: the core's reason is the answer. Otherwise every Worker we could try
      // has rejected us (unless the view became untrusted meanwhile).
      if (r.candidates === 0 || candidate.err.code === ErrorCode.ErrUnavailable) return this.fail(id, candidate.err);
    }
    return this.fail(id, new CoordinatorError(ErrorCode.ErrNoSlot, `all candidates rejected: ${r.rejections.join("; ")}`));
  }

  private request(id: number, r: Reservation): RequestSlot {
    r.tries++;
    return { type: "requestSlot", reservationId: id, workerAddr: r.workerAddr, taskId: r.taskId, ttlMs: this.config.slotTtlMs, timeoutMs: this.config.workerRpcTimeoutMs };
  }

  private fail(id: number, err: CoordinatorError): Reply {
    return this.reply(id, { ok: false, err }, outcomeOf(err));
  }

  private reply(id: number, result: Reply["result"], outcome: ReservationOutcome): Reply {
    this.open.delete(id);
    return { type: "reply", reservationId: id, result, outcome };
  }
}

function outcomeOf(e: CoordinatorError): ReservationOutcome {
  switch (e.code) {
    case ErrorCode.ErrInvalidArgument:
      return "invalid_argument";
    case ErrorCode.ErrUnavailable:
      return "unavailable";
    case ErrorCode.ErrNoExecutableSlot:
      return "no_executable_slot";
    case ErrorCode.ErrNoSlot:
      return "all_rejected";
    case ErrorCode.ErrPermissionDenied:
      return "permission_denied";
    default:
      return "uncertain";
  }
}
