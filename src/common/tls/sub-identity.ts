import * as grpc from "@grpc/grpc-js";
import { grpcError } from "../grpc/grpc-server";
import { callerOf, requireCallers } from "./grpc-tls";
import { identityKey, parseIdentityKey, type PeerRole } from "./peer-identity";
import type { TlsSetting } from "./tls-setting";

/**
 * Sub-identities: a UDS proxy (`blockx proxy`, a `blockx://role/proxy/NAME` certificate) relays
 * the calls of every local user of its socket. It reads each caller's Unix user from the socket's
 * peer credentials (SO_PEERCRED: the kernel's word, not the caller's) and names it upstream in
 * SUB_IDENTITY_HEADER, `uid:UID`. The caller is then `proxy/NAME/uid:UID`: the owner of its tasks,
 * of the tables they make, and of its executors, so two users behind one proxy share neither.
 *
 * The header is believed only from a peer whose certificate is a proxy's; from any other caller
 * (a client, an admin) the call is refused (PERMISSION_DENIED), so that a client cannot pass for
 * somebody else and a misconfigured relay is noticed rather than silently merged. Under
 * BLOCKX_INSECURE nobody is authenticated and the header is ignored.
 */
export const SUB_IDENTITY_HEADER = "x-blockx-sub-identity";

/** The roles that call as clients do (their identity owns their tasks and tables). */
export const CALLER_ROLES: readonly PeerRole[] = ["client", "admin", "proxy"];

const SUB = /^uid:(0|[1-9][0-9]{0,9})$/;

/** subIdentityOfUid: the sub-identity a proxy names for a Unix user. */
export function subIdentityOfUid(uid: number): string {
  return `uid:${uid}`;
}

/** CallerKey: a caller's identity key with any sub-identity (`client/alice`, `proxy/gw/uid:1000`), or null (anonymous, BLOCKX_INSECURE). */
export type CallerKeyResult = { readonly ok: true; readonly key: string | null; readonly admin: boolean } | { readonly ok: false; readonly error: grpc.ServiceError };

interface CallWithMetadata {
  readonly metadata: grpc.Metadata;
}

/**
 * callerKeyOf: who called, as the owner of what the call makes: the certificate's identity (a
 * client's, an admin's or a proxy's: anything else as callerOf refuses it), with the sub-identity
 * a proxy names. A sub-identity header from another role is PERMISSION_DENIED, a malformed one
 * INVALID_ARGUMENT.
 */
export function callerKeyOf(s: TlsSetting, call: Parameters<typeof callerOf>[1] & CallWithMetadata, method: string): CallerKeyResult {
  const caller = callerOf(s, call, CALLER_ROLES, method);
  if (!caller.ok) return caller;
  if (caller.identity === null) return { ok: true, key: null, admin: false };
  const key = identityKey(caller.identity);
  const raw = call.metadata.get(SUB_IDENTITY_HEADER);
  if (raw.length === 0) return { ok: true, key, admin: caller.identity.role === "admin" };
  if (caller.identity.role !== "proxy") {
    return { ok: false, error: grpcError(grpc.status.PERMISSION_DENIED, `${method}: ${key} may not name a sub-identity (${SUB_IDENTITY_HEADER} is believed from a proxy certificate only)`) };
  }
  const sub = raw.length === 1 && typeof raw[0] === "string" ? raw[0] : "";
  if (!SUB.test(sub)) return { ok: false, error: grpcError(grpc.status.INVALID_ARGUMENT, `${method}: ${SUB_IDENTITY_HEADER} must be one uid:UID, got ${JSON.stringify(raw.map(String).join(","))}`) };
  return { ok: true, key: `${key}/${sub}`, admin: false };
}

/**
 * parseCallerKey reads a key callerKeyOf made (the Coordinator passes it to Workers in
 * x-blockx-client-identity): `client/NAME`, `admin/NAME`, `proxy/NAME` or `proxy/NAME/uid:UID`;
 * null when it is none of those.
 */
export function parseCallerKey(key: string): string | null {
  const parts = key.split("/");
  const base = parts.length === 3 && parts[0] === "proxy" && SUB.test(parts[2]!) ? parseIdentityKey(parts.slice(0, 2).join("/")) : parseIdentityKey(key);
  return base !== null && CALLER_ROLES.includes(base.role) ? key : null;
}

/** requireClientCallers: requireRoles for a service clients call: a client's, an admin's or a proxy's certificate, a sub-identity from a proxy only. */
export function requireClientCallers<S extends object>(s: TlsSetting, handlers: S): S {
  return requireCallers(s, handlers, (call, method) => callerKeyOf(s, call, method));
}
