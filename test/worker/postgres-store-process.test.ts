/**
 * The Postgres table store end to end: compiled Workers on their own "hosts" (each its own
 * folders: state, executor cache, FUNCTIONS_DIR; no shared file), one private Postgres, the SDK in
 * this process. Rows are checked with plain SQL against values recomputed from the synthetic chain.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Etcd3 } from "etcd3";
import { integerDigits, isExactInt } from "../../src/common/json/exact-json";
import type { Task } from "../../src/gen/worker/v1/worker";
import { rangeTask } from "../support/worker-client";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BLOCK_STATS, BUNDLE_STATS, expectedBlockStats as expected } from "../support/block-stats";
import { BLOCKX_BINARY } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { freshDatabase, startPostgres } from "../support/postgres";
import { rawRows } from "../support/raw-table-reader";
import { waitFor } from "../support/coordinator-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const table = (name: string): Task["outputs"] => [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: name, recordScopes: false } } }];

/** A Worker "host": its own folders (nothing shared with the others but the Postgres URL). */
function hostEnv(cluster: TestCluster, i: number, url: string, extra: Record<string, string> = {}): Record<string, string> {
  const home = join(cluster.dir, `host-${i}`);
  for (const d of ["cache", "functions", "tmp"]) mkdirSync(join(home, d), { recursive: true, mode: 0o755 });
  Bun.spawnSync(["chmod", "-R", "755", home]);
  writeFileSync(join(home, "functions", "block_stats.py"), BLOCK_STATS);
  writeFileSync(join(home, "functions", "bundle_stats.py"), BUNDLE_STATS);
  return { TABLE_STORE_URL: url, TABLE_STORE_PATH: join(home, "unused.sqlite"), BLOCKX_CACHE_DIR: join(home, "cache"), FUNCTIONS_DIR: join(home, "functions"), TMPDIR: join(home, "tmp"), ...extra };
}

async function pgRows(url: string, name: string) {
  // Sorted here: the raw reader gives NUMERIC as text, which SQL would order as text.
  return (await rawRows(url, name)).map((r) => ({ block: Number(r.block), tx_count: Number(r.tx_count), gas_used: Number(r.gas_used) })).sort((a, b) => a.block - b.block);
}

describe("Postgres table store across hosts", () => {
  test("three bundle Workers as three hosts, one Postgres: a 5,000-block backfill (bundles of 25) whose Worker is SIGKILLed once its first rows land is resubmitted to another; one row set per block, as the chain gives", async () => {
    const url = await freshDatabase();
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const workers: Awaited<ReturnType<TestCluster["worker"]>>[] = [];
    // 16 calls in flight per task (not the default 1,024): each call reads its 25 blocks one after another
    // from the synthetic chain's one generator thread, and with all 200 calls in flight each waited
    // behind all the others' reads, past the 5 s call budget, on a host this busy.
    for (let i = 0; i < 3; i++) workers.push(await cluster.worker(hostEnv(cluster, i, url, { EXECUTOR_COUNT: "2", TASK_MAX_INFLIGHT_CALLS: "16" }), "bundle"));
    const coord = await cluster.coordinator({}, "bundle");
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_BUNDLE_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "10000" }));
    cleanups.push(() => client.close());
    let running = "";
    let killed = "";
    const run = await client.runTask(rangeTask("hosts-5000", { name: "bundle_stats" }, 10_000, 14_999, table("host_stats"), 25), {
      onEvent: (e) => {
        if (e.kind === "submitting" || e.kind === "submitted") running = e.workerAddr; // submitting: a short task's waiting SubmitTask answers only at its end
      },
      onProgress: (p) => {
        // At its first rows: the bundles' blocks are generated in parallel (seconds), then their commits land
        // within a fraction of a second as a few group commits, so the progress goes 0, 1, 200.
        if (!killed && running && p.done >= 1 && p.done < p.total) {
          killed = running;
          process.kill(workers.find((w) => w.addr === running)!.proc.proc.pid, "SIGKILL");
        }
      },
    });
    expect(killed).not.toBe("");
    expect({ state: run.state, attempts: run.attempts, first: run.workers[0], error: run.result.firstError?.message }).toEqual({ state: "SUCCEEDED", attempts: 2, first: killed, error: undefined });
    expect(run.workers[1]).not.toBe(killed);
    expect(await pgRows(url, "host_stats")).toEqual(expected(10_000, 14_999));
  }, 240_000);

  test("exact numbers: 2^255+1 and -(2^63)-1 from Python reach the table, GetTaskResult, the SDK and `blockx table` digit for digit", async () => {
    const url = await freshDatabase();
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    await cluster.worker(hostEnv(cluster, 0, url));
    const coord = await cluster.coordinator();
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr }));
    cleanups.push(() => client.close());
    const src = "def main(ctx, input):\n    n = input['blockNumber']\n    return [{'block': n, 'wei': 2**255 + 1, 'neg': -(2**63) - 1, 'doc': {'v': 2**255 + n}}]\n";
    const run = await client.runTask(rangeTask("exact-1", { source: src }, 1, 2, [...table("wei"), { handler: { $case: "returnValue", returnValue: {} } }]));
    expect(run.state).toBe("SUCCEEDED");
    const BIG = (2n ** 255n + 1n).toString();
    const NEG = (-(2n ** 63n) - 1n).toString();
    // The SDK: exact values (JSON.stringify writes their digits).
    const first = (run.returnValues[0] as Record<string, unknown>[])[0]!;
    expect(isExactInt(first.wei) && integerDigits(first.wei as never)).toBe(BIG);
    expect(JSON.stringify(run.returnValues[1])).toBe(`[{"block":2,"wei":${BIG},"neg":${NEG},"doc":{"v":${(2n ** 255n + 2n).toString()}}}]`);
    // GetTaskResult's bytes as they travel.
    expect(run.result.returnValues[0]!.toString("utf8")).toContain(BIG);
    // Plain SQL: NUMERIC(78,0) holds the digits.
    const raw = await rawRows(url, "wei", "ORDER BY block");
    expect(raw.map((r) => [r.wei, r.neg])).toEqual([
      [BIG, NEG],
      [BIG, NEG],
    ]);
    // `blockx table` reads the same store from TABLE_STORE_URL.
    const out = Bun.spawnSync([BLOCKX_BINARY, "table", "wei", "--json", "--order", "block"], { env: { ...process.env, TABLE_STORE_URL: url }, cwd: cluster.dir });
    expect(out.stderr.toString()).toBe("");
    // The synthetic chain never reorganises: its rows record no block hash (null).
    expect(out.stdout.toString().trim()).toBe(
      `[{"block":1,"wei":${BIG},"neg":${NEG},"doc":{"v":${(2n ** 255n + 1n).toString()}},"_chain":"ethereum","_scope_from":1,"_scope_to":1,"_block_hash":null},{"block":2,"wei":${BIG},"neg":${NEG},"doc":{"v":${(2n ** 255n + 2n).toString()}},"_chain":"ethereum","_scope_from":2,"_scope_to":2,"_block_hash":null}]`,
    );
  }, 120_000);

  test("a table store that refuses the Worker stops it before it registers, naming the variable and never the password (a database that does not exist; a file that cannot be opened)", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const good = new URL(await freshDatabase());
    const wrong = new URL(good);
    wrong.pathname = "/no_such_database";
    wrong.password = "s3cret-pw";
    const pg = cluster.spawn("worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: cluster.blockPrefix, EXECUTOR_COUNT: "1", TABLE_STORE_URL: wrong.toString() });
    expect(await pg.exited).toBe(2);
    expect(pg.stderr).toContain(`TABLE_STORE_URL (postgres://${wrong.username}:***@${wrong.host}/no_such_database): the table store cannot be used:`);
    expect(pg.stderr).toContain("no_such_database");
    expect(pg.stderr + JSON.stringify(pg.lines)).not.toContain("s3cret-pw");
    expect(pg.lines.some((l) => l.msg === "grpc listening")).toBe(false); // never registered or served
    const file = cluster.spawn("worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: cluster.blockPrefix, EXECUTOR_COUNT: "1", TABLE_STORE_PATH: join(cluster.dir, "no-such-folder", "tables.sqlite") });
    expect(await file.exited).toBe(2);
    expect(file.stderr).toContain(`TABLE_STORE_PATH (${join(cluster.dir, "no-such-folder", "tables.sqlite")}): the table store cannot be used:`);
  }, 60_000);

  test("a SQLite file another process holds locked when the Worker starts is not a configuration error: the Worker starts, unhealthy, and opens its epoch once the lock goes (the short soak saw a restarted Worker exit 2 here)", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const path = join(cluster.dir, "busy.sqlite");
    const { Database } = await import("bun:sqlite");
    const holder = new Database(path, { create: true });
    holder.exec("PRAGMA journal_mode=WAL");
    holder.exec("CREATE TABLE IF NOT EXISTS hold (x INTEGER)");
    holder.exec("BEGIN EXCLUSIVE");
    holder.exec("INSERT INTO hold VALUES (1)");
    const w = cluster.spawn("worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: cluster.blockPrefix, EXECUTOR_COUNT: "1", TABLE_STORE_PATH: path, TABLE_STORE_STATEMENT_TIMEOUT_MS: "300", HEARTBEAT_LEASE_TTL_S: "3" });
    try {
      await w.grpcAddr(); // it serves: not stopped as a configuration error
      expect(w.lines.some((l) => String(l.msg).startsWith("table store unreachable") && String(l.reason).includes("locked"))).toBe(true);
      holder.exec("COMMIT");
      await w.waitForLog((l) => String(l.msg).startsWith("table store reachable again") || String(l.msg).startsWith("table store reached"), 30_000);
    } finally {
      holder.close();
    }
  }, 60_000);

  for (const kind of ["postgres", "sqlite"] as const) {
    test(`a ${kind} table lock held longer than the executor ping timeout and the heartbeat lease: heartbeats go on, no executor is killed as hung, the rows land once it is released`, async () => {
      const cluster = new TestCluster();
      cleanups.push(() => cluster.stop());
      const url = kind === "postgres" ? await freshDatabase() : "";
      const sqlite = join(cluster.dir, "locked.sqlite");
      const env = kind === "postgres" ? hostEnv(cluster, 0, url) : { TABLE_STORE_PATH: sqlite, TABLE_STORE_STATEMENT_TIMEOUT_MS: "120000" };
      const w = await cluster.worker({ ...env, EXECUTOR_PING_INTERVAL_MS: "200", EXECUTOR_PING_TIMEOUT_MS: "3000", HEARTBEAT_INTERVAL_MS: "200", HEARTBEAT_LEASE_TTL_S: "3" });
      const coord = await cluster.coordinator();
      const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "60000" }));
      cleanups.push(() => client.close());
      const first = await client.runTask(rangeTask("lock-0", { source: BLOCK_STATS }, 1, 1, table("locked_rows")));
      expect(first.state).toBe("SUCCEEDED");
      // The task starts first (its run claimed: with SQLite, a claim waits on a lock of the file like
      // any write), its calls slow enough that the lock below is taken before their first commit.
      const slow = "import time\n" + BLOCK_STATS.replace("def main(ctx, input):", "def main(ctx, input):\n    time.sleep(1)");
      const running = client.runTask(rangeTask("lock-1", { source: slow }, 2, 41, table("locked_rows")));
      await waitFor(
        () => client.result({ taskId: "lock-1", workerAddr: w.addr }).then((r) => r.snapshot?.state ?? 0, () => 0),
        (state) => state === 2,
        20_000,
      );
      // Hold the table's lock from outside, as a long report query or a migration would.
      let release: () => Promise<void>;
      if (kind === "postgres") {
        const { SQL } = await import("bun");
        const holder = new SQL(url, { max: 1 });
        const tx = await holder.reserve();
        await tx.unsafe("BEGIN");
        await tx.unsafe("LOCK TABLE locked_rows IN ACCESS EXCLUSIVE MODE");
        release = async () => {
          await tx.unsafe("COMMIT");
          tx.release();
          await holder.close();
        };
      } else {
        const db = new Database(sqlite);
        db.exec("BEGIN IMMEDIATE");
        release = async () => {
          db.exec("COMMIT");
          db.close();
        };
      }
      const etcd = new Etcd3({ hosts: `http://${cluster.etcd}` });
      cleanups.push(() => etcd.close());
      const key = `${cluster.blockPrefix}${w.addr}`;
      // While the lock is held (3 lease TTLs, 3 ping timeouts): the heartbeat key, under its 3 s lease, never disappears.
      for (let i = 0; i < 90; i++) {
        expect([i, (await etcd.get(key).string()) !== null]).toEqual([i, true]);
        await Bun.sleep(100);
      }
      expect((await client.result({ taskId: "lock-1", workerAddr: w.addr })).snapshot?.state).toBe(2); // RUNNING: waiting on the lock
      await release!();
      const run = await running;
      expect(run.state).toBe("SUCCEEDED");
      expect(w.proc.lines.filter((l) => /hung|EXECUTOR_HUNG/.test(JSON.stringify(l)))).toEqual([]);
      const rows = kind === "postgres" ? await pgRows(url, "locked_rows") : (await rawRows(sqlite, "locked_rows", "ORDER BY block")).map(({ block, tx_count, gas_used }) => ({ block, tx_count, gas_used }));
      expect(rows).toEqual(expected(1, 41));
    }, 120_000);
  }

  test("a Postgres that goes down: calls fail as STORE_UNAVAILABLE and are retried with backoff; back up, the task succeeds with every row once; down when a Worker starts, it takes no work until the store is back, then by itself does", async () => {
    const pg = await startPostgres();
    cleanups.push(() => pg.destroy());
    const url = await pg.createDatabase("down_test");
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    // Two calls in flight: with every call in flight at once, their commits land together as a few group
    // commits before the stop below takes effect, and no call would meet the store down.
    const w = await cluster.worker(hostEnv(cluster, 0, url, { CALL_MAX_ATTEMPTS: "40", TABLE_STORE_RECONNECT_MAX_MS: "500", TASK_MAX_INFLIGHT_CALLS: "2" }));
    const coord = await cluster.coordinator();
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "60000" }));
    cleanups.push(() => client.close());
    const slow = "import time\n" + BLOCK_STATS.replace("def main(ctx, input):", "def main(ctx, input):\n    time.sleep(0.05)");
    let stopped = false;
    const restarted: Promise<void>[] = [];
    const run = await client.runTask(rangeTask("down-1", { source: slow }, 100, 299, table("down_rows")), {
      onProgress: (p) => {
        if (!stopped && p.done >= 50) {
          stopped = true;
          // Down until some calls failed on it, then back.
          restarted.push(
            pg.stop().then(async () => {
              await w.proc.waitForLog((l) => JSON.stringify(l).includes("STORE_UNAVAILABLE"), 60_000);
              await pg.run();
            }),
          );
        }
      },
    });
    await Promise.all(restarted);
    expect(stopped).toBe(true);
    expect({ state: run.state, error: run.result.firstError }).toEqual({ state: "SUCCEEDED", error: undefined });
    expect(run.result.snapshot!.callsRetried).toBeGreaterThan(0);
    expect(await pgRows(url, "down_rows")).toEqual(expected(100, 299));
    // Down when a Worker starts: it starts anyway (a store that does not answer may come back), its
    // heartbeat reports the worst error rate so the Coordinator sends it nothing, and a task is not
    // placed; once the store is back the Worker finds it by itself and the task runs.
    await pg.stop();
    const lane2 = new TestCluster();
    cleanups.push(() => lane2.stop());
    const w2 = await lane2.worker(hostEnv(lane2, 1, url, { CALL_MAX_ATTEMPTS: "3", HEARTBEAT_LEASE_TTL_S: "3" }));
    const coord2 = await lane2.coordinator();
    const client2 = new BlockxClient(lane2.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord2.addr, BLOCKX_WORKER_LOST_AFTER_MS: "60000" }));
    cleanups.push(() => client2.close());
    const unreachable = await w2.proc.waitForLog((l) => l.msg.startsWith("table store unreachable"), 20_000);
    expect(String(unreachable.reason)).toContain(`table store postgres://blockx:***@127.0.0.1:${pg.port}/down_test unavailable`);
    const refused = await client2.runTask(rangeTask("down-2", { source: BLOCK_STATS }, 1, 3, table("down_rows")), { timeoutMs: 4_000 }).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(refused).toContain("no free slot before the deadline");
    expect(refused).toContain("over the error-rate red line");
    await pg.run();
    await w2.proc.waitForLog((l) => l.msg.startsWith("table store reachable again"), 30_000);
    const later = await client2.runTask(rangeTask("down-3", { source: BLOCK_STATS }, 1, 3, table("down_rows")), { timeoutMs: 60_000 });
    expect(later.state).toBe("SUCCEEDED");
  }, 180_000);
});

