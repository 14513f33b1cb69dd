import * as grpc from "@grpc/grpc-js";
import { grpcBindAddr } from "../net/listen-addr";

/** Server options shared by every BlockX gRPC server. */
export const GRPC_SERVER_OPTIONS: grpc.ServerOptions = {
  "grpc.max_receive_message_length": 64 * 1024 * 1024,
  "grpc.max_send_message_length": 64 * 1024 * 1024,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.http2.min_ping_interval_without_data_ms": 5_000,
};

/**
 * bindGrpcServer binds `server` to a listen address (":8080", "127.0.0.1:0", "unix:/path")
 * with `credentials` (serverCredentials of the role's TlsSetting) and returns the address actually
 * bound, with the port resolved when 0 was asked for.
 */
export async function bindGrpcServer(server: grpc.Server, listenAddr: string, credentials: grpc.ServerCredentials): Promise<string> {
  const target = listenAddr.startsWith("unix:") ? listenAddr : grpcBindAddr(listenAddr);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(target, credentials, (err, p) => (err ? reject(err) : resolve(p))),
  );
  disableNagle(server);
  if (listenAddr.startsWith("unix:")) return listenAddr;
  return target.replace(/:\d+$/, `:${port}`);
}

/**
 * disableNagle sets TCP_NODELAY on every accepted connection (grpc-js does it on the client side
 * only). Under TLS a reply goes out as several records, and with Nagle the later ones wait for the
 * peer's delayed ACK. grpc-js keeps its HTTP/2 servers in a private map: without it, nothing.
 */
function disableNagle(server: grpc.Server): void {
  const servers = (server as unknown as { http2Servers?: Map<{ on(e: string, f: (s: { setNoDelay?(v: boolean): void }) => void): void }, unknown> }).http2Servers;
  if (!(servers instanceof Map)) return;
  for (const h of servers.keys()) {
    h.on("connection", (s) => s.setNoDelay?.(true));
    h.on("secureConnection", (s) => s.setNoDelay?.(true));
  }
}

/**
 * shutdownGrpcServer lets in-flight calls finish for up to `graceMs`, then cuts the rest.
 */
export async function shutdownGrpcServer(server: grpc.Server, graceMs: number): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** grpcError builds the error object a grpc-js handler passes to its callback. */
export function grpcError(code: grpc.status, details: string): grpc.ServiceError {
  const err = new Error(details) as grpc.ServiceError;
  err.code = code;
  err.details = details;
  err.metadata = new grpc.Metadata();
  return err;
}
