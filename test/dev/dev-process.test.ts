/**
 * `blockx dev` as a person runs it: the compiled binary starts etcd, both Coordinators and
 * Workers as its children; an example runs through a Coordinator and a Worker of it; one
 * SIGINT (Ctrl-C) stops everything. Afterwards no process it started (children and their
 * executors, found through /proc) is alive, no process mentions the dev dir, and no socket
 * file is left.
 */
import { channelFor } from "../../src/common/tls/grpc-tls";
import { compileTlsSetting } from "../../src/common/tls/tls-setting";
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { rawRows, RawTableReader } from "../support/raw-table-reader";
import { loadDevConfig } from "../../src/dev/app/config";
import { BLOCKX_BINARY, BlockxProcess } from "../support/blockx-process";
import { descendants, processesMentioning } from "../support/proc-scan";
import { reserve, waitFor } from "../support/coordinator-client";
import { WorkerClient } from "../support/worker-client";
import { pathWithout } from "../support/path-without";

const REPO = join(import.meta.dir, "..", "..");
const EXAMPLES = join(REPO, "examples");
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface DevReady {
  dir: string;
  envFile: string;
  endpoints: Record<string, string>;
}

function startDev(extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "blockx-devtest-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const dev = BlockxProcess.spawn(["dev"], {
    ETCD_BIN: process.env.BLOCKX_ETCD_BIN!,
    DEV_DIR: dir,
    DEV_WORKERS: "1",
    DEV_BUNDLE_WORKERS: "1",
    DEV_TERMINAL_LOG_LEVEL: "error",
    ...extra,
  });
  cleanups.push(() => dev.stop("SIGKILL"));
  return { dir, dev };
}

async function ready(dev: BlockxProcess): Promise<DevReady> {
  return (await dev.waitForLog((l) => l.msg === "dev ready", 90_000)) as unknown as DevReady;
}

function alive(pid: number): boolean {
  try {
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

function socketFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => {
    try {
      return lstatSync(join(dir, f)).isSocket();
    } catch {
      return false;
    }
  });
}

/** Listening or bound Unix sockets whose path lies in `dir` (a socket unlinked early still shows here). */
function unixSocketsIn(dir: string): string[] {
  return readFileSync("/proc/net/unix", "utf8")
    .split("\n")
    .filter((l) => l.includes(dir));
}

function expectNothingLeft(dir: string, pids: number[]) {
  expect(pids.filter(alive)).toEqual([]);
  expect(processesMentioning(dir)).toEqual([]);
  expect(socketFilesUnder(dir)).toEqual([]);
  expect(unixSocketsIn(dir)).toEqual([]);
}

/** runBlockStats: the block-stats example by name from the dev's FUNCTIONS_DIR, through its block Coordinator; the last snapshot. */
async function runBlockStats(env: Record<string, string | undefined>, taskId: string, from: number, to: number) {
  copyFileSync(join(EXAMPLES, "block-stats", "block_stats.py"), join(env.FUNCTIONS_DIR!, "block_stats.py"));
  const task = Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { name: "block_stats", entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "block_stats" } } }],
  });
  // dev is secure by default: the client's certificate comes from blockx-dev.env.
  const tls = compileTlsSetting({ tlsCaFile: env.BLOCKX_TLS_CA_FILE ?? "", tlsCertFile: env.BLOCKX_TLS_CERT_FILE ?? "", tlsKeyFile: env.BLOCKX_TLS_KEY_FILE ?? "", insecure: "0" });
  expect(tls).toMatchObject({ kind: "mtls", identity: { role: "client", name: "dev" } });
  const coordAddr = env.BLOCKX_COORDINATOR_ADDRS!;
  const slot = await waitFor(() => reserve(coordAddr, task.taskId, "block", channelFor(tls, coordAddr, ["coordinator"])), (o) => o.ok, 30_000);
  if (!slot.ok) throw new Error(slot.details);
  const worker = new WorkerClient(slot.res.workerAddr, channelFor(tls, slot.res.workerAddr, ["worker"]));
  cleanups.push(() => worker.close());
  const submitted = await waitFor(() => worker.submitTask(task, slot.res.slotId), (s) => s.ok || !s.details.includes("block_stats"), 10_000);
  if (!submitted.ok) throw new Error(submitted.details);
  return (await worker.watch([task.taskId])).snapshots.at(-1)!;
}

describe("blockx dev", () => {
  test("starts everything, runs the block-stats example, and one SIGINT leaves no process and no socket behind", async () => {
    const { dir, dev } = startDev();
    const r = await ready(dev);
    // Every role dev starts, written out here: a role dropped from dev (or from the binary) fails this.
    expect(Object.keys(r.endpoints)).toEqual(["etcd", "coordinator", "bundle-coordinator", "worker-1", "bundle-worker-1", "syncinvoker", "proxy"]);
    const env = Object.fromEntries([...readFileSync(r.envFile, "utf8").matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
    expect(env).toMatchObject({
      BLOCKX_COORDINATOR_ADDRS: r.endpoints.coordinator,
      BLOCKX_BUNDLE_COORDINATOR_ADDRS: r.endpoints["bundle-coordinator"],
      ETCD_ENDPOINTS: r.endpoints.etcd,
      TABLE_STORE_PATH: join(dir, "tables.sqlite"),
      FUNCTIONS_DIR: join(dir, "functions"),
    });

    // The example, by name from the dev's FUNCTIONS_DIR, through the block Coordinator.
    expect(await runBlockStats(env, "dev-example", 100, 299)).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 200 });
    const store = new RawTableReader(env.TABLE_STORE_PATH!);
    const rows = store.query("block_stats", "ORDER BY block");
    store.close();
    const chain = new SyntheticChain("ethereum");
    expect(rows.map((x) => [x.block, x.tx_count])).toEqual(Array.from({ length: 200 }, (_, i) => [100 + i, chain.block(100 + i, false)!.transactions.length]));

    // A follower of the local test chain with dev's environment: it writes up to the chain's head, and
    // its status (published with dev's client identity) is what `blockx tasks --followers` shows.
    const follower = Bun.spawn([BLOCKX_BINARY, "follow", "followed_stats", "--chain", "ethereum", "--function", "block_stats", "--from", "19999997"], {
      env: { ...process.env, ...env, LOCALTESTSERVICE_ENABLED: "true" },
      stdout: "ignore",
      stderr: "pipe",
    });
    const shown = await waitFor(
      async () => {
        const t = Bun.spawnSync([BLOCKX_BINARY, "tasks", "--followers", "--json"], { env: { ...process.env, ...env } });
        return (JSON.parse(t.stdout.toString() || "[]") as Record<string, unknown>[]).find((f) => f.table === "followed_stats");
      },
      (f) => f?.position === 20_000_000,
      30_000,
    );
    expect(shown).toMatchObject({ chain: "ethereum", state: "IDLE", position: 20_000_000, lag: 0, reorgs: 0 });
    follower.kill("SIGTERM");
    expect(await follower.exited).toBe(0);

    // Every process dev started, executors included, seen while it runs.
    const pids = descendants(dev.proc.pid);
    expect(pids.length).toBeGreaterThanOrEqual(5 + 2 * 2);
    expect(socketFilesUnder(dir).length).toBeGreaterThan(0); // the Workers' executor sockets, in the dev dir
    dev.proc.kill("SIGINT");
    expect(await dev.exited).toBe(0);
    expectNothingLeft(dir, pids);
    // A DEV_DIR named by the person is kept, with the logs; etcd's data is gone.
    expect(existsSync(join(dir, "worker-1.log"))).toBe(true);
    expect(existsSync(join(dir, "etcd-data"))).toBe(false);
  }, 180_000);

  test("--postgres: a private Postgres is the Workers' table store, TABLE_STORE_URL is in the env file, `blockx table` reads it; one SIGINT stops it with the rest", async () => {
    expect(loadDevConfig({}, ["--postgres"]).postgres).toBe(true);
    const { dir, dev } = startDev({ DEV_POSTGRES: "true", DEV_BUNDLE_WORKERS: "0" });
    const r = await ready(dev);
    const env = Object.fromEntries([...readFileSync(r.envFile, "utf8").matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
    // Its password (random) is in the 0600 env file's URL and nowhere on the terminal; without it Postgres refuses (test/dev/private-postgres.test.ts).
    expect(env.TABLE_STORE_URL).toMatch(/^postgres:\/\/blockx:[A-Za-z0-9_-]{32}@127\.0\.0\.1:\d+\/blockx$/);
    expect(statSync(r.envFile).mode & 0o777).toBe(0o600);
    const password = new URL(env.TABLE_STORE_URL!).password;
    expect(dev.stderr).toContain("TABLE_STORE_URL='postgres://blockx:***@127.0.0.1:");
    expect(dev.stderr + JSON.stringify(dev.lines)).not.toContain(password);
    // The dashboard's URL is shown whole, token and all: the terminal's user opens it (the env lines show it as ***).
    expect(dev.stderr).toMatch(/^blockx dev: dashboard: http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/m);
    expect(await runBlockStats(env, "dev-pg", 100, 119)).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 20 });
    expect((await rawRows(env.TABLE_STORE_URL!, "block_stats")).map((x) => Number(x.block)).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => 100 + i));
    const table = Bun.spawnSync([BLOCKX_BINARY, "table", "block_stats", "--limit", "0", "--json"], { env: { ...process.env, ...env }, cwd: dir });
    expect((JSON.parse(table.stdout.toString()) as unknown[]).length).toBe(20);
    const pids = descendants(dev.proc.pid);
    dev.proc.kill("SIGINT");
    expect(await dev.exited).toBe(0);
    expect(pids.filter(alive)).toEqual([]); // Postgres among them
  }, 180_000);

  test("a child that dies is reported by name, everything else stops, dev exits 1, nothing is left", async () => {
    const { dir, dev } = startDev();
    const r = await ready(dev);
    const pids = descendants(dev.proc.pid);
    const workerPid = pids.find((p) => readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").includes("bundle-worker"))!;
    expect(workerPid).toBeGreaterThan(0);
    process.kill(workerPid, "SIGKILL");
    expect(await dev.exited).toBe(1);
    expect(dev.stderr).toContain("bundle-worker-1 exited unexpectedly (signal SIGKILL); stopping everything (its log: bundle-worker-1.log)");
    expectNothingLeft(r.dir, pids);
  }, 180_000);

  test("ETCD_BIN pointing nowhere stops dev before it starts anything, naming the variable (exit 2)", async () => {
    const { dev } = startDev({ ETCD_BIN: "/nonexistent/etcd" });
    expect(await dev.exited).toBe(2);
    expect(dev.stderr).toContain("ETCD_BIN=/nonexistent/etcd is not an executable file");
  }, 30_000);

  test("bubblewrap absent from PATH (a fresh machine after `make demo`): the Workers start executors through the checkout's own copy in .cache/bubblewrap", async () => {
    const cached = realpathSync(join(REPO, ".cache", "bubblewrap", "root", "usr", "bin", "bwrap"));
    const noBwrap = pathWithout(["bwrap"]);
    cleanups.push(noBwrap.remove);
    expect(Bun.which("bwrap", { PATH: noBwrap.path })).toBeNull();
    const { dev } = startDev({ PATH: noBwrap.path, DEV_BUNDLE_WORKERS: "0" });
    const r = await ready(dev);
    const env = Object.fromEntries([...readFileSync(r.envFile, "utf8").matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
    expect(await runBlockStats(env, "dev-no-bwrap", 100, 119)).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: 20 });
    // The executors' sandboxes run the cached bwrap (its path is their first argument).
    const sandboxes = descendants(dev.proc.pid).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] === cached;
      } catch {
        return false;
      }
    });
    expect(sandboxes.length).toBeGreaterThanOrEqual(1);
    dev.proc.kill("SIGINT");
    expect(await dev.exited).toBe(0);
  }, 180_000);

  test("bubblewrap nowhere (neither on PATH nor in the binary's checkout): one line naming where dev looked and the fix, nothing started (exit 2)", async () => {
    // The binary outside any checkout, as a copy of dist/blockx in an empty folder's dist/.
    const elsewhere = mkdtempSync(join(tmpdir(), "blockx-nocheckout-"));
    cleanups.push(() => rmSync(elsewhere, { recursive: true, force: true }));
    mkdirSync(join(elsewhere, "dist"));
    copyFileSync(BLOCKX_BINARY, join(elsewhere, "dist", "blockx"));
    chmodSync(join(elsewhere, "dist", "blockx"), 0o755);
    const noBwrap = pathWithout(["bwrap"]);
    cleanups.push(noBwrap.remove);
    const dir = mkdtempSync(join(tmpdir(), "blockx-devtest-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const dev = BlockxProcess.spawn(["dev"], { PATH: noBwrap.path, ETCD_BIN: process.env.BLOCKX_ETCD_BIN!, DEV_DIR: dir }, join(elsewhere, "dist", "blockx"));
    cleanups.push(() => dev.stop("SIGKILL"));
    expect(await dev.exited).toBe(2);
    expect(dev.stderr.trim().split("\n")).toEqual([
      `blockx dev: executors cannot start in their sandbox here: bubblewrap (bwrap) is not installed (looked on PATH and in the checkout's .cache/bubblewrap/root/usr/bin/bwrap). ` +
        "Fix: `make demo` or `make deps` in the checkout (fetches Debian's bubblewrap into .cache), or apt-get install bubblewrap; " +
        "allow user namespaces (sysctl -w user.max_user_namespaces=15000); or run your own functions unsandboxed: EXECUTOR_SANDBOX=off blockx dev",
    ]);
    expect(readdirSync(dir)).toEqual([]); // not even its logs: nothing was started
  }, 60_000);

  test("a bubblewrap that cannot make namespaces (a kernel without user namespaces): bwrap's own words and the fix in one line, nothing started (exit 2)", async () => {
    const said = "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.";
    const broken = pathWithout(["bwrap"], { bwrap: `#!/bin/sh\necho "${said}" >&2\nexit 1\n` });
    cleanups.push(broken.remove);
    const { dir, dev } = startDev({ PATH: broken.path });
    expect(await dev.exited).toBe(2);
    const lines = dev.stderr.trim().split("\n");
    expect(lines.length).toBe(1);
    expect(lines[0]).toStartWith(`blockx dev: executors cannot start in their sandbox here: ${said}. Fix: `);
    expect(lines[0]).toContain("or run your own functions unsandboxed: EXECUTOR_SANDBOX=off blockx dev");
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  test("an invalid variable is refused with its rule (exit 2)", async () => {
    const { dev } = startDev({ DEV_WORKERS: "many" });
    expect(await dev.exited).toBe(2);
    expect(dev.stderr).toContain('DEV_WORKERS: expected an integer from 0 to 64, got "many"');
  }, 30_000);
});
