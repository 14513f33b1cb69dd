/**
 * A reorganisation while a block-table call runs (issue 50 item 2, the recorded hash): the Worker
 * reads the block's hash as the call starts and again before its commit; anvil replaces the block
 * in between, so the first attempt is not written (BACKEND_RETRYABLE) and the retry's rows record
 * the canonical block's hash. The compiled Worker, anvil behind a relay that counts what is asked
 * (so the test knows when the call is under way), the SQLite table read with plain SQL.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { AnvilNode, ANVIL_CHAIN_ID } from "../support/anvil";
import { BlockxProcess } from "../support/blockx-process";
import { LyingNode } from "../support/lying-node";
import { RawTableReader } from "../support/raw-table-reader";
import { randomLanePrefix } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

let anvil: AnvilNode;
let relay: LyingNode;
const dir = mkdtempSync(join(tmpdir(), "blockx-reorg-call-"));
Bun.spawnSync(["chmod", "755", dir]);
beforeAll(async () => {
  anvil = await AnvilNode.start();
  await anvil.mine(10);
  relay = new LyingNode(anvil.url);
}, 60_000);
afterAll(async () => {
  relay?.stop();
  await anvil?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The call says it has started (an eth_getBalance), then waits until the head reaches 13 (the test moves it there after the reorganisation). */
const FN = `
import time
def main(ctx, input):
    ctx.rpc.call("eth_getBalance", "0x0000000000000000000000000000000000000001", "latest")
    while ctx.blockdb.head() < 13:
        time.sleep(0.05)
    return [{"block": input["blockNumber"]}]
`;

test("a block replaced while its call ran is not written from that call: the call is retried, and the row records the canonical block's hash", async () => {
  const tables = join(dir, "tables.sqlite");
  const w = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: "1",
    TABLE_STORE_PATH: tables,
    CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [relay.url], chainId: ANVIL_CHAIN_ID } } }), // finality depth 64: block 10 is not final, never cached
  });
  const client = new WorkerClient(await w.grpcAddr());
  try {
    const before = (await anvil.block(10)).hash;
    const task = Task.fromPartial({
      taskId: "reorg-under-call",
      functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: FN, entry: "main" }, config: { $case: "blockTable", blockTable: { chain: "dev", fromBlock: 10, toBlock: 10 } } }),
      outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "rows" } } }],
    });
    const submitted = await client.submitTask(task, "");
    if (!submitted.ok) throw new Error(submitted.details);
    // The call is under way once it asked its eth_getBalance (its block's hash was asked before it started).
    while (relay.count("eth_getBalance") < 1) await Bun.sleep(10);
    expect(relay.count("eth_getBlockByNumber")).toBeGreaterThanOrEqual(1);
    await anvil.reorg(2); // blocks 9 and 10 are other blocks now
    await anvil.mine(3); // head 13: the call returns
    const after = (await anvil.block(10)).hash;
    expect(after).not.toBe(before);
    const last = (await client.watch(["reorg-under-call"])).snapshots.at(-1)!;
    expect(last).toMatchObject({ state: TaskState.SUCCEEDED, callsSucceeded: 1, callsRetried: 1 });
    const raw = new RawTableReader(tables);
    const rows = raw.query("rows", "ORDER BY block");
    raw.close();
    expect(rows.map((r) => [r.block, r._block_hash])).toEqual([[10, after]]);
    const retried = await w.waitForLog((l) => String(l.msg).includes("retrying") && l.code === "BACKEND_RETRYABLE");
    expect(retried).toBeDefined();
  } finally {
    client.close();
    await w.stop("SIGKILL");
  }
}, 120_000);
