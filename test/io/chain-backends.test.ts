/**
 * blockdb, rpc, router and meta as the Worker registers them (a BackendRegistry over a
 * ChainRouter), over the local test chain and over a real ganache node: the same shapes from
 * either source, receipts on a node without eth_getBlockReceipts, cache descriptors, and a
 * clear error for every bad request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DEFAULT_CHAINS_CONFIG, parseChainsConfig } from "../../src/common/config/chains-config";
import type { JsonValue } from "../../src/runtime/json/raw-json";
import { RawJson } from "../../src/runtime/json/raw-json";
import { FunctionCodeView } from "../../src/runtime/functions/function-code-view";
import { ChainRouter } from "../../src/runtime/chains/router/chain-router";
import { LocalTestChain } from "../../src/runtime/chains/localtestservice/local-test-chain";
import { BackendRegistry, type Backend } from "../../src/runtime/io/backends/backend-registry";
import { blockdbBackend } from "../../src/runtime/io/backends/blockdb-backend";
import { metaBackend } from "../../src/runtime/io/backends/meta-backend";
import { routerBackend } from "../../src/runtime/io/backends/router-backend";
import { rpcBackend } from "../../src/runtime/io/backends/rpc-backend";
import { GanacheNode, TRANSFER_TOPIC } from "../support/ganache";

let node: GanacheNode;
let emitter = "";
beforeAll(async () => {
  node = await GanacheNode.start();
  emitter = await node.deployEmitter();
  await node.mine(12, emitter);
}, 60_000);
afterAll(() => node?.stop());

function registry(router: ChainRouter, functions = new FunctionCodeView()): BackendRegistry {
  return new BackendRegistry().register(routerBackend(router)).register(rpcBackend(router)).register(blockdbBackend(router)).register(metaBackend(() => functions.current()));
}

function mixedRouter(): ChainRouter {
  return new ChainRouter(parseChainsConfig({ chains: { dev: { source: "rpc", endpoints: [node.url], finalityDepth: 3 }, ethereum: { source: "localtestservice" } } }), { localTestChain: new LocalTestChain({ head: 1_000 }) });
}

/** value unwraps a registry answer (RawJson parsed) or throws with the error. */
async function value(r: BackendRegistry, backend: string, op: string, params: JsonValue): Promise<JsonValue> {
  const a = await r.call(backend, op, params);
  if (!a.ok) throw new Error(`${a.error.type}: ${a.error.message}`);
  return a.value instanceof RawJson ? a.value.parse() : a.value;
}

async function error(r: BackendRegistry, backend: string, op: string, params: JsonValue): Promise<{ type: string; message: string }> {
  const a = await r.call(backend, op, params);
  if (a.ok) throw new Error(`expected an error, got ${JSON.stringify(a.value)}`);
  return a.error;
}

const keys = (v: JsonValue): string[] => Object.keys(v as object).sort();

describe("one shape from either source", () => {
  test("blocks, transactions, receipts and logs have the same fields from ganache and from the local test chain", async () => {
    const r = registry(mixedRouter());
    const busy = async (chain: string, from: number) => {
      for (let n = from; ; n++) {
        const receipts = (await value(r, "blockdb", "receipts", { chain, number: n })) as { logs: unknown[] }[];
        if (receipts.some((x) => x.logs.length > 0)) return { n, receipts };
      }
    };
    const dev = await busy("dev", 1);
    const eth = await busy("ethereum", 900);
    const devBlock = (await value(r, "blockdb", "block", { chain: "dev", number: dev.n })) as { transactions: JsonValue[] };
    const ethBlock = (await value(r, "blockdb", "block", { chain: "ethereum", number: eth.n })) as { transactions: JsonValue[] };
    expect(keys(devBlock as JsonValue)).toEqual(keys(ethBlock as JsonValue));
    expect(keys(devBlock.transactions[0]!)).toEqual(keys(ethBlock.transactions[0]!));
    expect(keys(dev.receipts[0] as JsonValue)).toEqual(keys(eth.receipts[0] as JsonValue));
    const firstLog = (rs: { logs: unknown[] }[]) => rs.find((x) => x.logs.length > 0)!.logs[0] as JsonValue;
    expect(keys(firstLog(dev.receipts))).toEqual(keys(firstLog(eth.receipts)));
    // Hex is lowercase, quantities are 0x hex, from either source.
    for (const v of [devBlock, dev.receipts]) expect(JSON.stringify(v)).not.toMatch(/"0x[0-9a-f]*[A-F][0-9a-fA-F]*"/);
  });

  test("receipts on a node without eth_getBlockReceipts come from each transaction, and match the node's own", async () => {
    const r = registry(mixedRouter());
    const head = await node.head();
    for (let n = 1; n <= head; n++) {
      const block = (await node.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as { transactions: string[] };
      const direct = await Promise.all(block.transactions.map((h) => node.rpc("eth_getTransactionReceipt", h)));
      expect(await value(r, "blockdb", "receipts", { chain: "dev", number: n })).toEqual(direct as JsonValue);
    }
    // A block past the head is a retryable BlockUnavailable, never null (test/io/node-trust.test.ts).
    expect(await error(r, "blockdb", "receipts", { chain: "dev", number: head + 100 })).toMatchObject({ type: "BlockUnavailable", retryable: true });
    expect(await error(r, "blockdb", "block", { chain: "dev", number: head + 100 })).toMatchObject({ type: "BlockUnavailable", retryable: true });
  });

  test("logs filter by address and topics, as the node's eth_getLogs does; head is the node's block number", async () => {
    const r = registry(mixedRouter());
    const head = await node.head();
    const recipient = "0x" + node.accounts[1]!.slice(2).padStart(64, "0");
    const filters: JsonValue[] = [
      { fromBlock: 0, toBlock: head },
      { fromBlock: 0, toBlock: head, address: emitter.toUpperCase().replace("0X", "0x"), topics: [TRANSFER_TOPIC] },
      { fromBlock: 0, toBlock: head, address: [emitter], topics: [null, null, [recipient]] },
      { fromBlock: 2, toBlock: 5, topics: [[TRANSFER_TOPIC, "0x" + "11".repeat(32)]] },
    ];
    for (const f of filters) {
      const p = f as { fromBlock: number; toBlock: number; address?: JsonValue; topics?: JsonValue };
      const direct = await node.rpc("eth_getLogs", { ...p, fromBlock: "0x" + p.fromBlock.toString(16), toBlock: "0x" + p.toBlock.toString(16) } as never);
      expect(await value(r, "blockdb", "logs", { chain: "dev", ...(f as object) })).toEqual(direct as JsonValue);
    }
    expect(((await value(r, "blockdb", "logs", { chain: "dev", fromBlock: 0, toBlock: head, topics: [TRANSFER_TOPIC] })) as unknown[]).length).toBeGreaterThan(0);
    expect(await value(r, "blockdb", "head", { chain: "dev" })).toBe(head);
    const b = (await r.call("blockdb", "block", { chain: "dev", number: "latest", full: false }));
    expect(b.ok && b.value instanceof RawJson && (b.value.parse() as { number: string }).number).toBe("0x" + head.toString(16));
  });
});

describe("rpc", () => {
  test("call passes a read method to the chain's node; a node error is a JsonRpcError with its code; writes are refused", async () => {
    const r = registry(mixedRouter());
    expect(await value(r, "rpc", "call", { chain: "dev", method: "eth_chainId", params: [] })).toBe("0x539");
    expect(await value(r, "rpc", "call", { chain: "ethereum", method: "eth_chainId" })).toBe("0x1");
    const bad = await error(r, "rpc", "call", { chain: "dev", method: "eth_getBalance", params: ["not an address", "latest"] });
    expect(bad.type).toBe("JsonRpcError");
    expect(bad.message).toMatch(new RegExp(`^rpc\\.call: JSON-RPC error -?\\d+ from chain dev node ${node.url}: `));
    expect(await error(r, "rpc", "call", { chain: "ethereum", method: "eth_getBalance", params: [] })).toMatchObject({ type: "JsonRpcError", message: expect.stringContaining("JSON-RPC error -32601 from chain ethereum (localtestservice)") });
    expect(await error(r, "rpc", "call", { chain: "dev", method: "eth_sendTransaction", params: [{}] })).toMatchObject({ type: "PermissionDenied", message: "rpc.call: call: eth_sendTransaction changes state or signs; use rpc.send" });
    expect(await error(r, "rpc", "call", { chain: "dev", method: "eth_chainId", params: "x" })).toMatchObject({ type: "InvalidParams" });
    expect(await error(r, "rpc", "call", { chain: "dev", method: "" })).toMatchObject({ type: "InvalidParams" });
  });

  test("call allows only read methods: debug_, admin_, personal_, clique_, miner_ and unknown methods are refused by name before any node sees them", async () => {
    const r = registry(mixedRouter());
    for (const method of ["debug_traceTransaction", "debug_traceBlockByNumber", "admin_peers", "personal_listAccounts", "clique_getSigners", "miner_start", "txpool_content", "eth_noSuchMethod"]) {
      // admin_, personal_ and miner_ are also known writers: their refusal says to use rpc.send.
      expect(await error(r, "rpc", "call", { chain: "dev", method, params: [] })).toMatchObject({ type: "PermissionDenied", message: expect.stringMatching(new RegExp(`^rpc\\.call: call: ${method} (is not a read method|changes state)`)) });
    }
    // What a read needs still reaches the node.
    expect(await value(r, "rpc", "call", { chain: "dev", method: "net_version", params: [] })).toMatch(/^\d+$/);
    expect(typeof (await value(r, "rpc", "call", { chain: "dev", method: "web3_clientVersion", params: [] }))).toBe("string");
    expect(await value(r, "rpc", "call", { chain: "dev", method: "eth_getBalance", params: ["0x" + "0".repeat(40), "latest"] })).toMatch(/^0x[0-9a-f]+$/);
  });

  test("send reaches a node only on a chain whose CHAINS_CONFIG entry sets allowSend", async () => {
    const closed = registry(mixedRouter());
    expect(await error(closed, "rpc", "send", { chain: "dev", method: "eth_sendRawTransaction", params: ["0x00"] })).toEqual({
      type: "PermissionDenied",
      message: 'rpc.send: send: chain dev does not allow rpc.send (eth_sendRawTransaction); set "allowSend": true for it in CHAINS_CONFIG',
    });
    const open = registry(new ChainRouter(parseChainsConfig({ chains: { dev: { source: "rpc", endpoints: [node.url], allowSend: true } } }), { localTestChain: new LocalTestChain({ head: 1_000 }) }));
    // The node itself answers now (and refuses the malformed transaction).
    expect(await error(open, "rpc", "send", { chain: "dev", method: "eth_sendRawTransaction", params: ["0x00"] })).toMatchObject({ type: "JsonRpcError" });
  });
});

describe("router", () => {
  test("a configured router knows only its chains: another name is UnknownChain listing them", async () => {
    const r = registry(mixedRouter());
    expect(await value(r, "router", "chains", null)).toEqual([
      { chain: "dev", source: "rpc", finalityDepth: 3 },
      { chain: "ethereum", source: "localtestservice", finalityDepth: null },
    ]);
    expect(await error(r, "blockdb", "block", { chain: "base", number: 1 })).toEqual({ type: "UnknownChain", message: 'blockdb.block: no chain "base" in CHAINS_CONFIG (have: dev, ethereum)' });
  });

  test("with no config every chain is the local test chain (so a Worker with nothing configured keeps working)", async () => {
    const r = registry(new ChainRouter(DEFAULT_CHAINS_CONFIG, { localTestChain: new LocalTestChain({ head: 500 }) }));
    const b = (await value(r, "blockdb", "block", { chain: "base", number: 7 })) as { number: string };
    expect(b.number).toBe("0x7");
    expect(await value(r, "blockdb", "head", { chain: "base" })).toBe(500);
    expect(await value(r, "router", "route", { chain: "base" })).toEqual({ chain: "base", source: "localtestservice", finalityDepth: null });
  });
});

describe("cache descriptors", () => {
  const op = (b: Backend, name: string) => b.ops[name]!;
  test("numbered blocks, receipts and logs are cacheable under a full key; tags, heads and writes never", () => {
    const router = mixedRouter();
    const blockdb = blockdbBackend(router);
    const rpc = rpcBackend(router);
    expect(op(blockdb, "block").cache!({ chain: "dev", number: 5 })).toEqual({ key: "blockdb.block:dev:5:full", chain: "dev", block: 5 });
    expect(op(blockdb, "block").cache!({ chain: "dev", number: "0x5", full: false })).toEqual({ key: "blockdb.block:dev:5:hashes", chain: "dev", block: 5 });
    expect(op(blockdb, "block").cache!({ chain: "dev", number: "latest" })).toBeNull();
    expect(op(blockdb, "receipts").cache!({ chain: "dev", number: 9 })).toEqual({ key: "blockdb.receipts:dev:9", chain: "dev", block: 9 });
    const a = op(blockdb, "logs").cache!({ chain: "dev", fromBlock: 1, toBlock: 9, address: ["0x" + "b".repeat(40), "0x" + "A".repeat(40)] })!;
    const b = op(blockdb, "logs").cache!({ chain: "dev", fromBlock: "0x1", toBlock: "0x9", address: ["0x" + "a".repeat(40), "0x" + "b".repeat(40)], topics: [] })!;
    expect(a).toEqual(b);
    expect(a).toMatchObject({ block: 9 });
    expect(op(blockdb, "logs").cache!({ chain: "dev", fromBlock: 1, toBlock: 9, topics: [TRANSFER_TOPIC] })!.key).not.toBe(a.key);
    expect(op(blockdb, "head").cache).toBeUndefined();
    expect([blockdb.finalityDepth!("dev"), blockdb.finalityDepth!("ethereum"), rpc.finalityDepth!("dev")]).toEqual([3, undefined, 3]);
    expect(op(rpc, "call").cache!({ chain: "dev", method: "eth_getBlockByNumber", params: ["0x10", true] })).toEqual({ key: 'rpc.call:dev:eth_getBlockByNumber:["0x10",true]', chain: "dev", block: 16 });
    expect(op(rpc, "call").cache!({ chain: "dev", method: "eth_getBlockByNumber", params: ["latest", true] })).toBeNull();
    expect(op(rpc, "call").cache!({ chain: "dev", method: "eth_getBalance", params: ["0x" + "a".repeat(40), "0x10"] })).toBeNull();
    expect(op(rpc, "send").kind).toBe("write");
    expect(op(rpc, "send").cache).toBeUndefined();
    for (const name of ["block", "receipts", "logs", "head"]) expect(op(blockdb, name).kind).toBe("read");
  });
});

describe("bad requests get clear errors", () => {
  test("blockdb names the op and the field", async () => {
    const r = registry(mixedRouter());
    const cases: [string, JsonValue, string][] = [
      ["block", { number: 1 }, "blockdb.block: block: chain is required"],
      ["block", { chain: "dev", number: -1 }, "blockdb.block: block: number must be a block number (integer or 0x hex), got -1"],
      ["block", { chain: "dev" }, "blockdb.block: block: number is required (a block number or one of latest, finalized, safe, earliest, pending)"],
      ["receipts", [1], "blockdb.receipts: receipts: params must be an object"],
      ["logs", { chain: "dev", fromBlock: 5, toBlock: 1 }, "blockdb.logs: logs: fromBlock 5 is after toBlock 1"],
      ["logs", { chain: "dev", fromBlock: 0, toBlock: 10_000 }, "blockdb.logs: logs: at most 10000 blocks per query, asked 10001"],
      ["logs", { chain: "dev", fromBlock: 0, toBlock: 1, address: "0x12" }, 'blockdb.logs: logs: address must be a 0x address or a list of them, got "0x12"'],
      ["logs", { chain: "dev", fromBlock: 0, toBlock: 1, topics: ["0xzz"] }, 'blockdb.logs: logs: topics[0] must be a 32-byte 0x hash, a list of them or null, got "0xzz"'],
      ["logs", { chain: "dev", fromBlock: 0, toBlock: 1, topics: [null, null, null, null, null] }, "blockdb.logs: logs: topics must be a list of at most 4 positions, got [null,null,null,null,null]"],
    ];
    for (const [name, params, message] of cases) expect(await error(r, "blockdb", name, params)).toEqual({ type: "InvalidParams", message });
  });
});

describe("meta", () => {
  test("getFunction and listFunctions read the current Function Code View", async () => {
    const view = new FunctionCodeView();
    const r = registry(mixedRouter(), view);
    expect(await value(r, "meta", "listFunctions", {})).toEqual({ epoch: 0, functions: [] });
    view.update(new Map([["double", "def main(ctx, x):\n    return 2 * x\n"], ["inc", "def main(ctx, x):\n    return x + 1\n"]]));
    const f = view.current().get("double")!;
    expect(await value(r, "meta", "getFunction", { name: "double" })).toEqual({ name: "double", digest: f.digest, source: f.source, entry: "main", epoch: 1 });
    expect(await value(r, "meta", "listFunctions", {})).toEqual({ epoch: 1, functions: [{ name: "double", digest: f.digest }, { name: "inc", digest: view.current().get("inc")!.digest }] });
    expect(await error(r, "meta", "getFunction", { name: "nope" })).toEqual({ type: "NotFound", message: 'meta.getFunction: getFunction: no function "nope" at epoch 1 (have: double, inc)' });
    expect(await error(r, "meta", "getFunction", {})).toMatchObject({ type: "InvalidParams" });
    const none = new BackendRegistry().register(metaBackend(() => null));
    expect((await error(none, "meta", "listFunctions", {})).type).toBe("NotFound");
  });
});
