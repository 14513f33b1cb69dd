/**
 * Every example of examples/ run as a person would run it: its task file parsed with the
 * proto3 JSON mapping of worker.v1.Task, its functions in a Worker's FUNCTIONS_DIR, submitted
 * to compiled Workers (block and bundle), and the output checked against values recomputed
 * from the same synthetic chain in TypeScript, independently of the Python code.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Task, TaskState } from "../../src/gen/worker/v1/worker";
import { getAddress } from "viem";
import { SWAP_TOPIC, SYNC_TOPIC, SyntheticChain, TRANSFER_TOPIC } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { RawTableReader } from "../support/raw-table-reader";
import { BlockxProcess } from "../support/blockx-process";
import { randomLanePrefix } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

const EXAMPLES = join(import.meta.dir, "..", "..", "examples");
const chain = new SyntheticChain("ethereum");

let dir = "";
let block: { proc: BlockxProcess; client: WorkerClient };
let bundle: { proc: BlockxProcess; client: WorkerClient };

async function startWorker(role: "worker" | "bundle-worker") {
  const proc = BlockxProcess.spawn([role], {
    ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix(role === "worker" ? "block" : "bundle"),
    EXECUTOR_COUNT: "2",
    TABLE_STORE_PATH: join(dir, "tables.sqlite"),
    FUNCTIONS_DIR: join(dir, "functions"),
  });
  return { proc, client: new WorkerClient(await proc.grpcAddr()) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "blockx-examples-"));
  Bun.spawnSync(["chmod", "755", dir]);
  mkdirSync(join(dir, "functions"));
  // The way the README says: every example's .py file into FUNCTIONS_DIR.
  for (const ex of readdirSync(EXAMPLES, { withFileTypes: true })) {
    if (!ex.isDirectory()) continue;
    for (const f of readdirSync(join(EXAMPLES, ex.name))) if (f.endsWith(".py")) copyFileSync(join(EXAMPLES, ex.name, f), join(dir, "functions", f));
  }
  [block, bundle] = await Promise.all([startWorker("worker"), startWorker("bundle-worker")]);
});

afterAll(async () => {
  for (const w of [block, bundle]) {
    w?.client.close();
    await w?.proc.stop("SIGKILL");
  }
  rmSync(dir, { recursive: true, force: true });
});

/** taskFile reads examples/<name>/task.json as worker.v1.Task JSON and gives it a task id. */
function taskFile(name: string, taskId: string): Task {
  const task = Task.fromJSON(JSON.parse(readFileSync(join(EXAMPLES, name, "task.json"), "utf8")));
  return { ...task, taskId };
}

async function run(w: { client: WorkerClient }, task: Task) {
  // A function file appears in FUNCTIONS_DIR within a second of the Worker starting: retry
  // the submit while the name is still unknown.
  for (let i = 0; ; i++) {
    const submitted = await w.client.submitTask(task);
    if (submitted.ok) break;
    if (i > 50 || !submitted.details.includes("function")) throw new Error(submitted.details);
    await Bun.sleep(200);
  }
  const last = (await w.client.watch([task.taskId])).snapshots.at(-1)!;
  const result = await w.client.getTaskResult(task.taskId);
  if (!result.ok) throw new Error(result.details);
  if (last.state !== TaskState.SUCCEEDED) throw new Error(`task ${task.taskId} ended ${TaskState[last.state]}: ${JSON.stringify(result.value.firstError)}`);
  return result.value;
}

function rowsOf(table: string, columns: string[], order: string) {
  const store = new RawTableReader(join(dir, "tables.sqlite"));
  try {
    return store.query(table, `ORDER BY ${order}`).map((r) => Object.fromEntries(columns.map((c) => [c, r[c]])));
  } finally {
    store.close();
  }
}

describe("examples/", () => {
  test("block-stats: one row per block of the task file's range, every column matching the chain", async () => {
    const task = taskFile("block-stats", "ex-block-stats");
    const cfg = task.functionCallConfig!.config!;
    if (cfg.$case !== "blockTable") throw new Error("block-stats/task.json must be a blockTable task");
    const { fromBlock, toBlock } = cfg.blockTable;
    expect(toBlock - fromBlock + 1).toBe(3000);
    const result = await run(block, task);
    expect(result.writes).toEqual([{ table: "block_stats", handler: "block_table_write", rowsWritten: 3000, callsWritten: 3000 }]);
    const expected = [];
    for (let n = fromBlock; n <= toBlock; n++) {
      const b = chain.block(n, false)!;
      const gasUsed = parseInt(b.gasUsed, 16);
      const gasLimit = parseInt(b.gasLimit, 16);
      expected.push({
        block: n,
        timestamp: parseInt(b.timestamp, 16),
        tx_count: b.transactions.length,
        gas_used: gasUsed,
        gas_limit: gasLimit,
        gas_used_ppm: Math.floor((gasUsed * 1_000_000) / gasLimit),
        base_fee_per_gas: parseInt(b.baseFeePerGas, 16),
      });
    }
    expect(rowsOf("block_stats", Object.keys(expected[0]!), "block")).toEqual(expected);
  }, 120_000);

  test("erc20-transfers: every ERC-20 Transfer log of the range, decoded, on the bundle cluster", async () => {
    const task = taskFile("erc20-transfers", "ex-erc20");
    const cfg = task.functionCallConfig!.config!;
    if (cfg.$case !== "blockBundle") throw new Error("erc20-transfers/task.json must be a blockBundle task");
    const { fromBlock, toBlock, bundleSize } = cfg.blockBundle;
    const result = await run(bundle, task);
    expect(result.snapshot!.callsTotal).toBe(Math.ceil((toBlock - fromBlock + 1) / bundleSize));
    const expected = [];
    for (let n = fromBlock; n <= toBlock; n++) {
      for (const r of chain.blockReceipts(n)!) {
        for (const log of r.logs) {
          if (log.topics[0] !== TRANSFER_TOPIC || log.topics.length !== 3) continue;
          expected.push({
            block: n,
            log_index: parseInt(log.logIndex, 16),
            tx_hash: r.transactionHash,
            token: getAddress(log.address),
            from_address: getAddress(`0x${log.topics[1]!.slice(-40)}`),
            to_address: getAddress(`0x${log.topics[2]!.slice(-40)}`),
            amount: BigInt(log.data).toString(),
          });
        }
      }
    }
    expect(expected.length).toBeGreaterThan(1000);
    expect(rowsOf("erc20_transfers", Object.keys(expected[0]!), "block, log_index")).toEqual(expected);
  }, 120_000);

  test("uniswap-swaps: every Swap of the range with the reserves of the Sync before it, decoded, on the bundle cluster", async () => {
    const task = taskFile("uniswap-swaps", "ex-swaps");
    const cfg = task.functionCallConfig!.config!;
    if (cfg.$case !== "blockBundle") throw new Error("uniswap-swaps/task.json must be a blockBundle task");
    const { fromBlock, toBlock } = cfg.blockBundle;
    await run(bundle, task);
    // Recomputed by slicing the logs' words here, not by the ABI decoder the example uses.
    const words = (data: string) => Array.from({ length: (data.length - 2) / 64 }, (_, i) => BigInt(`0x${data.slice(2 + 64 * i, 66 + 64 * i)}`).toString());
    const expected = [];
    for (let n = fromBlock; n <= toBlock; n++) {
      for (const r of chain.blockReceipts(n)!) {
        let reserves: string[] = [];
        for (const log of r.logs) {
          if (log.topics[0] === SYNC_TOPIC) reserves = words(log.data);
          if (log.topics[0] !== SWAP_TOPIC) continue;
          const [a0in, a1in, a0out, a1out] = words(log.data);
          expected.push({
            block: n,
            log_index: parseInt(log.logIndex, 16),
            tx_hash: r.transactionHash,
            pair: getAddress(log.address),
            sender: getAddress(`0x${log.topics[1]!.slice(-40)}`),
            to_address: getAddress(`0x${log.topics[2]!.slice(-40)}`),
            amount0_in: a0in,
            amount1_in: a1in,
            amount0_out: a0out,
            amount1_out: a1out,
            reserve0: reserves[0],
            reserve1: reserves[1],
          });
        }
      }
    }
    expect(expected.length).toBeGreaterThan(500);
    expect(expected.some((e) => BigInt(e.amount1_out!) > 2n ** 64n)).toBe(true); // beyond any SQLite integer: kept exact as text
    expect(rowsOf("uniswap_swaps", Object.keys(expected[0]!), "block, log_index")).toEqual(expected);
  }, 180_000);

  test("fanout: per-range totals from one sub-call per block, returned in input order", async () => {
    const task = taskFile("fanout", "ex-fanout");
    const cfg = task.functionCallConfig!.config!;
    if (cfg.$case !== "inputs") throw new Error("fanout/task.json must be an inputs task");
    const inputs = cfg.inputs.inputs.map((b) => JSON.parse(Buffer.from(b).toString()) as { chain: string; fromBlock: number; toBlock: number });
    const result = await run(block, task);
    const values = result.returnValues.map((v) => JSON.parse(Buffer.from(v).toString()));
    const expected = inputs.map(({ fromBlock, toBlock }) => {
      let tx = 0;
      let gas = 0;
      let transfers = 0;
      let busiest = { block: -1, tx: -1 };
      for (let n = fromBlock; n <= toBlock; n++) {
        const b = chain.block(n, false)!;
        tx += b.transactions.length;
        gas += parseInt(b.gasUsed, 16);
        transfers += chain.blockReceipts(n)!.reduce((k, r) => k + r.logs.filter((l) => l.topics[0] === TRANSFER_TOPIC).length, 0);
        if (b.transactions.length > busiest.tx) busiest = { block: n, tx: b.transactions.length };
      }
      return { fromBlock, toBlock, blocks: toBlock - fromBlock + 1, tx_count: tx, gas_used: gas, transfers, busiest_block: busiest.block };
    });
    expect(values).toEqual(expected);
    expect(result.snapshot!.callsTotal).toBe(inputs.length);
  }, 120_000);

  test("a task file naming a function FUNCTIONS_DIR does not have is refused with a clear error", async () => {
    const task = taskFile("block-stats", "ex-missing");
    task.functionCallConfig!.function!.name = "no_such_function";
    const submitted = await block.client.submitTask(task);
    expect(submitted.ok).toBe(false);
    if (!submitted.ok) expect(submitted.details).toContain("no_such_function");
  }, 30_000);
});
