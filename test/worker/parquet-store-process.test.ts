/**
 * The Parquet dataset store end to end: compiled bundle Workers sharing one dataset folder
 * (TABLE_STORE_URL=parquet:///...), real etcd and executors, the SDK in this process. What the
 * Workers wrote is read as any engine would, by DuckDB listing the dataset by glob, and checked
 * against values recomputed from the synthetic chain; `blockx table` reads it too.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Task } from "../../src/gen/worker/v1/worker";
import { ParquetTableStore } from "../../src/outputs/stores/parquet-table-store";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BUNDLE_STATS, expectedBlockStats as expected } from "../support/block-stats";
import { BLOCKX_BINARY } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { waitFor } from "../support/coordinator-client";
import { duckRows } from "../support/parquet-dataset-reader";
import { rangeTask } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const table = (name: string): Task["outputs"] => [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: name, recordScopes: false } } }];

/** A Worker's folders on the one host; the dataset is shared. */
function workerEnv(cluster: TestCluster, i: number, url: string): Record<string, string> {
  const home = join(cluster.dir, `worker-${i}`);
  for (const d of ["cache", "functions", "tmp"]) mkdirSync(join(home, d), { recursive: true, mode: 0o755 });
  Bun.spawnSync(["chmod", "-R", "755", home]);
  writeFileSync(join(home, "functions", "bundle_stats.py"), BUNDLE_STATS);
  return { TABLE_STORE_URL: url, TABLE_STORE_PATH: join(home, "unused.sqlite"), BLOCKX_CACHE_DIR: join(home, "cache"), FUNCTIONS_DIR: join(home, "functions"), TMPDIR: join(home, "tmp"), EXECUTOR_COUNT: "2", TASK_MAX_INFLIGHT_CALLS: "16" };
}

/**
 * What DuckDB sees of the table: its rows by block, and its files' scopes, each of which must be
 * in exactly one file with no two overlapping (no partial file: DuckDB reads every file it lists).
 */
async function dataset(url: string, name: string) {
  const files = await duckRows(url, name, "ORDER BY _scope_from", "DISTINCT filename, _scope_from, _scope_to");
  for (let i = 1; i < files.length; i++) expect(Number(files[i]!._scope_from)).toBeGreaterThan(Number(files[i - 1]!._scope_to));
  const rows = (await duckRows(url, name)).map((r) => ({ block: Number(r.block), tx_count: Number(r.tx_count), gas_used: Number(r.gas_used) })).sort((a, b) => a.block - b.block);
  return { files: files.length, rows };
}

describe("Parquet dataset store, compiled Workers", () => {
  test("a 2,000-block backfill (bundles of 25) whose Worker is SIGKILLed mid-commit (its commits staged, waiting on the dataset's writer lock) shows no partial or duplicate scope; the resubmission completes it exactly once; a rerun in bundles of 50 replaces them whole", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const root = join(cluster.dir, "dataset");
    const url = `parquet://${root}`;
    const workers = [await cluster.worker(workerEnv(cluster, 0, url), "bundle"), await cluster.worker(workerEnv(cluster, 1, url), "bundle")];
    const coord = await cluster.coordinator({}, "bundle");
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_BUNDLE_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "10000" }));
    cleanups.push(() => client.close());

    // Hold the dataset's writer lock as another writer would: the Worker's commits encode and
    // fsync their files to _blockx/staging, then wait for the lock, before their commit point.
    const lock = new Database(join(root, "_blockx", "writer.lock"));
    lock.exec("PRAGMA busy_timeout = 30000; BEGIN EXCLUSIVE");
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      lock.exec("ROLLBACK");
      lock.close();
    };
    cleanups.push(release);
    let running = "";
    const run = client.runTask(rangeTask("pq-2000", { name: "bundle_stats" }, 10_000, 11_999, table("pq_stats"), 25), {
      onEvent: (e) => {
        if (e.kind === "submitting" || e.kind === "submitted") running = e.workerAddr;
      },
    });
    const staging = join(root, "_blockx", "staging");
    await waitFor(async () => readdirSync(staging).length, (n) => n > 0 && running !== "", 120_000);
    const killed = running;
    const victim = workers.find((w) => w.addr === killed)!;
    process.kill(victim.proc.proc.pid, "SIGKILL");
    await victim.proc.proc.exited;
    // Killed mid-commit: its staged files are there, none of its rows is visible.
    expect(readdirSync(staging).length).toBeGreaterThan(0);
    expect(await dataset(url, "pq_stats")).toEqual({ files: 0, rows: [] });
    release();

    const first = await run;
    expect({ state: first.state, attempts: first.attempts, first: first.workers[0], error: first.result.firstError?.message }).toEqual({ state: "SUCCEEDED", attempts: 2, first: killed, error: undefined });
    expect(await dataset(url, "pq_stats")).toEqual({ files: 80, rows: expected(10_000, 11_999) });

    // A rerun in bundles of 50: each commit replaces two earlier files at once (a folder exchange).
    const rerun = await client.runTask(rangeTask("pq-2000-50", { name: "bundle_stats" }, 10_000, 11_999, table("pq_stats"), 50), {});
    expect(rerun.state).toBe("SUCCEEDED");
    expect(await dataset(url, "pq_stats")).toEqual({ files: 40, rows: expected(10_000, 11_999) });

    // The store's own reader and `blockx table` agree with DuckDB.
    const reader = new ParquetTableStore(root, { inline: true });
    const mine = (await reader.read("pq_stats", { orderBy: "block" })).map((r) => ({ block: r.block, tx_count: r.tx_count, gas_used: r.gas_used }));
    await reader.close();
    expect(mine).toEqual(expected(10_000, 11_999));
    const out = Bun.spawnSync([BLOCKX_BINARY, "table", "pq_stats", "--json", "--order", "block", "--limit", "3"], { env: { ...process.env, TABLE_STORE_URL: url }, cwd: cluster.dir });
    expect(out.exitCode).toBe(0);
    expect((JSON.parse(out.stdout.toString()) as { block: number }[]).map((r) => r.block)).toEqual([10_000, 10_001, 10_002]);
  }, 300_000);
});
