/**
 * Trust no node blindly (issue 50 item 3): each check against a real node (anvil) behind a real
 * HTTP JSON-RPC server that lies in that one way: another chain id (at start and after a
 * reconnect), a head far ahead or going backwards, a null block, a block of another number,
 * receipts of another block, a broken parent link. Plus the finality depth a chain id implies.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseChainsConfig } from "../../src/common/config/chains-config";
import { ChainRouter } from "../../src/runtime/chains/router/chain-router";
import { BackendRegistry } from "../../src/runtime/io/backends/backend-registry";
import { blockdbBackend } from "../../src/runtime/io/backends/blockdb-backend";
import { rpcBackend } from "../../src/runtime/io/backends/rpc-backend";
import { IoSubsystem, type IoConfig } from "../../src/runtime/io/io-subsystem";
import { RawJson, type JsonValue } from "../../src/runtime/json/raw-json";
import type { IoResult } from "../../src/runtime/io/io-subsystem";

/** text: an IO answer's JSON text (an error's type instead). */
function text(r: IoResult): string {
  return r.answer.ok ? (r.answer.value instanceof RawJson ? r.answer.value.text : JSON.stringify(r.answer.value)) : `error ${r.answer.error.type}`;
}
import { AnvilNode, ANVIL_CHAIN_ID } from "../support/anvil";
import { LyingNode } from "../support/lying-node";
import { BlockxProcess } from "../support/blockx-process";
import { randomLanePrefix } from "../support/worker-double";

let anvil: AnvilNode;
let lying: LyingNode;
beforeAll(async () => {
  anvil = await AnvilNode.start();
  await anvil.mine(20);
  // Block 21 carries one transaction (anvil's first account pays its second): its receipt is real.
  const accounts = (await anvil.rpc("eth_accounts")) as string[];
  await anvil.rpc("eth_sendTransaction", { from: accounts[0]!, to: accounts[1]!, value: "0x1" });
  lying = new LyingNode(anvil.url);
}, 60_000);
afterAll(async () => {
  lying?.stop();
  await anvil?.stop();
});

function registry(chain: Record<string, JsonValue> = {}): BackendRegistry {
  const router = new ChainRouter(parseChainsConfig({ chains: { dev: { source: "rpc", endpoints: [lying.url], maxAttempts: 2, retryBackoffMs: 0, ...chain } } }), { localTestChain: null });
  return new BackendRegistry().register(blockdbBackend(router)).register(rpcBackend(router));
}

async function failure(r: BackendRegistry, backend: string, op: string, params: JsonValue): Promise<{ type: string; message: string; retryable?: boolean }> {
  const a = await r.call(backend, op, params);
  if (a.ok) throw new Error(`expected an error, got ${JSON.stringify(a.value).slice(0, 200)}`);
  return a.error;
}

const CONFIG: IoConfig = {
  cacheMaxBytes: 16 * 1024 * 1024,
  singleflight: true,
  taskWindow: 8,
  finalityDepth: 3,
  headTtlMs: 1,
  admission: { initialLimit: 8, minLimit: 1, maxLimit: 16, queueSize: 64 },
  readOnly: false,
};

/** toLie: a hex quantity. */
const hex = (n: number) => "0x" + n.toString(16);

describe("chain id", () => {
  test("at start: a node of another chain fails the request with ChainIdMismatch naming both ids (never retried)", async () => {
    lying.lie = () => undefined;
    const e = await failure(registry({ chainId: 1 }), "blockdb", "block", { chain: "dev", number: 1 });
    expect(e.type).toBe("ChainIdMismatch");
    expect(e.message).toContain(`reports chain id ${ANVIL_CHAIN_ID}`);
    expect(e.message).toContain("chainId 1 for dev");
    expect(e.retryable).toBeUndefined();
    const ok = await registry({ chainId: ANVIL_CHAIN_ID }).call("blockdb", "block", { chain: "dev", number: 1 });
    expect(ok.ok).toBe(true);
  });

  test("at a Worker's start: a node of another chain is named in its log before any call reaches it", async () => {
    lying.lie = () => undefined;
    const w = BlockxProcess.spawn(["worker"], {
      ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
      WORKER_LISTEN: "127.0.0.1:0",
      WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
      EXECUTOR_COUNT: "1",
      TABLE_STORE_PATH: join(mkdtempSync(join(tmpdir(), "blockx-trust-")), "tables.sqlite"),
      CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [lying.url], chainId: 1 } } }),
    });
    try {
      const line = await w.waitForLog((l) => l.component === "chains" && l.level === "error");
      expect(line).toMatchObject({ chain: "dev" });
      expect(String(line.msg)).toContain(`ChainIdMismatch: chain dev: node ${lying.url} reports chain id ${ANVIL_CHAIN_ID}, but CHAINS_CONFIG says chainId 1 for dev`);
    } finally {
      await w.stop("SIGKILL");
    }
    const router = new ChainRouter(parseChainsConfig({ chains: { dev: { source: "rpc", endpoints: [lying.url], chainId: ANVIL_CHAIN_ID }, other: { source: "rpc", endpoints: [lying.url] } } }), { localTestChain: null });
    expect(await router.checkChainIds()).toEqual([{ chain: "dev", ok: true, message: "ok" }]);
  }, 60_000);

  test("on reconnect: the node is asked again after a failure, and a node of another chain behind the same address is refused", async () => {
    lying.lie = () => undefined;
    const r = registry({ chainId: ANVIL_CHAIN_ID });
    const checks = () => lying.count("eth_chainId");
    const before = checks();
    for (let n = 1; n <= 3; n++) expect((await r.call("blockdb", "block", { chain: "dev", number: n })).ok).toBe(true);
    expect(checks() - before).toBe(1); // once, not per request
    lying.lie = (q) => (q.method === "eth_chainId" ? "0x1" : undefined); // the address now reaches a mainnet node
    expect((await r.call("blockdb", "block", { chain: "dev", number: 4 })).ok).toBe(true); // no reconnect: not asked again
    lying.failNext(1); // a restart: the next HTTP request fails, the client tries again
    const e = await failure(r, "blockdb", "block", { chain: "dev", number: 5 });
    expect(e.type).toBe("ChainIdMismatch");
    expect(e.message).toContain(`reports chain id 1, but CHAINS_CONFIG says chainId ${ANVIL_CHAIN_ID}`);
    lying.lie = () => undefined;
  });
});

describe("head", () => {
  /** drive: reads block `n` (a head refresh each time: TTL 1 ms) until the node has answered eth_blockNumber `times` more times. */
  async function drive(io: IoSubsystem, n: number, times: number): Promise<void> {
    const target = lying.count("eth_blockNumber") + times;
    while (lying.count("eth_blockNumber") < target) {
      await io.forTask("drive").call("blockdb", "block", { chain: "dev", number: n, full: false });
      await io.headsSettled();
    }
  }

  test("one head far ahead (a wrong node behind a load balancer) is not believed: a block near the real head never becomes final", async () => {
    lying.lie = () => undefined;
    const io = new IoSubsystem(registry(), CONFIG);
    const head = await anvil.head();
    await drive(io, head - 1, 1); // the real head is believed; head - 1 is not final at depth 3
    let once = 1;
    lying.lie = (q) => (q.method === "eth_blockNumber" && once-- > 0 ? hex(1_000_000_000) : undefined);
    await drive(io, head - 1, 1);
    const t = io.forTask("t");
    await t.call("blockdb", "block", { chain: "dev", number: head - 1, full: false });
    const again = await t.call("blockdb", "block", { chain: "dev", number: head - 1, full: false });
    expect(again.trace.cacheHit).toBe(false);
    expect(io.cache.size).toBe(0);
    lying.lie = () => undefined;
  });

  test("a head that goes backwards makes fewer blocks final until refuted, never more: a block final before is not cached meanwhile", async () => {
    lying.lie = () => undefined;
    const io = new IoSubsystem(registry(), CONFIG);
    const head = await anvil.head();
    await drive(io, head - 1, 1);
    lying.lie = (q) => (q.method === "eth_blockNumber" ? hex(2) : undefined); // a node far behind, every time
    await drive(io, head - 1, 1); // doubted once: not believed, but the finality rule uses the lower head meanwhile
    const t = io.forTask("t");
    await t.call("blockdb", "block", { chain: "dev", number: 10, full: false });
    expect((await t.call("blockdb", "block", { chain: "dev", number: 10, full: false })).trace.cacheHit).toBe(false);
    expect(io.cache.size).toBe(0);
    lying.lie = () => undefined;
  });
});

describe("blocks", () => {
  test("a null block is a retryable BlockUnavailable, never an empty block, and is not cached: the next read gets the block", async () => {
    lying.lie = (q) => (q.method === "eth_getBlockByNumber" && q.params[0] === hex(5) ? null : undefined);
    const r = registry();
    const e = await failure(r, "blockdb", "block", { chain: "dev", number: 5 });
    expect(e).toMatchObject({ type: "BlockUnavailable", retryable: true });
    expect(e.message).toContain("no block 5");
    // Through the IO subsystem: block 5 is final (head 21, depth 3), yet neither the error nor rpc.call's raw null is cached.
    const io = new IoSubsystem(r, CONFIG);
    const t = io.forTask("t");
    await io.forTask("warm").call("blockdb", "head", { chain: "dev" });
    expect((await t.call("blockdb", "block", { chain: "dev", number: 5 })).answer).toMatchObject({ ok: false, error: { type: "BlockUnavailable", retryable: true } });
    await io.headsSettled();
    const raw = await t.call("rpc", "call", { chain: "dev", method: "eth_getBlockByNumber", params: [hex(5), false] });
    expect(text(raw)).toBe("null");
    lying.lie = () => undefined;
    const block = await t.call("blockdb", "block", { chain: "dev", number: 5 });
    expect(block.trace.cacheHit).toBe(false);
    expect((JSON.parse(text(block)) as { number: string }).number).toBe(hex(5));
    const rawAgain = await t.call("rpc", "call", { chain: "dev", method: "eth_getBlockByNumber", params: [hex(5), false] });
    expect(rawAgain.trace.cacheHit).toBe(false);
    expect(text(rawAgain)).not.toBe("null");
  });

  test("a block of another number than asked is a retryable NodeAnswerMismatch naming both", async () => {
    const six = await anvil.rpc("eth_getBlockByNumber", hex(6), true);
    lying.lie = (q) => (q.method === "eth_getBlockByNumber" && q.params[0] === hex(5) ? six : undefined);
    const e = await failure(registry(), "blockdb", "block", { chain: "dev", number: 5 });
    expect(e).toMatchObject({ type: "NodeAnswerMismatch", retryable: true });
    expect(e.message).toContain("asked for block 5, the node answered block 6");
    lying.lie = () => undefined;
  });

  test("receipts of another block than asked are a NodeAnswerMismatch", async () => {
    const r = registry();
    const truth = (await r.call("blockdb", "receipts", { chain: "dev", number: 21 })) as { ok: true; value: { parse(): unknown } };
    expect((truth.value.parse() as unknown[]).length).toBe(1);
    lying.lie = (q, t) => (q.method === "eth_getBlockReceipts" ? (t as { [k: string]: JsonValue }[]).map((x) => ({ ...x, blockNumber: hex(20) })) : undefined);
    const e = await failure(r, "blockdb", "receipts", { chain: "dev", number: 21 });
    expect(e.type).toBe("NodeAnswerMismatch");
    expect(e.message).toContain("receipts of block 21, receipt 0 is of block 20");
    lying.lie = () => undefined;
  });

  test("headers of a range are linked by their parent hashes: a broken link is a NodeAnswerMismatch naming both blocks", async () => {
    const r = registry();
    const ok = await r.call("blockdb", "headers", { chain: "dev", fromBlock: 1, toBlock: 10 });
    expect(ok.ok).toBe(true);
    const headers = (ok as { value: { parse(): unknown } }).value.parse() as { number: number; hash: string; parentHash: string }[];
    expect(headers.map((h) => h.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(headers[5]!.parentHash).toBe(headers[4]!.hash);
    lying.lie = (q, t) => (q.method === "eth_getBlockByNumber" && q.params[0] === hex(6) ? { ...(t as Record<string, JsonValue>), parentHash: "0x" + "ab".repeat(32) } : undefined);
    const e = await failure(r, "blockdb", "headers", { chain: "dev", fromBlock: 1, toBlock: 10 });
    expect(e).toMatchObject({ type: "NodeAnswerMismatch", retryable: true });
    expect(e.message).toContain(`block 6's parent is 0x${"ab".repeat(32)}, but block 5 is ${headers[4]!.hash}`);
    lying.lie = () => undefined;
  });
});

describe("finality depth", () => {
  test("a chain's own finalityDepth wins; else its chainId's documented default; else IO_FINALITY_DEPTH", () => {
    const router = new ChainRouter(
      parseChainsConfig({
        chains: {
          eth: { source: "rpc", endpoints: ["http://127.0.0.1:1"], chainId: 1 },
          arb: { source: "rpc", endpoints: ["http://127.0.0.1:1"], chainId: 42161 },
          own: { source: "rpc", endpoints: ["http://127.0.0.1:1"], chainId: 1, finalityDepth: 5 },
          dev: { source: "rpc", endpoints: ["http://127.0.0.1:1"], chainId: ANVIL_CHAIN_ID },
        },
      }),
      { localTestChain: null },
    );
    expect(["eth", "arb", "own", "dev"].map((c) => router.route(c).finalityDepth)).toEqual([64, 7200, 5, undefined]);
  });
});
