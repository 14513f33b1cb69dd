import * as grpc from "@grpc/grpc-js";
import { grpcError } from "../../common/grpc/grpc-server";
import { callerKeyOf } from "../../common/tls/sub-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";
import type { Logger } from "../../common/logging/logger";
import type { Counter, Histogram } from "../../common/metrics/metrics";
import type {
  GetReservationOutcomesRequest,
  GetReservationOutcomesResponse,
  ReserveWorkerSlotRequest,
  ReserveWorkerSlotResponse,
  ReserveWorkerSlotsRequest,
  ReserveWorkerSlotsResponse,
  SlotGrant,
} from "../../gen/coordinator/v1/coordinator";
import { ErrorCode } from "../../common/error-code";
import { CoordinatorError } from "../core/coordinator-error";
import type { CoordinatorCore } from "../core/coordinator-core";
import { type Reply, type RequestSlot, type ReservationEvent, ReservationCore } from "../core/reservation-core";
import { CoreDriver } from "../../common/core/core-driver";
import { ReservationOutcomeLog, RESERVATION_LOG_CAPACITY } from "../core/reservation-outcome-log";
import { coordCodeToGRPC } from "./coord-code-to-grpc";
import type { SlotReservation, SlotReserver } from "./slot-reserver";
import { NOOP_SPAN, NOOP_TRACER, type Span, type Tracer } from "../../common/trace/tracer";

/** ReserveWorkerSlots: at most this many task ids in one request. */
export const MAX_RESERVE_BATCH = 1024;
/**
 * Reservations of one batch in flight at once: enough to overlap the Workers' answers, few enough
 * that each candidate is chosen after the earlier answers lowered the winners' free capacity (all
 * at once would send the whole batch to the top-ranked Worker first).
 */
const BATCH_RESERVATIONS_IN_FLIGHT = 32;

export interface HandlerConfig {
  /** Retries on the same Worker after an uncertain result (0 allowed). */
  readonly maxTimeoutRetries: number;
  /** Deadline of one RequestTaskSlot. */
  readonly workerRpcTimeoutMs: number;
}

export function defaultHandlerConfig(): HandlerConfig {
  return { maxTimeoutRetries: 1, workerRpcTimeoutMs: 3_000 };
}

export interface CoordinatorServerMetrics {
  readonly reservations: Counter;
  readonly reservationSeconds: Histogram;
  readonly workerRpcs: Counter;
  /** blockx_coordinator_worker_rpc_duration_seconds: one RequestTaskSlot, sent to answered (what a reservation waits on a Worker). */
  readonly workerRpcSeconds?: Histogram;
}

/**
 * CoordinatorServer drives the ReserveWorkerSlot loop: its decisions (validate, readiness, which
 * candidate, retry the same Worker or move on, ABORTED) are ReservationCore's, so they can be
 * replayed without IO; this adapter only sends the RequestTaskSlot each instruction names, feeds
 * the answer back, and replies, logs and counts.
 *
 * Every core call is synchronous on one event loop, so a read or a record is atomic without the
 * seed's RWMutex; no core decision is held across an await (each candidate is selected afresh).
 */
/** GetReservationOutcomes answers this many recent reservations when the request asks for 0. */
export const DEFAULT_OUTCOMES_LIMIT = 100;

/** PendingReservation: one reservation under way in CoordinatorServer.drive. */
interface PendingReservation {
  readonly taskId: string;
  readonly isCancelled: () => boolean;
  readonly clientIdentity: string;
  readonly asked: { workerAddr: string; count: number };
  readonly span: Span;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (e: unknown) => void;
}

export class CoordinatorServer {
  private readonly reservations: ReservationCore;
  /** Runs the reservations' core: carries out each requestSlot (IO; its answer comes back as an event). */
  private readonly driver: CoreDriver<ReservationEvent, RequestSlot>;
  /** Reservations under way, by id: what their steps need and who waits for their reply. */
  private readonly pending = new Map<number, PendingReservation>();
  private nextReservationId = 0;
  /** What GetReservationOutcomes (the dashboard) reads, timed by the server's wall clock (shown to people). */
  private readonly outcomes: ReservationOutcomeLog;
  /** The span of the reservation whose core step runs now (core steps are synchronous, so one at a time). */
  private stepping: Span = NOOP_SPAN;

  constructor(
    core: CoordinatorCore,
    private readonly reserver: SlotReserver,
    config: HandlerConfig,
    slotTtlMs: number,
    maxCandidates: number,
    private readonly log: Logger,
    private readonly metrics?: CoordinatorServerMetrics,
    private readonly nowMs: () => number = Date.now,
    /** COORDINATOR_TRACE: each RPC a span, a reservation's stages in it (validate, select candidate, RequestTaskSlot, handle answer, reply). */
    private readonly tracer: Tracer = NOOP_TRACER,
  ) {
    const limits = { maxCandidates, maxTimeoutRetries: config.maxTimeoutRetries, workerRpcTimeoutMs: config.workerRpcTimeoutMs, slotTtlMs };
    this.reservations = new ReservationCore(core, limits, () => this.stepping.stage("select candidate"));
    this.driver = new CoreDriver(this.reservations, { name: "reservations", carryOut: (i) => void this.requestSlot(i), nowMs: this.nowMs, timeAdvanced: { type: "timeAdvanced" }, log });
    this.outcomes = new ReservationOutcomeLog(this.nowMs());
  }

  /**
   * reserveWorkerSlot returns `{taskId, workerAddr, slotId}` or throws a CoordinatorError.
   * `isCancelled` is polled before each request so that a client that went away stops the loop.
   * `clientIdentity` (an identity key, "" when anonymous under BLOCKX_INSECURE) goes to the Worker
   * with each RequestTaskSlot: the slot belongs to that client. Its stages go on `span`, the last
   * one ("reply") left open for the caller to end once answered.
   */
  async reserveWorkerSlot(taskId: string, isCancelled: () => boolean = () => false, clientIdentity = "", span: Span = NOOP_SPAN): Promise<ReserveWorkerSlotResponse> {
    const started = performance.now();
    const asked = { workerAddr: "", count: 0 };
    const next = await this.drive(taskId, isCancelled, clientIdentity, asked, span);
    span.stage("reply", { outcome: next.outcome });
    const durationMs = performance.now() - started;
    this.metrics?.reservations.inc({ outcome: next.outcome });
    this.metrics?.reservationSeconds.observe({ outcome: next.outcome }, durationMs / 1000);
    this.outcomes.record({
      atMs: this.nowMs(),
      taskId,
      outcome: next.outcome,
      workerAddr: next.result.ok ? next.result.response.workerAddr : asked.workerAddr,
      workersAsked: asked.count,
      durationMs,
      reason: next.result.ok ? "" : next.result.err.message,
    });
    if (next.result.ok) {
      this.log.debug({ taskId, workerAddr: next.result.response.workerAddr, slotId: next.result.response.slotId }, "slot reserved");
      return next.result.response;
    }
    if (next.outcome === "uncertain") this.log.warn({ taskId, code: next.result.err.code, reason: next.result.err.rawMessage }, "slot reservation uncertain after retries");
    throw next.result.err;
  }

  /**
   * reserveWorkerSlots runs one reservation per task id, each through reserveWorkerSlot (the same
   * validation, readiness, ranking, filters and retries as a single ReserveWorkerSlot), and
   * returns one grant per id in request order: partial success is explicit, never all-or-nothing.
   * A task id repeated in the batch is refused after its first occurrence (two concurrent
   * reservations of one id could land on two Workers). Throws CoordinatorError only for a
   * malformed request as a whole (no ids, too many).
   */
  async reserveWorkerSlots(taskIds: readonly string[], isCancelled: () => boolean = () => false, clientIdentity = "", batchSpan: Span = NOOP_SPAN): Promise<ReserveWorkerSlotsResponse> {
    if (taskIds.length === 0) throw new CoordinatorError(ErrorCode.ErrInvalidArgument, "task_ids: at least one task id is required");
    if (taskIds.length > MAX_RESERVE_BATCH) throw new CoordinatorError(ErrorCode.ErrInvalidArgument, `task_ids: at most ${MAX_RESERVE_BATCH} in one request, got ${taskIds.length}`);
    const grants: SlotGrant[] = new Array(taskIds.length);
    const seen = new Set<string>();
    const todo: number[] = [];
    taskIds.forEach((taskId, i) => {
      if (seen.has(taskId)) {
        grants[i] = refusal(taskId, new CoordinatorError(ErrorCode.ErrInvalidArgument, `task_id ${JSON.stringify(taskId)} appears more than once in the batch`));
      } else {
        seen.add(taskId);
        todo.push(i);
      }
    });
    let next = 0;
    const lane = async () => {
      while (next < todo.length) {
        const i = todo[next++]!;
        const taskId = taskIds[i]!;
        const span = batchSpan.child("reservation", { taskId });
        try {
          const r = await this.reserveWorkerSlot(taskId, isCancelled, clientIdentity, span);
          grants[i] = { taskId, workerAddr: r.workerAddr, slotId: r.slotId, status: grpc.status.OK, code: "", message: "" };
        } catch (e) {
          if (!(e instanceof CoordinatorError)) this.log.error({ err: e, taskId }, "ReserveWorkerSlots failed unexpectedly for a task");
          grants[i] = refusal(taskId, e instanceof CoordinatorError ? e : new CoordinatorError(ErrorCode.ErrInternal, `internal error: ${(e as Error).message}`));
        } finally {
          span.end();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_RESERVATIONS_IN_FLIGHT, todo.length) }, lane));
    return { grants };
  }

  /**
   * drive runs one reservation through the core under the driver: each requestSlot the core decides
   * is sent (carryOut), each answer fed back as an event, until the core's reply ends it.
   */
  private drive(taskId: string, isCancelled: () => boolean, clientIdentity: string, asked: { workerAddr: string; count: number }, span: Span): Promise<Reply> {
    const reservationId = ++this.nextReservationId;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(reservationId, { taskId, isCancelled, clientIdentity, asked, span, resolve, reject });
      span.stage("validate");
      this.feed(reservationId, { type: "reservationRequested", reservationId, taskId });
    });
  }

  /** feed hands the core one event of a reservation (its validation mark goes to the reservation's span) and ends it on a reply. */
  private feed(reservationId: number, event: ReservationEvent): void {
    const p = this.pending.get(reservationId);
    if (!p) return;
    this.stepping = p.span;
    let reply: Reply | undefined;
    try {
      reply = this.driver.send<Reply>(event);
    } catch (e) {
      this.pending.delete(reservationId);
      p.reject(e);
      return;
    } finally {
      this.stepping = NOOP_SPAN;
    }
    if (reply) {
      this.pending.delete(reservationId);
      p.resolve(reply);
    }
  }

  /** requestSlot carries out the core's requestSlot: the client may have gone; else ask the Worker and feed back its answer. */
  private async requestSlot(next: RequestSlot): Promise<void> {
    const p = this.pending.get(next.reservationId);
    if (!p) return;
    const { reservationId, workerAddr } = next;
    if (p.isCancelled()) return this.feed(reservationId, { type: "clientCancelled", reservationId });
    p.asked.workerAddr = workerAddr;
    p.asked.count++;
    const sent = performance.now();
    p.span.stage("RequestTaskSlot", { workerAddr, attempt: p.asked.count });
    let answer: SlotReservation;
    try {
      answer = await this.reserver.requestTaskSlot(workerAddr, { taskId: p.taskId, ttlMs: next.ttlMs, timeoutMs: next.timeoutMs, clientIdentity: p.clientIdentity });
    } catch (e) {
      // The reserver answers every failure as a SlotReservation; a throw is a bug: the reservation ends with it.
      this.pending.delete(reservationId);
      this.driver.send({ type: "clientCancelled", reservationId }); // closes it in the core
      p.reject(e);
      return;
    }
    p.span.stage("handle answer", answer.snapshot ? { slotId: answer.snapshot.slotId } : { code: answer.err.code });
    this.metrics?.workerRpcSeconds?.observe({}, (performance.now() - sent) / 1000);
    this.noteAnswer(p.taskId, workerAddr, answer);
    this.feed(reservationId, { type: "workerAnswered", reservationId, answer });
  }

  private noteAnswer(taskId: string, workerAddr: string, answer: SlotReservation): void {
    if (answer.snapshot) {
      this.metrics?.workerRpcs.inc({ result: answer.snapshot.slotId ? "ok" : "empty_slot_id" });
      return;
    }
    this.metrics?.workerRpcs.inc({ result: answer.err.mayHaveAllocated ? "uncertain" : "rejected" });
    if (!answer.err.mayHaveAllocated) this.log.info({ taskId, workerAddr, code: answer.err.code, reason: answer.err.message }, "worker rejected slot request");
  }

  /**
   * reservationOutcomes answers GetReservationOutcomes: counts by outcome since start and over the
   * last minute, and the newest `limit` reservations (0: DEFAULT_OUTCOMES_LIMIT).
   */
  reservationOutcomes(req: GetReservationOutcomesRequest): GetReservationOutcomesResponse {
    if (req.limit > RESERVATION_LOG_CAPACITY) {
      throw new CoordinatorError(ErrorCode.ErrInvalidArgument, `limit: at most ${RESERVATION_LOG_CAPACITY} recent reservations are kept, asked for ${req.limit}`);
    }
    const s = this.outcomes.snapshot(this.nowMs(), req.limit === 0 ? DEFAULT_OUTCOMES_LIMIT : req.limit);
    return { startedAtMs: s.startedAtMs, total: s.total, counts: [...s.counts], recent: [...s.recent] };
  }

  /** grpcOutcomesHandler adapts reservationOutcomes to a grpc-js unary handler (block and bundle services). */
  grpcOutcomesHandler(tls: TlsSetting): grpc.handleUnaryCall<GetReservationOutcomesRequest, GetReservationOutcomesResponse> {
    // Read-only, but only for the cluster's own clients and admins (it names recent task ids).
    return (call, callback) => this.serve(tls, "GetReservationOutcomes", call, callback, {}, async () => this.reservationOutcomes(call.request));
  }

  /** grpcBatchHandler adapts reserveWorkerSlots to a grpc-js unary handler (block and bundle services). */
  grpcBatchHandler(tls: TlsSetting): grpc.handleUnaryCall<ReserveWorkerSlotsRequest, ReserveWorkerSlotsResponse> {
    return (call, callback) =>
      this.serve(tls, "ReserveWorkerSlots", call, callback, {}, (clientIdentity, span) => this.reserveWorkerSlots(call.request.taskIds, () => call.cancelled, clientIdentity, span));
  }

  /**
   * grpcHandler adapts reserveWorkerSlot to a grpc-js unary handler (block and bundle services).
   * Under mTLS only a client or an admin certificate may reserve; its identity owns the slot.
   */
  grpcHandler(tls: TlsSetting): grpc.handleUnaryCall<ReserveWorkerSlotRequest, ReserveWorkerSlotResponse> {
    return (call, callback) =>
      this.serve(tls, "ReserveWorkerSlot", call, callback, { taskId: call.request.taskId }, (clientIdentity, span) =>
        this.reserveWorkerSlot(call.request.taskId, () => call.cancelled, clientIdentity, span),
      );
  }

  /**
   * serve is every RPC's frame: only a client, an admin or a proxy certificate may call (its
   * identity, with a proxy's sub-identity, is handed to `run`: sub-identity.ts); a CoordinatorError becomes its gRPC status in the one mapping, anything else
   * is logged and answered INTERNAL. The RPC is one span (COORDINATOR_TRACE), ended once answered.
   */
  private serve<Res>(
    tls: TlsSetting,
    method: string,
    call: Parameters<typeof callerKeyOf>[1],
    callback: grpc.sendUnaryData<Res>,
    logFields: Record<string, string>,
    run: (clientIdentity: string, span: Span) => Promise<Res>,
  ): void {
    const span = this.tracer.span(method, logFields);
    const caller = callerKeyOf(tls, call, method);
    if (!caller.ok) {
      span.end({ code: "PERMISSION_DENIED" });
      return callback(caller.error);
    }
    run(caller.key ?? "", span).then(
      (res) => {
        callback(null, res);
        span.end({ code: "OK" });
      },
      (e: unknown) => {
        if (e instanceof CoordinatorError) callback(grpcError(coordCodeToGRPC(e.code), e.message));
        else {
          this.log.error({ err: e, ...logFields }, `${method} failed unexpectedly`);
          callback(grpcError(grpc.status.INTERNAL, `internal error: ${(e as Error).message}`));
        }
        span.end({ code: e instanceof CoordinatorError ? e.code : ErrorCode.ErrInternal });
      },
    );
  }
}

/** refusal: a task's grant that carries no slot, with the status ReserveWorkerSlot would have failed with. */
function refusal(taskId: string, e: CoordinatorError): SlotGrant {
  return { taskId, workerAddr: "", slotId: "", status: coordCodeToGRPC(e.code), code: e.code, message: e.message };
}
