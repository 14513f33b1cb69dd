/**
 * Exactly once under gray faults (issue 48's three cases), each as a process test with the steps
 * the issue tried from outside: real Coordinators and Workers from dist/blockx, the CLI or the SDK
 * as a client, TCP fault relays between them (test/support/fault-relay.ts), SQLite or Postgres.
 *
 * 1. A lost SubmitTask answer: the Worker accepted and started a normal-table task, the answer
 *    was dropped and the connection reset. The client follows that Worker instead of reserving
 *    again, and a second Worker asked for the same task id refuses it, naming the first: 30 rows.
 * 2. A Worker the client declared lost (SIGSTOP) comes back after the task was rerun elsewhere and
 *    a newer task SUCCEEDED over the same blocks: its commits are refused (STALE_RUN) and the table
 *    keeps the newer task's 400 rows.
 * 3. The Worker's Postgres connection goes silent (the relay closes the server side and leaves the
 *    Worker's side open) and heals a second later: the cancel of the running task answers, and the
 *    Worker writes again (a fresh task SUCCEEDS) within the statement timeout and margin.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BLOCKX_BINARY, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { waitFor } from "../support/coordinator-client";
import { FaultRelay } from "../support/fault-relay";
import { freePort } from "../support/ports";
import { freshDatabase } from "../support/postgres";
import { rawRows } from "../support/raw-table-reader";
import { WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A task over blocks from..to, one call per block, writing `output` to `table`. */
function blockTask(taskId: string, source: string, from: number, to: number, table: string, output: "blockTableWrite" | "normalTableWrite"): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [output === "blockTableWrite" ? { handler: { $case: "blockTableWrite", blockTableWrite: { table } } } : { handler: { $case: "normalTableWrite", normalTableWrite: { table } } }],
  });
}

/** A function whose rows say which version of it computed them, and in which run of its task (ctx.run). */
const versioned = (version: string, sleepS: number) =>
  `import time\ndef main(ctx, input):\n    time.sleep(${sleepS})\n    return [{'block': input['blockNumber'], 'version': '${version}', 'run': ctx.run['generation']}]\n`;

/**
 * runsOf: the runs the store recorded for a task id, as [generation, worker, state], once none is
 * RUNNING any more (a run's end is recorded after the Worker's answer may have been read), or as
 * they stand after 10 s.
 */
async function runsOf(store: string, taskId: string): Promise<[number, string, string][]> {
  const read = async () => (await rawRows(store, "_blockx_runs")).filter((r) => r.task_id === taskId).map((r): [number, string, string] => [Number(r.generation), String(r.worker), String(r.state)]);
  return waitFor(read, (runs) => runs.length > 0 && runs.every((r) => r[2] !== "RUNNING"), 10_000).catch(read);
}

/** pgEnv: a Worker host writing the Postgres at `url` (its own folders, as a separate host would have). */
function hostEnv(cluster: TestCluster, i: number, url: string, extra: Record<string, string> = {}): Record<string, string> {
  const home = join(cluster.dir, `host-${i}`);
  for (const d of ["cache", "tmp"]) mkdirSync(join(home, d), { recursive: true, mode: 0o755 });
  Bun.spawnSync(["chmod", "-R", "755", home]);
  return { TABLE_STORE_URL: url, TABLE_STORE_PATH: join(home, "unused.sqlite"), BLOCKX_CACHE_DIR: join(home, "cache"), TMPDIR: join(home, "tmp"), ...extra };
}

/** A Worker whose clients (and Coordinators) reach it only through a relay: it advertises the relay's address. */
async function workerBehindRelay(cluster: TestCluster, env: Record<string, string> = {}) {
  const port = await freePort();
  const relay = await FaultRelay.start(`127.0.0.1:${port}`);
  cleanups.push(() => relay.close());
  const w = await cluster.worker({ WORKER_LISTEN: `127.0.0.1:${port}`, WORKER_ADVERTISE_ADDR: relay.addr, ...env });
  return { ...w, addr: relay.addr, relay };
}

describe("exactly once under gray faults", () => {
  test("case 1: a SubmitTask answer lost after the Worker accepted a normal-table task (and its link down for 2 s): the CLI follows that Worker, the task runs once (30 rows for 30 blocks), and a second Worker refuses the task id naming the first", async () => {
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    // More free slots behind the relay: the Coordinator places the task there first.
    const w1 = await workerBehindRelay(cluster, { TASK_SLOTS: "20" });
    const w2 = await cluster.worker({ TASK_SLOTS: "2" });
    const coord = await cluster.coordinator();
    await cluster.withFreeCapacity(2);
    // The request is large (a long comment of random text in the function: no compression shrinks it),
    // so the answer to drop is the one that follows it, not the TLS handshake's.
    const source = `# ${randomBytes(18_000).toString("base64")}\n${versioned("once", 0.05)}`;
    writeFileSync(join(cluster.dir, "once.py"), source);
    // The request arrives whole; its answer is lost, then the connection resets, and the link stays
    // down for 2 s (new connections refused): a client that reserves again lands on the other Worker.
    const dropped = w1.relay.dropAnswerAfterRequest({ minBytes: 16_000, resetAfterMs: 300 }).then((fired) => {
      w1.relay.refuse();
      setTimeout(() => w1.relay.heal(), 2_000);
      return fired;
    });
    const env = { BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_BUNDLE_COORDINATOR_ADDRS: coord.addr, ETCD_ENDPOINTS: cluster.etcd, TABLE_STORE_PATH: cluster.tableStorePath, BLOCKX_WORKER_LOST_AFTER_MS: "20000" };
    const proc = Bun.spawn(
      ["setpriv", "--pdeathsig", "KILL", "--", BLOCKX_BINARY, "submit", "--function", "once.py", "--blocks", "100..129", "--table", "appended", "--append", "--watch", "--json", "--task-id", "case-1"],
      { cwd: cluster.dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv(env, "client"), ...env }, stdout: "pipe", stderr: "pipe" },
    );
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(await dropped).toBe(true);
    expect(w1.relay.dropped).toBe(1);
    if (code !== 0) throw new Error(`blockx submit exited ${code}\n${stdout}\n${stderr}`);
    // The CLI followed the Worker it had sent the task to, instead of reserving again.
    expect(stderr).toContain(`task case-1: ${w1.addr} did not answer once it may have taken the task (UNAVAILABLE); following it there, not submitting it elsewhere`);
    const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as { state: string; attempts: number; workers: string[] };
    expect({ state: result.state, attempts: result.attempts, workers: result.workers }).toEqual({ state: "SUCCEEDED", attempts: 1, workers: [w1.addr] });
    // 30 rows for 30 blocks: the task ran once.
    const rows = (await rawRows(cluster.tableStorePath, "appended")).map((r) => [Number(r.block), Number(r.run)]).sort((a, b) => a[0]! - b[0]!);
    expect(rows).toEqual(Array.from({ length: 30 }, (_, i) => [100 + i, 1]));
    // One run of the id, on the first Worker; its end is recorded once its last commit settled.
    expect(await runsOf(cluster.tableStorePath, "case-1")).toEqual([[1, w1.addr, "SUCCEEDED"]]);
    // The other Worker never ran it.
    const probe = new WorkerClient(w2.addr);
    cleanups.push(() => probe.close());
    expect((await probe.getTaskResult("case-1")).ok).toBe(false);

    // The same task id submitted straight to the second Worker while a run of it is current on the
    // first: refused, naming the first (the SDK then follows that one).
    const slow = blockTask("case-1b", versioned("slow", 0.2), 200, 259, "appended_b", "normalTableWrite");
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "20000" }));
    cleanups.push(() => client.close());
    const direct1 = new WorkerClient(w1.addr);
    cleanups.push(() => direct1.close());
    expect((await direct1.submitTask(slow)).ok).toBe(true);
    const refused = await probe.submitTask(slow);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.code).toBe(6); // ALREADY_EXISTS
    expect(refused.details).toBe(`[TASK_RUN_ELSEWHERE] task case-1b is running on ${w1.addr} (run 1): a task id runs once in the cluster; follow it there, or resubmit it to replace that run`);
    // The SDK, wherever the Coordinator places it, ends on the first Worker's run (followed there after a
    // refusal, or an idempotent hit there), and that run is the only one the id ever had.
    const run = await client.runTask(slow, { cluster: "block" });
    expect({ state: run.state, last: run.workers.at(-1) }).toEqual({ state: "SUCCEEDED", last: w1.addr });
    expect(await runsOf(cluster.tableStorePath, "case-1b")).toEqual([[1, w1.addr, "SUCCEEDED"]]);
    expect((await rawRows(cluster.tableStorePath, "appended_b")).length).toBe(60);
  }, 120_000);

  test("case 2: a Worker SIGSTOPped past its clients' patience comes back after the task was rerun elsewhere and a newer task SUCCEEDED: its commits are refused (STALE_RUN), the newer task's 400 rows stay", async () => {
    const url = await freshDatabase();
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const w1 = await cluster.worker(hostEnv(cluster, 1, url, { TASK_SLOTS: "20" }));
    const w2 = await cluster.worker(hostEnv(cluster, 2, url, { TASK_SLOTS: "10" }));
    const coord = await cluster.coordinator();
    await cluster.withFreeCapacity(2);
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "3000" }));
    cleanups.push(() => client.close());
    let stopped = false;
    let first = "";
    const v1 = await client.runTask(blockTask("v1", versioned("v1", 0.02), 1000, 1399, "versions", "blockTableWrite"), {
      onEvent: (e) => {
        if ((e.kind === "submitting" || e.kind === "submitted") && first === "") first = e.workerAddr;
      },
      onProgress: (p) => {
        if (!stopped && first === w1.addr && p.done >= 50) {
          stopped = true;
          w1.proc.proc.kill("SIGSTOP");
        }
      },
    });
    expect(stopped).toBe(true);
    cleanups.push(() => w1.proc.proc.kill("SIGCONT"));
    expect({ state: v1.state, attempts: v1.attempts, workers: v1.workers }).toEqual({ state: "SUCCEEDED", attempts: 2, workers: [w1.addr, w2.addr] });
    // A fixed function, submitted after: it SUCCEEDS over the same blocks.
    const v2 = await client.runTask(blockTask("v2", versioned("v2", 0), 1000, 1399, "versions", "blockTableWrite"));
    expect(v2.state).toBe("SUCCEEDED");
    // The stopped Worker comes back and goes on with its run of v1: every commit is refused.
    w1.proc.proc.kill("SIGCONT");
    const probe = new WorkerClient(w1.addr);
    cleanups.push(() => probe.close());
    const ended = await waitFor(
      () => probe.getTaskResult("v1"),
      (r) => r.ok && (r.value.snapshot?.state === TaskState.FAILED || r.value.snapshot?.state === TaskState.SUCCEEDED),
      60_000,
    );
    if (!ended.ok) throw new Error(ended.details);
    // Refused either at its first commit or, when it was stopped past its lease, as soon as its lease renewal was.
    expect({ state: ended.value.snapshot?.state, code: ended.value.snapshot?.error?.code }).toEqual({ state: TaskState.FAILED, code: "STALE_RUN" });
    console.log(`case 2: the stopped Worker's run of v1 ended FAILED: ${ended.value.snapshot?.error?.message}`);
    // Every block: v2's rows, of its first and only run; none of v1's two runs.
    const rows = (await rawRows(url, "versions")).map((r) => [Number(r.block), r.version, Number(r.run)]).sort((a, b) => (a[0] as number) - (b[0] as number));
    expect(rows).toEqual(Array.from({ length: 400 }, (_, i) => [1000 + i, "v2", 1]));
  }, 180_000);

  test("case 3: the Worker's Postgres connection goes silent and heals a second later: cancel answers within its deadline, the Worker reports it cannot write meanwhile, and writes again (a fresh task SUCCEEDS) within the statement timeout and margin", async () => {
    const url = await freshDatabase();
    const pg = new URL(url);
    const relay = await FaultRelay.start(`${pg.hostname}:${pg.port}`);
    cleanups.push(() => relay.close());
    const viaRelay = new URL(url);
    viaRelay.port = String(relay.port);
    const cluster = new TestCluster();
    cleanups.push(() => cluster.stop());
    const w = await cluster.worker(
      hostEnv(cluster, 1, viaRelay.toString(), {
        TABLE_STORE_STATEMENT_TIMEOUT_MS: "2000",
        TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS: "1500",
        TABLE_STORE_DEADLINE_MARGIN_MS: "1000",
        TABLE_STORE_RECONNECT_MAX_MS: "500",
        CALL_MAX_ATTEMPTS: "50",
      }),
    );
    const coord = await cluster.coordinator();
    await cluster.withFreeCapacity(1);
    const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "60000" }));
    cleanups.push(() => client.close());
    const long = await client.submit(blockTask("long", versioned("long", 0.05), 0, 999, "silent_rows", "blockTableWrite"));
    await waitFor(
      () => client.result(long).then((r) => Number(r.snapshot?.callsSucceeded ?? 0)),
      (n) => n >= 20,
      30_000,
    );
    relay.blackhole();
    await Bun.sleep(1_000);
    relay.heal();
    const healedAt = performance.now();
    const healedWall = Date.now();
    // Cancel answers within its deadline (the SDK's RPC deadline, 10 s), a commit hanging or not.
    const cancelled = await client.cancel(long);
    expect(cancelled.state).toBe(TaskState.CANCELLED);
    // The Worker said it could not write (its heartbeat's error rate keeps tasks away meanwhile), and recovered by itself.
    await w.proc.waitForLog((l) => l.msg.startsWith("table store unreachable"), 10_000);
    const back = await w.proc.waitForLog((l) => l.msg.startsWith("table store reachable again") && Number(l.time) >= healedWall, 20_000);
    const fresh = await client.runTask(blockTask("fresh", versioned("fresh", 0), 5000, 5004, "silent_rows", "blockTableWrite"), { timeoutMs: 30_000 });
    const recoveredMs = Math.round(performance.now() - healedAt);
    expect(fresh.state).toBe("SUCCEEDED");
    expect((await rawRows(url, "silent_rows")).filter((r) => r.version === "fresh").length).toBe(5);
    // It was the client-side deadline that ended the silent connection (no server could: it could not reach the Worker).
    expect(w.proc.lines.some((l) => JSON.stringify(l).includes("its connections were closed and replaced") || JSON.stringify(l).includes("so the connections this one waited on were closed and replaced"))).toBe(true);
    console.log(`case 3: the Worker wrote again ${Number(back.time) - healedWall} ms after the network healed, and the fresh task SUCCEEDED ${recoveredMs} ms after (statement timeout 2000 ms + margin 1000 ms; the cancel waited for the hung commit meanwhile)`);
  }, 120_000);
});
