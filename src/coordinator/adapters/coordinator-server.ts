import * as grpc from "@grpc/grpc-js";
import { grpcError } from "../../common/grpc/grpc-server";
import { callerOf } from "../../common/tls/grpc-tls";
import { identityKey } from "../../common/tls/peer-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";
import type { Logger } from "../../common/logging/logger";
import type { Counter, Histogram } from "../../common/metrics/metrics";
import type { ReserveWorkerSlotRequest, ReserveWorkerSlotResponse } from "../../gen/coordinator/v1/coordinator";
import { CoordinatorError } from "../core/coordinator-error";
import type { CoordinatorCore } from "../core/coordinator-core";
import { type Reply, ReservationCore } from "../core/reservation-core";
import { coordCodeToGRPC } from "./coord-code-to-grpc";
import type { SlotReservation, SlotReserver } from "./slot-reserver";

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
export class CoordinatorServer {
  private readonly reservations: ReservationCore;
  private nextReservationId = 0;

  constructor(
    core: CoordinatorCore,
    private readonly reserver: SlotReserver,
    config: HandlerConfig,
    slotTtlMs: number,
    maxCandidates: number,
    private readonly log: Logger,
    private readonly metrics?: CoordinatorServerMetrics,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.reservations = new ReservationCore(core, { maxCandidates, maxTimeoutRetries: config.maxTimeoutRetries, workerRpcTimeoutMs: config.workerRpcTimeoutMs, slotTtlMs });
  }

  /**
   * reserveWorkerSlot returns `{taskId, workerAddr, slotId}` or throws a CoordinatorError.
   * `isCancelled` is polled before each request so that a client that went away stops the loop.
   * `clientIdentity` (an identity key, "" when anonymous under BLOCKX_INSECURE) goes to the Worker
   * with each RequestTaskSlot: the slot belongs to that client.
   */
  async reserveWorkerSlot(taskId: string, isCancelled: () => boolean = () => false, clientIdentity = ""): Promise<ReserveWorkerSlotResponse> {
    const started = performance.now();
    const next = await this.drive(taskId, isCancelled, clientIdentity);
    this.metrics?.reservations.inc({ outcome: next.outcome });
    this.metrics?.reservationSeconds.observe({ outcome: next.outcome }, (performance.now() - started) / 1000);
    if (next.result.ok) {
      this.log.debug({ taskId, workerAddr: next.result.response.workerAddr, slotId: next.result.response.slotId }, "slot reserved");
      return next.result.response;
    }
    if (next.outcome === "uncertain") this.log.warn({ taskId, code: next.result.err.code, reason: next.result.err.rawMessage }, "slot reservation uncertain after retries");
    throw next.result.err;
  }

  /** drive runs one reservation through the core: each requestSlot sent, each answer fed back, to the reply. */
  private async drive(taskId: string, isCancelled: () => boolean, clientIdentity: string): Promise<Reply> {
    const reservationId = ++this.nextReservationId;
    let next = this.reservations.handle({ type: "reservationRequested", reservationId, taskId }, this.nowMs());
    while (next.type === "requestSlot") {
      if (isCancelled()) return this.reservations.handle({ type: "clientCancelled", reservationId }, this.nowMs());
      const { workerAddr } = next;
      const answer = await this.reserver.requestTaskSlot(workerAddr, { taskId, ttlMs: next.ttlMs, timeoutMs: next.timeoutMs, clientIdentity });
      this.noteAnswer(taskId, workerAddr, answer);
      next = this.reservations.handle({ type: "workerAnswered", reservationId, answer }, this.nowMs());
    }
    return next;
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
   * grpcHandler adapts reserveWorkerSlot to a grpc-js unary handler (block and bundle services).
   * Under mTLS only a client or an admin certificate may reserve; its identity owns the slot.
   */
  grpcHandler(tls: TlsSetting): grpc.handleUnaryCall<ReserveWorkerSlotRequest, ReserveWorkerSlotResponse> {
    return (call, callback) => {
      const caller = callerOf(tls, call, ["client", "admin"], "ReserveWorkerSlot");
      if (!caller.ok) return callback(caller.error);
      const clientIdentity = caller.identity ? identityKey(caller.identity) : "";
      this.reserveWorkerSlot(call.request.taskId, () => call.cancelled, clientIdentity).then(
        (res) => callback(null, res),
        (e: unknown) => {
          if (e instanceof CoordinatorError) {
            callback(grpcError(coordCodeToGRPC(e.code), e.message));
          } else {
            this.log.error({ err: e, taskId: call.request.taskId }, "ReserveWorkerSlot failed unexpectedly");
            callback(grpcError(grpc.status.INTERNAL, `internal error: ${(e as Error).message}`));
          }
        },
      );
    };
  }
}
