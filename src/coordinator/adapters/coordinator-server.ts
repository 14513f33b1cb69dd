import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "../../common/error-code";
import { grpcError } from "../../common/grpc/grpc-server";
import type { Logger } from "../../common/logging/logger";
import type { Counter, Histogram } from "../../common/metrics/metrics";
import type { ReserveWorkerSlotRequest, ReserveWorkerSlotResponse } from "../../gen/coordinator/v1/coordinator";
import { CoordinatorError } from "../core/coordinator-error";
import type { CoordinatorCore } from "../core/coordinator-core";
import { validateReserveRequest } from "../core/validate";
import { coordCodeToGRPC } from "./coord-code-to-grpc";
import type { SlotError, SlotReserver } from "./slot-reserver";

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

const CLIENT_CANCELLED = "client cancelled the reservation";

/** Outcome labels of blockx_coordinator_reservations_total. */
type ReservationOutcome = "reserved" | "invalid_argument" | "unavailable" | "no_executable_slot" | "all_rejected" | "uncertain" | "cancelled";

/**
 * CoordinatorServer runs the ReserveWorkerSlot orchestration loop of the seed: validate,
 * readiness, then up to MaxCandidates candidates tried one after another. An explicit
 * rejection moves to the next candidate; an uncertain result is retried on the same Worker
 * with the same task id up to MaxTimeoutRetries times and then answered with Aborted, never
 * with a switch of Workers.
 *
 * The seed guards the core with an RWMutex; here every core call is synchronous on one event
 * loop, so a read or a record is atomic without a lock. Never hold a core decision across an
 * await: each candidate is selected afresh.
 */
export class CoordinatorServer {
  constructor(
    private readonly core: CoordinatorCore,
    private readonly reserver: SlotReserver,
    private readonly config: HandlerConfig,
    private readonly slotTtlMs: number,
    private readonly maxCandidates: number,
    private readonly log: Logger,
    private readonly metrics?: CoordinatorServerMetrics,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * reserveWorkerSlot returns `{taskId, workerAddr, slotId}` or throws a CoordinatorError.
   * `isCancelled` is polled between attempts so that a client that went away stops the loop.
   */
  async reserveWorkerSlot(taskId: string, isCancelled: () => boolean = () => false): Promise<ReserveWorkerSlotResponse> {
    const started = performance.now();
    let outcome: ReservationOutcome = "reserved";
    try {
      return await this.reserve(taskId, isCancelled);
    } catch (e) {
      outcome = outcomeOf(e);
      throw e;
    } finally {
      this.metrics?.reservations.inc({ outcome });
      this.metrics?.reservationSeconds.observe({ outcome }, (performance.now() - started) / 1000);
    }
  }

  private async reserve(taskId: string, isCancelled: () => boolean): Promise<ReserveWorkerSlotResponse> {
    const invalid = validateReserveRequest(taskId);
    if (invalid) throw invalid;
    const notReady = this.core.readinessError(this.nowMs());
    if (notReady) throw notReady;

    const exclude = new Set<string>();
    const rejections: string[] = [];
    for (let attempt = 0; attempt < this.maxCandidates; attempt++) {
      const candidate = this.core.selectCandidate(taskId, exclude, this.nowMs());
      if (candidate.err) {
        // Nothing tried yet: the core's reason is the answer. Otherwise every Worker we could
        // try has rejected us (unless the view became untrusted meanwhile).
        if (attempt === 0 || candidate.err.code === ErrorCode.ErrUnavailable) throw candidate.err;
        break;
      }
      const workerAddr = candidate.workerAddr;
      const result = await this.tryWorker(taskId, workerAddr, isCancelled);
      if (result.slotId !== undefined) {
        this.core.recordSlotSuccess(workerAddr, this.nowMs());
        this.log.debug({ taskId, workerAddr, slotId: result.slotId }, "slot reserved");
        return { taskId, workerAddr, slotId: result.slotId };
      }
      const err = result.err;
      if (err.mayHaveAllocated) {
        this.core.recordSlotTimeout(workerAddr, this.nowMs());
        this.log.warn({ taskId, workerAddr, code: err.code, reason: err.message }, "slot reservation uncertain after retries");
        throw new CoordinatorError(
          ErrorCode.ErrSlotUncertain,
          `unable to confirm slot reservation on ${workerAddr} after ${this.config.maxTimeoutRetries + 1} attempts ` +
            `(${err.message || err.code}); a slot may be held for up to ${this.slotTtlMs} ms: wait that long, then retry`,
        );
      }
      if (err.code === ErrorCode.ErrNoSlot) this.core.recordSlotBackpressure(workerAddr, this.nowMs());
      else this.core.recordSlotRejection(workerAddr, this.nowMs());
      this.log.info({ taskId, workerAddr, code: err.code, reason: err.message }, "worker rejected slot request");
      rejections.push(`${workerAddr}: ${err.code}${err.message ? ` (${err.message})` : ""}`);
      exclude.add(workerAddr);
    }
    throw new CoordinatorError(ErrorCode.ErrNoSlot, `all candidates rejected: ${rejections.join("; ")}`);
  }

  /**
   * tryWorker asks one Worker, retrying only uncertain results, on the same Worker with the
   * same task id. An explicit answer during a retry ends the retries.
   */
  private async tryWorker(
    taskId: string,
    workerAddr: string,
    isCancelled: () => boolean,
  ): Promise<{ slotId: string; err?: undefined } | { slotId?: undefined; err: SlotError }> {
    let last: SlotError | undefined;
    for (let i = 0; i <= this.config.maxTimeoutRetries; i++) {
      if (isCancelled()) throw new CoordinatorError(ErrorCode.ErrSlotUncertain, CLIENT_CANCELLED);
      const res = await this.reserver.requestTaskSlot(workerAddr, {
        taskId,
        ttlMs: this.slotTtlMs,
        timeoutMs: this.config.workerRpcTimeoutMs,
      });
      if (res.snapshot) {
        this.metrics?.workerRpcs.inc({ result: res.snapshot.slotId ? "ok" : "empty_slot_id" });
        if (res.snapshot.slotId) return { slotId: res.snapshot.slotId };
        // A success without a slot id proves nothing: treat it as uncertain.
        last = { code: ErrorCode.ErrSlotUncertain, message: "worker answered without a slot id", mayHaveAllocated: true };
        continue;
      }
      this.metrics?.workerRpcs.inc({ result: res.err.mayHaveAllocated ? "uncertain" : "rejected" });
      if (!res.err.mayHaveAllocated) return { err: res.err };
      last = res.err;
    }
    return { err: last! };
  }

  /** grpcHandler adapts reserveWorkerSlot to a grpc-js unary handler (block and bundle services). */
  grpcHandler(): grpc.handleUnaryCall<ReserveWorkerSlotRequest, ReserveWorkerSlotResponse> {
    return (call, callback) => {
      this.reserveWorkerSlot(call.request.taskId, () => call.cancelled).then(
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

function outcomeOf(e: unknown): ReservationOutcome {
  if (!(e instanceof CoordinatorError)) return "uncertain";
  switch (e.code) {
    case ErrorCode.ErrInvalidArgument:
      return "invalid_argument";
    case ErrorCode.ErrUnavailable:
      return "unavailable";
    case ErrorCode.ErrNoExecutableSlot:
      return "no_executable_slot";
    case ErrorCode.ErrNoSlot:
      return "all_rejected";
    default:
      return e.rawMessage === CLIENT_CANCELLED ? "cancelled" : "uncertain";
  }
}
