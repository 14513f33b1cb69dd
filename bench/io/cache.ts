/**
 * bench/io/cache.ts: what the Worker's read cache and singleflight save when calls read the
 * same blocks. One block_table task over the local test chain through a compiled Worker; the
 * function for block n reads blocks n-3..n (full transactions, one ctx.io_many), as a
 * moving-window feature would, so every block is wanted by four calls, mostly at the same time.
 *
 * Baseline of the same run: the same task with IO_CACHE_MAX_BYTES=0 and IO_SINGLEFLIGHT=false
 * (every request reaches the backend). Figures: backend requests per block read (from the
 * Worker's /metrics) and blocks/s. Then the subsystem's own per-request cost, in process:
 * a cache hit, and a miss against a trivial synchronous backend next to the bare
 * BackendRegistry.call (no cache, no singleflight, no window, no admission).
 *
 *   bun bench/io/cache.ts [--blocks 3000] [--executors 4]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { loadEnvConfig } from "../../src/common/config/env-config";
import { ioConfigFrom, ioVars } from "../../src/runtime/io/io-config";
import { BackendRegistry } from "../../src/runtime/io/backends/backend-registry";
import { IoSubsystem } from "../../src/runtime/io/io-subsystem";
import { localtestserviceBackend } from "../../src/runtime/io/backends/localtestservice-backend";
import { BlockxProcess } from "../../test/support/blockx-process";
import { blockTableTask } from "../../test/support/block-table-task";
import { EtcdProcess } from "../../test/support/etcd";
import { randomLanePrefix } from "../../test/support/worker-double";
import { TERMINAL_STATES, WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({ options: { blocks: { type: "string", default: "3000" }, executors: { type: "string", default: "4" } } });
const BLOCKS = Number(values.blocks);
const WINDOW = 4;
const FROM = 100_000;
const TO = FROM + BLOCKS - 1;

const MOVING_WINDOW = [
  "def main(ctx, input):",
  "    n = input['blockNumber']",
  `    blocks = ctx.io_many([('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': m}) for m in range(n - ${WINDOW - 1}, n + 1)])`,
  "    return [{'block': n, 'tx_window': sum(len(b['transactions']) for b in blocks)}]",
].join("\n");

const task = (taskId: string, from: number, to: number) => blockTableTask(taskId, MOVING_WINDOW, from, to, `t_${taskId.replace(/\W/g, "_")}`);

function metric(page: string, name: string, labels: string): number {
  const line = page.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-io-"));
Bun.spawnSync(["chmod", "755", dir]);
let etcd: EtcdProcess | undefined;

async function backfill(label: string, env: Record<string, string>) {
  const w = BlockxProcess.spawn(["worker"], {
    // Plaintext: one executor owner for every task (else each task pays fresh executors, issue 17).
    EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared",
    ETCD_ENDPOINTS: etcd!.endpoint,
    BLOCKX_LOG_LEVEL: "info",
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: values.executors!,
    TABLE_STORE_PATH: join(dir, `${label}.sqlite`),
    BLOCKX_PROMETHEUS_LISTEN_ADDR: "127.0.0.1:0",
    // With the default 1024 calls in flight, each resumed with four full blocks, the executors'
    // sockets back up for more than the 10 s ping timeout when nothing is cached: calls fail as
    // EXECUTOR_HUNG and are retried. 128 keeps the executors busy without that.
    TASK_MAX_INFLIGHT_CALLS: "128",
    ...env,
  });
  const client = new WorkerClient(await w.grpcAddr());
  try {
    const metricsAddr = (await w.waitForLog((l) => l.msg === "metrics listening")).addr as string;
    const scrape = async () => (await fetch(`http://${metricsAddr}/metrics`)).text();
    const run = async (taskId: string, from: number, to: number) => {
      const slot = await client.requestTaskSlot(taskId);
      if (!slot.ok) throw new Error(slot.details);
      const t0 = performance.now();
      const sub = await client.submitTask(task(taskId, from, to), slot.value.slotId);
      if (!sub.ok) throw new Error(sub.details);
      const { snapshots } = await client.watch([taskId]);
      const last = snapshots.at(-1)!;
      if (!TERMINAL_STATES.includes(last.state) || last.state !== TaskState.SUCCEEDED) throw new Error(`${taskId}: ${TaskState[last.state]} ${last.error?.message ?? ""}`);
      return { seconds: (performance.now() - t0) / 1000, retried: last.callsRetried };
    };
    await run("warm", TO + 1_000, TO + 1_200); // executors, compile cache, head of the chain
    const before = await scrape();
    const { seconds, retried } = await run("measured", FROM, TO);
    const after = await scrape();
    const L = '{backend="localtestservice",op="eth_getBlockByNumber"';
    const delta = (name: string, labels: string) => metric(after, name, labels) - metric(before, name, labels);
    const backend = delta("blockx_io_backend_requests_total", `${L},result="ok"}`);
    return {
      seconds,
      retried,
      perSecond: BLOCKS / seconds,
      backendPerBlock: backend / (BLOCKS + WINDOW - 1),
      via: { cache: delta("blockx_io_requests_total", `${L},via="cache"}`), shared: delta("blockx_io_requests_total", `${L},via="shared"}`), backend },
    };
  } finally {
    client.close();
    await w.stop("SIGKILL").catch(() => {});
  }
}

/** perRequestCost: µs per request through the subsystem, in process, against synchronous backends. */
async function perRequestCost() {
  const registry = new BackendRegistry().register(localtestserviceBackend({ head: 1_000_000 })).register({
    name: "trivial",
    ops: { echo: { kind: "read", handle: (p) => p } },
  });
  const io = new IoSubsystem(registry, ioConfigFrom(loadEnvConfig(ioVars, {})).io); // the Worker's defaults
  const t = io.forTask("bench");
  const N = 200_000;
  const time = async (f: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < 2_000; i++) await f(i);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) await f(i);
    return ((performance.now() - t0) * 1000) / N;
  };
  const params = { chain: "ethereum", number: 1_000 };
  await t.call("localtestservice", "eth_getBlockByNumber", params);
  await Bun.sleep(5); // the head arrives in the background
  await t.call("localtestservice", "eth_getBlockByNumber", params);
  const hit = await time(() => t.call("localtestservice", "eth_getBlockByNumber", params));
  const bare = await time((i) => registry.call("trivial", "echo", { i }));
  const miss = await time((i) => t.call("trivial", "echo", { i }));
  return { hit, bare, miss, hits: io.cache.hits };
}

try {
  etcd = await EtcdProcess.start();
  console.log(`IO cache + singleflight: ${BLOCKS} blocks (${FROM}..${TO}), each call reads its block and the ${WINDOW - 1} before it (one io_many, full transactions); EXECUTOR_COUNT=${values.executors}\n`);
  const OFF = { IO_CACHE_MAX_BYTES: "0", IO_SINGLEFLIGHT: "false" };
  const runs = [
    { label: "local chain (synchronous), cache + singleflight off (baseline)", r: await backfill("sync-off", OFF) },
    { label: "local chain (synchronous), cache + singleflight on", r: await backfill("sync-on", {}) },
    { label: "local chain + 2 ms latency, cache + singleflight off (baseline)", r: await backfill("slow-off", { ...OFF, LOCALTESTSERVICE_LATENCY_MS: "2" }) },
    { label: "local chain + 2 ms latency, singleflight only", r: await backfill("slow-sf", { IO_CACHE_MAX_BYTES: "0", LOCALTESTSERVICE_LATENCY_MS: "2" }) },
    { label: "local chain + 2 ms latency, cache + singleflight on", r: await backfill("slow-on", { LOCALTESTSERVICE_LATENCY_MS: "2" }) },
  ];
  console.log("| backend, IO config | backend requests per block | blocks/s | blocks/s vs its baseline | answered: cache / shared / backend | calls retried |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const [i, { label, r }] of runs.entries()) {
    const base = runs[i < 2 ? 0 : 2]!.r;
    console.log(`| ${label} | ${r.backendPerBlock.toFixed(2)} | ${r.perSecond.toFixed(0)} | ${(r.perSecond / base.perSecond).toFixed(2)}x | ${r.via.cache} / ${r.via.shared} / ${r.via.backend} | ${r.retried} |`);
  }
  const c = await perRequestCost();
  console.log("\nPer request, in process (µs):");
  console.log("| path | µs |");
  console.log("| --- | ---: |");
  console.log(`| bare BackendRegistry.call, trivial sync op (baseline) | ${c.bare.toFixed(2)} |`);
  console.log(`| IoSubsystem miss, same op (singleflight key, window, admission) | ${c.miss.toFixed(2)} |`);
  console.log(`| IoSubsystem cache hit (a full block) | ${c.hit.toFixed(2)} |`);
  console.log(`\n- subsystem overhead on a miss: ${(c.miss - c.bare).toFixed(2)} µs over the bare call`);
} finally {
  await etcd?.destroy();
  rmSync(dir, { recursive: true, force: true });
}
