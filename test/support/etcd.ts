import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");

export function etcdBinary(): string {
  return process.env.BLOCKX_ETCD_BIN ?? join(REPO, ".cache/etcd/root/usr/bin/etcd");
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
  ) {}

  static async start(): Promise<EtcdProcess> {
    const e = new EtcdProcess(await freePort(), await freePort());
    await e.start();
    return e;
  }

  get endpoint(): string {
    return `127.0.0.1:${this.clientPort}`;
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
    const client = `http://127.0.0.1:${this.clientPort}`;
    const peer = `http://127.0.0.1:${this.peerPort}`;
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
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`${client}/health`);
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
