/**
 * The logicalTypes backend over a REAL Ethereum node: ganache runs a real ERC-20 contract (Token.sol,
 * compiled by solc from npm; the committed artifact is checked against the source's digest), a
 * compiled Worker reads the node through CHAINS_CONFIG, and a backfill decodes every log of the token
 * by an ABI that knows only `Transfer`. Each holder's balance summed from the decoded amounts must
 * equal what this test reads from the node by `eth_call balanceOf` (plain fetch, no BlockX code);
 * the token's `Approval` logs, unknown to that ABI, are reported per log and fail nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeDeployData, encodeFunctionData, getAddress, type Abi, type Hex } from "viem";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../support/blockx-process";
import { recomputedBlockHash } from "../support/eth-header";
import { GanacheNode } from "../support/ganache";
import { RawTableReader } from "../support/raw-table-reader";
import { randomLanePrefix } from "../support/worker-double";
import { WorkerClient } from "../support/worker-client";

const CONTRACTS = join(import.meta.dir, "..", "support", "contracts");
const artifact = JSON.parse(readFileSync(join(CONTRACTS, "token-artifact.json"), "utf8")) as { sourceSha256: string; abi: Abi; bytecode: Hex };
const APPROVAL_TOPIC = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925";
/** 10^30 base units: far beyond 2^64, so any rounding through a double or an SQLite integer would show. */
const SUPPLY = 10n ** 30n;

let node: GanacheNode;
let token = "";
let head = 0;

async function send(tx: Record<string, string>): Promise<void> {
  const hash = await node.rpc("eth_sendTransaction", { gas: "0x100000", ...tx });
  const receipt = (await node.rpc("eth_getTransactionReceipt", hash)) as { status: string } | null;
  if (receipt !== null && receipt.status !== "0x1") throw new Error(`transaction ${JSON.stringify(tx)} reverted`);
}

beforeAll(async () => {
  node = await GanacheNode.start();
  const [owner] = node.accounts;
  const deploy = await node.rpc("eth_sendTransaction", { from: owner!, gas: "0x400000", data: encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode, args: ["BlockX Test", "BXT", SUPPLY] }) });
  token = ((await node.rpc("eth_getTransactionReceipt", deploy)) as { contractAddress: string }).contractAddress;
  const call = (functionName: string, args: unknown[]) => encodeFunctionData({ abi: artifact.abi, functionName, args });
  const accounts = node.accounts;
  // Spread the supply, then trade: transfers of odd sizes (some above 2^64), approvals, transferFrom,
  // some blocks with several transactions (mining paused while they are sent).
  for (let i = 1; i < accounts.length; i++) await send({ from: owner!, to: token, data: call("transfer", [accounts[i], SUPPLY / 20n + BigInt(i) * 1_000_003n]) });
  for (let k = 0; k < 40; k++) {
    const from = accounts[k % accounts.length]!;
    const to = accounts[(k * 7 + 3) % accounts.length]!;
    const amount = (k % 3 === 0 ? 2n ** 70n : 10n ** 15n) + BigInt(k) * 7_777_777n;
    if (k % 10 === 9) await node.rpc("miner_stop");
    await send({ from, to: token, data: call("transfer", [to, amount]) });
    if (k % 5 === 0) await send({ from, to: token, data: call("approve", [to, amount * 2n]) });
    if (k % 5 === 0) await send({ from: to, to: token, data: call("transferFrom", [from, accounts[(k + 1) % accounts.length], amount]) });
    if (k % 10 === 9) await node.rpc("miner_start");
  }
  head = await node.head();
}, 180_000);
afterAll(() => node?.stop());

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const DECODE_EVERY_LOG = `
ABI = ["event Transfer(address indexed from, address indexed to, uint256 value)"]

def main(ctx, input):
    logs = ctx.blockdb.logs(input['fromBlock'], input['toBlock'], address=input['token'])
    rows = []
    for d in ctx.logical_types.decode_logs(ABI, logs):
        ok = d['error'] is None
        rows.append({
            'block': d['blockNumber'],
            'log_index': d['logIndex'],
            'event': d['event'] or '',
            'from_address': d['args']['from'] if ok else '',
            'to_address': d['args']['to'] if ok else '',
            'amount': str(d['args']['value']) if ok else '',
            'is_int': ok and type(d['args']['value']) is int,
            'error': d['error'] or '',
        })
    return rows
`;

const BALANCE_AND_CALL = `
def main(ctx, input):
    abi = input['abi']
    lt = ctx.logical_types
    selector = lt.function_selector('balanceOf(address)')
    data = selector + input['holder'][2:].lower().rjust(64, '0')
    out = ctx.rpc.call('eth_call', {'to': input['token'], 'data': data}, 'latest')
    balance = lt.decode_result(abi, 'balanceOf', out)
    tx = ctx.rpc.call('eth_getTransactionByHash', input['tx'])
    call = lt.decode_call(abi, tx['input'])
    return {'balance': str(balance), 'exact': balance == int(input['expected']), 'selector': selector,
            'function': call['function'], 'to': call['args']['to'], 'amount': str(call['args']['value'])}
`;

async function startWorker() {
  const dir = mkdtempSync(join(tmpdir(), "blockx-lt-ganache-"));
  Bun.spawnSync(["chmod", "755", dir]);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const w = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: "2",
    TABLE_STORE_PATH: join(dir, "tables.sqlite"),
    CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [node.url], finalityDepth: 0 } } }),
  });
  cleanups.push(() => w.stop("SIGKILL"));
  const client = new WorkerClient(await w.grpcAddr());
  cleanups.push(() => client.close());
  return { dir, client };
}

async function runTask(client: WorkerClient, task: Task) {
  const submitted = await client.submitTask(task, "");
  if (!submitted.ok) throw new Error(submitted.details);
  const last = (await client.watch([task.taskId])).snapshots.at(-1)!;
  const result = await client.getTaskResult(task.taskId);
  if (!result.ok) throw new Error(result.details);
  if (last.state !== TaskState.SUCCEEDED) throw new Error(`task ended ${TaskState[last.state]}: ${JSON.stringify(result.value.firstError)}`);
  return result.value;
}

/** balanceOf asks the node itself: eth_call with the selector and the address word written here. */
async function balanceOf(holder: string): Promise<bigint> {
  const data = `0x70a08231${holder.slice(2).toLowerCase().padStart(64, "0")}`;
  return BigInt((await node.rpc("eth_call", { to: token, data }, "latest")) as string);
}

describe("logicalTypes over a real ERC-20 on ganache", () => {
  test("the committed bytecode is Token.sol's, compiled", () => {
    expect(artifact.sourceSha256).toBe(createHash("sha256").update(readFileSync(join(CONTRACTS, "Token.sol"))).digest("hex"));
  });

  test("a backfill decodes every Transfer; balances summed from the amounts equal balanceOf; Approval logs are reported, not fatal", async () => {
    const { dir, client } = await startWorker();
    const inputs = (from: number, to: number) => ({ chain: "dev", fromBlock: from, toBlock: to, token });
    // One call per 10 blocks, each with its own input (the token address rides along).
    const calls = [];
    for (let f = 0; f <= head; f += 10) calls.push(Buffer.from(JSON.stringify(inputs(f, Math.min(head, f + 9)))));
    await runTask(
      client,
      Task.fromPartial({
        taskId: "lt-backfill",
        functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: DECODE_EVERY_LOG, entry: "main" }, config: { $case: "inputs", inputs: { inputs: calls } } }),
        outputs: [{ handler: { $case: "normalTableWrite", normalTableWrite: { table: "token_logs" } } }],
      }),
    );
    const store = new RawTableReader(join(dir, "tables.sqlite"));
    const rows = store.query("token_logs", "ORDER BY block, log_index") as { block: number; event: string; from_address: string; to_address: string; amount: string; is_int: number; error: string }[];
    store.close();

    // Every log of the token, as the node lists it, came back once: Transfers decoded, Approvals reported.
    const nodeLogs = (await node.rpc("eth_getLogs", { fromBlock: "0x0", toBlock: "0x" + head.toString(16), address: token })) as { topics: string[] }[];
    expect(rows.length).toBe(nodeLogs.length);
    const transfers = rows.filter((r) => r.event === "Transfer");
    const reported = rows.filter((r) => r.event === "");
    expect(transfers.length).toBe(nodeLogs.filter((l) => l.topics.length === 3 && l.topics[0] !== APPROVAL_TOPIC).length);
    expect(reported.length).toBe(nodeLogs.filter((l) => l.topics[0] === APPROVAL_TOPIC).length);
    expect(reported.length).toBeGreaterThan(0);
    for (const r of reported) expect(r.error).toBe(`no event of the ABI has topic0 ${APPROVAL_TOPIC}`);
    expect(transfers.every((r) => r.is_int === 1 && r.error === "")).toBe(true);
    expect(transfers.some((r) => BigInt(r.amount) > 2n ** 64n)).toBe(true);

    // Balances from the decoded amounts, exact, equal the contract's own.
    const balances = new Map<string, bigint>();
    for (const t of transfers) {
      if (t.from_address !== getAddress(`0x${"0".repeat(40)}`)) balances.set(t.from_address, (balances.get(t.from_address) ?? 0n) - BigInt(t.amount));
      balances.set(t.to_address, (balances.get(t.to_address) ?? 0n) + BigInt(t.amount));
    }
    expect(balances.size).toBe(node.accounts.length);
    for (const [holder, sum] of balances) {
      expect(holder).toBe(getAddress(holder)); // EIP-55 checksummed
      expect(sum).toBe(await balanceOf(holder));
    }
    expect([...balances.values()].reduce((a, b) => a + b, 0n)).toBe(SUPPLY);
  }, 240_000);

  test("decode_result of an eth_call balanceOf and decode_call of a transfer's input", async () => {
    const { client } = await startWorker();
    const [, holder] = node.accounts;
    const logs = (await node.rpc("eth_getLogs", { fromBlock: "0x0", toBlock: "latest", address: token, topics: [null, null, `0x${holder!.slice(2).padStart(64, "0")}`] })) as { transactionHash: string; data: string }[];
    const expected = await balanceOf(holder!);
    const input = { chain: "dev", abi: artifact.abi, token, holder, tx: logs[0]!.transactionHash, expected: expected.toString() };
    const result = await runTask(
      client,
      Task.fromPartial({
        taskId: "lt-call",
        functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: BALANCE_AND_CALL, entry: "main" }, config: { $case: "inputs", inputs: { inputs: [Buffer.from(JSON.stringify(input))] } } }),
        outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
      }),
    );
    const value = JSON.parse(Buffer.from(result.returnValues[0]!).toString()) as Record<string, unknown>;
    expect(value.balance).toBe(expected.toString());
    expect(value.exact).toBe(true);
    expect(value.selector).toBe("0x70a08231");
    expect(value.to).toBe(getAddress(holder!));
    expect(["transfer", "transferFrom"]).toContain(value.function as string);
    expect(value.amount).toBe(BigInt(logs[0]!.data).toString());
  }, 120_000);

  test("the recomputation of block hashes the local-chain test uses gives ganache's own block hashes", async () => {
    for (const n of [0, 1, Math.floor(head / 2), head]) {
      const b = (await node.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as { hash: string };
      expect(recomputedBlockHash(b)).toBe(b.hash as Hex);
    }
  });
});
