import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "../../common/error-code";
import { CLIENT_IDENTITY_HEADER } from "../../common/tls/client-identity-header";
import { channelFor } from "../../common/tls/grpc-tls";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { RequestTaskSlotRequest, WorkerServiceClient } from "../../gen/worker/v1/worker";
import type { RequestTaskSlotArgs, SlotError, SlotReservation, SlotReserver } from "./slot-reserver";

/** Channel options for Coordinator -> Worker channels: reconnect fast after a Worker restart. */
const WORKER_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 2_000,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.enable_retries": 0,
};

/**
 * Details of an UNAVAILABLE status that grpc-js produces before sending anything: the channel
 * could not connect (refused, unresolvable). Nothing can have been allocated then.
 */
const NEVER_SENT_UNAVAILABLE = /No connection established|ECONNREFUSED|Name resolution failed|ENOTFOUND|EHOSTUNREACH|ENETUNREACH/;
/** A deadline that expired while the call still waited for a connection: never sent either. */
const NEVER_SENT_DEADLINE = /Waiting for LB pick/;

/**
 * grpcErrToSlotError classifies a failed RequestTaskSlot. Explicit rejections
 * (InvalidArgument, ResourceExhausted, FailedPrecondition, NotFound, a refused connection)
 * mean nothing was allocated; DeadlineExceeded, Canceled, Aborted, Internal, Unknown and an
 * Unavailable after the request may have left are uncertain (`mayHaveAllocated`).
 * It must stay the inverse of the Worker's `workerCodeToGRPC`.
 */
export function grpcErrToSlotError(err: Pick<grpc.ServiceError, "code" | "details">): SlotError {
  const details = err.details ?? "";
  const explicit = (code: ErrorCode): SlotError => ({ code, message: details, mayHaveAllocated: false });
  const uncertain = (): SlotError => ({ code: ErrorCode.ErrSlotUncertain, message: details, mayHaveAllocated: true });
  switch (err.code) {
    case grpc.status.INVALID_ARGUMENT:
      return explicit(ErrorCode.ErrInvalidArgument);
    case grpc.status.RESOURCE_EXHAUSTED:
      return explicit(ErrorCode.ErrNoSlot);
    case grpc.status.FAILED_PRECONDITION:
      return explicit(ErrorCode.ErrSlotConflict);
    case grpc.status.NOT_FOUND:
      return explicit(ErrorCode.ErrSlotNotFound);
    case grpc.status.UNAVAILABLE:
      return NEVER_SENT_UNAVAILABLE.test(details) ? explicit(ErrorCode.ErrWorkerUnreachable) : uncertain();
    case grpc.status.DEADLINE_EXCEEDED:
      return NEVER_SENT_DEADLINE.test(details) ? explicit(ErrorCode.ErrWorkerUnreachable) : uncertain();
    // The Worker refused the call before any handler ran.
    case grpc.status.PERMISSION_DENIED:
      return explicit(ErrorCode.ErrPermissionDenied);
    case grpc.status.UNIMPLEMENTED:
    case grpc.status.UNAUTHENTICATED:
      return explicit(ErrorCode.ErrInternal);
    default:
      // CANCELLED, ABORTED, INTERNAL, UNKNOWN, DATA_LOSS and anything else: may have happened.
      return uncertain();
  }
}

/**
 * WorkerRPCClient is the gRPC SlotReserver: one cached channel per Worker address (a
 * point-to-point client needs no balancer). `forget` closes the channel of a Worker that left
 * the view.
 */
export class WorkerRPCClient implements SlotReserver {
  private readonly clients = new Map<string, WorkerServiceClient>();

  /** Under mTLS each Worker must present a worker certificate that covers the address it advertised. */
  constructor(private readonly tls: TlsSetting) {}

  requestTaskSlot(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
    const client = this.clientFor(workerAddr);
    const request = RequestTaskSlotRequest.create({ taskId: args.taskId, ttlMs: args.ttlMs });
    const metadata = new grpc.Metadata();
    if (args.clientIdentity !== "") metadata.set(CLIENT_IDENTITY_HEADER, args.clientIdentity);
    return new Promise((resolve) => {
      client.requestTaskSlot(request, metadata, { deadline: Date.now() + args.timeoutMs }, (err, snapshot) => {
        if (err) resolve({ err: grpcErrToSlotError(err) });
        else if (!snapshot) resolve({ err: { code: ErrorCode.ErrSlotUncertain, message: "empty response", mayHaveAllocated: true } });
        else resolve({ snapshot });
      });
    });
  }

  forget(workerAddr: string): void {
    this.clients.get(workerAddr)?.close();
    this.clients.delete(workerAddr);
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  get cachedConnections(): number {
    return this.clients.size;
  }

  private clientFor(workerAddr: string): WorkerServiceClient {
    let c = this.clients.get(workerAddr);
    if (!c) {
      const { credentials, options } = channelFor(this.tls, workerAddr, ["worker"]);
      c = new WorkerServiceClient(workerAddr, credentials, { ...WORKER_CHANNEL_OPTIONS, ...options });
      this.clients.set(workerAddr, c);
    }
    return c;
  }
}
