import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { parseWorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import { freeCapacity } from "../../src/coordinator/core/worker-view";
import { loadClientConfig, type ClientConfig } from "../../src/sdk/client-config";
import { BLOCKX_BINARY, BlockxProcess, transportEnv } from "./blockx-process";
import { waitFor } from "./coordinator-client";
import { randomLanePrefix } from "./worker-double";

/**
 * TestCluster starts compiled Coordinators and Workers of one lane (a random registry prefix
 * on the shared test etcd), all writing one table store, and builds the client configuration
 * that points at them. Every process dies in `stop`.
 */
export class TestCluster {
  readonly procs: BlockxProcess[] = [];
  readonly dir = mkdtempSync(join(tmpdir(), "blockx-cluster-"));
  readonly blockPrefix = randomLanePrefix("block");
  readonly bundlePrefix = randomLanePrefix("bundle");
  readonly tableStorePath = join(this.dir, "tables.sqlite");

  /** binary: what every process runs (dist/blockx, or an installed copy); etcd: the shared test etcd unless given. */
  constructor(
    readonly binary = BLOCKX_BINARY,
    readonly etcd = process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
  ) {
    Bun.spawnSync(["chmod", "755", this.dir]);
  }

  spawn(role: string, env: Record<string, string>): BlockxProcess {
    const p = BlockxProcess.spawn([role], { ETCD_ENDPOINTS: this.etcd, BLOCKX_LOG_LEVEL: "info", ...env }, this.binary);
    this.procs.push(p);
    return p;
  }

  /** worker starts a block (or bundle) Worker of this lane and returns it with its address. */
  async worker(env: Record<string, string> = {}, kind: "block" | "bundle" = "block"): Promise<{ proc: BlockxProcess; addr: string }> {
    const proc = this.spawn(kind === "block" ? "worker" : "bundle-worker", {
      WORKER_LISTEN: "127.0.0.1:0",
      WORKER_REGISTRY_PREFIX: kind === "block" ? this.blockPrefix : this.bundlePrefix,
      EXECUTOR_COUNT: "2",
      TABLE_STORE_PATH: this.tableStorePath,
      ...env,
    });
    return { proc, addr: await proc.grpcAddr() };
  }

  /**
   * registered waits until `count` Workers of the lane have put their heartbeat: a Worker prints its
   * address before its first put, so a Coordinator started at once may load a view without it.
   */
  async registered(count: number, kind: "block" | "bundle" = "block"): Promise<void> {
    const etcd = await createEtcdClient({ endpoints: [this.etcd], dialTimeoutMs: 1000 });
    try {
      const prefix = kind === "block" ? this.blockPrefix : this.bundlePrefix;
      await waitFor(() => etcd.getAll().prefix(prefix).keys(), (keys) => keys.length >= count);
    } finally {
      etcd.close();
    }
  }

  /**
   * withFreeCapacity waits until `count` Workers of the lane have put a heartbeat with a free task
   * slot: a Worker's first heartbeat goes out while its executors start and shows none, and a
   * Coordinator that loads it then answers NO_EXECUTABLE_SLOT until the next one.
   */
  async withFreeCapacity(count: number, kind: "block" | "bundle" = "block"): Promise<void> {
    const etcd = await createEtcdClient({ endpoints: [this.etcd], dialTimeoutMs: 1000 });
    try {
      const prefix = kind === "block" ? this.blockPrefix : this.bundlePrefix;
      const free = (values: Record<string, string>) =>
        Object.values(values).filter((raw) => {
          const hb = parseWorkerHeartbeat(raw);
          return hb.ok && freeCapacity(hb.heartbeat) > 0;
        }).length;
      await waitFor(() => etcd.getAll().prefix(prefix).strings(), (values) => free(values) >= count);
    } finally {
      etcd.close();
    }
  }

  async coordinator(env: Record<string, string> = {}, kind: "block" | "bundle" = "block"): Promise<{ proc: BlockxProcess; addr: string }> {
    const proc = this.spawn(kind === "block" ? "coordinator" : "bundle-coordinator", {
      COORDINATOR_LISTEN: "127.0.0.1:0",
      COORDINATOR_REGISTRY_PREFIXES: kind === "block" ? this.blockPrefix : this.bundlePrefix,
      COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: "100",
      // The test machine is shared and often busy: host load must not read as "no capacity".
      COORDINATOR_CPU_RED_LINE: "1",
      COORDINATOR_MEMORY_RED_LINE: "1",
      ...env,
    });
    return { proc, addr: await proc.grpcAddr() };
  }

  /** clientConfig: the SDK's configuration, as `blockx dev` would export it, plus overrides. */
  clientConfig(env: Record<string, string>): ClientConfig {
    return loadClientConfig({ ETCD_ENDPOINTS: this.etcd, TABLE_STORE_PATH: this.tableStorePath, ...transportEnv(env, "client"), ...env });
  }

  async stop(): Promise<void> {
    for (const p of this.procs.reverse()) await p.stop("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}
