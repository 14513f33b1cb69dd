import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { identityUri, type PeerIdentity } from "./peer-identity";

/** The three TLS variables of a process holding one issued certificate. */
export interface TlsFiles {
  readonly BLOCKX_TLS_CA_FILE: string;
  readonly BLOCKX_TLS_CERT_FILE: string;
  readonly BLOCKX_TLS_KEY_FILE: string;
}

/** The three etcd TLS variables of a process holding one etcd certificate. */
export interface EtcdTlsFiles {
  readonly ETCD_TLS_CA_FILE: string;
  readonly ETCD_TLS_CERT_FILE: string;
  readonly ETCD_TLS_KEY_FILE: string;
}

/** IP literal or DNS name: the SAN kind a host goes into. */
function sanOf(host: string): string {
  return /^[\d.]+$/.test(host) || host.includes(":") ? `IP:${host}` : `DNS:${host}`;
}

/**
 * CertIssuer makes a private CA and issues BlockX certificates with Debian's `openssl` (P-256
 * keys, keys mode 0600): each leaf carries the URI SAN `blockx://role/ROLE[/NAME]` of its identity
 * and the IP/DNS SANs of the hosts it serves on (a Worker's must cover its advertised address).
 * `blockx certs`, `blockx dev` and the tests use it.
 */
export class CertIssuer {
  private constructor(
    readonly dir: string,
    readonly caFile: string,
    private readonly caKeyFile: string,
  ) {}

  /** open uses the CA in `dir` (ca.pem, ca.key), making one first when there is none. */
  static open(dir: string, opts: { caName?: string; days?: number } = {}): CertIssuer {
    const abs = resolve(dir);
    mkdirSync(abs, { recursive: true, mode: 0o700 });
    const caFile = join(abs, "ca.pem");
    const caKeyFile = join(abs, "ca.key");
    if (!existsSync(caFile) || !existsSync(caKeyFile)) {
      openssl([
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", caKeyFile, "-out", caFile, "-days", String(opts.days ?? 3650), "-subj", `/CN=${opts.caName ?? "blockx-ca"}`,
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
      ]);
      chmodSync(caKeyFile, 0o600);
    }
    return new CertIssuer(abs, caFile, caKeyFile);
  }

  /** issue writes FILE.pem and FILE.key for `id` (valid `days`) and returns the variables that use them. */
  issue(fileName: string, id: PeerIdentity, hosts: readonly string[], days = 825, rawUri?: string): TlsFiles {
    // rawUri: a test's certificate whose URI is not a BlockX identity.
    const { cert, key } = this.sign(fileName, fileName, [`URI:${rawUri ?? identityUri(id)}`, ...hosts.map(sanOf)], days);
    return { BLOCKX_TLS_CA_FILE: this.caFile, BLOCKX_TLS_CERT_FILE: cert, BLOCKX_TLS_KEY_FILE: key };
  }

  /**
   * issueEtcd: a certificate for etcd from the same CA: a client's whose CN is the etcd user name
   * (etcd's --client-cert-auth reads it), and with `hosts` also etcd's own server certificate.
   */
  issueEtcd(fileName: string, commonName: string, hosts: readonly string[] = [], days = 825): EtcdTlsFiles {
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(commonName)) throw new Error(`etcd user ${JSON.stringify(commonName)}: letters, digits, . _ @ - only`);
    const { cert, key } = this.sign(fileName, commonName, hosts.map(sanOf), days);
    return { ETCD_TLS_CA_FILE: this.caFile, ETCD_TLS_CERT_FILE: cert, ETCD_TLS_KEY_FILE: key };
  }

  private sign(fileName: string, commonName: string, sans: readonly string[], days: number): { cert: string; key: string } {
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(fileName)) throw new Error(`certificate file name ${JSON.stringify(fileName)}: letters, digits, . _ - only`);
    const key = join(this.dir, `${fileName}.key`);
    const csr = join(this.dir, `${fileName}.csr`);
    const cert = join(this.dir, `${fileName}.pem`);
    const ext = join(this.dir, `${fileName}.ext`);
    writeFileSync(ext, `${sans.length ? `subjectAltName=${sans.join(",")}\n` : ""}extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=critical,CA:FALSE\n`);
    openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", `/CN=${commonName}`]);
    chmodSync(key, 0o600);
    openssl(["x509", "-req", "-in", csr, "-CA", this.caFile, "-CAkey", this.caKeyFile, "-CAcreateserial", "-out", cert, "-days", String(days), "-extfile", ext]);
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
    return { cert, key };
  }
}

function openssl(args: string[]): void {
  let r;
  try {
    r = Bun.spawnSync(["openssl", ...args], { stdout: "pipe", stderr: "pipe" });
  } catch (e) {
    throw new Error(`openssl is needed to make certificates (Debian: apt-get install openssl): ${(e as Error).message}`);
  }
  if (r.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.toString().trim()}`);
}
