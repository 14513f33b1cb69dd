import { X509Certificate, createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "../config/env-config";
import { identityFromSubjectAltName, identityKey, type PeerIdentity } from "./peer-identity";
import type { TlsValues } from "./tls-vars";

/**
 * TlsSetting is the compiled transport security of one process: mTLS with three absolute file
 * paths (and the identity its own certificate names), or plaintext chosen on purpose.
 */
export type TlsSetting =
  | { readonly kind: "insecure" }
  | { readonly kind: "mtls"; readonly caFile: string; readonly certFile: string; readonly keyFile: string; readonly identity: PeerIdentity };

/** One PEM certificate of a bundle (a CA file may hold several). */
export const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

const FILE_VARS = [
  ["tlsCaFile", "BLOCKX_TLS_CA_FILE"],
  ["tlsCertFile", "BLOCKX_TLS_CERT_FILE"],
  ["tlsKeyFile", "BLOCKX_TLS_KEY_FILE"],
] as const;

/**
 * compileTlsSetting checks the TLS variables as a whole and reads the files once, so that a role
 * with a half-set or broken configuration exits 2 at start naming the variable (not at its first
 * handshake). Relative paths are taken from the current directory and kept absolute.
 */
export function compileTlsSetting(v: TlsValues): TlsSetting {
  const set = FILE_VARS.filter(([k]) => v[k].trim() !== "");
  if (set.length === 0) {
    if (v.insecure === "1") return Object.freeze({ kind: "insecure" });
    throw new ConfigError([
      "BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE, BLOCKX_TLS_KEY_FILE: expected all three (mTLS), or BLOCKX_INSECURE=1 to choose plaintext, got none",
    ]);
  }
  if (v.insecure === "1") throw new ConfigError([`BLOCKX_INSECURE: expected 0 when ${set.map(([, n]) => n).join(", ")} is set, got "1"`]);
  const missing = FILE_VARS.filter(([k]) => v[k].trim() === "");
  if (missing.length > 0) {
    throw new ConfigError(missing.map(([, n]) => `${n}: expected a PEM file path (the TLS configuration is half set: ${set.map(([, s]) => s).join(", ")} given), got ""`));
  }
  const [caFile, certFile, keyFile] = FILE_VARS.map(([k]) => resolve(v[k].trim())) as [string, string, string];
  const problems: string[] = [];
  const ca = readPem("BLOCKX_TLS_CA_FILE", caFile, problems, (t) => (t.match(PEM_CERT) ?? [t]).map((c) => new X509Certificate(c)));
  const cert = readPem("BLOCKX_TLS_CERT_FILE", certFile, problems, (t) => new X509Certificate(t));
  const key = readPem("BLOCKX_TLS_KEY_FILE", keyFile, problems, (t): KeyObject => createPrivateKey(t));
  let identity: PeerIdentity | null = null;
  if (cert && key && !cert.checkPrivateKey(key)) problems.push(`BLOCKX_TLS_KEY_FILE: expected the private key of BLOCKX_TLS_CERT_FILE, got another key (${keyFile})`);
  // A chain may go through an intermediate the CA file holds: only a certificate whose issuer is
  // none of the file's certificates is surely foreign.
  if (cert && ca && !ca.some((c) => c.subject === cert.issuer)) {
    problems.push(`BLOCKX_TLS_CERT_FILE: expected a certificate issued by a certificate of BLOCKX_TLS_CA_FILE (${ca.map((c) => c.subject.replace(/\n/g, ", ")).join("; ")}), got one issued by ${cert.issuer.replace(/\n/g, ", ")}`);
  }
  if (cert) {
    identity = identityFromSubjectAltName(cert.subjectAltName);
    if (identity === null) {
      problems.push(`BLOCKX_TLS_CERT_FILE: expected exactly one URI SAN blockx://role/ROLE[/NAME] (ROLE client, admin, coordinator, worker or syncinvoker), got ${JSON.stringify(cert.subjectAltName ?? "")}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ kind: "mtls", caFile, certFile, keyFile, identity: identity! });
}

/** readPem reads and parses one PEM file, or records why not (naming the variable) and returns null. */
export function readPem<T>(name: string, path: string, problems: string[], parse: (text: string) => T): T | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    problems.push(`${name}: expected a readable file, got ${JSON.stringify(path)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    return null;
  }
  try {
    return parse(text);
  } catch (e) {
    problems.push(`${name}: expected PEM, got ${JSON.stringify(path)} (${(e as Error).message})`);
    return null;
  }
}

/** describeTls is the one log line a role writes about its transport at start. */
export function describeTls(s: TlsSetting): string {
  return s.kind === "insecure" ? "plaintext gRPC (BLOCKX_INSECURE=1): no peer is authenticated, every caller is anonymous" : `mTLS as ${identityKey(s.identity)}`;
}

/** compileTlsInto: compileTlsSetting for a loader that gathers every problem before it throws. */
export function compileTlsInto(v: TlsValues, problems: string[]): TlsSetting | null {
  try {
    return compileTlsSetting(v);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
    return null;
  }
}
