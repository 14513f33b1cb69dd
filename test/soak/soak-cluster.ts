import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadClientConfig, type ClientConfig } from "../../src/sdk/client-config";
import type { SoakStoreKind } from "./fault-schedule";
import { SOAK_CHAIN } from "./checker";
import type { PrivatePostgres } from "../../src/dev/adapters/private-postgres";
import { BlockxProcess, type LogLine } from "../support/blockx-process";
import { EtcdProcess } from "../support/etcd";
import { FaultRelay } from "../support/fault-relay";
import type { Thresholds } from "./fault-schedule";
import { freshDatabase, startPostgres } from "../support/postgres";
import { freePort } from "../support/ports";
import { randomLanePrefix } from "../support/worker-double";
import { suiteEnv } from "../support/suite-tls";

/**
 * The soak cluster's thresholds, low so that short faults cross them: the SDK gives up on a silent
 * Worker after 2 s (it notices the silence after a quiet second, so a Worker is given up about 3 s
 * into a pause, and its tasks are rerun elsewhere within the pause past its patience); a Worker's
 * lease (its etcd registration and its table-store epoch, HEARTBEAT_LEASE_TTL_S) 9 s, so that a
 * Worker paused past the client's patience comes back with its lease and its run (issue 48's case
 * 2: only the fence stops its late commits), as with the defaults (3 s against 10 s); the store's statement timeout 2 s, and a Worker gives up
 * on a silent store call 1 s after that (TABLE_STORE_DEADLINE_MARGIN_MS).
 */
export const SOAK_THRESHOLDS: Thresholds = { leaseMs: 9_000, lostAfterMs: 2_000, statementMs: 2_000, deadlineMs: 3_000 };

/** The Worker variables that set SOAK_THRESHOLDS (and the idle-in-transaction bound below the statement timeout). */
const THRESHOLD_ENV: Record<string, string> = {
  HEARTBEAT_LEASE_TTL_S: String(SOAK_THRESHOLDS.leaseMs / 1000),
  TABLE_STORE_STATEMENT_TIMEOUT_MS: String(SOAK_THRESHOLDS.statementMs),
  TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(SOAK_THRESHOLDS.statementMs - 500),
  TABLE_STORE_DEADLINE_MARGIN_MS: String(SOAK_THRESHOLDS.deadlineMs - SOAK_THRESHOLDS.statementMs),
  TABLE_STORE_RECONNECT_MAX_MS: "1000",
};

/**
 * Links: how a Worker host reaches the rest, each a TCP fault relay (test/support/fault-relay.ts)
 * the fault driver can partition, blackhole, sever or make lose an answer: `clients` carries its
 * clients' and the Coordinators' calls (the Worker advertises the relay's address), `etcd` its
 * registry, `store` its Postgres connections (none with SQLite: a file on its own host).
 */
export interface Links {
  readonly clients: FaultRelay;
  readonly etcd: FaultRelay;
  readonly store: FaultRelay | undefined;
}

/**
 * Member: one restartable process of the cluster. It keeps its address (the same port after a
 * restart) and remembers every pid it had, so the RSS sampler can report each incarnation. A
 * Worker is reached through its links (`addr` is its client relay's).
 */
export class Member {
  proc: BlockxProcess | undefined;
  restarts = 0;
  /** Log lines of the incarnations killed so far (the soak's report counts what every incarnation logged). */
  readonly earlierLines: LogLine[][] = [];

  constructor(
    readonly name: string,
    readonly role: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    readonly links?: Links,
  ) {}

  get addr(): string {
    return this.links ? this.links.clients.addr : `127.0.0.1:${this.port}`;
  }

  /** Every log line of every incarnation, oldest first. */
  allLines(): LogLine[] {
    return [...this.earlierLines.flat(), ...(this.proc?.lines ?? [])];
  }

  get pid(): number | undefined {
    return this.proc && this.proc.proc.exitCode === null ? this.proc.proc.pid : undefined;
  }

  /**
   * Exits no fault caused (a crash): the process, its exit code and the end of its stderr. The soak
   * fails on any (a dead Worker would otherwise just leave the cluster smaller).
   */
  readonly crashes: string[] = [];

  async start(): Promise<void> {
    // A session of its own, as on a host of its own: the soak SIGSTOPs Workers (see BlockxProcess.spawn).
    const proc = BlockxProcess.spawn([this.role], this.env, undefined, { ownSession: true });
    this.proc = proc;
    void proc.exited.then((code) => {
      if (this.proc === proc) this.crashes.push(`${this.name} exited on its own with ${code}${proc.proc.signalCode ? ` (${proc.proc.signalCode})` : ""}; stderr: ${proc.stderr.slice(-1_500)}; last lines: ${proc.lines.slice(-5).map((l) => JSON.stringify(l).slice(0, 300)).join(" | ")}`);
    });
    // A Worker serves once its executors are up: on a 2-core box loaded by other runs, three
    // Workers' six executors (Python, each its own fresh cache folder with Postgres) took over 20 s.
    await this.proc.grpcAddr(60_000);
  }

  /** kill: SIGKILL, no drain (a crash), and wait until the process is gone. */
  async kill(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (p) {
      await p.stop("SIGKILL");
      this.earlierLines.push(p.lines);
    }
  }

  async restart(): Promise<void> {
    await this.kill();
    this.restarts++;
    await this.start();
  }
}

/**
 * SoakStore: where the Workers' rows go. `sqlite`: one host, every Worker sharing one file.
 * `parquet`: one host, every Worker sharing one Parquet dataset folder (TABLE_STORE_URL=parquet://).
 * `postgres`: every Worker a host of its own (its own state, cache, functions and temporary
 * folders, nothing shared on disk) writing one Postgres: the run's (BLOCKX_TEST_POSTGRES_URL, a
 * fresh database) under `make test`, else a private server started for the soak.
 */
export type SoakStore = SoakStoreKind;

export interface SoakClusterOptions {
  readonly store: SoakStore;
  readonly workers: number;
  readonly coordinators: number;
  readonly executorsPerWorker: number;
  readonly taskSlots: number;
  readonly workerEnv: Record<string, string>;
  /**
   * Chains the Workers read beside the soak's synthetic one (`make soak REORGS=1`: anvil), by name,
   * each a CHAINS_CONFIG entry; the soak's chain stays the local test chain. Absent: no CHAINS_CONFIG.
   */
  readonly chains?: Record<string, unknown>;
}

/**
 * SoakCluster: a private etcd, block Coordinators and Workers on fixed loopback ports (so a
 * restarted process comes back at the same address), one table store (see SoakStore), one backend
 * faults file every Worker reads. Everything dies in `stop`.
 */
export class SoakCluster {
  readonly dir = mkdtempSync(join(tmpdir(), "blockx-soak-"));
  /** The table store the checker reads: the SQLite file, the Parquet dataset's parquet:// URL, or the Postgres database's URL. */
  tableStore = join(this.dir, "tables.sqlite");
  /** The soak's own Postgres, when it started one (stopped with the cluster). */
  private postgres: PrivatePostgres | undefined;
  readonly faultsPath = join(this.dir, "backend-faults.json");
  readonly prefix = randomLanePrefix("block");
  readonly workers: Member[] = [];
  readonly coordinators: Member[] = [];
  /** Every Worker's links, closed with the cluster. */
  private readonly relays: FaultRelay[] = [];

  private constructor(readonly etcd: EtcdProcess) {
    Bun.spawnSync(["chmod", "755", this.dir]);
  }

  static async start(o: SoakClusterOptions): Promise<SoakCluster> {
    const c = new SoakCluster(await EtcdProcess.start());
    try {
      c.setBackendFaults({ latencyMs: 0, errorRate: 0 });
      if (o.store === "postgres") c.tableStore = await c.startPostgres();
      if (o.store === "parquet") c.tableStore = `parquet://${join(c.dir, "dataset")}`;
      const common = { ETCD_ENDPOINTS: c.etcd.endpoint, BLOCKX_LOG_LEVEL: "info" };
      for (let i = 0; i < o.workers; i++) {
        const port = await freePort();
        // Every Worker a host of its own on the network: its clients, etcd and Postgres reached through relays.
        const links = await c.linksFor(port, o.store);
        const store = o.store === "postgres" ? c.hostFolders(`host-${i + 1}`, links.store!) : o.store === "parquet" ? { TABLE_STORE_URL: c.tableStore } : { TABLE_STORE_PATH: c.tableStore };
        c.workers.push(
          new Member(
            `worker-${i + 1}`,
            "worker",
            port,
            {
              ...common,
              ETCD_ENDPOINTS: links.etcd.addr,
              WORKER_LISTEN: `127.0.0.1:${port}`,
              WORKER_ADVERTISE_ADDR: links.clients.addr,
              WORKER_REGISTRY_PREFIX: c.prefix,
              EXECUTOR_COUNT: String(o.executorsPerWorker),
              TASK_SLOTS: String(o.taskSlots),
              ...store,
              ...THRESHOLD_ENV,
              LOCALTESTSERVICE_FAULTS_FILE: c.faultsPath,
              // Backend errors and killed executors are retried by the Worker; a few more tries than
              // the default ride out a degraded backend without failing the whole task.
              CALL_MAX_ATTEMPTS: "8",
              ...(o.chains ? { CHAINS_CONFIG: JSON.stringify({ chains: { [SOAK_CHAIN]: { source: "localtestservice" }, ...o.chains } }) } : {}),
              ...o.workerEnv,
            },
            links,
          ),
        );
      }
      for (let i = 0; i < o.coordinators; i++) {
        const port = await freePort();
        c.coordinators.push(
          new Member(`coordinator-${i + 1}`, "coordinator", port, {
            ...common,
            COORDINATOR_LISTEN: `127.0.0.1:${port}`,
            COORDINATOR_REGISTRY_PREFIXES: c.prefix,
            COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: "200",
            // Every Worker here reports the same host's CPU, which the soak itself (and whatever
            // else runs on this box) keeps near 100%: the red line would refuse every Worker.
            COORDINATOR_CPU_RED_LINE: "1",
          }),
        );
      }
      await Promise.all([...c.workers, ...c.coordinators].map((m) => m.start()));
      return c;
    } catch (e) {
      await c.stop();
      throw e;
    }
  }

  /** startPostgres: a fresh database on the test run's Postgres, or on a private server of the soak's own. */
  private async startPostgres(): Promise<string> {
    if (process.env.BLOCKX_TEST_POSTGRES_URL) return freshDatabase();
    this.postgres = await startPostgres();
    return this.postgres.createDatabase("soak");
  }

  /** linksFor: a Worker's relays (to it, from it to etcd, and to Postgres), kept across its restarts. */
  private async linksFor(port: number, store: SoakStore): Promise<Links> {
    const pg = store === "postgres" ? new URL(this.tableStore) : undefined;
    const links: Links = {
      clients: await FaultRelay.start(`127.0.0.1:${port}`),
      etcd: await FaultRelay.start(this.etcd.endpoint),
      store: pg ? await FaultRelay.start(`${pg.hostname}:${pg.port}`) : undefined,
    };
    this.relays.push(...[links.clients, links.etcd, links.store].filter((r): r is FaultRelay => r !== undefined));
    return links;
  }

  /**
   * hostFolders: a Worker's environment as if it ran on a host of its own: its state (an unused
   * SQLite path), cache, functions and temporary folders under <dir>/<host>, and the shared
   * Postgres as its table store, reached through the host's store relay. The soak's functions are
   * inline: they travel with each task.
   */
  private hostFolders(host: string, storeRelay: FaultRelay): Record<string, string> {
    const home = join(this.dir, host);
    for (const d of ["state", "cache", "functions", "tmp"]) mkdirSync(join(home, d), { recursive: true, mode: 0o755 });
    Bun.spawnSync(["chmod", "-R", "755", home]); // executors may run as another user
    return {
      TABLE_STORE_URL: viaRelay(this.tableStore, storeRelay),
      TABLE_STORE_PATH: join(home, "state", "unused.sqlite"),
      BLOCKX_CACHE_DIR: join(home, "cache"),
      FUNCTIONS_DIR: join(home, "functions"),
      TMPDIR: join(home, "tmp"),
    };
  }

  /** setBackendFaults rewrites the file the Workers' local test chain re-reads every 200 ms. */
  setBackendFaults(f: { latencyMs: number; errorRate: number }): void {
    const tmp = `${this.faultsPath}.tmp`;
    writeFileSync(tmp, JSON.stringify(f));
    Bun.spawnSync(["mv", tmp, this.faultsPath]);
  }

  /** clientConfig: the SDK pointed at both Coordinators, patient enough to ride out the faults. */
  clientConfig(): ClientConfig {
    return loadClientConfig({
      ...suiteEnv("client"), // the roles it starts hold the suite's role certificates (BlockxProcess.spawn's default)
      BLOCKX_COORDINATOR_ADDRS: this.coordinators.map((m) => m.addr).join(","),
      ETCD_ENDPOINTS: this.etcd.endpoint,
      ...(this.tableStore.startsWith("postgres") ? { TABLE_STORE_URL: this.tableStore } : { TABLE_STORE_PATH: this.tableStore }),
      BLOCKX_WORKER_LOST_AFTER_MS: String(SOAK_THRESHOLDS.lostAfterMs),
      BLOCKX_RPC_TIMEOUT_MS: "5000",
      BLOCKX_MAX_ATTEMPTS: "20",
    });
  }

  async stop(): Promise<void> {
    await Promise.all([...this.workers, ...this.coordinators].map((m) => m.kill()));
    await Promise.all(this.relays.map((r) => r.close()));
    await this.etcd.destroy();
    await this.postgres?.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** viaRelay: a Postgres URL with its host and port replaced by the relay's. */
function viaRelay(url: string, relay: FaultRelay): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(relay.port);
  return u.toString();
}
