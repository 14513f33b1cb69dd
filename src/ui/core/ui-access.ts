/**
 * Who may read the dashboard: the decision for one request, pure (the server gives it the
 * request's facts and acts on the answer). Two checks, in this order:
 *
 * 1. The Host header must name what the dashboard serves: a loopback name (`localhost`,
 *    `127.0.0.1`, `[::1]`) or the configured bind host (and, on a wildcard bind, this machine's
 *    names and addresses), with the bound port. A page on another site that rebinds its own name
 *    to 127.0.0.1 (DNS rebinding) sends its own name, and is refused before anything is read.
 * 2. The per-start token: in the URL the dashboard prints (`?token=`, as notebook servers do), in
 *    the cookie that first use sets (HttpOnly, SameSite=Strict: links and reloads work, other
 *    sites' requests never carry it), or as `Authorization: Bearer` for scripts.
 */

/** The facts of one request the decision needs. */
export interface AccessRequest {
  /** The Host header as sent (`127.0.0.1:9300`), or null when there is none. */
  readonly host: string | null;
  /** `?token=`, or null. */
  readonly queryToken: string | null;
  /** The value of this dashboard's cookie, or null. */
  readonly cookieToken: string | null;
  /** The Authorization header, or null. */
  readonly authorization: string | null;
}

/** What the dashboard serves and its token. */
export interface AccessPolicy {
  readonly token: string;
  /** Host names (lower case, v6 addresses in brackets) a request may name. */
  readonly hosts: ReadonlySet<string>;
  /** The bound port: a Host header must carry it. */
  readonly port: number;
}

export type AccessDecision =
  | { readonly kind: "allow"; /** The token came in the URL: set the cookie, so that later requests need no token in the URL. */ readonly setCookie: boolean }
  | { readonly kind: "refuse"; readonly status: 401 | 403; readonly reason: string };

/** The loopback names every dashboard answers to. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** isLoopbackHost: whether a bind host keeps the dashboard on this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** isWildcardHost: whether a bind host means every interface (`:9300`, `0.0.0.0`, `[::]`). */
export function isWildcardHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "" || h === "0.0.0.0" || h === "::";
}

/**
 * allowedHosts: the Host names a request may use: loopback, the bind host, `extra` (UI_HOSTS, a
 * name a reverse proxy or a tunnel uses) and, on a wildcard bind, `machineNames` (this host's
 * name and addresses, which the adapter reads).
 */
export function allowedHosts(bindHost: string, extra: readonly string[], machineNames: readonly string[]): ReadonlySet<string> {
  const norm = (h: string) => {
    const lower = h.trim().toLowerCase();
    return lower.includes(":") && !lower.startsWith("[") ? `[${lower}]` : lower;
  };
  const out = new Set(LOOPBACK_HOSTS);
  if (!isWildcardHost(bindHost)) out.add(norm(bindHost));
  else for (const m of machineNames) out.add(norm(m));
  for (const e of extra) out.add(norm(e));
  out.delete("");
  return out;
}

/** splitHostHeader: `name:port` → [name, port]; a bracketed v6 address keeps its brackets; no port → 80. */
function splitHostHeader(host: string): [string, number] | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim());
  if (!m) return null;
  return [m[1]!.toLowerCase(), m[2] === undefined ? 80 : Number(m[2])];
}

/** sameText compares in time that depends on the length only, so the token cannot be guessed a character at a time. */
export function sameText(a: string, b: string): boolean {
  if (a.length !== b.length || a.length === 0) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** decideAccess: allow the request (and say whether to set the cookie), or refuse it with the reason. */
export function decideAccess(req: AccessRequest, policy: AccessPolicy): AccessDecision {
  const hp = req.host === null ? null : splitHostHeader(req.host);
  if (hp === null || !policy.hosts.has(hp[0]) || hp[1] !== policy.port) {
    return {
      kind: "refuse",
      status: 403,
      reason: `Host ${JSON.stringify((req.host ?? "").slice(0, 100))} is not a name this dashboard serves (${[...policy.hosts].join(", ")} on port ${policy.port}; UI_HOSTS adds names)`,
    };
  }
  if (req.queryToken !== null && sameText(req.queryToken, policy.token)) return { kind: "allow", setCookie: true };
  if (req.cookieToken !== null && sameText(req.cookieToken, policy.token)) return { kind: "allow", setCookie: false };
  const bearer = req.authorization?.match(/^Bearer\s+(\S+)$/i)?.[1] ?? null;
  if (bearer !== null && sameText(bearer, policy.token)) return { kind: "allow", setCookie: false };
  const given = req.queryToken !== null || req.cookieToken !== null || bearer !== null;
  return {
    kind: "refuse",
    status: 401,
    reason: given
      ? "wrong dashboard token: open the URL the dashboard printed when it started (its token changes at every start)"
      : "no dashboard token: open the URL the dashboard printed when it started (the http://HOST:PORT/ address with its token)",
  };
}
