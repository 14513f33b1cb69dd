import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestCa } from "../../../test/support/test-ca";
import { ConfigError } from "../config/env-config";
import { compileTlsSetting } from "./tls-setting";

const NONE = { tlsCaFile: "", tlsCertFile: "", tlsKeyFile: "", insecure: "0" } as const;

function problemsOf(v: Parameters<typeof compileTlsSetting>[0]): string[] {
  try {
    compileTlsSetting(v);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("compileTlsSetting", () => {
  const ca = TestCa.create();
  const alice = ca.issue("alice", "blockx://role/client/alice");
  const files = { tlsCaFile: alice.BLOCKX_TLS_CA_FILE, tlsCertFile: alice.BLOCKX_TLS_CERT_FILE, tlsKeyFile: alice.BLOCKX_TLS_KEY_FILE, insecure: "0" } as const;

  test("all three files give mTLS with the identity of the certificate", () => {
    expect(compileTlsSetting(files)).toMatchObject({ kind: "mtls", identity: { role: "client", name: "alice" }, certFile: files.tlsCertFile });
  });

  test("nothing chosen is an error naming the variables; BLOCKX_INSECURE=1 alone is plaintext", () => {
    expect(problemsOf(NONE)[0]).toStartWith("BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE, BLOCKX_TLS_KEY_FILE: expected all three (mTLS), or BLOCKX_INSECURE=1");
    expect(compileTlsSetting({ ...NONE, insecure: "1" })).toEqual({ kind: "insecure" });
  });

  test("a half-set configuration names each missing variable", () => {
    const problems = problemsOf({ ...NONE, tlsCertFile: files.tlsCertFile });
    expect(problems.map((p) => p.split(":")[0])).toEqual(["BLOCKX_TLS_CA_FILE", "BLOCKX_TLS_KEY_FILE"]);
    // One missing of three is as half set as two.
    expect(problemsOf({ ...files, tlsKeyFile: "" })).toEqual([
      'BLOCKX_TLS_KEY_FILE: expected a PEM file path (the TLS configuration is half set: BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE given), got ""',
    ]);
  });

  test("BLOCKX_INSECURE=1 beside certificates is a contradiction, not a choice", () => {
    expect(problemsOf({ ...files, insecure: "1" })[0]).toStartWith("BLOCKX_INSECURE: expected 0 when");
  });

  test("unreadable, non-PEM, mismatched or foreign files and a certificate without a blockx identity are refused at start", () => {
    const other = TestCa.create("other-ca");
    const bob = other.issue("bob", "blockx://role/client/bob");
    const plain = ca.issue("plain", "spiffe://example/x");
    const junk = join(ca.dir, "junk.pem");
    writeFileSync(junk, "not pem");
    expect(problemsOf({ ...files, tlsCaFile: "/nonexistent/ca.pem" })[0]).toStartWith('BLOCKX_TLS_CA_FILE: expected a readable file, got "/nonexistent/ca.pem"');
    expect(problemsOf({ ...files, tlsCertFile: junk })[0]).toStartWith("BLOCKX_TLS_CERT_FILE: expected PEM");
    expect(problemsOf({ ...files, tlsKeyFile: bob.BLOCKX_TLS_KEY_FILE })[0]).toStartWith("BLOCKX_TLS_KEY_FILE: expected the private key of BLOCKX_TLS_CERT_FILE");
    expect(problemsOf({ ...files, tlsCertFile: bob.BLOCKX_TLS_CERT_FILE, tlsKeyFile: bob.BLOCKX_TLS_KEY_FILE })[0]).toStartWith(
      "BLOCKX_TLS_CERT_FILE: expected a certificate issued by a certificate of BLOCKX_TLS_CA_FILE",
    );
    expect(problemsOf({ ...files, tlsCertFile: plain.BLOCKX_TLS_CERT_FILE, tlsKeyFile: plain.BLOCKX_TLS_KEY_FILE })[0]).toStartWith(
      "BLOCKX_TLS_CERT_FILE: expected exactly one URI SAN blockx://role/ROLE[/NAME]",
    );
  });
});
