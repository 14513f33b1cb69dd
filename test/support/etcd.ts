import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { etcdFetch } from "../../src/common/etcd/etcd-http";
import type { EtcdTls } from "../../src/common/etcd/etcd-access";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");

export function etcdBinary(): string {
  return process.env.BLOCKX_ETCD_BIN ?? join(REPO, ".cache/etcd/root/usr/bin/etcd");
}

/**
 * EtcdSecurity: etcd serving TLS with its own certificate; with clientCertAuth every client needs a
 * certificate from caFile (etcd's --client-cert-auth: the etcd user is its CN). `probe` is the
 * client certificate the readiness check presents.
 */
export interface EtcdSecurity {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCertAuth: boolean;
  readonly probe: { readonly certFile: string; readonly keyFile: string };
}

/**
 * EtcdProcess is a real etcd on loopback for one test (or, from preload.ts, for the whole
 * run). It is spawned through `setpriv --pdeathsig KILL` so it dies with the test process.
 * stop()/start() keep the data dir, so a restart keeps the registry (an etcd outage).
 */
export class EtcdProcess {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  readonly dataDir = mkdtempSync(join(tmpdir(), "blockx-etcd-"));

  private constructor(
    readonly clientPort: number,
    readonly peerPort: number,
    readonly security: EtcdSecurity | null,
  ) {}

  /** start: a plaintext etcd, or with `security` one over TLS (and client certificates). */
  static async start(security: EtcdSecurity | null = null): Promise<EtcdProcess> {
    const e = new EtcdProcess(await freePort(), await freePort(), security);
    await e.start();
    return e;
  }

  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
  }

  /** The readiness probe's view of etcd's TLS (null: plaintext). */
  private get probeTls(): EtcdTls | null {
    const s = this.security;
    return s ? { caFile: s.caFile, client: { certFile: s.probe.certFile, keyFile: s.probe.keyFile, commonName: "" } } : null;
  }

  /** pid of the running etcd (setpriv execs it, so this is etcd itself); undefined while stopped. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get running(): boolean {
    return this.proc !== undefined;
  }

  async start(): Promise<void> {
    if (this.proc) return;
    const s = this.security;
    const client = `${s ? "https" : "http"}://127.0.0.1:${this.clientPort}`;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const tlsFlags = s ? [`--cert-file=${s.certFile}`, `--key-file=${s.keyFile}`, `--trusted-ca-file=${s.caFile}`, ...(s.clientCertAuth ? ["--client-cert-auth"] : [])] : [];
    this.proc = Bun.spawn(
      [
        "setpriv",
        "--pdeathsig",
        "KILL",
        "--",
        etcdBinary(),
        "--name=test",
        `--data-dir=${this.dataDir}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=test=${peer}`,
        "--logger=zap",
        "--log-level=error",
        ...tlsFlags,
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      try {
        const res = await etcdFetch(this.endpoint, "/health", this.probeTls, 1_000);
        if (res.ok && ((await res.json()) as { health?: string }).health === "true") return;
      } catch {
        // not up yet
      }
      if (this.proc.exitCode !== null) throw new Error(`etcd exited with ${this.proc.exitCode} (binary ${etcdBinary()})`);
      await Bun.sleep(25);
    }
    throw new Error("etcd did not become healthy within 15 s");
  }

  /** stop kills etcd (SIGKILL: an outage, not a clean shutdown) and waits for it to exit. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = undefined;
    p.kill("SIGKILL");
    await p.exited;
  }

  /**
   * wipeData empties the data dir of a stopped etcd: the next start() is a fresh etcd with no
   * keys and no leases, as if every lease had expired (and the registry been lost) meanwhile.
   */
  wipeData(): void {
    if (this.proc) throw new Error("wipeData: stop etcd first");
    rmSync(this.dataDir, { recursive: true, force: true });
    mkdirSync(this.dataDir, { mode: 0o700 });
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
