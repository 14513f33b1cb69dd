/**
 * bench/worker/backfill.ts: backfill throughput in blocks/s. One block_table task over the local
 * test chain through one compiled Worker (dist/blockx worker, real etcd, EXECUTOR_COUNT 8 by
 * default), the function reading each block (full transactions) through ctx.io('localtestservice',
 * 'eth_getBlockByNumber', ...) and returning (block, tx_count, gas_used); rows written to SQLite
 * (TABLE_STORE_PATH in a temp dir). Timed from SubmitTask to the terminal snapshot. At the end the
 * table is checked to hold exactly one row per block.
 *
 * The blocks' JSON text is rendered once up front (not timed) into a block store file
 * (`blockx localchain render`); the Worker serves the blocks from it (LOCALTESTSERVICE_BLOCK_STORE),
 * as a block database serves stored bytes.
 *
 * Floor of the same run: one plain python3 process (floor.py) that reads the same file, json.loads
 * each block and computes the same row; its own elapsed time is used.
 *
 * `--generated` adds a third line: the same backfill with every block generated on the fly by the
 * synthetic chain (about a millisecond of JavaScript per block), to show what the generator costs.
 *
 *   bun bench/worker/backfill.ts [--blocks 20000] [--from 0] [--executors 8] [--generated] [--log-level info]
 *
 * Aim: pipeline >= 1.3x the floor on 2 cores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { writeBlockStore } from "../../src/runtime/chains/localtestservice/block-text-store";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { RawTableReader } from "../../test/support/raw-table-reader";
import { BlockxProcess } from "../../test/support/blockx-process";
import { treeCpuSeconds } from "../../test/support/proc-scan";
import { EtcdProcess } from "../../test/support/etcd";
import { randomLanePrefix } from "../../test/support/worker-double";
import { TERMINAL_STATES, WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({
  options: {
    blocks: { type: "string", default: "20000" },
    from: { type: "string", default: "0" },
    executors: { type: "string", default: "8" },
    "log-level": { type: "string", default: "info" },
    generated: { type: "boolean", default: false },
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

const storePath = join(dir, "blocks.store");

/** render: the measured range's blocks into the store both sides read (untimed). */
function render(): { seconds: number; mb: number } {
  const chain = new SyntheticChain("ethereum");
  const t0 = performance.now();
  const { bytes } = writeBlockStore(storePath, chain, FROM, TO);
  return { seconds: (performance.now() - t0) / 1000, mb: bytes / 1e6 };
}

/** floor: floor.py over the store file. */
async function floor(): Promise<{ perSecond: number; seconds: number; count: number; cpuMsPerBlock: number }> {
  const proc = Bun.spawn(["python3", join(import.meta.dir, "floor.py"), storePath], { stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`floor.py exited with ${code}`);
  const o = JSON.parse(text.trim()) as { seconds: number; count: number; cpu_seconds: number };
  return { perSecond: o.count / o.seconds, seconds: o.seconds, count: o.count, cpuMsPerBlock: (o.cpu_seconds * 1000) / o.count };
}

/** pipeline: one block_table task of BLOCKS blocks through a fresh compiled Worker. */
async function pipeline(fromStore: boolean): Promise<{ perSecond: number; seconds: number; state: string; succeeded: number; rows: number; distinct: number; inRange: number; workerCpuMs: number; executorsCpuMs: number }> {
  const dbPath = join(dir, `tables-${fromStore ? "store" : "generated"}.sqlite`);
  const w = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: etcd!.endpoint,
    BLOCKX_LOG_LEVEL: values["log-level"],
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: values.executors,
    TABLE_STORE_PATH: dbPath,
    ...(fromStore ? { LOCALTESTSERVICE_BLOCK_STORE: storePath } : {}),
  });
  blockx.push(w);
  const client = new WorkerClient(await w.grpcAddr());
  try {
    // Warm-up on blocks outside the measured range, into another table.
    const run = async (taskId: string, from: number, to: number, table: string) => {
      const slot = await client.requestTaskSlot(taskId);
      if (!slot.ok) throw new Error(`requestTaskSlot: ${slot.details}`);
      const cpu0 = treeCpuSeconds(w.proc.pid);
      const t0 = performance.now();
      const sub = await client.submitTask(blockTask(taskId, from, to, table), slot.value.slotId);
      if (!sub.ok) throw new Error(`submit: ${sub.details}`);
      const { snapshots, error } = await client.watch([taskId]);
      const seconds = (performance.now() - t0) / 1000;
      const cpu1 = treeCpuSeconds(w.proc.pid);
      const cpu = { worker: cpu1.self - cpu0.self, executors: cpu1.children - cpu0.children };
      if (error) throw error;
      const last = snapshots.at(-1)!;
      if (!TERMINAL_STATES.includes(last.state)) throw new Error(`watch ended in ${TaskState[last.state]}`);
      return { seconds, last, cpu };
    };
    await run("warm", TO + 1, TO + 500, "warm_stats");
    const { seconds, last, cpu } = await run("backfill", FROM, TO, "block_stats");
    const store = new RawTableReader(dbPath);
    const rows = store.query("block_stats").map((r) => Number(r.block));
    store.close();
    const distinct = new Set(rows).size;
    const inRange = rows.filter((b) => b >= FROM && b <= TO).length;
    return {
      perSecond: BLOCKS / seconds,
      seconds,
      state: TaskState[last.state]!,
      succeeded: last.callsSucceeded,
      rows: rows.length,
      distinct,
      inRange,
      workerCpuMs: (cpu.worker * 1000) / BLOCKS,
      executorsCpuMs: (cpu.executors * 1000) / BLOCKS,
    };
  } finally {
    client.close();
    for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  }
}

try {
  etcd = await EtcdProcess.start();
  console.log(`Backfill: ${BLOCKS} local-chain blocks (${FROM}..${TO}, full transactions) through one compiled Worker, EXECUTOR_COUNT=${values.executors}, rows to SQLite; floor = one python3 json.loads + same function over the same block store, same run\n`);
  const r = render();
  const p = await pipeline(true);
  const f = await floor();
  const g = values.generated ? await pipeline(false) : undefined;
  console.log("| measure | floor: one python3 (baseline) | pipeline, blocks from the store | ratio (pipeline / floor) |");
  console.log("| --- | ---: | ---: | ---: |");
  console.log(`| blocks/s | ${f.perSecond.toFixed(0)} | ${p.perSecond.toFixed(0)} | ${(p.perSecond / f.perSecond).toFixed(2)}x |`);
  console.log(`| seconds for ${BLOCKS} blocks | ${f.seconds.toFixed(2)} | ${p.seconds.toFixed(2)} | |`);
  if (g) console.log(`| pipeline, blocks generated on the fly: blocks/s | | ${g.perSecond.toFixed(0)} | ${(g.perSecond / f.perSecond).toFixed(2)}x |`);
  const pipeCpu = p.workerCpuMs + p.executorsCpuMs;
  console.log(`| CPU ms per block | ${f.cpuMsPerBlock.toFixed(3)} | ${pipeCpu.toFixed(3)} (Worker ${p.workerCpuMs.toFixed(3)} + executors ${p.executorsCpuMs.toFixed(3)}) | ${(pipeCpu / f.cpuMsPerBlock).toFixed(2)}x the CPU |`);
  console.log("");
  console.log(`On 2 idle cores the pipeline could reach at most ${((2 / pipeCpu) * 1000).toFixed(0)} blocks/s = ${((2 * f.cpuMsPerBlock) / pipeCpu).toFixed(2)}x the floor (2 x floor CPU / pipeline CPU per block).`);
  console.log(`(block store: ${r.mb.toFixed(0)} MB of JSON lines, rendered in ${r.seconds.toFixed(1)} s, not timed; floor rows ${f.count})`);
  for (const [name, run] of [["store", p], ["generated", g]] as const) {
    if (!run) continue;
    const exact = run.rows === BLOCKS && run.distinct === BLOCKS && run.inRange === BLOCKS;
    console.log(`- ${name}: task ${run.state}, ${run.succeeded} calls ok; block_stats ${run.rows} rows, ${run.distinct} distinct, ${run.inRange} in range; exactly one row per block: ${exact ? "**yes**" : "**NO**"}`);
  }
  console.log(`- pipeline >= ${AIM}x floor: ${p.perSecond / f.perSecond >= AIM ? "**met**" : "**not met**"} (${(p.perSecond / f.perSecond).toFixed(2)}x)`);
} finally {
  await cleanup();
}
