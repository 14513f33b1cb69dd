/**
 * The synthetic chain as a process serves it: generated on its own thread, log ranges bounded,
 * requests taking turns one block at a time, and a clear error where it is off.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { DEFAULT_CHAINS_CONFIG, parseChainsConfig } from "../../../common/config/chains-config";
import { loadEnvConfig } from "../../../common/config/env-config";
import { BackendRegistry } from "../../io/backends/backend-registry";
import { localtestserviceOffBackend } from "../../io/backends/localtestservice-backend";
import { ioSettingsFrom, ioVars, localTestChainEnabledVar } from "../../io/io-config";
import { ChainRouter } from "../router/chain-router";
import { LocalTestChain } from "./local-test-chain";
import { answerSteps, SyntheticChains } from "./synthetic-chain-jobs";
import { SyntheticChain, TRANSFER_TOPIC } from "./synthetic-chain";

const chains: LocalTestChain[] = [];
afterAll(() => chains.forEach((c) => c.close()));
function local(settings: ConstructorParameters<typeof LocalTestChain>[0] = {}): LocalTestChain {
  const c = new LocalTestChain(settings);
  chains.push(c);
  return c;
}

const reference = new SyntheticChain("ethereum", { head: 30_000 });

describe("answerSteps: a request as steps of one block", () => {
  test("the logs of a range are the chain's own, in one step per block (plus the answer's)", () => {
    const filter = { fromBlock: 20_000, toBlock: 20_009, topics: [TRANSFER_TOPIC] };
    const steps = answerSteps(new SyntheticChains(30_000), { op: "logs", chain: "ethereum", filter });
    let n = 0;
    let r = steps.next();
    while (!r.done) {
      n++;
      r = steps.next();
    }
    expect(n).toBe(10);
    expect(JSON.parse(r.value)).toEqual(reference.logs(filter));
  });

  test("a block, its receipts and the chain id are one step each", () => {
    const c = new SyntheticChains(30_000);
    expect(JSON.parse(answerSteps(c, { op: "block", chain: "ethereum", number: 12_345, full: false }).next().value as string)).toEqual(reference.block(12_345, false));
    expect(JSON.parse(answerSteps(c, { op: "receipts", chain: "ethereum", number: 7 }).next().value as string)).toEqual(reference.blockReceipts(7));
    expect(JSON.parse(answerSteps(c, { op: "chainId", chain: "base" }).next().value as string)).toBe(8_453);
  });
});

describe("LocalTestChain", () => {
  test("answers what the synthetic chain generates, as JSON bytes; null and [] above the head without asking the thread", async () => {
    const c = local({ head: 30_000 });
    expect((await c.block("ethereum", 29_999, true)).parse()).toEqual(reference.block(29_999, true) as never);
    expect((await c.receipts("ethereum", 100)).parse()).toEqual(reference.blockReceipts(100) as never);
    expect((await c.logs("ethereum", { fromBlock: 1_000, toBlock: 1_003 })).parse()).toEqual(reference.logs({ fromBlock: 1_000, toBlock: 1_003 }) as never);
    expect(await c.chainId("ethereum")).toBe(1);
    const asked = c.stats.requests;
    expect((await c.block("ethereum", 30_001, true)).parse()).toBeNull();
    expect((await c.logs("ethereum", { fromBlock: 30_001, toBlock: 30_002 })).parse()).toEqual([]);
    expect(c.stats).toEqual({ requests: asked, threadStarts: 1 });
  });

  test("a log range longer than LOCALTESTSERVICE_MAX_LOG_BLOCKS is refused before any work, naming the bound and the variable", async () => {
    const c = local({ maxLogBlocks: 100 });
    const refused = await c.logs("ethereum", { fromBlock: 1_000, toBlock: 1_100 }).catch((e: Error) => e);
    expect(refused).toMatchObject({
      type: "InvalidParams",
      message: "blocks 1000..1100 are 101 blocks; the local test chain answers at most 100 per request (LOCALTESTSERVICE_MAX_LOG_BLOCKS): split the range",
    });
    expect(await c.logs("ethereum", { fromBlock: 5, toBlock: 4 }).catch((e: Error) => e.message)).toBe("fromBlock 5 is after toBlock 4");
    expect(c.stats.requests).toBe(0);
    expect((await c.logs("ethereum", { fromBlock: 1_000, toBlock: 1_099, address: reference.tokens[0] })).parse()).toEqual(
      reference.logs({ fromBlock: 1_000, toBlock: 1_099, address: reference.tokens[0] }) as never,
    );
  });

  test("generation leaves the caller's thread free: a timer set after a 100-block range fires before its answer; a one-block read overtakes the range", async () => {
    const c = local();
    await c.block("ethereum", 1, false); // the thread is up
    const order: string[] = [];
    const range = c.logs("ethereum", { fromBlock: 5_000_000, toBlock: 5_000_099 }).then(() => order.push("range"));
    const one = c.block("ethereum", 7_000_000, true).then(() => order.push("one block"));
    const timer = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => order.push("timer"));
    await Promise.all([range, one, timer]);
    expect(order).toEqual(["timer", "one block", "range"]);
  });

  test("a filter the chain refuses fails its request with the chain's words; the thread goes on", async () => {
    const c = local();
    const e = await c.logs("ethereum", { fromBlock: 1, toBlock: 2, address: 42 as never }).catch((err: Error) => err);
    expect(e).toMatchObject({ type: "InvalidParams" });
    expect((await c.block("ethereum", 3, false)).parse()).toEqual(reference.block(3, false) as never);
    expect(c.stats.threadStarts).toBe(1);
  });

  test("closed, it ends its thread; a later request starts another", async () => {
    const c = local();
    await c.block("ethereum", 1, false);
    c.close();
    expect((await c.block("ethereum", 2, false)).parse()).toEqual(reference.block(2, false) as never);
    expect(c.stats.threadStarts).toBe(2);
  });
});

describe("where the local test chain is off", () => {
  test("production roles leave it off unless LOCALTESTSERVICE_ENABLED=true or CHAINS_CONFIG names it; blockx exec turns it on", () => {
    const settings = (env: Record<string, string>) => ioSettingsFrom(loadEnvConfig(ioVars, env)).localTestChain;
    expect(settings({})).toEqual({ enabled: false, head: 20_000_000, maxLogBlocks: 100 });
    expect(settings({ LOCALTESTSERVICE_ENABLED: "true", LOCALTESTSERVICE_MAX_LOG_BLOCKS: "20", LOCALTESTSERVICE_HEAD: "500" })).toEqual({ enabled: true, head: 500, maxLogBlocks: 20 });
    expect(settings({ CHAINS_CONFIG: '{"chains": {"test": {"source": "localtestservice"}}}' }).enabled).toBe(true);
    expect(settings({ CHAINS_CONFIG: '{"chains": {"eth": {"source": "rpc", "endpoints": ["http://127.0.0.1:8545"]}}}' }).enabled).toBe(false);
    expect(localTestChainEnabledVar("true").defaultRaw).toBe("true");
    expect(() => loadEnvConfig(ioVars, { LOCALTESTSERVICE_MAX_LOG_BLOCKS: "20000" })).toThrow('LOCALTESTSERVICE_MAX_LOG_BLOCKS: expected an integer from 1 to 10000, got "20000"');
  });

  test("the localtestservice backend answers BackendDisabled saying how to turn it on; an unconfigured chain is UnknownChain saying the same", async () => {
    const r = await new BackendRegistry().register(localtestserviceOffBackend()).call("localtestservice", "eth_getLogs", { chain: "ethereum", fromBlock: 1, toBlock: 2 });
    expect(r).toMatchObject({ ok: false, error: { type: "BackendDisabled" } });
    const message = (r as { error: { message: string } }).error.message;
    expect(message).toStartWith("localtestservice.eth_getLogs: the synthetic local test chain is off in this process");
    expect(message).toContain("LOCALTESTSERVICE_ENABLED=true");
    expect(message).toContain('"source": "localtestservice" in CHAINS_CONFIG');

    const router = new ChainRouter(DEFAULT_CHAINS_CONFIG, { localTestChain: null });
    expect(() => router.route("ethereum")).toThrow(/^no chain "ethereum": CHAINS_CONFIG is empty \(name the chain's node there\), and the synthetic local test chain is off in this process/);
    expect(router.summary()).toEqual({ chains: [], unconfigured: "no chain: CHAINS_CONFIG is empty and the local test chain is off" });
    // A configured rpc chain is served whatever the local test chain does.
    const configured = new ChainRouter(parseChainsConfig({ chains: { eth: { source: "rpc", endpoints: ["http://127.0.0.1:1"] } } }), { localTestChain: null });
    expect(configured.route("eth").source.kind).toBe("rpc");
  });
});
