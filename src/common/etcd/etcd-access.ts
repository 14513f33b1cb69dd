import { rememberSecret } from "../config/secret-text";
import { X509Certificate, createPrivateKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "../config/env-config";
import type { Logger } from "../logging/logger";
import { PEM_CERT, readPem } from "../tls/tls-setting";
import type { EtcdAccessValues } from "./etcd-vars";

/** EtcdTls: etcd over TLS, with a client certificate (etcd's user is its CN) or only the CA. */
export interface EtcdTls {
  readonly caFile: string;
  /** Both or neither. */
  readonly client: { readonly certFile: string; readonly keyFile: string; readonly commonName: string } | null;
}

export interface EtcdAuth {
  readonly username: string;
  readonly password: string;
}

/** EtcdAccess: how a process authenticates to etcd, compiled from ETCD_TLS_* and ETCD_USERNAME/ETCD_PASSWORD[_FILE]. */
export interface EtcdAccess {
  readonly tls: EtcdTls | null;
  readonly auth: EtcdAuth | null;
}

/** Plaintext without a user: what a role without ETCD_TLS_* or ETCD_USERNAME uses. */
export const ETCD_PLAINTEXT: EtcdAccess = Object.freeze({ tls: null, auth: null });

/**
 * compileEtcdAccess checks the etcd variables as a whole and reads the files once, so that a
 * half-set or broken configuration exits 2 at start naming the variable: a certificate without
 * its key (or the reverse), a client certificate without the CA, a user without a password (or
 * the reverse), both password variables, an https:// endpoint without the CA or an http:// one
 * with it. Relative paths are taken from the current directory.
 */
export function compileEtcdAccess(v: EtcdAccessValues, endpoints: readonly string[]): EtcdAccess {
  const problems: string[] = [];
  const tls = compileTls(v, problems);
  const auth = compileAuth(v, problems);
  for (const e of endpoints) {
    if (tls !== null && /^http:\/\//i.test(e)) problems.push(`ETCD_ENDPOINTS: expected https:// or host:port when ETCD_TLS_CA_FILE is set, got ${JSON.stringify(e)}`);
    if (tls === null && /^https:\/\//i.test(e) && v.etcdTlsCaFile.trim() === "") {
      problems.push(`ETCD_TLS_CA_FILE: expected the CA of etcd's server certificate for the https endpoint ${JSON.stringify(e)}, got ""`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ tls, auth });
}

/** compileEtcdAccessInto: compileEtcdAccess for a loader that gathers every problem before it throws. */
export function compileEtcdAccessInto(v: EtcdAccessValues, endpoints: readonly string[], problems: string[]): EtcdAccess | null {
  try {
    return compileEtcdAccess(v, endpoints);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push(...e.problems);
    return null;
  }
}

function compileTls(v: EtcdAccessValues, problems: string[]): EtcdTls | null {
  const [ca, cert, key] = [v.etcdTlsCaFile.trim(), v.etcdTlsCertFile.trim(), v.etcdTlsKeyFile.trim()];
  if (ca === "" && cert === "" && key === "") return null;
  const before = problems.length;
  if (cert !== "" && key === "") problems.push(`ETCD_TLS_KEY_FILE: expected the private key of ETCD_TLS_CERT_FILE (the etcd TLS configuration is half set), got ""`);
  if (key !== "" && cert === "") problems.push(`ETCD_TLS_CERT_FILE: expected the client certificate of ETCD_TLS_KEY_FILE (the etcd TLS configuration is half set), got ""`);
  if (ca === "") problems.push(`ETCD_TLS_CA_FILE: expected the CA of etcd's server certificate when ${cert !== "" ? "ETCD_TLS_CERT_FILE" : "ETCD_TLS_KEY_FILE"} is set, got ""`);
  if (problems.length > before) return null;
  const caFile = resolve(ca);
  const cas = readPem("ETCD_TLS_CA_FILE", caFile, problems, (t) => (t.match(PEM_CERT) ?? [t]).map((c) => new X509Certificate(c)));
  if (cert === "") return cas === null ? null : Object.freeze({ caFile, client: null });
  const [certFile, keyFile] = [resolve(cert), resolve(key)];
  const x509 = readPem("ETCD_TLS_CERT_FILE", certFile, problems, (t) => new X509Certificate(t));
  const pkey = readPem("ETCD_TLS_KEY_FILE", keyFile, problems, (t): KeyObject => createPrivateKey(t));
  if (x509 && pkey && !x509.checkPrivateKey(pkey)) problems.push(`ETCD_TLS_KEY_FILE: expected the private key of ETCD_TLS_CERT_FILE, got another key (${keyFile})`);
  const commonName = x509 ? (/^CN=(.+)$/m.exec(x509.subject)?.[1] ?? "") : "";
  if (x509 && commonName === "") problems.push(`ETCD_TLS_CERT_FILE: expected a certificate whose CN is the etcd user name, got subject ${JSON.stringify(x509.subject)}`);
  if (problems.length > before) return null;
  return Object.freeze({ caFile, client: Object.freeze({ certFile, keyFile, commonName }) });
}

function compileAuth(v: EtcdAccessValues, problems: string[]): EtcdAuth | null {
  const username = v.etcdUsername.trim();
  const file = v.etcdPasswordFile.trim();
  const given = file !== "" ? "ETCD_PASSWORD_FILE" : v.etcdPassword !== "" ? "ETCD_PASSWORD" : null;
  if (file !== "" && v.etcdPassword !== "") {
    problems.push(`ETCD_PASSWORD: expected empty when ETCD_PASSWORD_FILE is set (one source of the password), got a value`);
    return null;
  }
  if (username === "" && given === null) return null;
  if (username === "") {
    problems.push(`ETCD_USERNAME: expected the etcd user of ${given}, got ""`);
    return null;
  }
  if (given === null) {
    problems.push(`ETCD_PASSWORD_FILE: expected a file holding the password of ETCD_USERNAME=${username} (or ETCD_PASSWORD), got ""`);
    return null;
  }
  let password = v.etcdPassword;
  if (file !== "") {
    try {
      password = readFileSync(resolve(file), "utf8").replace(/\r?\n$/, "");
    } catch (e) {
      problems.push(`ETCD_PASSWORD_FILE: expected a readable file, got ${JSON.stringify(file)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      return null;
    }
    if (password === "") {
      problems.push(`ETCD_PASSWORD_FILE: expected a password in ${JSON.stringify(file)}, got an empty file`);
      return null;
    }
    rememberSecret("value", password);
  }
  return Object.freeze({ username, password });
}

/** describeEtcdAccess: who this process is to etcd, for the one line it logs at start. */
export function describeEtcdAccess(a: EtcdAccess): string {
  if (a.tls === null && a.auth === null) return "etcd in plaintext without a user (set ETCD_TLS_* and/or ETCD_USERNAME): whoever reaches etcd can read and write the Worker registry";
  const user = a.auth ? `user ${a.auth.username} (password)` : a.tls?.client ? `user ${a.tls.client.commonName} (client certificate CN)` : "no user";
  return `etcd over ${a.tls ? "TLS" : "plaintext (the password crosses the network in clear)"} as ${user}`;
}

/** announceEtcdAccess logs the etcd access once at start: a warning when nothing protects it. */
export function announceEtcdAccess(log: Logger, a: EtcdAccess): void {
  const fields = { etcdTls: a.tls !== null, etcdUser: a.auth?.username ?? a.tls?.client?.commonName ?? "" };
  if (a.tls === null) log.warn(fields, describeEtcdAccess(a));
  else log.info(fields, describeEtcdAccess(a));
}
