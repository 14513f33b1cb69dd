import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CertIssuer, type EtcdTlsFiles, type TlsFiles } from "../../src/common/tls/cert-issuer";
import { identityFromUri } from "../../src/common/tls/peer-identity";

export type TlsEnv = TlsFiles;

/**
 * TestCa: a private CA for one test file (CertIssuer in a fresh temporary folder); `issue` takes
 * the URI SAN as text so that tests can also make certificates without a valid identity.
 */
export class TestCa {
  /** The folders of every CA made in this run: removed at its end (test/support/preload.ts). */
  private static readonly dirs: string[] = [];

  private constructor(private readonly issuer: CertIssuer) {}

  static create(name = "blockx-test-ca"): TestCa {
    const dir = mkdtempSync(join(tmpdir(), "blockx-ca-"));
    TestCa.dirs.push(dir);
    return new TestCa(CertIssuer.open(dir, { caName: name, days: 2 }));
  }

  /** removeAll removes every CA's folder made so far; processes using its files must have stopped. */
  static removeAll(): void {
    for (const dir of TestCa.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }

  get dir(): string {
    return this.issuer.dir;
  }

  get caFile(): string {
    return this.issuer.caFile;
  }

  /**
   * clusterCerts: one certificate per party of a small mTLS cluster: its Coordinator, Worker w1, the
   * clients alice and bob, the admin root, and the proxy gw.
   */
  clusterCerts() {
    return {
      coordinator: this.issue("coordinator", "blockx://role/coordinator"),
      worker: this.issue("worker", "blockx://role/worker/w1"),
      alice: this.issue("alice", "blockx://role/client/alice"),
      bob: this.issue("bob", "blockx://role/client/bob"),
      root: this.issue("root", "blockx://role/admin/root"),
      proxy: this.issue("proxy", "blockx://role/proxy/gw"),
    };
  }

  /** issue: a certificate for `uri` (a blockx://role/ URI; anything else gets a URI SAN without a role). */
  issue(fileName: string, uri: string, hosts: readonly string[] = ["127.0.0.1", "localhost"]): TlsEnv {
    const id = identityFromUri(uri);
    return this.issuer.issue(fileName, id ?? { role: "client", name: "x" }, hosts, 2, id ? undefined : uri);
  }

  /** issueEtcd: an etcd certificate with CN `user` (the etcd user); with hosts also etcd's server certificate. */
  issueEtcd(fileName: string, user: string, hosts: readonly string[] = []): EtcdTlsFiles {
    return this.issuer.issueEtcd(fileName, user, hosts, 2);
  }
}
