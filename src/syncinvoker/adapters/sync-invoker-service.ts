import * as grpc from "@grpc/grpc-js";
import { randomBytes } from "node:crypto";
import { grpcError } from "../../common/grpc/grpc-server";
import { callerKeyOf } from "../../common/tls/sub-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";
import type { Logger } from "../../common/logging/logger";
import type { Counter, Histogram, MetricsRegistry } from "../../common/metrics/metrics";
import {
  DebugInvokeResponse,
  InvokeResponse,
  PrecheckResponse,
  type InvokeRequest,
  type PrecheckRequest,
  type SyncInvokerServiceServer,
} from "../../gen/syncinvoker/v1/sync_invoker";
import type { CallOutcome, CallOwner } from "../../runtime/calls/call";
import { createCallOwner, runOnce, type CallPool } from "../../runtime/calls/call-owner";
import { NOOP_TRACER, type Tracer } from "../../common/trace/tracer";
import { executorOwnerKey } from "../../runtime/executor/executor-pool-config";
import type { FunctionSnapshot } from "../../runtime/functions/function-code-view";
import { attributeDurations, type InvokeDurations } from "../core/durations";
import { SyncInvokerError, SyncInvokerErrorCode } from "../core/sync-invoker-error";
import { AdmissionGate } from "./admission-gate";
import { budgetOf, parseArgs, resolveFunction } from "./invoke-request";
import type { PrecheckRunner } from "./precheck-runner";
import type { CallIo, ReadOnlyIo } from "./read-only-io";
import { syncInvokerCodeToGRPC } from "./sync-invoker-code-to-grpc";

export interface SyncInvokerServiceDeps {
  readonly pool: CallPool;
  /** The current FUNCTIONS_DIR snapshot, or null without FUNCTIONS_DIR. */
  readonly functions: () => FunctionSnapshot | null;
  readonly io: ReadOnlyIo;
  readonly precheck: PrecheckRunner;
  /** Calls running at once (EXECUTOR_COUNT x SYNCINVOKER_CALLS_PER_EXECUTOR). */
  readonly capacity: number;
  readonly queueMax: number;
  readonly defaultTimeoutMs: number;
  readonly log: Logger;
  readonly metrics: MetricsRegistry;
  /** Who is calling (the executor owner of a request): its certificate's identity under mTLS. */
  readonly tls: TlsSetting;
  /** EXECUTOR_MAX_SOURCE_BYTES: a longer source is INVALID_ARGUMENT. */
  readonly maxSourceBytes: number;
  /** EXECUTOR_OWNER_WITHOUT_IDENTITY: a request without an identity is its own owner (the default), or one shared owner. */
  readonly ownerWithoutIdentity?: "task" | "shared";
  /** SYNCINVOKER_TRACE: a span per Invoke/DebugInvoke (stages admission, run, reply), found under requestKey(callId). */
  readonly tracer?: Tracer;
}

/** requestKey: the key an Invoke's span is found under while it runs (its call hangs under it). */
export const requestKey = (callId: string): string => `request:${callId}`;

/** What one Invoke/DebugInvoke produced, before it is shaped into either response. */
interface Invocation {
  readonly callId: string;
  readonly outcome: CallOutcome;
  readonly durations: InvokeDurations;
  readonly io: CallIo;
}

type Rpc = "Invoke" | "DebugInvoke" | "Precheck";

/**
 * SyncInvokerService is syncinvoker.v1.SyncInvokerService: it validates a request, admits it
 * (AdmissionGate: one running call per executor, a bounded queue, deadlines), runs the call in
 * the executor pool with read-only IO, and answers. A function's own failure (USER_ERROR,
 * SYNTAX_ERROR, ENTRY_NOT_FOUND, BAD_SIGNATURE, BUDGET_EXCEEDED, RESULT_NOT_JSON,
 * WALL_CLOCK_EXCEEDED) is an outcome: status OK with `error` set. Everything else is a
 * SyncInvokerError and a gRPC status (syncInvokerCodeToGRPC), including a write IO op the
 * function attempted (PERMISSION_DENIED naming the op, even if the function caught the error).
 */
export class SyncInvokerService {
  private readonly gate: AdmissionGate;
  private readonly invocations: Counter;
  private readonly latency: Histogram;

  constructor(private readonly deps: SyncInvokerServiceDeps) {
    this.gate = new AdmissionGate({ capacity: deps.capacity, queueMax: deps.queueMax });
    this.invocations = deps.metrics.counter("blockx_syncinvoker_invocations_total", "Requests answered, by RPC and outcome (ok, a function error code, or a rejection).", ["rpc", "outcome"]);
    this.latency = deps.metrics.histogram("blockx_syncinvoker_request_duration_seconds", "Time from a request's arrival to its answer, queueing included.", ["rpc"]);
    const depth = deps.metrics.gauge("blockx_syncinvoker_queue_depth", "Requests waiting for a free executor.");
    const running = deps.metrics.gauge("blockx_syncinvoker_running_calls", "Calls running in executors.");
    depth.onCollect(() => depth.set({}, this.gate.counts().queued));
    running.onCollect(() => running.set({}, this.gate.counts().running));
  }

  handlers(): SyncInvokerServiceServer {
    return {
      invoke: (call, cb) => this.answer("Invoke", call, cb, async () => toInvokeResponse(await this.invoke(call, false))),
      debugInvoke: (call, cb) => this.answer("DebugInvoke", call, cb, async () => toDebugResponse(await this.invoke(call, true))),
      precheck: (call, cb) => this.answer("Precheck", call, cb, () => this.precheck(call.request)),
    };
  }

  /** drain refuses new requests and resolves once every running and queued call has ended. */
  drain(): Promise<void> {
    return this.gate.drain();
  }

  private answer<Res extends { error?: { code: string } | undefined; ok?: boolean }>(
    rpc: Rpc,
    call: grpc.ServerUnaryCall<unknown, unknown>,
    cb: grpc.sendUnaryData<Res>,
    work: () => Promise<Res>,
  ): void {
    const started = performance.now();
    work().then(
      (res) => {
        const outcome = rpc === "Precheck" ? (res.ok ? "ok" : "diagnostics") : (res.error?.code ?? "ok");
        this.observe(rpc, outcome, started);
        cb(null, res);
      },
      (err: unknown) => {
        const e = err instanceof SyncInvokerError ? err : new SyncInvokerError(SyncInvokerErrorCode.Internal, `unexpected failure: ${(err as Error).message}`);
        if (e.code === SyncInvokerErrorCode.Internal) this.deps.log.error({ rpc, err }, "request failed inside the invoker");
        this.observe(rpc, e.code, started);
        if (!call.cancelled) cb(grpcError(syncInvokerCodeToGRPC(e.code), e.rawMessage));
      },
    );
  }

  private observe(rpc: Rpc, outcome: string, startedMs: number): void {
    this.invocations.inc({ rpc, outcome });
    this.latency.observe({ rpc }, (performance.now() - startedMs) / 1000);
  }

  private async invoke(call: grpc.ServerUnaryCall<InvokeRequest, unknown>, debug: boolean): Promise<Invocation> {
    const arrivedMs = performance.now();
    const req = call.request;
    const functions = this.deps.functions();
    const fn = resolveFunction(req.function, functions, this.deps.maxSourceBytes);
    const args = parseArgs(req.args);
    const budgetMs = budgetOf(req.timeoutMs, this.deps.defaultTimeoutMs);
    const callId = `si-${randomBytes(8).toString("hex")}`;
    const ownerKey = this.ownerKeyOf(call, callId, debug ? "DebugInvoke" : "Invoke");

    // A queued request gives up at the caller's gRPC deadline, or after its own budget of
    // waiting: a caller who allows a call 1 s of work does not want to wait 30 s for it to start.
    const deadlineMs = Math.min(arrivedMs + budgetMs, grpcDeadlineMs(call, arrivedMs));
    let running = false;
    let cancelledByCaller = false;
    const onCancelled = () => {
      cancelledByCaller = true;
      if (running) this.deps.pool.cancel(callId, "the caller cancelled the request");
      else this.gate.abandoned(callId);
    };
    call.on("cancelled", onCancelled);
    const span = (this.deps.tracer ?? NOOP_TRACER).span(debug ? "DebugInvoke" : "Invoke", { callId }, requestKey(callId));
    span.stage("admission");
    let admissionQueueMs: number;
    try {
      admissionQueueMs = await this.gate.admit(callId, deadlineMs);
    } catch (e) {
      call.removeListener("cancelled", onCancelled);
      span.end({ code: e instanceof SyncInvokerError ? e.code : "INTERNAL" });
      throw e;
    }
    running = true;
    span.stage("run");
    let io: CallIo | null = null;
    try {
      if (cancelledByCaller) throw new SyncInvokerError(SyncInvokerErrorCode.Cancelled, "the caller cancelled the request");
      io = this.deps.io.forCall({ callId, traced: debug, onWrite: () => this.deps.pool.cancel(callId, "the function attempted a write IO op") });
      const outcome = await this.deps.pool.execute({ callId, fn, args, budgetMs, ownerKey }, this.owner(io, functions, budgetMs, ownerKey));
      span.stage("reply", { outcome: outcome.ok ? "OK" : outcome.error.code });
      const durations = attributeDurations({
        queueMs: admissionQueueMs + outcome.queueMs,
        cpuMs: outcome.cpuMs,
        ioMs: outcome.ioMs,
        totalMs: performance.now() - arrivedMs,
      });
      this.deps.log.debug({ callId, function: fn.name || `inline@${fn.digest.slice(0, 12)}`, ok: outcome.ok, ...durations }, "invocation finished");
      if (io.writeAttempted !== null) {
        throw new SyncInvokerError(SyncInvokerErrorCode.WriteRejected, `the function attempted the write op ${io.writeAttempted}; the Sync Invoker is read-only and refuses every write (call ${callId})`);
      }
      if (!outcome.ok) {
        if (cancelledByCaller) throw new SyncInvokerError(SyncInvokerErrorCode.Cancelled, "the caller cancelled the request");
        if (outcome.error.retryable) {
          throw new SyncInvokerError(SyncInvokerErrorCode.Unavailable, `the call failed for a system reason (${outcome.error.code}: ${outcome.error.message}); retry`);
        }
      }
      return { callId, outcome, durations, io };
    } finally {
      span.end();
      io?.end();
      call.removeListener("cancelled", onCancelled);
      this.gate.finished(callId);
    }
  }

  /** owner serves a call's IO (read-only) and its sub-calls (in the same pool and IO, depth-limited, within what remains of its budget). */
  private owner(io: CallIo, functions: FunctionSnapshot | null, budgetMs: number, ownerKey: string): CallOwner {
    return createCallOwner({ io: (req) => io.io(req), functions, role: "Sync Invoker", budgetMs, runSubCall: runOnce(this.deps.pool), ownerKey });
  }

  /**
   * ownerKeyOf: whose calls may share an executor (the pool recycles one between owners): the
   * caller's certificate identity under mTLS, so one client's requests reuse warm executors;
   * under BLOCKX_INSECURE nobody is known, so every request is its own owner (as the Worker does
   * per task), at the price of a fresh executor for a request that finds none of its own, unless
   * the operator made them one owner (EXECUTOR_OWNER_WITHOUT_IDENTITY=shared).
   */
  private ownerKeyOf(call: grpc.ServerUnaryCall<InvokeRequest, unknown>, callId: string, rpc: Rpc): string {
    const caller = callerKeyOf(this.deps.tls, call, rpc);
    return executorOwnerKey(caller.ok ? caller.key : null, this.deps.ownerWithoutIdentity, `request:${callId}`);
  }

  private async precheck(req: PrecheckRequest): Promise<PrecheckResponse> {
    const fn = resolveFunction(req.function, this.deps.functions(), this.deps.maxSourceBytes);
    const diagnostics = await this.deps.precheck.check(fn.source, fn.entry, `<blockx:${fn.entry}@${fn.digest.slice(0, 12)}>`);
    return PrecheckResponse.create({
      ok: !diagnostics.some((d) => d.severity === "error"),
      diagnostics,
      digest: fn.digest,
      entry: fn.entry,
    });
  }
}

/** grpcDeadlineMs converts the call's gRPC deadline to monotonic ms (Infinity: none). */
function grpcDeadlineMs(call: grpc.ServerUnaryCall<unknown, unknown>, nowMono: number): number {
  const d = call.getDeadline();
  const wall = d instanceof Date ? d.getTime() : d;
  if (!Number.isFinite(wall)) return Infinity;
  return nowMono + (wall - Date.now());
}

function resultBytes(outcome: CallOutcome): Buffer {
  return outcome.ok ? Buffer.from(JSON.stringify(outcome.value)) : Buffer.alloc(0);
}

function errorOf(outcome: CallOutcome) {
  return outcome.ok ? undefined : { code: outcome.error.code, message: outcome.error.message, traceback: outcome.error.traceback };
}

function toInvokeResponse(inv: Invocation): InvokeResponse {
  return InvokeResponse.create({ callId: inv.callId, result: resultBytes(inv.outcome), error: errorOf(inv.outcome), durations: inv.durations });
}

function toDebugResponse(inv: Invocation): DebugInvokeResponse {
  return DebugInvokeResponse.create({
    callId: inv.callId,
    result: resultBytes(inv.outcome),
    error: errorOf(inv.outcome),
    durations: inv.durations,
    // The executor captures both streams in the order written, and each apart when stderr was used.
    stdout: inv.outcome.stdout ?? inv.outcome.output,
    stderr: inv.outcome.stderr ?? "",
    logs: inv.outcome.logs.map((l) => ({ timeMs: l.timeMs, level: l.level, message: l.message })),
    ioTrace: inv.io.trace.map((t) => ({ ...t })),
    traceback: inv.outcome.ok ? "" : inv.outcome.error.traceback,
  });
}
