/**
 * bench/worker/backfill.ts: backfill throughput in blocks/s. One block_table task over the local
 * test chain through one compiled Worker (dist/blockx worker, real etcd, EXECUTOR_COUNT 8 by
 * default), the function reading each block (full transactions) through ctx.io('localtestservice',
 * 'eth_getBlockByNumber', ...) and returning (block, tx_count, gas_used); rows written to SQLite
 * (TABLE_STORE_PATH in a temp dir). Timed from SubmitTask to the terminal snapshot. At the end the
 * table is checked to hold exactly one row per block.
 *
 * Floor of the same run: the same blocks' JSON text, generated up front (not timed) with
 * SyntheticChain and written as JSON lines to a temp file, then one plain python3 process
 * (floor.py) that json.loads each line and computes the same row; its own elapsed time is used.
 *
 *   bun bench/worker/backfill.ts [--blocks 20000] [--from 0] [--executors 8] [--log-level info]
 *
 * Aim: pipeline >= 1.3x the floor on 2 cores.
 */
import { mkdtempSync, rmSync, writeSync, openSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { SyntheticChain } from "../../src/worker/backends/localtestservice/synthetic-chain";
import { SqliteTableStore } from "../../src/worker/writers/table-store";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { randomLanePrefix } from "../../test/support/worker-double";
import { TERMINAL_STATES, WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({
  options: {
    blocks: { type: "string", default: "20000" },
    from: { type: "string", default: "0" },
    executors: { type: "string", default: "8" },
    "log-level": { type: "string", default: "info" },
  },
});
const BLOCKS = Number(values.blocks);
const FROM = Number(values.from);
const TO = FROM + BLOCKS - 1;
const AIM = 1.3;

const BLOCK_STATS = [
  "def main(ctx, input):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber']})",
  "    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)}]",
].join("\n");

function blockTask(taskId: string, from: number, to: number, table: string): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: BLOCK_STATS, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-backfill-"));
Bun.spawnSync(["chmod", "755", dir]);
let etcd: EtcdProcess | undefined;
const blockx: BlockxProcess[] = [];
async function cleanup(): Promise<void> {
  for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  await etcd?.destroy();
  etcd = undefined;
  rmSync(dir, { recursive: true, force: true });
}
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

/** floor: generate the blocks' JSON lines (untimed), then time floor.py over them. */
async function floor(): Promise<{ perSecond: number; seconds: number; count: number; genSeconds: number; mb: number }> {
  const path = join(dir, "blocks.jsonl");
  const chain = new SyntheticChain("ethereum");
  const t0 = performance.now();
  const fd = openSync(path, "w");
  let bytes = 0;
  for (let n = FROM; n <= TO; n++) {
    const line = JSON.stringify(chain.block(n, true)) + "\n";
    bytes += line.length;
    writeSync(fd, line);
  }
  closeSync(fd);
  const genSeconds = (performance.now() - t0) / 1000;
  const proc = Bun.spawn(["python3", join(import.meta.dir, "floor.py"), path], { stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  rmSync(path, { force: true });
  if (code !== 0) throw new Error(`floor.py exited with ${code}`);
  const o = JSON.parse(text.trim()) as { seconds: number; count: number };
  return { perSecond: o.count / o.seconds, seconds: o.seconds, count: o.count, genSeconds, mb: bytes / 1e6 };
}

/** pipeline: one block_table task of BLOCKS blocks through a fresh compiled Worker. */
async function pipeline(): Promise<{ perSecond: number; seconds: number; state: string; succeeded: number; rows: number; distinct: number; inRange: number }> {
  const dbPath = join(dir, "tables.sqlite");
  const w = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: etcd!.endpoint,
    BLOCKX_LOG_LEVEL: values["log-level"],
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: values.executors,
    TABLE_STORE_PATH: dbPath,
  });
  blockx.push(w);
  const client = new WorkerClient(await w.grpcAddr());
  try {
    // Warm-up on blocks outside the measured range, into another table.
    const run = async (taskId: string, from: number, to: number, table: string) => {
      const slot = await client.requestTaskSlot(taskId);
      if (!slot.ok) throw new Error(`requestTaskSlot: ${slot.details}`);
      const t0 = performance.now();
      const sub = await client.submitTask(blockTask(taskId, from, to, table), slot.value.slotId);
      if (!sub.ok) throw new Error(`submit: ${sub.details}`);
      const { snapshots, error } = await client.watch([taskId]);
      const seconds = (performance.now() - t0) / 1000;
      if (error) throw error;
      const last = snapshots.at(-1)!;
      if (!TERMINAL_STATES.includes(last.state)) throw new Error(`watch ended in ${TaskState[last.state]}`);
      return { seconds, last };
    };
    await run("warm", TO + 1, TO + 500, "warm_stats");
    const { seconds, last } = await run("backfill", FROM, TO, "block_stats");
    const store = new SqliteTableStore(dbPath);
    const rows = store.query("block_stats").map((r) => Number(r.block));
    store.close();
    const distinct = new Set(rows).size;
    const inRange = rows.filter((b) => b >= FROM && b <= TO).length;
    return { perSecond: BLOCKS / seconds, seconds, state: TaskState[last.state]!, succeeded: last.callsSucceeded, rows: rows.length, distinct, inRange };
  } finally {
    client.close();
    for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  }
}

try {
  etcd = await EtcdProcess.start();
  console.log(`Backfill: ${BLOCKS} local-chain blocks (${FROM}..${TO}, full transactions) through one compiled Worker, EXECUTOR_COUNT=${values.executors}, rows to SQLite; floor = one python3 json.loads + same function, same run\n`);
  const p = await pipeline();
  const f = await floor();
  console.log("| measure | floor: one python3 (baseline) | pipeline | ratio (pipeline / floor) |");
  console.log("| --- | ---: | ---: | ---: |");
  console.log(`| blocks/s | ${f.perSecond.toFixed(0)} | ${p.perSecond.toFixed(0)} | ${(p.perSecond / f.perSecond).toFixed(2)}x |`);
  console.log(`| seconds for ${BLOCKS} blocks | ${f.seconds.toFixed(2)} | ${p.seconds.toFixed(2)} | |`);
  console.log("");
  console.log(`(floor input: ${f.mb.toFixed(0)} MB of JSON lines, generated in ${f.genSeconds.toFixed(1)} s, not timed; floor rows ${f.count})`);
  console.log(`task ${p.state}, ${p.succeeded} calls ok; table block_stats: ${p.rows} rows, ${p.distinct} distinct blocks, ${p.inRange} in range`);
  const exact = p.rows === BLOCKS && p.distinct === BLOCKS && p.inRange === BLOCKS;
  console.log(`- exactly one row per block: ${exact ? "**yes**" : "**NO**"}`);
  console.log(`- pipeline >= ${AIM}x floor: ${p.perSecond / f.perSecond >= AIM ? "**met**" : "**not met**"} (${(p.perSecond / f.perSecond).toFixed(2)}x)`);
} finally {
  await cleanup();
}
