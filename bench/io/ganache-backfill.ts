/**
 * bench/io/ganache-backfill.ts: backfill blocks/s over a REAL Ethereum node (ganache 7, mined
 * here with a Transfer-emitting contract) through one compiled Worker (CHAINS_CONFIG pointing at
 * the node, finalityDepth 0: a dev chain's blocks are final). The function reads per block its
 * full block, its parent block (so every block is read twice over the backfill), its receipts and
 * its Transfer logs, all through ctx.blockdb.
 *
 * (1) The same backfill, then a rerun of it, with the IO cache and singleflight on (defaults) and
 *     off (IO_CACHE_MAX_BYTES=0 IO_SINGLEFLIGHT=false; a Worker without the IO subsystem ignores
 *     both, and the ratio is then ~1).
 * (2) Floor: a plain Node script (floor-rpc.mjs) making the same JSON-RPC calls per block with the
 *     same number of blocks in flight (TASK_MAX_INFLIGHT_CALLS = --concurrency).
 *
 *   bun bench/io/ganache-backfill.ts [--blocks 400] [--concurrency 16] [--executors 2]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { RawTableReader } from "../../test/support/raw-table-reader";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { GanacheNode, TRANSFER_TOPIC } from "../../test/support/ganache";
import { randomLanePrefix } from "../../test/support/worker-double";
import { TERMINAL_STATES, WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({
  options: {
    blocks: { type: "string", default: "400" },
    concurrency: { type: "string", default: "16" },
    executors: { type: "string", default: "2" },
  },
});
const BLOCKS = Number(values.blocks);
const CONCURRENCY = Number(values.concurrency);

const FUNCTION = `
TRANSFER = '${TRANSFER_TOPIC}'

def main(ctx, input):
    n = input['blockNumber']
    b = ctx.blockdb.block(n)
    parent = ctx.blockdb.block(n - 1) if n > 0 else None
    receipts = ctx.blockdb.receipts(n)
    logs = ctx.blockdb.logs(n, n, topics=[TRANSFER])
    return [{
        'block': n,
        'tx_count': len(b['transactions']),
        'gas_used': sum(int(r['gasUsed'], 16) for r in receipts),
        'transfers': len(logs),
        'dt': int(b['timestamp'], 16) - (int(parent['timestamp'], 16) if parent else 0),
    }]
`;

function task(taskId: string, to: number, table: string): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: FUNCTION, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "dev", fromBlock: 0, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-io-"));
Bun.spawnSync(["chmod", "755", dir]);
let etcd: EtcdProcess | undefined;
let node: GanacheNode | undefined;
const procs: BlockxProcess[] = [];
async function cleanup(): Promise<void> {
  for (const p of procs.splice(0)) await p.stop("SIGKILL").catch(() => {});
  await node?.stop();
  await etcd?.destroy();
  rmSync(dir, { recursive: true, force: true });
}
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

/** worker runs the backfill and then its rerun through a fresh Worker with `env`; seconds of each. */
async function worker(label: string, head: number, env: Record<string, string>): Promise<{ first: number; rerun: number; rows: number }> {
  const dbPath = join(dir, `${label}.sqlite`);
  const w = BlockxProcess.spawn(["worker"], {
    // Plaintext: one executor owner for every task (else each task pays fresh executors, issue 17).
    EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared",
    ETCD_ENDPOINTS: etcd!.endpoint,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: values.executors,
    TASK_MAX_INFLIGHT_CALLS: String(CONCURRENCY),
    TABLE_STORE_PATH: dbPath,
    CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [node!.url], finalityDepth: 0 } } }),
    ...env,
  });
  procs.push(w);
  const client = new WorkerClient(await w.grpcAddr());
  const run = async (taskId: string) => {
    const slot = await client.requestTaskSlot(taskId);
    if (!slot.ok) throw new Error(`requestTaskSlot: ${slot.details}`);
    const t0 = performance.now();
    const sub = await client.submitTask(task(taskId, head, "facts"), slot.value.slotId);
    if (!sub.ok) throw new Error(`submit: ${sub.details}`);
    const { snapshots, error } = await client.watch([taskId]);
    const seconds = (performance.now() - t0) / 1000;
    if (error) throw error;
    const last = snapshots.at(-1)!;
    if (!TERMINAL_STATES.includes(last.state) || last.state !== TaskState.SUCCEEDED) throw new Error(`${label} ${taskId}: ${TaskState[last.state]}`);
    return seconds;
  };
  try {
    // Warm the executors (compile) on a few blocks; the measured runs start cold in the IO cache.
    const slot = await client.requestTaskSlot(`${label}-warm`);
    if (!slot.ok) throw new Error(slot.details);
    const ws = await client.submitTask(task(`${label}-warm`, 0, "warm"), slot.value.slotId);
    if (!ws.ok) throw new Error(ws.details);
    await client.watch([`${label}-warm`]);
    const first = await run(`${label}-1`);
    const rerun = await run(`${label}-2`);
    const store = new RawTableReader(dbPath);
    const rows = store.query("facts").length;
    store.close();
    return { first, rerun, rows };
  } finally {
    client.close();
    await w.stop("SIGKILL");
    procs.splice(procs.indexOf(w), 1);
  }
}

async function floor(head: number): Promise<{ seconds: number; count: number }> {
  const p = Bun.spawn(["/usr/bin/node", join(import.meta.dir, "floor-rpc.mjs"), node!.url, "0", String(head), String(CONCURRENCY), TRANSFER_TOPIC], { stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  if (code !== 0) throw new Error(`floor-rpc.mjs exited with ${code}`);
  return JSON.parse(text.trim()) as { seconds: number; count: number };
}

try {
  etcd = await EtcdProcess.start();
  node = await GanacheNode.start();
  const t0 = performance.now();
  await node.mine(BLOCKS, await node.deployEmitter());
  const head = await node.head();
  const n = head + 1;
  console.log(`Backfill over ganache: ${n} blocks (mined in ${((performance.now() - t0) / 1000).toFixed(1)} s), ${CONCURRENCY} blocks in flight, EXECUTOR_COUNT=${values.executors}; per block: block, parent block, receipts (eth_getTransactionReceipt each: ganache lacks eth_getBlockReceipts), Transfer logs\n`);
  // Two rounds, alternating, best of each: the node and the machine warm up and are shared.
  const OFF = { IO_CACHE_MAX_BYTES: "0", IO_SINGLEFLIGHT: "false" };
  const best = (a: Awaited<ReturnType<typeof worker>>, b: Awaited<ReturnType<typeof worker>>) => ({ first: Math.min(a.first, b.first), rerun: Math.min(a.rerun, b.rerun), rows: Math.min(a.rows, b.rows) });
  const f = await floor(head);
  const off1 = await worker("off1", head, OFF);
  const on1 = await worker("on1", head, {});
  const f2 = await floor(head);
  const on2 = await worker("on2", head, {});
  const off2 = await worker("off2", head, OFF);
  const on = best(on1, on2);
  const off = best(off1, off2);
  const floorSeconds = Math.min(f.seconds, f2.seconds);
  const bps = (s: number) => (n / s).toFixed(0);
  console.log("| run | blocks/s | seconds | vs floor |");
  console.log("| --- | ---: | ---: | ---: |");
  console.log(`| floor: plain Node script, same calls (baseline; best of 2) | ${bps(floorSeconds)} | ${floorSeconds.toFixed(2)} | 1.00x |`);
  for (const [label, r] of [["cache + singleflight on (defaults; best of 2)", on], ["cache + singleflight off (best of 2)", off]] as const) {
    console.log(`| BlockX, ${label}, first run | ${bps(r.first)} | ${r.first.toFixed(2)} | ${(floorSeconds / r.first).toFixed(2)}x |`);
    console.log(`| BlockX, ${label}, rerun | ${bps(r.rerun)} | ${r.rerun.toFixed(2)} | ${(floorSeconds / r.rerun).toFixed(2)}x |`);
  }
  console.log("");
  console.log(`- cache on / off, first run: ${(off.first / on.first).toFixed(2)}x; rerun: ${(off.rerun / on.rerun).toFixed(2)}x (above 1: the cache helps)`);
  console.log(`- rows: ${on.rows} and ${off.rows} (expected ${n} each); floor rows ${f.count}`);
} finally {
  await cleanup();
}
