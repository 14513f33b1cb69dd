import * as grpc from "@grpc/grpc-js";
import * as http2 from "node:http2";
import * as net from "node:net";
import * as tls from "node:tls";
import { hostOf } from "../net/dial-host";
import { peerTlsOptions, tlsMaterialsFor, type TlsMaterials } from "../tls/grpc-tls";
import type { PeerRole } from "../tls/peer-identity";
import type { TlsSetting } from "../tls/tls-setting";
import { backoffMs } from "../retry/backoff";

/**
 * UnaryCallError is a failed call: its gRPC status, the details, and whether the request can
 * have reached the server (`neverSent`: no connection carried it), which decides whether a slot
 * may have been allocated.
 */
export class UnaryCallError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly neverSent: boolean,
  ) {
    super(`${grpc.status[code] ?? code}: ${details}`);
  }
}

export interface Http2UnaryChannelOptions {
  /** How long a connection may take (TCP and TLS); then the attempt fails and backs off. */
  readonly connectTimeoutMs: number;
  /** After a failed connection attempt, calls fail at once for this long, doubling up to `maxBackoffMs`. */
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  /** A PING every this often on an open connection; one unanswered within `keepaliveTimeoutMs` drops it. */
  readonly keepaliveMs: number;
  readonly keepaliveTimeoutMs: number;
  /** The largest response message accepted (a hostile or broken server cannot make us buffer more). */
  readonly maxResponseBytes: number;
}

export const DEFAULT_UNARY_CHANNEL_OPTIONS: Http2UnaryChannelOptions = {
  connectTimeoutMs: 20_000,
  initialBackoffMs: 100,
  maxBackoffMs: 2_000,
  keepaliveMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  maxResponseBytes: 4 * 1024 * 1024,
};

/** The gRPC statuses an HTTP status maps to when a response carries no grpc-status (gRPC's http-grpc-status-mapping). */
function statusOfHttp(httpStatus: number): grpc.status {
  switch (httpStatus) {
    case 400:
      return grpc.status.INTERNAL;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return grpc.status.UNAVAILABLE;
    default:
      return grpc.status.UNKNOWN;
  }
}

/** grpc-message is percent-encoded (gRPC's PROTOCOL-HTTP2); a malformed escape is left as it came. */
function decodeGrpcMessage(v: string | string[] | undefined): string {
  const s = Array.isArray(v) ? v.join(",") : (v ?? "");
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A target `unix:/path` is a Unix socket (the local proxy's); any other is `host:port`. */
const UNIX_PREFIX = "unix:";

interface Connection {
  /** Set once the server's HTTP/2 settings arrived: a call can start on it at once. */
  session: http2.ClientHttp2Session | null;
  /** Resolves with the session once its HTTP/2 settings arrived; rejects with why it could not connect. */
  ready: Promise<http2.ClientHttp2Session>;
  /** No new call may start on it (GOAWAY, closed, failed); calls already on it finish. */
  retired: boolean;
  keepalive?: ReturnType<typeof setInterval>;
}

/**
 * Http2UnaryChannel makes gRPC unary calls to one server over one HTTP/2 connection of node:http2,
 * without grpc-js's client stack: a reservation is a Coordinator call that makes one Worker call,
 * and grpc-js's client layers (resolver, balancer, filters, retry machinery) cost more than the
 * HTTP/2 exchange itself on this runtime (bench/README.md: a two-hop reservation 441 -> 332 µs
 * p50, 3,893 -> 5,168 calls/s). What grpc-js gave that matters here is kept: one connection,
 * made on first use and again after it broke, with TCP_NODELAY; mTLS with the shared watched
 * certificates and the peer checks of `channelFor` (the host dialled, an expected role); a
 * back-off after a failed connection during which calls fail at once (grpc-js's
 * TRANSIENT_FAILURE); keepalive PINGs; the deadline sent as grpc-timeout and enforced here; a
 * bound on the response's size; trailers-only answers, HTTP statuses and reset streams mapped to
 * gRPC statuses as gRPC specifies.
 *
 * Every failure says whether the request can have reached the server (`UnaryCallError.neverSent`:
 * no connection carried it), known here for certain, where grpc-js's caller had to read it from the
 * wording of its messages.
 */
export class Http2UnaryChannel {
  private conn: Connection | null = null;
  private backoffMs: number;
  private retryAtMs = 0;
  private lastConnectError = "";
  private closed = false;
  private readonly materials: { latest(): Promise<TlsMaterials> } | null;

  constructor(
    private readonly target: string,
    tlsSetting: TlsSetting,
    private readonly expect: readonly PeerRole[],
    private readonly options: Http2UnaryChannelOptions = DEFAULT_UNARY_CHANNEL_OPTIONS,
  ) {
    this.backoffMs = options.initialBackoffMs;
    this.materials = tlsSetting.kind === "mtls" ? tlsMaterialsFor(tlsSetting) : null;
  }

  /**
   * unary sends one framed request message to `path` and resolves with the response message's
   * bytes, or rejects with a UnaryCallError. `metadata` goes as request headers.
   */
  unary(path: string, request: Uint8Array, metadata: Readonly<Record<string, string>>, deadlineMs: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let stream: http2.ClientHttp2Stream | null = null;
      const settle = (err: UnaryCallError | null, value?: Buffer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value!);
      };
      const timer = setTimeout(() => {
        // Before a stream existed nothing was sent (the connection was not up in time).
        const sent = stream !== null;
        settle(new UnaryCallError(grpc.status.DEADLINE_EXCEEDED, sent ? `no answer from ${this.target} within the deadline` : `no connection to ${this.target} within the deadline${this.lastConnectError ? ` (last error: ${this.lastConnectError})` : ""}`, !sent));
        stream?.close(http2.constants.NGHTTP2_CANCEL);
      }, Math.max(0, deadlineMs - Date.now()));
      const start = (session: http2.ClientHttp2Session) => {
        if (settled) return;
        const remainingMs = Math.max(1, Math.ceil(deadlineMs - Date.now()));
        // grpc-timeout takes at most 8 digits (gRPC's PROTOCOL-HTTP2).
        const grpcTimeout = remainingMs <= 99_999_999 ? `${remainingMs}m` : `${Math.ceil(remainingMs / 1000)}S`;
        try {
          // Metadata first: it cannot replace the call's own headers.
          stream = session.request({
            ...metadata,
            ":method": "POST",
            ":path": path,
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-timeout": grpcTimeout,
          });
        } catch (e) {
          // The session was closing: the stream never existed.
          return settle(new UnaryCallError(grpc.status.UNAVAILABLE, `connection to ${this.target} closed before the call: ${(e as Error).message}`, true));
        }
        this.receive(stream, settle);
        const frame = Buffer.allocUnsafe(5 + request.length);
        frame[0] = 0;
        frame.writeUInt32BE(request.length, 1);
        frame.set(request, 5);
        stream.end(frame);
      };
      const c = this.connection();
      if (c instanceof UnaryCallError) return settle(c);
      if (c.session && !c.retired) return start(c.session);
      c.ready.then(start, (e: Error) => settle(new UnaryCallError(grpc.status.UNAVAILABLE, `no connection to ${this.target}: ${e.message}`, true)));
    });
  }

  /** receive reads one unary answer off `stream`: headers, at most one bounded message, the status. */
  private receive(stream: http2.ClientHttp2Stream, settle: (err: UnaryCallError | null, value?: Buffer) => void): void {
    let httpStatus = 0;
    let status: number | undefined;
    let message = "";
    const chunks: Buffer[] = [];
    let size = 0;
    const readStatus = (h: http2.IncomingHttpHeaders) => {
      const s = h["grpc-status"];
      if (s === undefined) return;
      const n = Number(s);
      status = Number.isInteger(n) && n >= 0 && n <= 16 ? n : grpc.status.UNKNOWN;
      message = decodeGrpcMessage(h["grpc-message"]);
    };
    stream.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      readStatus(h); // a trailers-only answer carries its status with the headers
    });
    stream.on("trailers", readStatus);
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.options.maxResponseBytes + 5) {
        settle(new UnaryCallError(grpc.status.RESOURCE_EXHAUSTED, `${this.target} answered more than ${this.options.maxResponseBytes} bytes`, false));
        stream.close(http2.constants.NGHTTP2_CANCEL);
        return;
      }
      chunks.push(chunk);
    });
    // Errors are settled at "close", which always follows, with everything known by then.
    stream.on("error", () => {});
    stream.on("close", () => {
      if (status === undefined) {
        if (httpStatus !== 0 && httpStatus !== 200) return settle(new UnaryCallError(statusOfHttp(httpStatus), `${this.target} answered HTTP ${httpStatus}`, false));
        // Even a REFUSED_STREAM (not processed, RFC 9113 8.7) counts as possibly served: Bun's
        // client stream reports every reset from the server as rstCode 0, so it cannot be told apart.
        return settle(new UnaryCallError(grpc.status.UNAVAILABLE, `the call to ${this.target} ended without a status: the stream was reset or the connection dropped`, false));
      }
      if (status !== grpc.status.OK) return settle(new UnaryCallError(status, message, false));
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
        const why = body.length < 5 ? "no message" : body[0] !== 0 ? "a compressed message (none was accepted)" : "a message whose length does not match its frame";
        return settle(new UnaryCallError(grpc.status.INTERNAL, `${this.target} answered OK with ${why}`, false));
      }
      settle(null, body.subarray(5));
    });
  }

  /** connection: the live connection, a new one being made, or why no call can start now (back-off). */
  private connection(): Connection | UnaryCallError {
    if (this.closed) return new UnaryCallError(grpc.status.UNAVAILABLE, `the channel to ${this.target} is closed`, true);
    if (this.conn && !this.conn.retired) return this.conn;
    const now = Date.now();
    if (now < this.retryAtMs) {
      return new UnaryCallError(grpc.status.UNAVAILABLE, `no connection to ${this.target}: ${this.lastConnectError} (next attempt in ${this.retryAtMs - now} ms)`, true);
    }
    const conn = this.connect();
    this.conn = conn;
    return conn;
  }

  private connect(): Connection {
    const conn: Connection = { session: null, retired: false, ready: Promise.resolve(null as unknown as http2.ClientHttp2Session) };
    conn.ready = this.open(conn).then(
      (session) => {
        this.backoffMs = this.options.initialBackoffMs;
        this.lastConnectError = "";
        return session;
      },
      (e: Error) => {
        conn.retired = true;
        if (this.conn === conn) this.conn = null;
        this.lastConnectError = e.message;
        this.retryAtMs = Date.now() + this.backoffMs;
        this.backoffMs = backoffMs(this.backoffMs, this.options.maxBackoffMs, 1);
        throw e;
      },
    );
    conn.ready.catch(() => {}); // a connection nobody waits on may fail unobserved
    return conn;
  }

  /**
   * open makes the TCP (and TLS) connection and the HTTP/2 session on it; the server's settings
   * must arrive within connectTimeoutMs (a peer that accepts and stays silent is dropped then).
   */
  private open(conn: Connection): Promise<http2.ClientHttp2Session> {
    return new Promise((resolve, reject) => {
      let socket: net.Socket | null = null;
      let session: http2.ClientHttp2Session | null = null;
      let done = false;
      // Stays attached to the sockets: after `done` it swallows their late errors (the session reports them).
      const fail = (e: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        session?.destroy();
        socket?.destroy();
        reject(e);
      };
      const timer = setTimeout(() => fail(new Error(`no connection within ${this.options.connectTimeoutMs} ms`)), this.options.connectTimeoutMs);
      const retire = () => {
        conn.retired = true;
        if (this.conn === conn) this.conn = null;
      };
      const startSession = (s: net.Socket, scheme: "http" | "https") => {
        if (done) return;
        if (this.closed) return fail(new Error("the channel was closed while connecting"));
        // A Unix socket's peer (the proxy) is named localhost, as grpc-js names it.
        const authority = this.target.startsWith(UNIX_PREFIX) ? "localhost" : this.target;
        const h2 = http2.connect(`${scheme}://${authority}`, { createConnection: () => s });
        session = h2;
        h2.unref();
        h2.once("remoteSettings", () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          conn.session = h2;
          this.keepAlive(conn, h2);
          resolve(h2);
        });
        h2.once("goaway", retire);
        h2.on("error", (e: Error) => {
          retire();
          fail(e);
        });
        h2.once("close", () => {
          retire();
          clearInterval(conn.keepalive);
          fail(new Error("the connection closed before it was ready"));
        });
      };
      void (this.materials ? this.materials.latest() : Promise.resolve(null)).then((m) => {
        if (done) return;
        const tlsOptions = m ? peerTlsOptions(m, this.target, this.expect) : null;
        const tcp = this.target.startsWith(UNIX_PREFIX)
          ? net.connect({ path: this.target.slice(UNIX_PREFIX.length) })
          : net.connect({ host: hostOf(this.target), port: Number(this.target.slice(this.target.lastIndexOf(":") + 1)) });
        socket = tcp;
        tcp.on("error", fail);
        tcp.once("connect", () => {
          tcp.setNoDelay(true);
          if (!tlsOptions) return startSession(tcp, "http");
          const secure = tls.connect({ ...tlsOptions, socket: tcp });
          socket = secure;
          secure.on("error", fail);
          secure.once("secureConnect", () => startSession(secure, "https"));
        });
      });
    });
  }

  /** keepAlive PINGs the server every keepaliveMs; a PING unanswered in keepaliveTimeoutMs drops the connection. */
  private keepAlive(conn: Connection, session: http2.ClientHttp2Session): void {
    conn.keepalive = setInterval(() => {
      const timeout = setTimeout(() => session.destroy(new Error(`no PING answer within ${this.options.keepaliveTimeoutMs} ms`)), this.options.keepaliveTimeoutMs);
      timeout.unref?.();
      try {
        session.ping((err) => {
          clearTimeout(timeout);
          if (err) session.destroy(err);
        });
      } catch (e) {
        clearTimeout(timeout);
        session.destroy(e as Error);
      }
    }, this.options.keepaliveMs);
    conn.keepalive.unref?.();
  }

  /** close ends the connection once its calls are done; new calls fail. */
  close(): void {
    this.closed = true;
    const c = this.conn;
    this.conn = null;
    if (c) {
      c.retired = true;
      clearInterval(c.keepalive);
      c.session?.close();
    }
  }
}
