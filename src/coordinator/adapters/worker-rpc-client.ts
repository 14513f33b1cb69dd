import * as grpc from "@grpc/grpc-js";
import { isIPv4, isIPv6 } from "node:net";
import { ErrorCode } from "../../common/error-code";
import { hostOf } from "../../common/net/dial-host";
import { CLIENT_IDENTITY_HEADER } from "../../common/tls/client-identity-header";
import { channelFor } from "../../common/tls/grpc-tls";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { RequestTaskSlotRequest, type TaskSlotOutcome, WorkerServiceClient } from "../../gen/worker/v1/worker";
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
 * channelTarget: the grpc-js target for a Worker's address. An IP literal (what Workers advertise
 * by default) gets the ipv4:/ipv6: scheme: grpc-js's default dns: resolver builds a DNS resolver
 * object per channel even for an IP, about 0.1 ms on an idle box and more under load, paid on
 * every first call to a Worker (with 10,000 Workers nearly every reservation's; bench/README.md,
 * issue 22). A host name keeps the dns: resolver. The `:authority` stays `host:port` either way.
 */
export function channelTarget(workerAddr: string): string {
  const host = hostOf(workerAddr);
  if (isIPv4(host)) return `ipv4:${workerAddr}`;
  if (isIPv6(host)) return `ipv6:${workerAddr}`;
  return workerAddr;
}

/** The most slot requests one RequestTaskSlots carries (the Worker's bound). */
const MAX_SLOT_REQUESTS_PER_CALL = 1024;

interface QueuedSlotRequest {
  readonly args: RequestTaskSlotArgs;
  readonly resolve: (r: SlotReservation) => void;
}

/**
 * WorkerRPCClient is the gRPC SlotReserver: one cached channel per Worker address (a
 * point-to-point client needs no balancer). `forget` closes the channel of a Worker that left
 * the view.
 *
 * Requests for one Worker made in the same turn of the event loop (a ReserveWorkerSlots batch,
 * or concurrent clients) go as one RequestTaskSlots call; each still gets the answer a
 * RequestTaskSlot would have given it, so the reservation loop decides exactly as before. A lone
 * request, and every request to a Worker without RequestTaskSlots (UNIMPLEMENTED: nothing ran),
 * goes as a RequestTaskSlot.
 */
export class WorkerRPCClient implements SlotReserver {
  private readonly clients = new Map<string, WorkerServiceClient>();
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
    const client = this.clientFor(workerAddr);
    const requests = batch.map((b) => RequestTaskSlotRequest.create({ taskId: b.args.taskId, ttlMs: b.args.ttlMs }));
    const deadline = Date.now() + Math.min(...batch.map((b) => b.args.timeoutMs));
    const metadata = new grpc.Metadata();
    const clientIdentity = batch[0]!.args.clientIdentity;
    if (clientIdentity !== "") metadata.set(CLIENT_IDENTITY_HEADER, clientIdentity);
    client.requestTaskSlots({ requests }, metadata, { deadline }, (err, res) => {
      if (err?.code === grpc.status.UNIMPLEMENTED) {
        this.singleOnly.add(workerAddr);
        for (const b of batch) void this.requestOne(workerAddr, b.args).then(b.resolve);
        return;
      }
      batch.forEach((b, i) => {
        const o: TaskSlotOutcome | undefined = res?.outcomes[i];
        if (err) b.resolve({ err: grpcErrToSlotError(err) });
        else if (!o || o.taskId !== b.args.taskId) b.resolve({ err: { code: ErrorCode.ErrSlotUncertain, message: "the Worker's RequestTaskSlots answer does not match the request", mayHaveAllocated: true } });
        else if (o.status !== grpc.status.OK) b.resolve({ err: grpcErrToSlotError({ code: o.status, details: o.message }) });
        else if (!o.snapshot) b.resolve({ err: { code: ErrorCode.ErrSlotUncertain, message: "empty response", mayHaveAllocated: true } });
        else b.resolve({ snapshot: o.snapshot });
      });
    });
  }

  private requestOne(workerAddr: string, args: RequestTaskSlotArgs): Promise<SlotReservation> {
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
    this.singleOnly.delete(workerAddr);
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
      c = new WorkerServiceClient(channelTarget(workerAddr), credentials, { ...WORKER_CHANNEL_OPTIONS, ...options });
      this.clients.set(workerAddr, c);
    }
    return c;
  }
}
