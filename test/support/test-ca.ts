import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * TestCa makes a private CA and leaf certificates with Debian's openssl for tests: each leaf has
 * the URI SAN `blockx://role/...` it is asked for and the IP/DNS SANs of this machine's loopback.
 */
export class TestCa {
  private constructor(
    readonly dir: string,
    readonly caFile: string,
    private readonly caKey: string,
  ) {}

  static create(name = "blockx-test-ca", dir = mkdtempSync(join(tmpdir(), "blockx-ca-"))): TestCa {
    mkdirSync(dir, { recursive: true });
    const caFile = join(dir, `${name}.pem`);
    const caKey = join(dir, `${name}.key`);
    run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", caKey, "-out", caFile, "-days", "2", "-subj", `/CN=${name}`]);
    return new TestCa(dir, caFile, caKey);
  }

  /** issue writes NAME.pem and NAME.key for `uri` and returns the three TLS variables of a process holding them. */
  issue(fileName: string, uri: string, hosts: readonly string[] = ["127.0.0.1", "localhost"]): TlsEnv {
    const key = join(this.dir, `${fileName}.key`);
    const csr = join(this.dir, `${fileName}.csr`);
    const cert = join(this.dir, `${fileName}.pem`);
    const ext = join(this.dir, `${fileName}.ext`);
    const sans = [`URI:${uri}`, ...hosts.map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`))];
    writeFileSync(ext, `subjectAltName=${sans.join(",")}\nextendedKeyUsage=serverAuth,clientAuth\n`);
    run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", `/CN=${fileName}`]);
    run(["x509", "-req", "-in", csr, "-CA", this.caFile, "-CAkey", this.caKey, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext]);
    return { BLOCKX_TLS_CA_FILE: this.caFile, BLOCKX_TLS_CERT_FILE: cert, BLOCKX_TLS_KEY_FILE: key };
  }
}

export interface TlsEnv {
  BLOCKX_TLS_CA_FILE: string;
  BLOCKX_TLS_CERT_FILE: string;
  BLOCKX_TLS_KEY_FILE: string;
}

function run(args: string[]): void {
  const r = Bun.spawnSync(["openssl", ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr.toString()}`);
}
