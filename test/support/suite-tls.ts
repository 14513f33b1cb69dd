import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import { CertIssuer, type TlsFiles } from "../../src/common/tls/cert-issuer";
import { channelFor, loadedServerCredentials } from "../../src/common/tls/grpc-tls";
import type { PeerRole } from "../../src/common/tls/peer-identity";
import { compileTlsSetting, type TlsSetting } from "../../src/common/tls/tls-setting";

/**
 * The test suite's transport: one private CA per run (made by preload.ts in BLOCKX_TEST_TLS_DIR)
 * and a certificate per role, so that every process test runs under mTLS unless it is about
 * plaintext. Without the directory (a bench run outside `bun test`), plaintext.
 */
export type SuiteRole = "coordinator" | "worker" | "syncinvoker" | "client" | "admin";

/** The suite's client identity: every in-process client and CLI child is this one. */
export const SUITE_CLIENT = "client/test";

const IDENTITIES: Record<SuiteRole, { role: PeerRole; name: string }> = {
  coordinator: { role: "coordinator", name: "test" },
  worker: { role: "worker", name: "test" },
  syncinvoker: { role: "syncinvoker", name: "test" },
  client: { role: "client", name: "test" },
  admin: { role: "admin", name: "test" },
};

/** makeSuiteCerts issues the CA and every role's certificate into `dir` (preload.ts, once per run). */
export function makeSuiteCerts(dir: string): void {
  const issuer = CertIssuer.open(dir, { caName: "blockx-suite-ca", days: 2 });
  for (const [file, id] of Object.entries(IDENTITIES)) issuer.issue(file, id, ["127.0.0.1", "localhost"], 2);
}

/** suiteTls: `role`'s three variables, or null when the run has no suite CA (plaintext). */
export function suiteTls(role: SuiteRole): TlsFiles | null {
  const dir = process.env.BLOCKX_TEST_TLS_DIR;
  if (!dir) return null;
  return { BLOCKX_TLS_CA_FILE: join(dir, "ca.pem"), BLOCKX_TLS_CERT_FILE: join(dir, `${role}.pem`), BLOCKX_TLS_KEY_FILE: join(dir, `${role}.key`) };
}

/** suiteEnv: the transport variables of a process holding `role`'s certificate (BLOCKX_INSECURE=1 without a suite CA). */
export function suiteEnv(role: SuiteRole): Record<string, string> {
  const f = suiteTls(role);
  return f ? { ...f } : { BLOCKX_INSECURE: "1" };
}

const settings = new Map<SuiteRole, TlsSetting>();
/** suiteSetting: `role`'s compiled TLS setting (insecure without a suite CA). */
export function suiteSetting(role: SuiteRole): TlsSetting {
  let s = settings.get(role);
  if (!s) {
    const f = suiteTls(role);
    s = f ? compileTlsSetting({ tlsCaFile: f.BLOCKX_TLS_CA_FILE, tlsCertFile: f.BLOCKX_TLS_CERT_FILE, tlsKeyFile: f.BLOCKX_TLS_KEY_FILE, insecure: "0" }) : { kind: "insecure" };
    settings.set(role, s);
  }
  return s;
}

/** suiteChannel: credentials and options for `as` to dial `target`, a server of one of `expect` roles. */
export function suiteChannel(as: SuiteRole, target: string, expect: readonly PeerRole[]): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  return channelFor(suiteSetting(as), target, expect);
}

/** suiteServerCredentials: what an in-process server of `role` (a test double) listens with, its certificates loaded. */
export function suiteServerCredentials(role: SuiteRole): Promise<grpc.ServerCredentials> {
  return loadedServerCredentials(suiteSetting(role));
}

/** roleOfCommand: whose certificate a `blockx <command>` child holds (the proxy and client commands: the client's). */
export function roleOfCommand(command: string | undefined): SuiteRole {
  switch (command) {
    case "worker":
    case "bundle-worker":
      return "worker";
    case "coordinator":
    case "bundle-coordinator":
      return "coordinator";
    case "syncinvoker":
      return "syncinvoker";
    default:
      return "client";
  }
}
