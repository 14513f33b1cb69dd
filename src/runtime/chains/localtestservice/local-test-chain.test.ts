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
import { answerSteps, GeneratorTurns, SyntheticChains } from "./synthetic-chain-jobs";
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

describe("GeneratorTurns: whose step comes next", () => {
  /** run takes `n` turns; a job named r* has `steps` steps, any other one step. Gives the order of the steps taken. */
  function run(turns: GeneratorTurns<string>, n: number, left: Map<string, number>): string[] {
    const order: string[] = [];
    for (let i = 0; i < n; i++) {
      const job = turns.next();
      if (job === undefined) break;
      order.push(job);
      const rest = (left.get(job) ?? 1) - 1;
      left.set(job, rest);
      if (rest > 0) turns.stepped(job);
    }
    return order;
  }

  test("eight ranges under way: a one-block request arriving now is answered at the first or second turn, not after a step of each", () => {
    const turns = new GeneratorTurns<string>();
    const left = new Map<string, number>();
    for (let r = 0; r < 8; r++) {
      turns.add(`r${r}`);
      left.set(`r${r}`, 100);
    }
    // Fresh and under way alternate: all eight have started within 16 steps.
    expect(new Set(run(turns, 16, left))).toEqual(new Set(["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"]));
    run(turns, 3, left); // under way, taking turns
    turns.add("block");
    expect(run(turns, 2, left)).toContain("block");
  });

  test("ranges under way get every other step however many one-block requests keep arriving", () => {
    const turns = new GeneratorTurns<string>();
    const left = new Map<string, number>([
      ["rA", 3],
      ["rB", 3],
    ]);
    turns.add("rA");
    turns.add("rB");
    const order: string[] = [];
    for (let i = 0; i < 10; i++) {
      turns.add(`b${i}`);
      turns.add(`c${i}`);
      order.push(...run(turns, 2, left));
    }
    // Fresh (first steps) and under way alternate; the ranges take turns and are done in 8 steps
    // although two fresh requests arrive every two steps; then the fresh ones go in order.
    expect(order.slice(0, 12)).toEqual(["rA", "rA", "rB", "rA", "b0", "rB", "c0", "rB", "b1", "c1", "b2", "c2"]);
  });

  test("alone, a range takes every step; with nothing to do, next() is undefined", () => {
    const turns = new GeneratorTurns<string>();
    const left = new Map([["r", 5]]);
    turns.add("r");
    expect(run(turns, 10, left)).toEqual(["r", "r", "r", "r", "r"]);
    expect(turns.next()).toBeUndefined();
    expect(turns.size).toBe(0);
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
