import * as grpc from "@grpc/grpc-js";
import { isIP } from "node:net";
import { checkServerIdentity, type ConnectionOptions, type PeerCertificate } from "node:tls";
import { identityFromSubjectAltName, identityKey, type PeerIdentity, type PeerRole } from "./peer-identity";
import type { Logger } from "../logging/logger";
import { describeTls, type TlsSetting } from "./tls-setting";
import { hostOf } from "../net/dial-host";
import { grpcError } from "../grpc/grpc-server";

/** How often the certificate files are re-read: a rotated certificate is used by new connections within this. */
export const TLS_RELOAD_MS = 1_000;

/** The files of one TLS identity: the CA, and this process's certificate and key (none: a CA-only client). */
export interface CertificateFiles {
  readonly caFile: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

// One file watcher per set of files in a process: every server and channel shares it.
const providers = new Map<string, grpc.experimental.FileWatcherCertificateProvider>();

function providerFor(s: CertificateFiles): grpc.experimental.FileWatcherCertificateProvider {
  const key = `${s.caFile}\n${s.certFile ?? ""}\n${s.keyFile ?? ""}`;
  let p = providers.get(key);
  if (!p) {
    p = new grpc.experimental.FileWatcherCertificateProvider({
      caCertificateFile: s.caFile,
      ...(s.certFile && s.keyFile ? { certificateFile: s.certFile, privateKeyFile: s.keyFile } : {}),
      refreshIntervalMs: TLS_RELOAD_MS,
    });
    providers.set(key, p);
  }
  return p;
}

/**
 * serverCredentials: mTLS that requires a client certificate from the CA (re-read every
 * TLS_RELOAD_MS, so a rotated certificate or CA applies to new connections without a restart),
 * or plaintext under BLOCKX_INSECURE.
 */
export function serverCredentials(s: TlsSetting): grpc.ServerCredentials {
  if (s.kind === "insecure") return grpc.ServerCredentials.createInsecure();
  const p = providerFor(s);
  return grpc.experimental.createCertificateProviderServerCredentials(p, p, true);
}

/**
 * loadedServerCredentials: serverCredentials once the TLS files have been read. grpc-js drops a
 * connection that arrives before its server's certificates are loaded, and a role announces its
 * address (and readiness) right after binding: bound with these, it takes connections at once.
 * The provider keeps a listener, so the files stay watched and the latest certificates at hand.
 */
export async function loadedServerCredentials(s: TlsSetting): Promise<grpc.ServerCredentials> {
  if (s.kind === "mtls") {
    const p = providerFor(s);
    await new Promise<void>((resolve) => {
      let ca = false;
      let identity = false;
      p.addCaCertificateListener((u) => {
        ca ||= u !== null;
        if (ca && identity) resolve();
      });
      p.addIdentityCertificateListener((u) => {
        identity ||= u !== null;
        if (ca && identity) resolve();
      });
    });
  }
  return serverCredentials(s);
}

/** The CA, certificate and key a TLS connection is made with, as last read from their files. */
export interface TlsMaterials {
  readonly ca: Buffer;
  /** Absent for a CA-only client (no client certificate shown). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/**
 * TlsMaterialsWatch follows the files of one identity through the same shared watcher grpc-js's
 * servers and channels use (re-read every TLS_RELOAD_MS): `latest()` is what a new connection
 * should use, so a rotated certificate or CA applies to new connections without a restart, as
 * with a grpc-js channel. For clients that make their own TLS connections; one per set of files in
 * a process (`tlsMaterialsFor`), however many connections use it.
 */
class TlsMaterialsWatch {
  private ca: Buffer | null = null;
  private identity: { certificate: Buffer; privateKey: Buffer } | null = null;
  private readonly loaded: Promise<void>;
  private readonly provider: grpc.experimental.FileWatcherCertificateProvider;
  private readonly onCa = (u: grpc.experimental.CaCertificateUpdate | null) => {
    if (u) this.ca = u.caCertificate;
    this.wake();
  };
  private readonly onIdentity = (u: grpc.experimental.IdentityCertificateUpdate | null) => {
    if (u) this.identity = u;
    this.wake();
  };
  private wake: () => void = () => {};

  constructor(files: CertificateFiles) {
    this.provider = providerFor(files);
    this.loaded = new Promise((resolve) => {
      this.wake = () => {
        if (this.ca && (this.identity || !files.certFile)) resolve();
      };
    });
    this.provider.addCaCertificateListener(this.onCa);
    if (files.certFile) this.provider.addIdentityCertificateListener(this.onIdentity);
  }

  /** latest resolves with the newest materials once the files have been read. */
  async latest(): Promise<TlsMaterials> {
    await this.loaded;
    const ca = this.ca!;
    return this.identity ? { ca, cert: this.identity.certificate, key: this.identity.privateKey } : { ca };
  }

}

const materialWatches = new Map<string, TlsMaterialsWatch>();

/**
 * tlsMaterialsFor: the shared TlsMaterialsWatch of `files`: a Coordinator with a channel to each of
 * 10,000 Workers follows the files once, not once per channel (every reload calls each listener).
 */
export function tlsMaterialsFor(files: CertificateFiles): { latest(): Promise<TlsMaterials> } {
  const key = `${files.caFile}\n${files.certFile ?? ""}\n${files.keyFile ?? ""}`;
  let w = materialWatches.get(key);
  if (!w) materialWatches.set(key, (w = new TlsMaterialsWatch(files)));
  return w;
}

/** A name for SNI when the target is an IP address (Bun refuses an IP as TLS servername). */
const IP_SERVERNAME = "blockx-peer";

/**
 * channelFor: credentials and options to dial `target` (host:port) expecting a peer of one of
 * `expect` roles. The server's certificate must name the host the client dialled (IP or DNS SAN,
 * so a Worker cannot advertise an address its certificate does not cover) and carry a URI SAN of
 * an expected role. Plaintext under BLOCKX_INSECURE.
 */
export function channelFor(s: TlsSetting, target: string, expect: readonly PeerRole[]): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (s.kind === "insecure") return { credentials: grpc.credentials.createInsecure(), options: {} };
  return tlsChannel(s, target, roleCheck(target, expect));
}

/** roleCheck: a server certificate passes when its URI SAN names one of `expect` roles. */
function roleCheck(target: string, expect: readonly PeerRole[]): (cert: PeerCertificate) => Error | undefined {
  return (cert) => {
    const id = identityFromSubjectAltName(cert.subjectaltname);
    if (id === null || !expect.includes(id.role)) {
      return new Error(`${target} presented ${id ? identityKey(id) : "a certificate without a blockx://role/ URI SAN"}, expected ${expect.join(" or ")}`);
    }
    return undefined;
  };
}

/**
 * peerTlsOptions: node:tls options for dialling `target` (host:port) with `m`, expecting a peer of
 * one of `expect` roles: the same checks as channelFor's (chains to the CA, names the host dialled,
 * carries an expected role), for a client that makes its own TLS connections.
 */
export function peerTlsOptions(m: TlsMaterials, target: string, expect: readonly PeerRole[]): ConnectionOptions {
  const host = hostOf(target);
  const check = roleCheck(target, expect);
  return {
    ca: m.ca,
    ...(m.cert && m.key ? { cert: m.cert, key: m.key } : {}),
    servername: isIP(host) ? IP_SERVERNAME : host,
    ALPNProtocols: ["h2"],
    rejectUnauthorized: true,
    checkServerIdentity: (_servername: string, cert: PeerCertificate) => checkServerIdentity(host, cert) ?? check(cert),
  };
}

/**
 * tlsChannel: credentials and options to dial `target` (host:port) over TLS with `files` (re-read
 * every TLS_RELOAD_MS; without certFile no client certificate is shown). The server's certificate
 * must chain to the CA and name the host dialled (IP or DNS SAN); `check` may ask more of it.
 * For an IP target, SNI carries a fixed name (Bun refuses an IP as servername).
 */
export function tlsChannel(
  files: CertificateFiles,
  target: string,
  check: (cert: PeerCertificate) => Error | undefined = () => undefined,
): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  const host = hostOf(target);
  const p = providerFor(files);
  const credentials = grpc.experimental.createCertificateProviderChannelCredentials(p, files.certFile ? p : null, {
    checkServerIdentity: (_servername: string, cert: PeerCertificate) => checkServerIdentity(host, cert) ?? check(cert),
  });
  return { credentials, options: { "grpc.ssl_target_name_override": isIP(host) ? IP_SERVERNAME : host } };
}

/**
 * Caller is who made a call: a verified identity under mTLS, or `null` (anonymous) under
 * BLOCKX_INSECURE.
 */
export type CallerResult = { readonly ok: true; readonly identity: PeerIdentity | null } | { readonly ok: false; readonly error: grpc.ServiceError };

interface CallWithAuth {
  getAuthContext?(): { transportSecurityType?: string; sslPeerCertificate?: PeerCertificate } | null;
}

/**
 * callerOf reads the caller's identity from the verified peer certificate and checks its role is
 * one of `allowed`. No identity in the certificate is UNAUTHENTICATED; a role that may not call
 * this method is PERMISSION_DENIED. Under BLOCKX_INSECURE every caller passes, anonymous.
 */
export function callerOf(s: TlsSetting, call: CallWithAuth, allowed: readonly PeerRole[], method: string): CallerResult {
  if (s.kind === "insecure") return { ok: true, identity: null };
  const id = peerIdentityOf(call);
  if (id === null) return { ok: false, error: grpcError(grpc.status.UNAUTHENTICATED, `${method}: the peer certificate names no blockx://role/ identity`) };
  if (!allowed.includes(id.role)) {
    return { ok: false, error: grpcError(grpc.status.PERMISSION_DENIED, `${method}: ${identityKey(id)} may not call this; allowed: ${allowed.join(", ")}`) };
  }
  return { ok: true, identity: id };
}

/** The grpc-js 1.14 server call objects between a handler's call and its HTTP/2 stream (pinned in package.json). */
interface CallChain {
  readonly call?: CallChain;
  readonly nextCall?: CallChain;
  readonly stream?: { readonly session?: { readonly socket?: object } };
}

/** connectionOf: the socket a call arrived on, through grpc-js's call objects; null when their shape is not the one this build knows. */
function connectionOf(call: object): object | null {
  let c = (call as CallChain).call;
  for (let depth = 0; c && depth < 8; depth++) {
    const socket = c.stream?.session?.socket;
    if (socket) return socket;
    c = c.nextCall;
  }
  return null;
}

// The identity of each connection's peer, read once per connection: getPeerCertificate builds the
// whole certificate object (about 0.1 ms in Bun, the largest part of mTLS's cost per call), and a
// connection's peer certificate was verified once, at its handshake.
const connectionIdentities = new WeakMap<object, PeerIdentity | null>();

/** peerIdentityOf: the identity in the verified peer certificate of a call's connection, or null. */
function peerIdentityOf(call: CallWithAuth): PeerIdentity | null {
  const conn = connectionOf(call);
  if (conn !== null && connectionIdentities.has(conn)) return connectionIdentities.get(conn)!;
  const cert = call.getAuthContext?.()?.sslPeerCertificate;
  const id = identityFromSubjectAltName(cert?.subjectaltname);
  // Only a verified certificate is remembered (getAuthContext has none for an unauthorized socket).
  if (conn !== null && cert) connectionIdentities.set(conn, id);
  return id;
}

type AnyHandler = (call: CallWithAuth & { metadata: grpc.Metadata; emit(event: "error", e: grpc.ServiceError): boolean }, callback?: (e: grpc.ServiceError | null) => void) => void;

/**
 * requireRoles wraps every handler of a service so that only peers of `allowed` roles reach it
 * (a unary call gets the status in its callback, a stream as its error). For services whose
 * methods need no finer rule than the caller's role (the Sync Invoker).
 */
export function requireRoles<S extends object>(s: TlsSetting, allowed: readonly PeerRole[], handlers: S): S {
  return requireCallers(s, handlers, (call, name) => callerOf(s, call, allowed, name));
}

/** requireCallers: requireRoles with the caller's check given (sub-identity.ts's requireClientCallers). */
export function requireCallers<S extends object>(s: TlsSetting, handlers: S, check: (call: CallWithAuth & { metadata: grpc.Metadata }, method: string) => { ok: true } | { ok: false; error: grpc.ServiceError }): S {
  if (s.kind === "insecure") return handlers;
  const out: Record<string, AnyHandler> = {};
  for (const [name, h] of Object.entries(handlers) as [string, AnyHandler][]) {
    out[name] = (call, callback) => {
      const caller = check(call, name);
      if (caller.ok) return h(call, callback);
      if (typeof callback === "function") return callback(caller.error);
      call.emit("error", caller.error);
    };
  }
  return out as S;
}

/** announceTls logs the role's transport once at start: a warning when it is plaintext. */
export function announceTls(log: Logger, s: TlsSetting): void {
  if (s.kind === "insecure") log.warn({ tls: "insecure" }, describeTls(s));
  else log.info({ tls: "mtls", identity: identityKey(s.identity), ca: s.caFile, cert: s.certFile }, describeTls(s));
}
