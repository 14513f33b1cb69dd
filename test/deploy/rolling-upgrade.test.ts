/**
 * The README's "Upgrade" on a running cluster of real processes: etcd, a Coordinator and two
 * Workers, all run from the binary `blockx install` put under a prefix. While a backfill runs
 * (50-block block_table tasks through the SDK, two at a time, more coming until the upgrade is
 * over), a second build is installed over that binary (`blockx install` from the new build: a
 * rename, running processes keep their copy), then each role is restarted in the README's order:
 * the Coordinator (same address), then each Worker in turn (SIGTERM: it drains), the next one only
 * once the previous is serving again. Every task succeeds, every live process runs the new build,
 * and every block has its row exactly once (read with plain SQL).
 */
import { afterAll, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient, type RunResult } from "../../src/sdk/blockx-client";
import { BLOCKX_BINARY, type BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { freePort } from "../support/ports";
import { RawTableReader } from "../support/raw-table-reader";
import { sourceDigest } from "../support/source-digest";

const REPO = join(import.meta.dir, "..", "..");
const work = mkdtempSync(join(tmpdir(), "blockx-upgrade-"));
chmodSync(work, 0o755);
const cleanups: (() => Promise<void> | void)[] = [() => rmSync(work, { recursive: true, force: true })];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const BLOCKS_PER_TASK = 50;
const ROWS = "import time\ndef main(ctx, input):\n    time.sleep(0.02)\n    n = input['blockNumber']\n    return [{'block': n, 'triple': n * 3}]\n";

function task(i: number): Task {
  return Task.fromPartial({
    taskId: `upgrade-${i}`,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: ROWS, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: i * BLOCKS_PER_TASK, toBlock: i * BLOCKS_PER_TASK + BLOCKS_PER_TASK - 1 } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "upgraded" } } }],
  });
}

function run(argv: string[], env: Record<string, string> = {}): string {
  const r = Bun.spawnSync(argv, { cwd: work, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${r.exitCode}:\n${r.stdout}${r.stderr}`);
  return r.stdout.toString();
}

test("a rolling upgrade, Coordinator then each Worker, during a backfill: every task succeeds, every block's row exactly once", async () => {
  // Version 1: installed from the tree's build, the way an operator installs a host.
  const prefix = join(work, "host");
  run([BLOCKX_BINARY, "install", "coordinator", "--prefix", prefix]);
  run([BLOCKX_BINARY, "install", "worker", "--prefix", prefix]);
  const installed = join(prefix, "usr/local/bin/blockx");
  // Version 2: a second build of the same sources under another commit name.
  const second = join(work, "build2", "blockx");
  run([join(REPO, "scripts/compile.sh"), second], { BLOCKX_COMMIT: "upgrade2", BLOCKX_SOURCE_DIGEST: sourceDigest() });
  expect(run([second, "version"])).toContain("(commit upgrade2,");

  const cluster = new TestCluster(installed);
  cleanups.push(() => cluster.stop());
  const workerEnv = { EXECUTOR_COUNT: "2", WORKER_DRAIN_TIMEOUT_MS: "30000", HEARTBEAT_INTERVAL_MS: "200" };
  const coordListen = `127.0.0.1:${await freePort()}`;
  let coordinator: BlockxProcess = (await cluster.coordinator({ COORDINATOR_LISTEN: coordListen })).proc;
  const workers: BlockxProcess[] = [(await cluster.worker(workerEnv)).proc, (await cluster.worker(workerEnv)).proc];
  const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coordListen }));
  cleanups.push(() => client.close());

  // The backfill: two lanes of tasks, more coming until the upgrade is over (then two more each).
  const results: { i: number; run: RunResult }[] = [];
  let next = 0;
  let upgraded = false;
  let inFlight = 0;
  const lane = async () => {
    let after = 0;
    while (!upgraded || after++ < 2) {
      const i = next++;
      inFlight++;
      try {
        results.push({ i, run: await client.runTask(task(i)) });
      } finally {
        inFlight--;
      }
    }
  };
  const backfill = Promise.all([lane(), lane()]);
  while (results.length < 2) await Bun.sleep(50);

  // The upgrade, in the README's order.
  run([second, "install", "coordinator", "--prefix", prefix]);
  run([second, "install", "worker", "--prefix", prefix]);
  expect(run([installed, "version"])).toContain("(commit upgrade2,");
  const busyAtRestart: number[] = [];
  busyAtRestart.push(inFlight);
  expect(await coordinator.stop("SIGTERM")).toBe(0);
  coordinator = (await cluster.coordinator({ COORDINATOR_LISTEN: coordListen })).proc;
  for (let w = 0; w < workers.length; w++) {
    busyAtRestart.push(inFlight);
    expect(await workers[w]!.stop("SIGTERM")).toBe(0); // drains its running task first
    workers[w] = (await cluster.worker(workerEnv)).proc;
    await workers[w]!.waitForLog((l) => l.msg === "grpc listening");
  }
  const tasksBeforeEnd = results.length;
  upgraded = true;
  await backfill;

  // Tasks ran through every restart, and kept running after it.
  expect(busyAtRestart.every((n) => n > 0)).toBe(true);
  expect(results.length).toBeGreaterThan(tasksBeforeEnd);
  // No task was lost: each succeeded (resubmissions, if any, are the SDK's business and are idempotent).
  expect(results.filter((r) => r.run.state !== "SUCCEEDED").map((r) => [r.i, r.run.state])).toEqual([]);
  // Every live process is the new build, from the installed path.
  for (const p of [coordinator, ...workers]) expect(readlinkSync(`/proc/${p.proc.pid}/exe`)).toBe(installed);
  // Every block of every task has its row exactly once.
  const total = next;
  const store = new RawTableReader(cluster.tableStorePath);
  const rows = store.query("upgraded", "ORDER BY block");
  store.close();
  expect(rows.length).toBe(total * BLOCKS_PER_TASK);
  expect(rows.map((r) => [r.block, r.triple])).toEqual(Array.from({ length: total * BLOCKS_PER_TASK }, (_, n) => [n, n * 3]));
  console.log(`rolling upgrade: ${total} tasks, ${total * BLOCKS_PER_TASK} blocks, attempts ${JSON.stringify(results.map((r) => r.run.attempts))}, tasks in flight at each restart ${JSON.stringify(busyAtRestart)}`);
}, 180_000);
