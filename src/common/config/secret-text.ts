/**
 * Secret text: how a value that may hold a secret (a password in a store URL, an etcd password, a
 * dashboard token) is kept out of what the process prints. Two layers:
 *
 * - where a secret variable's value is shown on purpose (a configuration error quoting what was
 *   given), `shownSecret` shows a URL with its password and secret query parameters replaced by
 *   `***`, and any other secret only as its length;
 * - everything the process writes (log lines, the CLI's error messages) goes through
 *   `redactSecrets`, which replaces every secret value the configuration loader met
 *   (`rememberSecret`) and the password of any `scheme://user:password@` URL it finds.
 *
 * The set of remembered values is process-wide on purpose: a secret must not leak through a
 * message built far from the loader that read it.
 */

/** SecretKind: `url` shows the value with its credentials replaced; `value` never shows it. */
export type SecretKind = "url" | "value";

export const HIDDEN = "***";

/** Query parameters that carry a credential in a connection URL (libpq's `password`, `sslpassword`, API keys). */
const SECRET_PARAM = /([?&;](?:password|sslpassword|pass|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?token)=)[^&;\s"'#]*/gi;
/** The userinfo password of `scheme://user:password@host` (the password may hold anything but whitespace, `@` and `/`). */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s:@/"'<>]*:)[^\s@/"'<>]+@/gi;

/** redactUrlCredentials: `text` with every URL password and secret query parameter value replaced by `***`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_PASSWORD, `$1${HIDDEN}@`).replace(SECRET_PARAM, `$1${HIDDEN}`);
}

/** The shortest value remembered: shorter ones would blank out ordinary words of messages. */
const MIN_REMEMBERED = 4;
const remembered = new Set<string>();

/**
 * rememberSecret: the secret in `value` is replaced by `***` wherever `redactSecrets` runs: the
 * whole value for a `value` secret; for a `url` secret its password and secret query parameters
 * (the rest of a URL, its host, stays readable in messages). Idempotent; values shorter than 4
 * characters are skipped.
 */
export function rememberSecret(kind: SecretKind, value: string): void {
  const add = (s: string) => {
    if (s.length < MIN_REMEMBERED) return;
    remembered.add(s);
    // As JSON writes it (a log line) and as a URL encodes it (a rebuilt URL).
    remembered.add(JSON.stringify(s).slice(1, -1));
    remembered.add(encodeURIComponent(s));
  };
  if (kind === "value") add(value.trim());
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^\s:@/]*:([^\s@/]+)@/i.exec(value.trim());
  if (m) {
    add(m[1]!);
    try {
      add(decodeURIComponent(m[1]!));
    } catch {
      // Not percent-encoded: the raw form is remembered.
    }
  }
  for (const p of value.matchAll(new RegExp(SECRET_PARAM.source, "gi"))) add(value.slice(p.index! + p[1]!.length, p.index! + p[0].length));
}

/** redactSecrets: `text` with every remembered secret and every URL credential replaced by `***`. */
export function redactSecrets(text: string): string {
  let out = text;
  // Longest first, so a URL is replaced whole before its password alone.
  for (const s of [...remembered].sort((a, b) => b.length - a.length)) if (out.includes(s)) out = out.split(s).join(HIDDEN);
  return redactUrlCredentials(out);
}

/**
 * shownSecret: how a configuration error quotes a secret variable's value: a URL with its
 * credentials replaced (a value that is not a clean URL, and any `value` secret, only by length).
 */
export function shownSecret(kind: SecretKind, raw: string): string {
  if (kind === "url" && raw.trim() !== "" && !/\s/.test(raw)) {
    try {
      const u = new URL(raw);
      if (u.password) u.password = HIDDEN;
      return JSON.stringify(redactUrlCredentials(u.toString()));
    } catch {
      // Not a URL: it may be a mangled one with its password anywhere.
    }
  }
  return `a value of ${raw.length} characters (not shown: it may hold a secret)`;
}
