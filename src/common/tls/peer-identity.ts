/**
 * PeerIdentity is who a BlockX peer is, read from the URI SAN of its certificate:
 * `blockx://role/client/NAME`, `blockx://role/admin/NAME`, `blockx://role/proxy/NAME`,
 * `blockx://role/coordinator[/NAME]`, `blockx://role/worker[/NAME]`, `blockx://role/syncinvoker[/NAME]`.
 * Clients, admins and proxies need a name (it is who owns their tasks and tables); the servers'
 * names are only for logs. A proxy calls as a client does, and names the Unix user it relays for
 * (sub-identity.ts). Pure.
 */
export const PEER_ROLES = ["client", "admin", "proxy", "coordinator", "worker", "syncinvoker"] as const;
export type PeerRole = (typeof PEER_ROLES)[number];

export interface PeerIdentity {
  readonly role: PeerRole;
  /** "" for a server role certificate without a name. */
  readonly name: string;
}

const NAME = /^[A-Za-z0-9._@-]{1,64}$/;
const URI_PREFIX = "blockx://role/";

/** identityFromUri reads one `blockx://role/...` URI; null when it is not one or breaks a rule. */
export function identityFromUri(uri: string): PeerIdentity | null {
  if (!uri.startsWith(URI_PREFIX)) return null;
  const parts = uri.slice(URI_PREFIX.length).split("/");
  if (parts.length > 2) return null;
  const role = PEER_ROLES.find((r) => r === parts[0]);
  if (role === undefined) return null;
  const name = parts[1] ?? "";
  if (name !== "" && !NAME.test(name)) return null;
  if (name === "" && (role === "client" || role === "admin" || role === "proxy")) return null;
  return { role, name };
}

/**
 * identityFromSubjectAltName reads the identity from a certificate's subjectAltName text (as
 * Node's and Bun's `subjectaltname`: `URI:blockx://role/client/alice, IP Address:127.0.0.1`).
 * Exactly one `blockx://` URI must be there: none or two (ambiguous) give null.
 */
export function identityFromSubjectAltName(san: string | undefined): PeerIdentity | null {
  if (san === undefined) return null;
  const uris = san
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.startsWith("URI:blockx://"))
    .map((s) => s.slice("URI:".length));
  if (uris.length !== 1) return null;
  return identityFromUri(uris[0]!);
}

/** identityKey is the identity as one string, the owner of a task: `client/alice`, `coordinator`. */
export function identityKey(id: PeerIdentity): string {
  return id.name === "" ? id.role : `${id.role}/${id.name}`;
}

/** parseIdentityKey is the inverse of identityKey (the Coordinator passes a client's key to Workers). */
export function parseIdentityKey(key: string): PeerIdentity | null {
  return identityFromUri(URI_PREFIX + key);
}

/** identityUri is the URI SAN a certificate for `id` carries (`blockx certs` writes it). */
export function identityUri(id: PeerIdentity): string {
  return URI_PREFIX + identityKey(id);
}
