import * as grpc from "@grpc/grpc-js";
import { grpcError } from "../../common/grpc/grpc-server";
import { peerCredentials } from "../../common/net/peer-credentials";
import type { Logger } from "../../common/logging/logger";
import type { Counter } from "../../common/metrics/metrics";
import { channelFor } from "../../common/tls/grpc-tls";
import type { PeerRole } from "../../common/tls/peer-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { SUB_IDENTITY_HEADER, subIdentityOfUid } from "../../common/tls/sub-identity";
import { WORKER_ADDR_HEADER, type ProxyRouter, type RoutedService } from "../core/proxy-router";

/** Method paths the proxy serves and their streaming shape (from the generated service definitions). */
export interface ProxiedMethod {
  readonly path: string;
  readonly responseStream: boolean;
  readonly requestStream: boolean;
}

const identity = (b: Buffer): Buffer => b;

/**
 * socketFdOf: the descriptor of the connection a grpc-js server call came on. grpc-js keeps it at
 * call.call.stream.session.socket (verified on grpc-js 1.14 under Bun 1.4); -1 when it moved.
 */
function socketFdOf(call: object): number {
  const c = call as { call?: { stream?: { session?: { socket?: { _handle?: { fd?: unknown } } } } } };
  const fd = c.call?.stream?.session?.socket?._handle?.fd;
  return typeof fd === "number" ? fd : -1;
}

interface Upstream {
  readonly client: grpc.Client;
  inFlight: number;
  lastUsedMs: number;
}

const UPSTREAM_ROLE: Readonly<Record<RoutedService, PeerRole>> = {
  "coordinator.v1.CoordinatorService": "coordinator",
  "bundlecoordinator.v1.BundleCoordinatorService": "coordinator",
  "syncinvoker.v1.SyncInvokerService": "syncinvoker",
  "worker.v1.WorkerService": "worker",
};

/**
 * Headers that belong to one HTTP/2 hop (grpc-js sets its own on the next hop); everything
 * else, the caller's metadata and the upstream's headers and trailers, is relayed unchanged.
 */
function relayable(md: grpc.Metadata): grpc.Metadata {
  const out = md.clone();
  for (const key of Object.keys(out.getMap())) {
    if (key.startsWith(":") || key.startsWith("grpc-") || key === "content-type" || key === "user-agent" || key === "te" || key === "date") out.remove(key);
  }
  return out;
}

function statusError(s: grpc.StatusObject): grpc.ServiceError {
  const err = grpcError(s.code, s.details);
  err.metadata = relayable(s.metadata);
  return err;
}

/**
 * PassThrough forwards calls byte for byte (identity (de)serializers: the proxy never decodes
 * a message) to the upstream the router picks, propagating the deadline and cancellation, and
 * relaying headers, messages (with backpressure), the status and trailers unchanged.
 */
export class PassThrough {
  private readonly upstreams = new Map<string, Upstream>();
  private readonly sweeper: ReturnType<typeof setInterval>;
  /** With a proxy's certificate, each call names its caller's Unix user upstream (sub-identity.ts). */
  private readonly namesCallers: boolean;

  /**
   * `isWorker` says whether an address is a registered Worker: worker.v1 calls go nowhere else
   * (PERMISSION_DENIED without dialing). An upstream channel with no call in flight for
   * `idleMs` is closed.
   */
  constructor(
    private readonly router: ProxyRouter,
    private readonly log: Logger,
    private readonly calls: Counter,
    private readonly tls: TlsSetting,
    private readonly isWorker: (addr: string) => Promise<boolean>,
    private readonly idleMs: number,
  ) {
    this.sweeper = setInterval(() => this.evictIdle(), Math.max(100, Math.floor(idleMs / 2)));
    this.namesCallers = tls.kind === "mtls" && tls.identity.role === "proxy";
  }

  get upstreamCount(): number {
    return this.upstreams.size;
  }

  private evictIdle(): void {
    const now = performance.now();
    for (const [target, u] of this.upstreams) {
      if (u.inFlight === 0 && now - u.lastUsedMs >= this.idleMs) {
        u.client.close();
        this.upstreams.delete(target);
        this.log.debug({ target }, "idle upstream closed");
      }
    }
  }

  register(server: grpc.Server, methods: readonly ProxiedMethod[]): void {
    for (const m of methods) {
      if (m.requestStream) continue; // no BlockX service has client streams; grpc-js answers Unimplemented
      if (m.responseStream) server.register(m.path, this.serverStream(m.path), identity, identity, "serverStream");
      else server.register(m.path, this.unary(m.path), identity, identity, "unary");
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const u of this.upstreams.values()) u.client.close();
    this.upstreams.clear();
  }

  /** upstream picks the channel of a call and counts it in flight until `done` is called. */
  private async upstream(metadata: grpc.Metadata, path: string): Promise<{ client: grpc.Client; target: string; done: () => void } | grpc.ServiceError> {
    const header = metadata.get(WORKER_ADDR_HEADER)[0];
    const route = this.router.route(path, typeof header === "string" ? header : header?.toString("utf8"));
    if (!route.ok) {
      this.calls.inc({ service: "unrouted", code: route.code });
      return grpcError(grpc.status[route.code], route.message);
    }
    if (route.service === "worker.v1.WorkerService" && !(await this.isWorker(route.target))) {
      this.calls.inc({ service: "unrouted", code: "PERMISSION_DENIED" });
      return grpcError(grpc.status.PERMISSION_DENIED, `${WORKER_ADDR_HEADER} ${route.target} is not a Worker in the registry: the proxy relays worker.v1 calls to registered Workers only`);
    }
    let u = this.upstreams.get(route.target);
    if (!u) {
      // Under mTLS the upstream must present the certificate of the role its service belongs to.
      const { credentials, options } = channelFor(this.tls, route.target, [UPSTREAM_ROLE[route.service]]);
      const client = new grpc.Client(route.target, credentials, {
        "grpc.max_receive_message_length": 64 * 1024 * 1024,
        "grpc.max_send_message_length": 64 * 1024 * 1024,
        ...options,
      });
      u = { client, inFlight: 0, lastUsedMs: performance.now() };
      this.upstreams.set(route.target, u);
    }
    const used = u;
    used.inFlight++;
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      used.inFlight--;
      used.lastUsedMs = performance.now();
    };
    return { client: used.client, target: route.target, done };
  }

  /**
   * upstreamMetadata: the caller's metadata as relayed, and who the caller is. The uid and pid of
   * the process at the socket's other end (SO_PEERCRED: the kernel's word) are logged with each
   * call; with a proxy's certificate the uid goes upstream as the call's sub-identity (owner of its
   * tasks, tables and executors), and a call whose peer cannot be read is refused rather than
   * relayed as nobody in particular. A sub-identity the caller sent itself is never relayed.
   */
  private upstreamMetadata(call: grpc.ServerUnaryCall<Buffer, Buffer> | grpc.ServerWritableStream<Buffer, Buffer>, path: string): grpc.Metadata | grpc.ServiceError {
    const md = relayable(call.metadata);
    md.remove(SUB_IDENTITY_HEADER);
    if (!this.namesCallers && !this.log.isLevelEnabled("info")) return md;
    const creds = peerCredentials(socketFdOf(call));
    this.log.info({ path, peerUid: creds?.uid ?? null, peerPid: creds?.pid ?? null }, "relaying call");
    if (!this.namesCallers) return md;
    if (creds === null) {
      this.calls.inc({ service: "unrouted", code: "UNAUTHENTICATED" });
      return grpcError(grpc.status.UNAUTHENTICATED, `${path}: the proxy cannot read the caller's Unix user from its socket (SO_PEERCRED), so it cannot say upstream who calls: refused`);
    }
    md.set(SUB_IDENTITY_HEADER, subIdentityOfUid(creds.uid));
    return md;
  }

  private count(path: string, code: grpc.status): void {
    this.calls.inc({ service: path.split("/")[1] ?? "", code: grpc.status[code] ?? String(code) });
  }

  private unary(path: string): grpc.handleUnaryCall<Buffer, Buffer> {
    return async (call, callback) => {
      const md = this.upstreamMetadata(call, path);
      if (!(md instanceof grpc.Metadata)) return callback(md);
      const up = await this.upstream(call.metadata, path);
      if (!("client" in up)) return callback(up);
      let response: Buffer | undefined;
      const upstream = up.client.makeUnaryRequest(path, identity, identity, call.request, md, { deadline: call.getDeadline() }, (_err, value) => {
        response = value;
      });
      upstream.on("metadata", (md) => call.sendMetadata(relayable(md)));
      // The status comes after the callback and carries the trailers: answer from it.
      upstream.on("status", (s) => {
        up.done();
        this.count(path, s.code);
        if (s.code === grpc.status.OK) callback(null, response, relayable(s.metadata));
        else callback(statusError(s));
      });
      call.on("cancelled", () => upstream.cancel());
    };
  }

  private serverStream(path: string): grpc.handleServerStreamingCall<Buffer, Buffer> {
    return async (call) => {
      const md = this.upstreamMetadata(call, path);
      const up = md instanceof grpc.Metadata ? await this.upstream(call.metadata, path) : md;
      if (!("client" in up)) {
        call.emit("error", up);
        return;
      }
      let ended = false;
      const upstream = up.client.makeServerStreamRequest(path, identity, identity, call.request, md as grpc.Metadata, { deadline: call.getDeadline() });
      upstream.on("metadata", (md) => call.sendMetadata(relayable(md)));
      upstream.on("data", (b: Buffer) => {
        if (!call.write(b)) {
          upstream.pause();
          call.once("drain", () => upstream.resume());
        }
      });
      upstream.on("error", () => {}); // the status event below carries the same failure
      upstream.on("status", (s) => {
        up.done();
        ended = true;
        this.count(path, s.code);
        if (s.code === grpc.status.OK) call.end(relayable(s.metadata));
        else call.emit("error", statusError(s));
      });
      call.on("cancelled", () => {
        if (!ended) {
          this.log.debug({ path, target: up.target }, "caller cancelled a stream");
          upstream.cancel();
        }
      });
    };
  }
}
