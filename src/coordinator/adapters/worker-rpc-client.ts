import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "../../common/error-code";
import { CLIENT_IDENTITY_HEADER } from "../../common/tls/client-identity-header";
import type { TlsSetting } from "../../common/tls/tls-setting";
import {
  RequestTaskSlotRequest,
  RequestTaskSlotsRequest,
  RequestTaskSlotsResponse,
  type TaskSlotOutcome,
  TaskSnapshot,
  WorkerServiceService,
} from "../../gen/worker/v1/worker";
import { Http2UnaryChannel, UnaryCallError } from "../../common/grpc/http2-unary-channel";
import type { RequestTaskSlotArgs, SlotError, SlotReservation, SlotReserver } from "./slot-reserver";

/**
 * grpcErrToSlotError classifies a failed RequestTaskSlot. Explicit rejections
 * (InvalidArgument, ResourceExhausted, FailedPrecondition, NotFound, PermissionDenied) and a call
 * that never reached the Worker (`neverSent`: no connection carried it) mean nothing was allocated; DeadlineExceeded, Canceled, Aborted, Internal,
 * Unknown and an Unavailable after the request may have left are uncertain (`mayHaveAllocated`).
 * It must stay the inverse of the Worker's `workerCodeToGRPC`.
 */
export function grpcErrToSlotError(err: { readonly code: grpc.status; readonly details?: string; readonly neverSent?: boolean }): SlotError {
  const details = err.details ?? "";
  const explicit = (code: ErrorCode): SlotError => ({ code, message: details, mayHaveAllocated: false });
  const uncertain = (): SlotError => ({ code: ErrorCode.ErrSlotUncertain, message: details, mayHaveAllocated: true });
  if (err.neverSent) return explicit(ErrorCode.ErrWorkerUnreachable);
  switch (err.code) {
    case grpc.status.INVALID_ARGUMENT:
      return explicit(ErrorCode.ErrInvalidArgument);
    case grpc.status.RESOURCE_EXHAUSTED:
      return explicit(ErrorCode.ErrNoSlot);
    case grpc.status.FAILED_PRECONDITION:
      return explicit(ErrorCode.ErrSlotConflict);
    case grpc.status.NOT_FOUND:
      return explicit(ErrorCode.ErrSlotNotFound);
    // The Worker refused the call before any handler ran.
    case grpc.status.PERMISSION_DENIED:
      return explicit(ErrorCode.ErrPermissionDenied);
    case grpc.status.UNIMPLEMENTED:
    case grpc.status.UNAUTHENTICATED:
      return explicit(ErrorCode.ErrInternal);
    default:
      // UNAVAILABLE and DEADLINE_EXCEEDED once sent, CANCELLED, ABORTED, INTERNAL, UNKNOWN, DATA_LOSS and anything else: may have happened.
      return uncertain();
  }
}

/** The most slot requests one RequestTaskSlots carries (the Worker's bound). */
const MAX_SLOT_REQUESTS_PER_CALL = 1024;

interface QueuedSlotRequest {
  readonly args: RequestTaskSlotArgs;
  readonly resolve: (r: SlotReservation) => void;
}

/**
 * WorkerRPCClient is the gRPC SlotReserver: one cached Http2UnaryChannel (one HTTP/2
 * connection) per Worker address. `forget` closes the channel of a Worker that left the view.
 *
 * Requests for one Worker made in the same turn of the event loop (a ReserveWorkerSlots batch,
 * or concurrent clients) go as one RequestTaskSlots call; each still gets the answer a
 * RequestTaskSlot would have given it, so the reservation loop decides exactly as before. A lone
 * request, and every request to a Worker without RequestTaskSlots (UNIMPLEMENTED: nothing ran),
 * goes as a RequestTaskSlot.
 */
export class WorkerRPCClient implements SlotReserver {
  private readonly channels = new Map<string, Http2UnaryChannel>();
  private readonly queued = new Map<string, QueuedSlotRequest[]>();
  private readonly singleOnly = new Set<string>();

  /** Under mTLS each Worker must present a worker certificate that covers the address it advertised. */
  constructor(private readonly tls: TlsSetting) {}

  requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
    // One batch per Worker and client identity: the identity travels in the call's metadata.
    const key = `${workerAddr}\u0000${args.clientIdentity}`;
    return new Promise((resolve) => {
      const q = this.queued.get(key);
      if (q) return void q.push({ args, resolve });
      this.queued.set(key, [{ args, resolve }]);
      queueMicrotask(() => this.flush(key, workerAddr));
    });
  }

  private flush(key: string, workerAddr: string): void {
    const q = this.queued.get(key) ?? [];
    this.queued.delete(key);
    if (q.length === 1 || this.singleOnly.has(workerAddr)) {
      for (const r of q) void this.requestOne(workerAddr, r.args).then(r.resolve);
      return;
    }
    for (let i = 0; i < q.length; i += MAX_SLOT_REQUESTS_PER_CALL) this.requestMany(workerAddr, q.slice(i, i + MAX_SLOT_REQUESTS_PER_CALL));
  }

  private requestMany(workerAddr: string, batch: QueuedSlotRequest[]): void {
    const request = RequestTaskSlotsRequest.encode({ requests: batch.map((b) => RequestTaskSlotRequest.create({ taskId: b.args.taskId, ttlMs: b.args.ttlMs })) }).finish();
    const deadlineMs = Date.now() + Math.min(...batch.map((b) => b.args.timeoutMs));
    const answered = (res: RequestTaskSlotsResponse) =>
      batch.forEach((b, i) => {
        const o: TaskSlotOutcome | undefined = res.outcomes[i];
        if (!o || o.taskId !== b.args.taskId) b.resolve({ err: { code: ErrorCode.ErrSlotUncertain, message: "the Worker's RequestTaskSlots answer does not match the request", mayHaveAllocated: true } });
        else if (o.status !== grpc.status.OK) b.resolve({ err: grpcErrToSlotError({ code: o.status, details: o.message }) });
        else if (!o.snapshot) b.resolve({ err: { code: ErrorCode.ErrSlotUncertain, message: "empty response", mayHaveAllocated: true } });
        else b.resolve({ snapshot: o.snapshot });
      });
    const failed = (e: unknown) => {
      if (e instanceof UnaryCallError && e.code === grpc.status.UNIMPLEMENTED) {
        this.singleOnly.add(workerAddr);
        for (const b of batch) void this.requestOne(workerAddr, b.args).then(b.resolve);
        return;
      }
      const err = slotErrorOf(e);
      for (const b of batch) b.resolve({ err });
    };
    this.channelFor(workerAddr)
      .unary(REQUEST_TASK_SLOTS, request, identityHeaders(batch[0]!.args.clientIdentity), deadlineMs)
      .then((bytes) => RequestTaskSlotsResponse.decode(bytes))
      .then(answered, failed);
  }

  private requestOne(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
    const request = RequestTaskSlotRequest.encode({ taskId: args.taskId, ttlMs: args.ttlMs }).finish();
    return this.channelFor(workerAddr)
      .unary(REQUEST_TASK_SLOT, request, identityHeaders(args.clientIdentity), Date.now() + args.timeoutMs)
      .then(
        (bytes): SlotReservation => ({ snapshot: TaskSnapshot.decode(bytes) }),
        (e: unknown): SlotReservation => ({ err: slotErrorOf(e) }),
      )
      .catch((e: unknown): SlotReservation => ({ err: slotErrorOf(e) }));
  }

  forget(workerAddr: string): void {
    this.channels.get(workerAddr)?.close();
    this.channels.delete(workerAddr);
    this.singleOnly.delete(workerAddr);
  }

  close(): void {
    for (const c of this.channels.values()) c.close();
    this.channels.clear();
  }

  get cachedConnections(): number {
    return this.channels.size;
  }

  private channelFor(workerAddr: string): Http2UnaryChannel {
    let c = this.channels.get(workerAddr);
    if (!c) {
      c = new Http2UnaryChannel(workerAddr, this.tls, ["worker"]);
      this.channels.set(workerAddr, c);
    }
    return c;
  }
}

const REQUEST_TASK_SLOT = WorkerServiceService.requestTaskSlot.path;
const REQUEST_TASK_SLOTS = WorkerServiceService.requestTaskSlots.path;
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** identityHeaders: the client's identity travels to the Worker in a header (none when anonymous). */
function identityHeaders(clientIdentity: string): Readonly<Record<string, string>> {
  return clientIdentity === "" ? NO_HEADERS : { [CLIENT_IDENTITY_HEADER]: clientIdentity };
}

/** slotErrorOf: a failed call's SlotError; an answer that does not decode may have allocated. */
function slotErrorOf(e: unknown): SlotError {
  if (e instanceof UnaryCallError) return grpcErrToSlotError(e);
  return { code: ErrorCode.ErrSlotUncertain, message: `the Worker's answer could not be read: ${(e as Error).message}`, mayHaveAllocated: true };
}
