import * as grpc from "@grpc/grpc-js";
import { hostname, userInfo } from "node:os";
import { DEFAULT_UNARY_CHANNEL_OPTIONS, Http2UnaryChannel, UnaryCallError } from "../../common/grpc/http2-unary-channel";
import { BundleCoordinatorServiceClient, BundleCoordinatorServiceService } from "../../gen/bundlecoordinator/v1/bundle_coordinator";
import {
  CoordinatorServiceClient,
  CoordinatorServiceService,
  type GetReservationOutcomesResponse,
  type ReserveWorkerSlotResponse,
  type ReserveWorkerSlotsResponse,
} from "../../gen/coordinator/v1/coordinator";
import {
  type DebugInvokeResponse,
  type InvokeRequest,
  type InvokeResponse,
  SyncInvokerServiceClient,
  SyncInvokerServiceService,
} from "../../gen/syncinvoker/v1/sync_invoker";
import {
  type SubmitTaskRequest,
  type SubmitTasksRequest,
  type SubmitTasksResponse,
  type TaskSnapshot,
  WorkerServiceClient,
  WorkerServiceService,
} from "../../gen/worker/v1/worker";
import type { Cluster } from "../core/cluster-selection";
import { channelFor } from "../../common/tls/grpc-tls";
import type { PeerRole } from "../../common/tls/peer-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";

/** The header the proxy routes worker.v1 calls by (runtime seed). */
export const WORKER_ADDR_HEADER = "x-blockx-worker-addr";

/**
 * Keepalive pings find a hung Worker (SIGSTOP, cut network) under a silent WatchTasks stream.
 * Servers accept a ping every 5 s at most (GRPC_SERVER_OPTIONS), hence the floor of keepaliveTimeMs.
 */
function channelOptions(keepaliveTimeMs: number): grpc.ChannelOptions {
  return {
    "grpc.keepalive_time_ms": keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": 5_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
  };
}

/** The largest message the SDK sends or takes, on either kind of channel. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const LEAN_CHANNEL_OPTIONS = { ...DEFAULT_UNARY_CHANNEL_OPTIONS, maxResponseBytes: MAX_MESSAGE_BYTES };

/** A generated client class; `serviceName` (set by grpc-js's makeGenericClientConstructor) tells two services' clients apart. */
type Ctor<C> = (new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>) => C) & { readonly serviceName: string };

/** Reserver: ReserveWorkerSlot of either cluster's Coordinator. */
export interface Reserver {
  readonly label: string;
  reserve(taskId: string, deadlineMs: number): Promise<ReserveWorkerSlotResponse>;
  /** GetReservationOutcomes: how this Coordinator answered lately (the dashboard). */
  outcomes(limit: number, deadlineMs: number): Promise<GetReservationOutcomesResponse>;
  /** ReserveWorkerSlots: one grant per task id, in order (the two clusters' messages have the same shape). */
  reserveMany(taskIds: readonly string[], deadlineMs: number): Promise<ReserveWorkerSlotsResponse>;
}

/**
 * GrpcTransport owns the SDK's channels. Direct: one channel per address. Through the proxy
 * (`proxySocketPath`): every client dials the Unix socket; the proxy picks the Coordinator by
 * service, and a Worker by the x-blockx-worker-addr header this transport sets.
 */
export class GrpcTransport {
  private readonly clients = new Map<string, grpc.Client>();
  /** The calls on a task's path (ReserveWorkerSlot, SubmitTask) go over lean channels: see `leanUnary`. */
  private readonly channels = new Map<string, Http2UnaryChannel>();

  private readonly options: grpc.ChannelOptions;

  constructor(
    private readonly proxySocketPath: string,
    keepaliveTimeMs: number,
    private readonly tls: TlsSetting,
  ) {
    this.options = channelOptions(keepaliveTimeMs);
  }

  get viaProxy(): boolean {
    return this.proxySocketPath !== "";
  }

  /**
   * client returns the one client of `ctor`'s service at `addr`. The key names the service: through
   * the proxy every service dials the same socket, and a block Coordinator's client handed out for
   * the bundle service would send its calls to the block Coordinator (the proxy routes by service).
   */
  private client<C extends grpc.Client>(kind: PeerRole, ctor: Ctor<C>, addr: string): C {
    const target = this.viaProxy ? `unix:${this.proxySocketPath}` : addr;
    const key = `${kind} ${ctor.serviceName} ${target}`;
    let c = this.clients.get(key);
    if (!c) {
      // The proxy's socket is a local hop (its file mode decides who may use it); the proxy
      // speaks mTLS upstream with its own certificate.
      const { credentials, options } = this.viaProxy ? { credentials: grpc.credentials.createInsecure(), options: {} } : channelFor(this.tls, target, [kind]);
      c = new ctor(target, credentials, { ...this.options, ...options });
      this.clients.set(key, c);
    }
    return c as C;
  }

  /** channel: the lean unary channel to `addr` (the proxy's socket through the proxy), one per peer. */
  private channel(kind: PeerRole, addr: string): Http2UnaryChannel {
    const target = this.viaProxy ? `unix:${this.proxySocketPath}` : addr;
    const key = `${kind} ${target}`;
    let c = this.channels.get(key);
    if (!c) {
      c = new Http2UnaryChannel(target, this.viaProxy ? INSECURE : this.tls, [kind], LEAN_CHANNEL_OPTIONS);
      this.channels.set(key, c);
    }
    return c;
  }

  /** reservers lists the Coordinators of a cluster in order; through the proxy, the proxy is the one. */
  reservers(cluster: Cluster, addrs: readonly string[]): Reserver[] {
    const targets = this.viaProxy ? [`proxy:${this.proxySocketPath}`] : addrs;
    return targets.map((addr) => {
      const c =
        cluster === "block"
          ? this.client("coordinator", CoordinatorServiceClient, addr)
          : this.client("coordinator", BundleCoordinatorServiceClient, addr);
      const service = cluster === "block" ? CoordinatorServiceService : BundleCoordinatorServiceService;
      const lean = this.channel("coordinator", addr);
      return {
        label: addr,
        reserve: (taskId, deadlineMs) => leanUnary(lean, service.reserveWorkerSlot, { taskId }, new grpc.Metadata(), deadlineMs),
        // The two services' messages are field for field the same.
        outcomes: (limit, deadlineMs) =>
          new Promise<GetReservationOutcomesResponse>((resolve, reject) =>
            c.getReservationOutcomes({ limit }, new grpc.Metadata(), { deadline: deadlineMs }, (e, r) => (e ? reject(e) : resolve(r!))),
          ),
        reserveMany: (taskIds, deadlineMs) => leanUnary(lean, service.reserveWorkerSlots, { taskIds: [...taskIds] }, new grpc.Metadata(), deadlineMs),
      };
    });
  }

  /**
   * worker returns a client for the Worker at addr and the metadata every call to it carries;
   * `submitTask` and `submitTasks` go over the lean channel.
   */
  worker(addr: string): WorkerCalls {
    const client = this.client("worker", WorkerServiceClient, addr);
    const lean = this.channel("worker", addr);
    return {
      client,
      submitTask: (req, md, deadlineMs) => leanUnary(lean, WorkerServiceService.submitTask, req, md, deadlineMs),
      submitTasks: (req, md, deadlineMs) => leanUnary(lean, WorkerServiceService.submitTasks, req, md, deadlineMs),
      metadata: () => {
        const md = new grpc.Metadata();
        if (this.tls.kind === "insecure") md.set(OWNER_HEADER, OWNER);
        if (this.viaProxy) md.set(WORKER_ADDR_HEADER, addr);
        return md;
      },
    };
  }

  /** syncInvoker: the Sync Invoker at addr; Invoke and DebugInvoke (a user's call waits on them) go over the lean channel. */
  syncInvoker(addr: string): SyncInvokerCalls {
    const client = this.client("syncinvoker", SyncInvokerServiceClient, addr);
    const lean = this.channel("syncinvoker", addr);
    return {
      client,
      invoke: (req, deadlineMs) => leanUnary(lean, SyncInvokerServiceService.invoke, req, new grpc.Metadata(), deadlineMs),
      debugInvoke: (req, deadlineMs) => leanUnary(lean, SyncInvokerServiceService.debugInvoke, req, new grpc.Metadata(), deadlineMs),
    };
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
    for (const c of this.channels.values()) c.close();
    this.channels.clear();
  }
}

const INSECURE: TlsSetting = { kind: "insecure" };

/** SyncInvokerCalls: what the SDK calls on the Sync Invoker. */
export interface SyncInvokerCalls {
  readonly client: SyncInvokerServiceClient;
  readonly invoke: (req: InvokeRequest, deadlineMs: number) => Promise<InvokeResponse>;
  readonly debugInvoke: (req: InvokeRequest, deadlineMs: number) => Promise<DebugInvokeResponse>;
}

/** WorkerCalls: what the SDK calls on one Worker; the calls on a task's path go over the lean channel. */
export interface WorkerCalls {
  readonly client: WorkerServiceClient;
  readonly metadata: () => grpc.Metadata;
  readonly submitTask: (req: SubmitTaskRequest, md: grpc.Metadata, deadlineMs: number) => Promise<TaskSnapshot>;
  readonly submitTasks: (req: SubmitTasksRequest, md: grpc.Metadata, deadlineMs: number) => Promise<SubmitTasksResponse>;
}

/**
 * leanUnary makes a unary call over an Http2UnaryChannel (node:http2 without grpc-js's client
 * stack, which costs a serial task more than the exchange: bench/README.md). It rejects with a
 * UnaryCallError, which is a ServiceError to the SDK's rules (code, details) and says when the
 * request reached no server (`neverSent`).
 */
function leanUnary<Req, Res>(
  channel: Http2UnaryChannel,
  method: { readonly path: string; readonly requestSerialize: (r: Req) => Buffer; readonly responseDeserialize: (b: Buffer) => Res },
  req: Req,
  md: grpc.Metadata,
  deadlineMs: number,
): Promise<Res> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(md.getMap())) headers[k] = typeof v === "string" ? v : Buffer.from(v).toString("base64");
  return channel.unary(method.path, method.requestSerialize(req), headers, deadlineMs).then((b) => {
    try {
      return method.responseDeserialize(b);
    } catch (e) {
      // As grpc-js reports an answer it cannot read: INTERNAL, and the call did reach the server.
      throw new UnaryCallError(grpc.status.INTERNAL, `${method.path}: the answer could not be decoded: ${(e as Error).message}`, false);
    }
  });
}

/**
 * The owner label sent with every call to a Worker (x-blockx-owner: user@host), shown by
 * `blockx tasks`, sent under BLOCKX_INSECURE only. A name, not a proof: under mTLS the Worker
 * takes the owner from the client's certificate and this header is not sent.
 */
const OWNER_HEADER = "x-blockx-owner";
const OWNER = ownerLabel();

function ownerLabel(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}@${hostname()}`;
  }
}

/** unary turns a grpc-js callback call into a promise that rejects with the ServiceError. */
export function unary<Req, Res>(
  call: (req: Req, md: grpc.Metadata, opts: Partial<grpc.CallOptions>, cb: (e: grpc.ServiceError | null, r?: Res) => void) => unknown,
  req: Req,
  md: grpc.Metadata,
  deadlineMs: number,
): Promise<Res> {
  return new Promise((resolve, reject) => call(req, md, { deadline: deadlineMs }, (e, r) => (e ? reject(e) : resolve(r as Res))));
}

export function isServiceError(e: unknown): e is grpc.ServiceError {
  return typeof e === "object" && e !== null && typeof (e as grpc.ServiceError).code === "number" && "details" in e;
}
