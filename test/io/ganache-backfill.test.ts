/**
 * Backfills over a REAL Ethereum JSON-RPC node (ganache, started here with a hand-written
 * Transfer-emitting contract and a few hundred mined blocks) through a real Worker
 * (dist/blockx worker with CHAINS_CONFIG pointing at the node; tasks are submitted to it
 * directly, so a loaded machine's CPU red line in a Coordinator cannot get in the way). The
 * function reads blocks, receipts and logs through `blockdb` and balances through `rpc`; its
 * table must equal what
 * this test computes by asking the node directly with fetch. Then the node is stopped
 * mid-backfill: the task fails with the node's error, and no failed block has rows.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { RawTableReader } from "../support/raw-table-reader";
import { BlockxProcess } from "../support/blockx-process";
import { GanacheNode, TRANSFER_TOPIC } from "../support/ganache";
import { randomLanePrefix } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

const BLOCKS = 300;
let node: GanacheNode;
let head = 0;

beforeAll(async () => {
  node = await GanacheNode.start();
  await node.mine(BLOCKS, await node.deployEmitter());
  head = await node.head();
}, 120_000);
afterAll(() => node?.stop());

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BLOCK_FACTS = `
TRANSFER = '${TRANSFER_TOPIC}'

def main(ctx, input):
    n = input['blockNumber']
    b = ctx.blockdb.block(n)
    receipts = ctx.blockdb.receipts(n)
    logs = ctx.blockdb.logs(n, n, topics=[TRANSFER])
    miner_balance = ctx.rpc.call('eth_getBalance', b['miner'], hex(n))
    senders = sorted({t['from'] for t in b['transactions']})
    return [{
        'block': n,
        'hash': b['hash'],
        'tx_count': len(b['transactions']),
        'gas_used': sum(int(r['gasUsed'], 16) for r in receipts),
        'receipt_logs': sum(len(r['logs']) for r in receipts),
        'transfers': len(logs),
        'amount': str(sum(int(l['data'], 16) for l in logs)),
        'recipients': ','.join(sorted('0x' + l['topics'][2][26:] for l in logs)),
        'senders': ','.join(senders),
        'miner_balance': str(int(miner_balance, 16)),
    }]
`;

type Facts = { block: number; hash: string; tx_count: number; gas_used: number; receipt_logs: number; transfers: number; amount: string; recipients: string; senders: string; miner_balance: string };

/** expected asks the node directly (plain fetch, no BlockX code) for the same facts. */
async function expected(from: number, to: number): Promise<Facts[]> {
  type Tx = { hash: string; from: string };
  type Log = { blockNumber: string; data: string; topics: string[] };
  const logs = (await node.rpc("eth_getLogs", { fromBlock: "0x" + from.toString(16), toBlock: "0x" + to.toString(16), topics: [TRANSFER_TOPIC] })) as Log[];
  const rows: Facts[] = [];
  for (let n = from; n <= to; n++) {
    const b = (await node.rpc("eth_getBlockByNumber", "0x" + n.toString(16), true)) as { hash: string; miner: string; transactions: Tx[] };
    const receipts = (await Promise.all(b.transactions.map((t) => node.rpc("eth_getTransactionReceipt", t.hash)))) as { gasUsed: string; logs: unknown[] }[];
    const mine = logs.filter((l) => parseInt(l.blockNumber, 16) === n);
    const balance = (await node.rpc("eth_getBalance", b.miner, "0x" + n.toString(16))) as string;
    rows.push({
      block: n,
      hash: b.hash,
      tx_count: b.transactions.length,
      gas_used: receipts.reduce((s, r) => s + parseInt(r.gasUsed, 16), 0),
      receipt_logs: receipts.reduce((s, r) => s + r.logs.length, 0),
      transfers: mine.length,
      amount: mine.reduce((s, l) => s + BigInt(l.data), 0n).toString(),
      recipients: mine.map((l) => "0x" + l.topics[2]!.slice(26)).sort().join(","),
      senders: [...new Set(b.transactions.map((t) => t.from.toLowerCase()))].sort().join(","),
      miner_balance: BigInt(balance).toString(),
    });
  }
  return rows;
}

const NODE_ERROR = `
from blockx_executor import BackendError, JsonRpcError

def main(ctx, input):
    try:
        ctx.rpc.call('eth_getBalance', '0xnothex', 'latest')
    except JsonRpcError as e:
        return [{'block': input['blockNumber'], 'code': e.code, 'is_backend_error': isinstance(e, BackendError), 'message': e.message}]
`;

function factsTask(taskId: string, from: number, to: number, source = BLOCK_FACTS, table = "facts"): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: "dev", fromBlock: from, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

async function setup(chain: Record<string, unknown>, extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "blockx-ganache-"));
  Bun.spawnSync(["chmod", "755", dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const prefix = randomLanePrefix("block");
  const env = { ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!, BLOCKX_LOG_LEVEL: "info" };
  const w = BlockxProcess.spawn(["worker"], {
    ...env,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: prefix,
    EXECUTOR_COUNT: "2",
    TABLE_STORE_PATH: join(dir, "tables.sqlite"),
    CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [node.url], ...chain } } }),
    ...extra,
  });
  cleanups.push(() => w.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  return { dir, client };
}

/** submit hands the task straight to the Worker (a slot taken inline: no Coordinator needed here). */
async function submit(s: Awaited<ReturnType<typeof setup>>, task: Task): Promise<void> {
  const submitted = await s.client.submitTask(task, "");
  if (!submitted.ok) throw new Error(submitted.details);
}

function rowsOf(dir: string): Facts[] {
  if (!existsSync(join(dir, "tables.sqlite"))) return []; // the Worker creates the store at start
  const store = new RawTableReader(join(dir, "tables.sqlite"));
  try {
    return store.query("facts", "ORDER BY block").map((r) => {
      const { _chain, _scope_from, _scope_to, _run_seq, _block_hash, ...facts } = r;
      return facts as Facts;
    });
  } catch {
    return []; // the table exists once the first row is written
  } finally {
    store.close();
  }
}

describe("a backfill over a real Ethereum node (ganache)", () => {
  test("blocks, receipts, logs and balances read through blockdb and rpc equal the node's own answers", async () => {
    expect(head).toBeGreaterThanOrEqual(BLOCKS);
    const s = await setup({ finalityDepth: 0 });
    await submit(s, factsTask("ganache-1", 0, head));
    const last = (await s.client.watch(["ganache-1"])).snapshots.at(-1)!;
    const result = await s.client.getTaskResult("ganache-1");
    expect(result.ok && result.value.firstError).toBeUndefined();
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsTotal: head + 1, callsSucceeded: head + 1 });
    const want = await expected(0, head);
    // The chain must exercise every path: Transfer logs, multi-transaction blocks, empty blocks.
    expect(want.some((r) => r.transfers > 0)).toBe(true);
    expect(want.some((r) => r.tx_count > 1)).toBe(true);
    expect(want.some((r) => r.tx_count === 0)).toBe(true);
    expect(rowsOf(s.dir)).toEqual(want);
    // Each block's rows record the hash of the block they were computed from: the node's own.
    const recorded = new RawTableReader(join(s.dir, "tables.sqlite"));
    const hashes = recorded.query("facts", "ORDER BY block").map((r) => `${r._scope_to}:${r._block_hash}`);
    recorded.close();
    const nodeHashes = await Promise.all(want.map(async (_r, n) => `${n}:${((await node.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as { hash: string }).hash}`));
    expect(hashes).toEqual(nodeHashes);

    // A node's JSON-RPC error reaches the function as JsonRpcError with the node's own code (a read
    // method the allowlist passes, with a parameter the node refuses).
    const direct = (await (await fetch(node.url, { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getBalance", params: ["0xnothex", "latest"] }) })).json()) as { error: { code: number; message: string } };
    expect(direct.error.code).toBeNumber();
    await submit(s, factsTask("ganache-err", 3, 3, NODE_ERROR, "node_errors"));
    expect((await s.client.watch(["ganache-err"])).snapshots.at(-1)!.state).toBe(TaskState.SUCCEEDED);
    const store = new RawTableReader(join(s.dir, "tables.sqlite"));
    const [row] = store.query("node_errors");
    store.close();
    expect(row).toMatchObject({ block: 3, code: direct.error.code, is_backend_error: 1 });
    expect(row!.message).toBe(`rpc.call: JSON-RPC error ${direct.error.code} from chain dev node ${node.url}: ${direct.error.message}`);
  }, 180_000);

  test("the node stopped mid-backfill: calls retry within budget, then the task fails naming the endpoint; failed blocks have no rows", async () => {
    const s = await setup({ timeoutMs: 500, maxAttempts: 3, retryBackoffMs: 20, requestBudgetMs: 1_500 }, { TASK_MAX_INFLIGHT_CALLS: "2", CALL_MAX_ATTEMPTS: "2" });
    const want = await expected(0, head);
    await submit(s, factsTask("ganache-stop", 0, head));
    for (let i = 0; rowsOf(s.dir).length < 20; i++) {
      if (i > 6000) throw new Error("no rows after 60 s");
      await Bun.sleep(10);
    }
    await node.stop();
    const last = (await s.client.watch(["ganache-stop"])).snapshots.at(-1)!;
    expect(last.state).toBe(TaskState.FAILED);
    const result = await s.client.getTaskResult("ganache-stop");
    if (!result.ok) throw new Error(result.details);
    const error = result.value.firstError!;
    expect(error.message).toContain("BackendUnavailable");
    // The rpc client retried (3 tries within its 1,500 ms budget) before giving up.
    expect(Number(/chain dev: no answer after (\d+) attempt\(s\)/.exec(error.message)?.[1])).toBeGreaterThanOrEqual(2);
    expect(error.message).toContain(node.url);
    const failedBlock = (JSON.parse(error.callInput) as { blockNumber: number }).blockNumber;
    const rows = rowsOf(s.dir);
    expect(rows.length).toBeGreaterThanOrEqual(20);
    expect(rows.length).toBeLessThan(head + 1);
    expect(rows.map((r) => r.block)).not.toContain(failedBlock);
    // Every row present is whole and right: a block either has its row or none.
    for (const r of rows) expect(r).toEqual(want[r.block]!);
  }, 180_000);
});
