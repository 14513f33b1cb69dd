import { enumSchema, envVar, stringSchema, type EnvValues } from "../config/env-config";

/**
 * tlsVars: the transport security of every role and of the SDK and CLI, the same four names
 * everywhere. All three files (mTLS), or BLOCKX_INSECURE=1 (plaintext), and nothing in between.
 */
export const tlsVars = {
  tlsCaFile: envVar("BLOCKX_TLS_CA_FILE", "", "a PEM file path, or empty", "CA certificates every BlockX peer's certificate must chain to (mTLS; re-read when it changes)", stringSchema()),
  tlsCertFile: envVar(
    "BLOCKX_TLS_CERT_FILE",
    "",
    "a PEM file path, or empty",
    "this process's certificate; its URI SAN blockx://role/ROLE[/NAME] is its identity (re-read when it changes)",
    stringSchema(),
  ),
  tlsKeyFile: envVar("BLOCKX_TLS_KEY_FILE", "", "a PEM file path, or empty", "the private key of BLOCKX_TLS_CERT_FILE (re-read when it changes)", stringSchema()),
  insecure: envVar("BLOCKX_INSECURE", "0", "0 or 1", "1: plaintext gRPC, no identities, every caller anonymous (only with no BLOCKX_TLS_* set; warns at start)", enumSchema(["0", "1"] as const)),
};

export type TlsValues = EnvValues<typeof tlsVars>;
