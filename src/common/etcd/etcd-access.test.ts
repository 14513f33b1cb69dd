import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestCa } from "../../../test/support/test-ca";
import { ConfigError } from "../config/env-config";
import { compileEtcdAccess } from "./etcd-access";
import { FOLLOWER_STATUS_PREFIX } from "../../follow/core/follower-status";
import { etcdRolesPlan, FOLLOWER_ROLE, renderEtcdctl } from "./etcd-roles";

const NONE = { etcdTlsCaFile: "", etcdTlsCertFile: "", etcdTlsKeyFile: "", etcdUsername: "", etcdPasswordFile: "", etcdPassword: "" } as const;

function problemsOf(v: Parameters<typeof compileEtcdAccess>[0], endpoints: string[] = ["127.0.0.1:2379"]): string[] {
  try {
    compileEtcdAccess(v, endpoints);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error("expected a ConfigError");
}

describe("compileEtcdAccess", () => {
  const ca = TestCa.create();
  const worker = ca.issueEtcd("etcd-worker", "blockx-worker");
  const tls = { ...NONE, etcdTlsCaFile: worker.ETCD_TLS_CA_FILE, etcdTlsCertFile: worker.ETCD_TLS_CERT_FILE, etcdTlsKeyFile: worker.ETCD_TLS_KEY_FILE };

  test("nothing set is plaintext without a user; a client certificate is the etcd user of its CN", () => {
    expect(compileEtcdAccess(NONE, ["127.0.0.1:2379"])).toEqual({ tls: null, auth: null });
    expect(compileEtcdAccess(tls, ["127.0.0.1:2379"])).toMatchObject({ tls: { caFile: worker.ETCD_TLS_CA_FILE, client: { commonName: "blockx-worker" } }, auth: null });
    expect(compileEtcdAccess({ ...NONE, etcdTlsCaFile: worker.ETCD_TLS_CA_FILE }, ["https://10.0.0.1:2379"])).toMatchObject({ tls: { client: null } });
  });

  test("a half-set TLS configuration names the missing variable", () => {
    expect(problemsOf({ ...tls, etcdTlsKeyFile: "" })[0]).toStartWith("ETCD_TLS_KEY_FILE: expected the private key of ETCD_TLS_CERT_FILE (the etcd TLS configuration is half set)");
    expect(problemsOf({ ...tls, etcdTlsCertFile: "" })[0]).toStartWith("ETCD_TLS_CERT_FILE: expected the client certificate of ETCD_TLS_KEY_FILE");
    expect(problemsOf({ ...tls, etcdTlsCaFile: "" })[0]).toStartWith("ETCD_TLS_CA_FILE: expected the CA of etcd's server certificate when ETCD_TLS_CERT_FILE is set");
    expect(problemsOf({ ...tls, etcdTlsKeyFile: ca.issueEtcd("other", "x").ETCD_TLS_KEY_FILE })[0]).toStartWith("ETCD_TLS_KEY_FILE: expected the private key of ETCD_TLS_CERT_FILE, got another key");
  });

  test("the scheme of the endpoints agrees with the TLS choice", () => {
    expect(problemsOf(tls, ["http://127.0.0.1:2379"])[0]).toStartWith("ETCD_ENDPOINTS: expected https:// or host:port when ETCD_TLS_CA_FILE is set");
    expect(problemsOf(NONE, ["https://127.0.0.1:2379"])[0]).toStartWith("ETCD_TLS_CA_FILE: expected the CA of etcd's server certificate for the https endpoint");
  });

  test("a user needs a password from exactly one place; the file's trailing newline is not part of it", () => {
    const file = join(ca.dir, "pw");
    writeFileSync(file, "s3cret\n");
    expect(compileEtcdAccess({ ...NONE, etcdUsername: "blockx-coordinator", etcdPasswordFile: file }, [])).toEqual({ tls: null, auth: { username: "blockx-coordinator", password: "s3cret" } });
    expect(problemsOf({ ...NONE, etcdUsername: "blockx-coordinator" })[0]).toStartWith("ETCD_PASSWORD_FILE: expected a file holding the password of ETCD_USERNAME=blockx-coordinator");
    expect(problemsOf({ ...NONE, etcdPassword: "x" })[0]).toStartWith("ETCD_USERNAME: expected the etcd user of ETCD_PASSWORD");
    expect(problemsOf({ ...NONE, etcdUsername: "u", etcdPassword: "x", etcdPasswordFile: file })[0]).toStartWith("ETCD_PASSWORD: expected empty when ETCD_PASSWORD_FILE is set");
    expect(problemsOf({ ...NONE, etcdUsername: "u", etcdPasswordFile: "/nonexistent" })[0]).toStartWith('ETCD_PASSWORD_FILE: expected a readable file, got "/nonexistent"');
  });
});

describe("etcdRolesPlan", () => {
  test("only blockx-worker gets the writer role; root comes before auth enable, which is last", () => {
    const text = renderEtcdctl(etcdRolesPlan(["/blockx/prod/lanes/"], (u) => (u === "root" ? "/etc/etcd/root.password" : null)));
    expect(text.split("\n").filter((l) => l.includes("grant-role") && l.endsWith("blockx-registry-writer"))).toEqual(["etcdctl user grant-role blockx-worker blockx-registry-writer"]);
    expect(text).toContain("etcdctl role grant-permission blockx-registry-writer --prefix=true readwrite /blockx/prod/lanes/");
    expect(text).toContain("etcdctl role grant-permission blockx-registry-reader --prefix=true read /blockx/");
    expect(text).toContain(`etcdctl user add root --new-user-password="$(cat /etc/etcd/root.password)"`);
    expect(text).toContain("etcdctl user add blockx-coordinator --no-password");
    expect(text.split("\n").at(-1)).toBe("etcdctl auth enable");
  });

  test("blockx-follower alone gets readwrite on /blockx/followers/ (where blockx follow publishes), and read on /blockx/ like every user", () => {
    const text = renderEtcdctl(etcdRolesPlan(["/blockx/prod/lanes/"], () => null));
    expect(text).toContain(`etcdctl role grant-permission ${FOLLOWER_ROLE} --prefix=true readwrite ${FOLLOWER_STATUS_PREFIX}`);
    expect(text.split("\n").filter((l) => l.includes("grant-role") && l.endsWith(FOLLOWER_ROLE))).toEqual([`etcdctl user grant-role blockx-follower ${FOLLOWER_ROLE}`]);
    expect(text).toContain("etcdctl user grant-role blockx-follower blockx-registry-reader");
    expect(text).not.toContain("etcdctl user grant-role blockx-follower blockx-registry-writer");
  });
});
