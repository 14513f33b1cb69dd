import * as grpc from "@grpc/grpc-js";
import { grpcError } from "../../common/grpc/grpc-server";
import type { Logger } from "../../common/logging/logger";
import type { Counter } from "../../common/metrics/metrics";
import { channelFor } from "../../common/tls/grpc-tls";
import type { PeerRole } from "../../common/tls/peer-identity";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { WORKER_ADDR_HEADER, type ProxyRouter, type RoutedService } from "../core/proxy-router";

/** Method paths the proxy serves and their streaming shape (from the generated service definitions). */
export interface ProxiedMethod {
  readonly path: string;
  readonly responseStream: boolean;
  readonly requestStream: boolean;
}

const identity = (b: Buffer): Buffer => b;

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
  private readonly upstreams = new Map<string, grpc.Client>();

  constructor(
    private readonly router: ProxyRouter,
    private readonly log: Logger,
    private readonly calls: Counter,
    private readonly tls: TlsSetting,
  ) {}

  register(server: grpc.Server, methods: readonly ProxiedMethod[]): void {
    for (const m of methods) {
      if (m.requestStream) continue; // no BlockX service has client streams; grpc-js answers Unimplemented
      if (m.responseStream) server.register(m.path, this.serverStream(m.path), identity, identity, "serverStream");
      else server.register(m.path, this.unary(m.path), identity, identity, "unary");
    }
  }

  close(): void {
    for (const c of this.upstreams.values()) c.close();
    this.upstreams.clear();
  }

  private upstream(metadata: grpc.Metadata, path: string): { client: grpc.Client; target: string } | grpc.ServiceError {
    const header = metadata.get(WORKER_ADDR_HEADER)[0];
    const route = this.router.route(path, typeof header === "string" ? header : header?.toString("utf8"));
    if (!route.ok) {
      this.calls.inc({ service: "unrouted", code: route.code });
      return grpcError(grpc.status[route.code], route.message);
    }
    let client = this.upstreams.get(route.target);
    if (!client) {
      // Under mTLS the upstream must present the certificate of the role its service belongs to.
      const { credentials, options } = channelFor(this.tls, route.target, [UPSTREAM_ROLE[route.service]]);
      client = new grpc.Client(route.target, credentials, {
        "grpc.max_receive_message_length": 64 * 1024 * 1024,
        "grpc.max_send_message_length": 64 * 1024 * 1024,
        ...options,
      });
      this.upstreams.set(route.target, client);
    }
    return { client, target: route.target };
  }

  private count(path: string, code: grpc.status): void {
    this.calls.inc({ service: path.split("/")[1] ?? "", code: grpc.status[code] ?? String(code) });
  }

  private unary(path: string): grpc.handleUnaryCall<Buffer, Buffer> {
    return (call, callback) => {
      const up = this.upstream(call.metadata, path);
      if (!("client" in up)) return callback(up);
      let response: Buffer | undefined;
      const upstream = up.client.makeUnaryRequest(path, identity, identity, call.request, relayable(call.metadata), { deadline: call.getDeadline() }, (_err, value) => {
        response = value;
      });
      upstream.on("metadata", (md) => call.sendMetadata(relayable(md)));
      // The status comes after the callback and carries the trailers: answer from it.
      upstream.on("status", (s) => {
        this.count(path, s.code);
        if (s.code === grpc.status.OK) callback(null, response, relayable(s.metadata));
        else callback(statusError(s));
      });
      call.on("cancelled", () => upstream.cancel());
    };
  }

  private serverStream(path: string): grpc.handleServerStreamingCall<Buffer, Buffer> {
    return (call) => {
      const up = this.upstream(call.metadata, path);
      if (!("client" in up)) {
        call.emit("error", up);
        return;
      }
      let ended = false;
      const upstream = up.client.makeServerStreamRequest(path, identity, identity, call.request, relayable(call.metadata), { deadline: call.getDeadline() });
      upstream.on("metadata", (md) => call.sendMetadata(relayable(md)));
      upstream.on("data", (b: Buffer) => {
        if (!call.write(b)) {
          upstream.pause();
          call.once("drain", () => upstream.resume());
        }
      });
      upstream.on("error", () => {}); // the status event below carries the same failure
      upstream.on("status", (s) => {
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
