/**
 * Contract tests of the executor pool with real Python executor processes: message flows,
 * concurrency, sub-calls, compile cache, errors with the user's line numbers, and every fault
 * the pool must survive (killed, hung, looping, sleeping, memory-hungry executors) and the
 * isolation of user code (network, processes).
 */
import { findCgroupPlace, probeSelf } from "../../src/runtime/executor/memory-cgroup";
import { afterEach, describe, expect, test } from "bun:test";
import pino from "pino";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../src/common/logging/logger";
import type { CallOutcome, CallOwner, IoAnswer } from "../../src/runtime/calls/call";
import { defaultExecutorPoolConfig, type ExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { ExecutorStartError } from "../../src/runtime/executor/executor-start-error";
import { type ResumeResult } from "../../src/runtime/executor/protocol";
import { RawJson, type JsonValue } from "../../src/runtime/json/raw-json";
import { BlockTextStore, writeBlockStore } from "../../src/runtime/chains/localtestservice/block-text-store";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { treeCpuSeconds } from "../support/proc-scan";
import { eventually } from "../support/eventually";

const pools: ExecutorPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
});

async function startPool(overrides: Partial<ExecutorPoolConfig> = {}): Promise<ExecutorPool> {
  const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2, ...overrides }), silentLogger(), { waitForAll: true });
  pools.push(pool);
  return pool;
}

let seq = 0;
function run(pool: ExecutorPool, source: string, args: JsonValue = null, owner: CallOwner = {}, budgetMs?: number): Promise<CallOutcome> {
  return pool.execute({ callId: `t${++seq}`, fn: { source, entry: "main" }, args, ...(budgetMs ? { budgetMs } : {}) }, owner);
}

function expectOk(o: CallOutcome): JsonValue {
  if (!o.ok) throw new Error(`call failed: ${o.error.code}: ${o.error.message}\n${o.error.traceback}`);
  return o.value;
}

function expectError(o: CallOutcome, code: string): Extract<CallOutcome, { ok: false }>["error"] {
  if (o.ok) throw new Error(`expected ${code}, got value ${JSON.stringify(o.value)}`);
  expect(o.error.code).toBe(code);
  return o.error;
}

/** The owner of a call whose IO the test answers by hand. */
function manualIo() {
  const pending: { params: JsonValue; answer: (a: IoAnswer) => void }[] = [];
  const owner: CallOwner = { io: (r) => new Promise<IoAnswer>((answer) => pending.push({ params: r.params, answer })) };
  return { owner, pending };
}

/** withBlockStore renders blocks from..to of the synthetic chain into a store file, opens it for `use`, and removes it after. */
async function withBlockStore(from: number, to: number, use: (store: BlockTextStore, chain: SyntheticChain) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "blockx-pool-store-"));
  chmodSync(dir, 0o755); // executors may run as another user
  const chain = new SyntheticChain("ethereum");
  writeBlockStore(join(dir, "eth.blocks"), chain, from, to);
  const store = BlockTextStore.open(join(dir, "eth.blocks"));
  try {
    await use(store, chain);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("ExecutorPool: final blocks by offset into the shared block store", () => {
  test("executors that inherited the store's file read blocks by offset; with a store identity they do not report, every block goes as bytes", async () => {
    await withBlockStore(100, 109, async (store, chain) => {
      const owner: CallOwner = { io: async (r) => ({ ok: true, value: store.read((r.params as { number: number }).number), ioMs: 0 }) };
      const src = "def main(ctx, n):\n    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'number': n})\n    return [b['number'], b['hash'], len(b['transactions'])]\n";
      const want = (n: number) => {
        const b = chain.block(n, true)!;
        return [b.number, b.hash, b.transactions.length];
      };
      for (const [identity, via] of [[store.identity, "mapped"], ["0:0", "bytes"]] as const) {
        const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), silentLogger(), { waitForAll: true, sharedBlockStore: { fd: store.fd, identity } });
        pools.push(pool);
        for (let n = 100; n <= 109; n++) expect(expectOk(await run(pool, src, n, owner))).toEqual(want(n));
        expect(pool.stats().blockHandoffs).toEqual(via === "mapped" ? { mapped: 10, bytes: 0 } : { mapped: 0, bytes: 10 });
        await pool.close();
      }
    });
  }, 60_000);
});

describe("ExecutorPool: answers prefetched into the ExecuteCall", () => {
  /** A call given a prefetched answer to `request`; the owner records what it was asked. */
  function prefetchedRun(pool: ExecutorPool, source: string, args: JsonValue, request: { backend: string; op: string; params: JsonValue }, answer: IoAnswer) {
    const asked: { backend: string; op: string; params: JsonValue; bytes?: boolean }[] = [];
    const owner: CallOwner = {
      io: async (r) => {
        asked.push({ backend: r.backend, op: r.op, params: r.params, ...(r.bytes ? { bytes: true } : {}) });
        return { ok: true, value: { served: r.params }, ioMs: 2 };
      },
    };
    const done = pool.execute({ callId: `p${++seq}`, fn: { source, entry: "main" }, args, prefetched: { request: { kind: "io", ...request }, answer } }, owner);
    return done.then((outcome) => ({ outcome, asked }));
  }
  const block = { backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "ethereum", number: 7 } };

  test("a def and an async def call whose first request is exactly the prefetched one take it without a round trip; later requests go as usual, IO time counts both", async () => {
    const pool = await startPool();
    for (const src of [
      "def main(ctx, x):\n    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x})\n    return [b, ctx.io('other', 'op', 1)]\n",
      "async def main(ctx, x):\n    b = await ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x})\n    return [b, await ctx.io('other', 'op', 1)]\n",
    ]) {
      const { outcome, asked } = await prefetchedRun(pool, src, 7, block, { ok: true, value: { number: "0x7" }, ioMs: 4 });
      expect(expectOk(outcome)).toEqual([{ number: "0x7" }, { served: 1 }]);
      expect(outcome.prefetchUsed).toBe(true);
      expect(outcome.suspensions).toBe(1); // only the second request
      expect(asked).toEqual([{ backend: "other", op: "op", params: 1 }]);
      expect(outcome.ioMs).toBe(4 + 2);
    }
    expect(pool.stats().prefetchedAnswers).toEqual({ taken: 2, notTaken: 0 });
  });

  test("a first request that differs in any way (params, their key order, 1 for true, another op, two requests at once) is asked as usual and the prefetched answer is dropped", async () => {
    const pool = await startPool();
    const cases: [string, { backend: string; op: string; params: JsonValue }][] = [
      ["def main(ctx, x):\n    return ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x + 1})\n", { ...block, params: { chain: "ethereum", number: 8 } }],
      ["def main(ctx, x):\n    return ctx.io('localtestservice', 'eth_getBlockByNumber', {'number': x, 'chain': 'ethereum'})\n", { ...block, params: { number: 7, chain: "ethereum" } }],
      ["def main(ctx, x):\n    return ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x, 'full': 1})\n", { ...block, params: { chain: "ethereum", number: 7, full: 1 } }],
      ["def main(ctx, x):\n    return ctx.io('localtestservice', 'eth_getBlock', {'chain': 'ethereum', 'number': x})\n", { ...block, op: "eth_getBlock" }],
    ];
    const hints: JsonValue[] = [block.params, block.params, { chain: "ethereum", number: 7, full: true }, block.params];
    for (const [i, [src, want]] of cases.entries()) {
      const { outcome, asked } = await prefetchedRun(pool, src, 7, { ...block, params: hints[i]! }, { ok: true, value: "prefetched", ioMs: 4 });
      expect(expectOk(outcome)).toEqual({ served: want.params });
      expect(outcome.prefetchUsed).toBe(false);
      expect(asked).toEqual([want]);
      expect(outcome.ioMs).toBe(2);
    }
    // Only the first suspension may take it: two requests at once, then the very request alone.
    const twice = "def main(ctx, x):\n    ctx.io_many([('a', 'b'), ('c', 'd')])\n    return ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x})\n";
    const { outcome, asked } = await prefetchedRun(pool, twice, 7, block, { ok: true, value: "prefetched", ioMs: 4 });
    expect(expectOk(outcome)).toEqual({ served: block.params });
    expect(outcome.prefetchUsed).toBe(false);
    expect(asked.length).toBe(3);
    expect(pool.stats().prefetchedAnswers).toEqual({ taken: 0, notTaken: cases.length + 1 });
  });

  test("a failed prefetched answer is not sent: the call asks itself and gets the usual answer", async () => {
    const pool = await startPool();
    const src = "def main(ctx, x):\n    return ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': x})\n";
    const { outcome, asked } = await prefetchedRun(pool, src, 7, block, { ok: false, error: { type: "BackendOverloaded", message: "later" }, ioMs: 1 });
    expect(expectOk(outcome)).toEqual({ served: block.params });
    expect(outcome.prefetchUsed).toBeUndefined(); // none went with it
    expect(pool.stats().prefetchedAnswers).toEqual({ taken: 0, notTaken: 0 });
    expect(asked).toEqual([block]);
  });

  test("a final block prefetched goes by offset into the store; one the executor cannot read there (the store truncated) is asked for again as bytes", async () => {
    await withBlockStore(100, 104, async (store, chain) => {
      const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), silentLogger(), { waitForAll: true, sharedBlockStore: { fd: store.fd, identity: store.identity } });
      pools.push(pool);
      const src = "def main(ctx, n):\n    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'ethereum', 'number': n})\n    return [b['number'], b['hash']]\n";
      const want = (n: number) => [chain.block(n, true)!.number, chain.block(n, true)!.hash];
      const req = (n: number) => ({ ...block, params: { chain: "ethereum", number: n } });
      const { outcome, asked } = await prefetchedRun(pool, src, 102, req(102), { ok: true, value: store.read(102), ioMs: 0 });
      expect(expectOk(outcome)).toEqual(want(102));
      expect(outcome.prefetchUsed).toBe(true);
      expect(asked).toEqual([]);
      expect(pool.stats().blockHandoffs).toEqual({ mapped: 1, bytes: 0 });
      // A span past the end of the file (what a store truncated after the Worker looked looks like).
      const beyond = new RawJson({ span: { file: store.identity, offset: 1 << 30, length: 100 }, load: () => new TextEncoder().encode("null") });
      const again = await prefetchedRun(pool, src, 103, req(103), { ok: true, value: beyond, ioMs: 0 });
      expect(again.asked).toEqual([{ ...req(103), bytes: true }]);
      expect(again.outcome.ok).toBe(false); // the owner here answers {served: ...}, which has no 'number'
      expect(again.outcome.prefetchUsed).toBe(true);
    });
  }, 60_000);
});

describe("message flows", () => {
  test("ExecuteCall -> CallCompleted: a def entry returns its value, with CPU time and output", async () => {
    const pool = await startPool();
    // Spins 50 ms of its thread's CPU clock, the clock the executor measures calls with.
    const spin = "import time\ndef main(ctx, x):\n    t = time.thread_time()\n    while time.thread_time() - t < 0.05:\n        pass\n    print('hello', x)\n    return x + 1\n";
    const o = await run(pool, spin, 41);
    expect(expectOk(o)).toBe(42);
    expect(o.output).toBe("hello 41\n");
    expect(o.cpuMs).toBeGreaterThanOrEqual(50);
    expect(o.suspensions).toBe(0);
  });

  test("hot spin (the Sync Invoker's): serial calls, def suspensions and async IO still get exactly their own results; a hung call is still caught", async () => {
    const pool = await startPool({ hotSpinUs: 2000 });
    for (let i = 0; i < 200; i++) expect(expectOk(await run(pool, "def main(ctx, x):\n    return x + 1\n", i))).toBe(i + 1);
    const owner: CallOwner = { io: async (r) => ({ ok: true, value: r.params, ioMs: 1 }) };
    const both = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        run(pool, i % 2 === 0 ? "def main(ctx, x):\n    return ctx.io('b', 'op', x) * 2\n" : "async def main(ctx, x):\n    return (await ctx.io('b', 'op', x)) * 2\n", i, owner),
      ),
    );
    expect(both.map(expectOk)).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    // The spin must not starve the monitor: an over-budget loop is still failed.
    expectError(await run(pool, "def main(ctx, x):\n    while True:\n        pass\n", null, {}, 200), "BUDGET_EXCEEDED");
  });

  test("hot spin: the pool marks a call lone when it is its only one, and only then does its executor spin for the next", async () => {
    // A 5 ms spin (the most an executor takes): the 2 ms gaps below stay inside it even when a busy
    // machine wakes the test late.
    const pool = await startPool({ hotSpinUs: 5000 });
    const src = "def main(ctx, x):\n    return x + 1\n";
    const executorsCpu = () =>
      pool.stats().executors.reduce((sum, e) => {
        if (!e.pid) return sum;
        const cpu = treeCpuSeconds(e.pid); // the executor and any process below it (a sandbox's)
        return sum + cpu.self + cpu.children;
      }, 0);
    // 60 calls one after another, 2 ms apart (within the 5 ms spin): the executor CPU they take.
    const serial = async () => {
      const before = executorsCpu();
      for (let i = 0; i < 60; i++) {
        await Bun.sleep(2);
        expect(expectOk(await run(pool, src, i))).toBe(i + 1);
      }
      return executorsCpu() - before;
    };
    expect(expectOk(await run(pool, src, 0))).toBe(1);
    const alone = await serial();
    expect(alone).toBeGreaterThan(0.06); // each gap spun through: ~2 ms each
    // A call held on executor 0 (asleep, no CPU), stalled so that the serial calls go to executor 1:
    // none of them is the pool's only call, and executor 1 must sleep between them.
    const sleeper = run(pool, "import time\ndef main(ctx, x):\n    time.sleep(x)\n    return 'slept'\n", 3);
    await eventually(() => pool.stats().executors.some((e) => e.inflight === 1));
    await Bun.sleep(250);
    const beside = await serial();
    expect(beside).toBeLessThan(0.06);
    expect(expectOk(await sleeper)).toBe("slept");
  }, 60_000);

  test("async def entries work, awaiting IO", async () => {
    const pool = await startPool();
    const owner: CallOwner = { io: async (r) => ({ ok: true, value: { got: r.params }, ioMs: 3 }) };
    const o = await run(pool, "async def main(ctx, x):\n    v = await ctx.io('b', 'op', x)\n    return v['got'] * 2\n", 21, owner);
    expect(expectOk(o)).toBe(42);
    expect(o.suspensions).toBe(1);
    expect(o.ioMs).toBe(3);
  });

  test("CallWaiting -> ResumeCall: one IO request; several in one suspension; the backend and op reach the owner", async () => {
    const pool = await startPool();
    const seen: string[] = [];
    const owner: CallOwner = {
      io: async (r) => {
        seen.push(`${r.backend}.${r.op}`);
        return { ok: true, value: r.params, ioMs: r.op === "slow" ? 7 : 2 };
      },
    };
    const src = [
      "def main(ctx, x):",
      "    a = ctx.io('blockdb', 'block', {'n': x})",
      "    b, c = ctx.io_many([('rpc', 'slow', 1), ('rpc', 'fast', 2)])",
      "    return [a, b, c]",
    ].join("\n");
    const o = await run(pool, src, 5, owner);
    expect(expectOk(o)).toEqual([{ n: 5 }, 1, 2]);
    expect(o.suspensions).toBe(2);
    expect(seen).toEqual(["blockdb.block", "rpc.slow", "rpc.fast"]);
    expect(o.ioMs).toBe(2 + 7); // the slowest request of a suspension is what the call waited for
  });

  test("a failed IO request raises BackendError in user code, which may catch it", async () => {
    const pool = await startPool();
    const owner: CallOwner = { io: async () => ({ ok: false, error: { type: "BackendOverloaded", message: "try later" }, ioMs: 1 }) };
    const src = [
      "from blockx_executor import BackendError",
      "def main(ctx, x):",
      "    try:",
      "        ctx.io('rpc', 'eth_blockNumber', None)",
      "    except BackendError as e:",
      "        return f'{e.type}: {e.message}'",
    ].join("\n");
    expect(expectOk(await run(pool, src, null, owner))).toBe("BackendOverloaded: try later");
  });

  test("CancelCall: a suspended call ends CANCELLED and its executor keeps working", async () => {
    const pool = await startPool();
    const io = manualIo();
    const p = pool.execute({ callId: "to-cancel", fn: { source: "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", entry: "main" }, args: 1 }, io.owner);
    await eventually(() => io.pending.length === 1);
    pool.cancel("to-cancel", "client went away");
    expectError(await p, "CANCELLED");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'still fine'\n"))).toBe("still fine");
  });

  test("ctx.log lines come back with the call", async () => {
    const pool = await startPool();
    const o = await run(pool, "def main(ctx, x):\n    ctx.log('starting')\n    ctx.log('careful', level='warning')\n    return 0\n");
    expectOk(o);
    expect(o.logs.map((l) => [l.level, l.message])).toEqual([
      ["info", "starting"],
      ["warning", "careful"],
    ]);
  });
});

describe("concurrency", () => {
  test("1,000 calls suspended at once across 8 executors, resumed out of order, each gets its own result", async () => {
    const pool = await startPool({ executorCount: 8, spread: 8 });
    const io = manualIo();
    const src = "def main(ctx, x):\n    v = ctx.io('b', 'get', x)\n    return {'x': x, 'v': v}\n";
    const asyncSrc = "async def main(ctx, x):\n    v = await ctx.io('b', 'get', x)\n    return {'x': x, 'v': v}\n";
    const calls = Array.from({ length: 1000 }, (_, i) => run(pool, i % 2 ? src : asyncSrc, i, io.owner));
    await eventually(() => io.pending.length === 1000, { timeoutMs: 60_000 });
    // Every executor holds some of them.
    expect(pool.stats().executors.filter((e) => e.inflight > 0).length).toBe(8);
    const order = io.pending.map((_, i) => i).sort((a, b) => ((a * 7919) % 1000) - ((b * 7919) % 1000));
    for (const i of order) {
      const p = io.pending[i]!;
      p.answer({ ok: true, value: `answer-${p.params}`, ioMs: 0 });
    }
    const outs = await Promise.all(calls);
    outs.forEach((o, i) => expect(expectOk(o)).toEqual({ x: i, v: `answer-${i}` }));
  }, 120_000);

  test("an owner's calls go to EXECUTOR_SPREAD executors while they keep up; a stalled one widens the spread, and takes calls again once one of its calls ends", async () => {
    const pool = await startPool({ executorCount: 3, spread: 1 });
    const indexOf = (o: CallOutcome) => o.executorId.split(".")[0];
    const quick = () => Promise.all(Array.from({ length: 40 }, (_, i) => run(pool, "def main(ctx, x):\n    return x + 1\n", i)));
    expect(new Set((await quick()).map(indexOf))).toEqual(new Set(["0"]));
    // A call that holds executor 0 (a long sleep: no call of it ends): after 100 ms it is stalled.
    const sleeper = run(pool, "import time\ndef main(ctx, x):\n    time.sleep(0.8)\n    return 'slept'\n");
    await eventually(() => pool.stats().executors[0]!.inflight === 1);
    await Bun.sleep(250);
    expect(new Set((await quick()).map(indexOf))).toEqual(new Set(["1"]));
    expect(indexOf(await sleeper)).toBe("0");
    expect(new Set((await quick()).map(indexOf))).toEqual(new Set(["0"]));
  }, 60_000);

  test("EXECUTOR_HOT_WAIT_US: the pool polls for a lone call's answer (serial calls, a def call's resume), not while other calls are in flight, never with 0; every call gets its own result", async () => {
    const pool = await startPool({ hotWaitUs: 100_000 }); // a window no answer misses, even on a loaded machine
    const src = "def main(ctx, x):\n    return x + 1\n";
    for (let i = 0; i < 20; i++) expect(expectOk(await run(pool, src, i))).toBe(i + 1);
    expect(pool.stats().lonePolls).toBe(20);
    // A def call suspended once: its ExecuteCall and its ResumeCall are each polled for.
    const owner: CallOwner = { io: async (r) => ({ ok: true, value: r.params, ioMs: 0 }) };
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", 7, owner))).toBe(7);
    expect(pool.stats().lonePolls).toBe(22);
    // 8 callers, 25 calls each one after another: a call sent while others are in flight is not
    // polled for; only the edges (the first call, a caller left alone at the end) may be.
    const results = await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        const out: JsonValue[] = [];
        for (let i = 0; i < 25; i++) out.push(expectOk(await run(pool, src, k * 100 + i)));
        return out;
      }),
    );
    expect(results).toEqual(Array.from({ length: 8 }, (_, k) => Array.from({ length: 25 }, (_, i) => k * 100 + i + 1)));
    expect(pool.stats().lonePolls - 22).toBeLessThan(25);
    const off = await startPool({ hotWaitUs: 0 });
    for (let i = 0; i < 5; i++) expect(expectOk(await run(off, src, i))).toBe(i + 1);
    expect(off.stats().lonePolls).toBe(0);
  });

  test("a suspended call does not block other calls on the same executor", async () => {
    const pool = await startPool({ executorCount: 1 });
    const io = manualIo();
    const held = run(pool, "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", 1, io.owner);
    await eventually(() => io.pending.length === 1);
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'other'\n"))).toBe("other");
    io.pending[0]!.answer({ ok: true, value: "late", ioMs: 0 });
    expect(expectOk(await held)).toBe("late");
  });
});

describe("sub-calls", () => {
  function subCallOwner(pool: ExecutorPool, registry: Record<string, string>, depth = 0): CallOwner {
    return {
      async subCall(r): Promise<ResumeResult> {
        if (depth >= 5) return { ok: false, error: { type: "DEPTH_EXCEEDED", message: "too deep" } };
        const source = "name" in r.function ? registry[r.function.name]! : r.function.source;
        const o = await run(pool, source, r.args, subCallOwner(pool, registry, depth + 1));
        return o.ok ? { ok: true, value: o.value } : { ok: false, error: { type: o.error.code, message: o.error.message, traceback: o.error.traceback } };
      },
    };
  }

  test("a sub-call ends with its parent: cancelling the parent cancels the sub-call it waits on, and a late sub-call of an ended parent never runs", async () => {
    const pool = await startPool();
    const io = manualIo();
    let child: Promise<CallOutcome> | null = null;
    const waitsForever = "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n";
    const owner: CallOwner = {
      subCall: async (_r, parentCallId) => {
        child = pool.execute({ callId: `${parentCallId}/sub-1`, fn: { source: waitsForever, entry: "main" }, args: 1 }, io.owner);
        const o = await child;
        return o.ok ? { ok: true, value: o.value } : { ok: false, error: { type: o.error.code, message: o.error.message } };
      },
    };
    const parent = pool.execute({ callId: "task-9/0/1", fn: { source: "def main(ctx, x):\n    return ctx.call('f', x)\n", entry: "main" }, args: 1 }, owner);
    await eventually(() => io.pending.length === 1); // the sub-call waits on its IO
    pool.cancel("task-9/0/1", "client went away");
    expectError(await parent, "CANCELLED");
    const sub = expectError(await child!, "CANCELLED");
    expect(sub.message).toContain("its parent call task-9/0/1 ended");
    const late = expectError(await pool.execute({ callId: "task-9/0/1/sub-2", fn: { source: waitsForever, entry: "main" }, args: 1 }, io.owner), "CANCELLED");
    expect(late.message).toContain("its parent call task-9/0/1 already ended");
    expect(io.pending).toHaveLength(1); // the late one never reached an executor
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'still fine'\n"))).toBe("still fine");
  });

  test("one, many at once, nested, and a failing sub-call surfacing as SubCallError", async () => {
    const pool = await startPool();
    const registry = {
      double: "def main(ctx, x):\n    return x * 2\n",
      quad: "def main(ctx, x):\n    return ctx.call('double', ctx.call('double', x))\n",
      boom: "def main(ctx, x):\n    raise ValueError('no')\n",
    };
    const owner = subCallOwner(pool, registry);
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return ctx.call('double', x)\n", 4, owner))).toBe(8);
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return ctx.call_many([('double', 1), ('quad', 2), ({'source': 'def main(ctx, x):\\n    return -x\\n', 'entry': 'main'}, 3)])\n", null, owner))).toEqual([2, 8, -3]);
    expect(expectOk(await run(pool, "async def main(ctx, x):\n    return await ctx.call('quad', x)\n", 5, owner))).toBe(20);
    const src = [
      "from blockx_executor import SubCallError",
      "def main(ctx, x):",
      "    try:",
      "        ctx.call('boom', 1)",
      "    except SubCallError as e:",
      "        return [e.code, e.message, 'ValueError' in e.traceback]",
    ].join("\n");
    expect(expectOk(await run(pool, src, null, owner))).toEqual(["USER_ERROR", "ValueError: no", true]);
  });
});

describe("compile cache and errors", () => {
  test("a function is compiled once per digest per executor; a changed source compiles again", async () => {
    const pool = await startPool({ executorCount: 1 });
    const src = "def main(ctx, x):\n    return x\n";
    expect((await run(pool, src, 1)).compiled).toBe(true);
    expect((await run(pool, src, 2)).compiled).toBe(false);
    expect((await run(pool, src + "\n", 3)).compiled).toBe(true);
  });

  test("a syntax error comes back with line and column", async () => {
    const pool = await startPool();
    const err = expectError(await run(pool, "def main(ctx, x):\n    return (x +\n\ndef other(:\n    pass\n"), "SYNTAX_ERROR");
    expect(err.line).toBeGreaterThan(0);
    expect(err.column).toBeGreaterThan(0);
    expect(err.message).toContain(`line ${err.line}`);
    expect(err.retryable).toBe(false);
  });

  test("a user exception carries the Python traceback with the user's own line numbers", async () => {
    const pool = await startPool();
    const src = ["def helper(v):", "    return 10 / v", "", "def main(ctx, x):", "    y = x - 1", "    return helper(y)"].join("\n");
    const err = expectError(await run(pool, src, 1), "USER_ERROR");
    expect(err.message).toBe("ZeroDivisionError: division by zero");
    expect(err.traceback).toMatch(/line 6, in main/);
    expect(err.traceback).toMatch(/line 2, in helper/);
    expect(err.traceback).toContain("return 10 / v");
    expect(err.traceback).not.toContain("blockx_executor");
    expect(err.line).toBe(2);
    expect(err.retryable).toBe(false);
  });

  test("missing entry, bad signature and a result that is not JSON are named", async () => {
    const pool = await startPool();
    expectError(await pool.execute({ callId: "e1", fn: { source: "def main(ctx, x):\n    return 1\n", entry: "nope" }, args: null }), "ENTRY_NOT_FOUND");
    expectError(await run(pool, "def main(x):\n    return 1\n"), "BAD_SIGNATURE");
    expectError(await run(pool, "def main(ctx, x):\n    return {1, 2}\n"), "RESULT_NOT_JSON");
  });
});

describe("faults", () => {
  test("SIGKILL of an executor mid-call: the call fails retryable, the executor is replaced, the next call succeeds", async () => {
    const pool = await startPool({ executorCount: 1 });
    const io = manualIo();
    const before = pool.pids()[0]!;
    const p = run(pool, "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", 1, io.owner);
    await eventually(() => io.pending.length === 1);
    process.kill(before, "SIGKILL");
    const err = expectError(await p, "EXECUTOR_CRASHED");
    expect(err.retryable).toBe(true);
    await eventually(() => pool.pids()[0] !== null && pool.pids()[0] !== before && pool.stats().executors[0]!.state === "READY");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'after'\n"))).toBe("after");
    expect(pool.stats().restarts).toBe(1);
  });

  test("one id to grep: the executor's own stderr and the pool's lines about its death name the calls it held (ids starting with the task id)", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
    const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), log, { waitForAll: true });
    pools.push(pool);
    const io = manualIo();
    // os.write to fd 2 goes around the per-call capture of sys.stderr, as a C extension's message would.
    const src = "import os\ndef main(ctx, x):\n    os.write(2, b'raw line from below the capture\\n')\n    return ctx.io('b', 'op', x)\n";
    const p = pool.execute({ callId: "grep-task-7/3/1", fn: { source: src, entry: "main" }, args: 1 }, io.owner);
    await eventually(() => io.pending.length === 1);
    await eventually(() => lines.some((l) => l.msg === "raw line from below the capture"));
    expect(lines.find((l) => l.msg === "raw line from below the capture")).toMatchObject({ component: "executor", stream: "stderr", callIds: ["grep-task-7/3/1"] });
    process.kill(pool.pids()[0]!, "SIGKILL");
    expectError(await p, "EXECUTOR_CRASHED");
    const death = lines.filter((l) => l.component === "executor-pool" && /executor (exited|down)/.test(String(l.msg)));
    const naming = death.filter((l) => l.msg !== "executor down; restart scheduled");
    expect(naming.length).toBeGreaterThan(0);
    for (const l of naming) expect(l.callIds).toEqual(["grep-task-7/3/1"]);
  });

  test("calls made while the only executor restarts wait for its replacement; one cancelled while waiting ends CANCELLED at once", async () => {
    const pool = await startPool({ executorCount: 1 });
    process.kill(pool.pids()[0]!, "SIGKILL");
    await eventually(() => pool.stats().executors[0]!.state !== "READY");
    // From here to the first await nothing else runs: no executor can take a call, so both wait.
    const first = run(pool, "def main(ctx, x):\n    return x\n", 1);
    const second = run(pool, "def main(ctx, x):\n    return x\n", 2);
    expect(pool.stats().queued).toBe(2);
    pool.cancel(`t${seq}`, "the caller went away");
    expect(pool.stats().queued).toBe(1);
    const cancelled = expectError(await second, "CANCELLED");
    expect(cancelled.message).toContain("the caller went away");
    expect(expectOk(await first)).toBe(1);
    expect(pool.stats()).toMatchObject({ queued: 0, restarts: 1 });
    expect(pool.stats().executors[0]!.inflight).toBe(0);
  });

  test("an infinite loop fails BUDGET_EXCEEDED while other calls on the same executor finish", async () => {
    const pool = await startPool({ executorCount: 1 });
    const loop = run(pool, "def main(ctx, x):\n    while True:\n        pass\n", null, {}, 500);
    const other = run(pool, "def main(ctx, x):\n    return 'unaffected'\n");
    expect(expectOk(await other)).toBe("unaffected");
    const err = expectError(await loop, "BUDGET_EXCEEDED");
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("500 ms");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'next'\n"))).toBe("next");
  });

  test("IO time counts toward the budget", async () => {
    const pool = await startPool();
    const owner: CallOwner = { io: async () => ({ ok: true, value: 1, ioMs: 800 }) };
    expectError(await run(pool, "def main(ctx, x):\n    ctx.io('b', 'op', 1)\n    return 1\n", null, owner, 500), "BUDGET_EXCEEDED");
  });

  test("time.sleep(10**6) is stopped by the wall-clock ceiling; the executor is replaced", async () => {
    const pool = await startPool({ executorCount: 1, wallClockCeilingMs: 1500 });
    const err = expectError(await run(pool, "import time\ndef main(ctx, x):\n    time.sleep(10**6)\n"), "WALL_CLOCK_EXCEEDED");
    expect(err.message).toContain("1500 ms");
    await eventually(() => pool.stats().executors[0]!.state === "READY");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'awake'\n"))).toBe("awake");
  });

  test("a memory bomb kills only its own executor (OOM_KILLED, retryable)", async () => {
    const pool = await startPool({ executorCount: 2, memoryLimitBytes: 300 * 1024 * 1024 });
    const pidsBefore = pool.pids();
    const bomb = await run(pool, "def main(ctx, x):\n    blocks = []\n    while True:\n        blocks.append(bytearray(50 * 1024 * 1024))\n", null, {}, 60_000);
    const err = expectError(bomb, "OOM_KILLED");
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("memory limit");
    const pidsAfter = pool.pids();
    expect(pidsAfter.filter((p, i) => p === pidsBefore[i]).length).toBe(1); // the other executor lived on
    await eventually(() => pool.stats().executors.every((e) => e.state === "READY"));
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'ok'\n"))).toBe("ok");
  });

  test("scratch is the executor's own bounded tmpfs: 300 MiB written under a 64 MiB limit fails the call and leaves nothing on the host", async () => {
    const pool = await startPool({ executorCount: 1, memoryLimitBytes: 64 * 1024 * 1024 });
    const runtimeDir = (pool as unknown as { runtimeDir: string }).runtimeDir;
    const fill = "import os\ndef main(ctx, mb):\n    chunk = b'x' * (1 << 20)\n    with open('big', 'wb') as f:\n        for _ in range(mb):\n            f.write(chunk)\n            f.flush()\n    return os.path.getsize('big')\n";
    const out = await run(pool, fill, 300, {}, 60_000);
    // Either the tmpfs is full (ENOSPC: it is as large as the limit) or its files and the interpreter pass the limit first.
    if (out.ok) throw new Error(`300 MiB of scratch were written under a 64 MiB limit (${JSON.stringify(out.value)})`);
    const ended = `${out.error.code}: ${out.error.message}`;
    if (out.error.code !== "OOM_KILLED" && !(out.error.code === "USER_ERROR" && ended.includes("No space left on device"))) throw new Error(`the call ended ${ended}`);
    // Nothing of it is on the host: the scratch folder the host keeps for the executor stays empty.
    const hostBytes = (dir: string): number => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).reduce((n, d) => n + Bun.file(join(d.parentPath, d.name)).size, 0);
    expect(hostBytes(runtimeDir)).toBeLessThan(8 * 1024 * 1024);
    // Files a call left in scratch stay its executor's until that is replaced, and count against its
    // memory: the executor that hit ENOSPC holds a full scratch, and is killed (OOM_KILLED, retryable)
    // by the next call at the latest; its replacement starts empty.
    await eventually(() => pool.stats().executors.every((e) => e.state === "READY"));
    let next = await run(pool, "def main(ctx, x):\n    return 'ok'\n");
    if (!next.ok) {
      expect(next.error.code).toBe("OOM_KILLED");
      await eventually(() => pool.stats().executors.every((e) => e.state === "READY"));
      next = await run(pool, "def main(ctx, x):\n    return 'ok'\n");
    }
    expect(expectOk(next)).toBe("ok");
  });

  for (const memoryCgroup of ["off", "auto"] as const) {
    test(`the files in scratch count against the memory limit: 100 MiB of them, held, under a 100 MiB limit is OOM_KILLED (EXECUTOR_MEMORY_CGROUP=${memoryCgroup})`, async () => {
      // The tmpfs is as large as the limit; with the interpreter's own memory the total passes it, and no RSS shows the files.
      const pool = await startPool({ executorCount: 1, memoryLimitBytes: 100 * 1024 * 1024, memoryCgroup });
      const hold = "import time\ndef main(ctx, mb):\n    chunk = b'x' * (1 << 20)\n    with open('held', 'wb') as f:\n        try:\n            for _ in range(mb):\n                f.write(chunk)\n                f.flush()\n        except OSError:\n            pass\n    time.sleep(30)\n    return 'held'\n";
      const err = expectError(await run(pool, hold, 100, {}, 60_000), "OOM_KILLED");
      // Sampled, the message names the scratch files; in a memory cgroup (where this machine can
      // make one) the kernel kills it: tmpfs pages are charged to the cgroup of the executor that wrote them.
      const kernel = memoryCgroup === "auto" && findCgroupPlace(probeSelf()).place !== null;
      expect(err.message).toContain(kernel ? "killed by the kernel (its memory cgroup)" : "scratch");
    });
  }

  test("reference cycles by the million are still collected: the call ends within the memory limit, its executor lives on", async () => {
    // 5 million self-referencing lists (~100 bytes each) are ~500 MB if never collected: over the 300 MiB limit.
    const pool = await startPool({ executorCount: 1, memoryLimitBytes: 300 * 1024 * 1024 });
    const pid = pool.pids()[0];
    const cycles = "def main(ctx, n):\n    for _ in range(n):\n        a = []\n        a.append(a)\n    return n\n";
    expect(expectOk(await run(pool, cycles, 5_000_000, {}, 60_000))).toBe(5_000_000);
    expect(pool.pids()[0]).toBe(pid);
  });

  test("a hung executor (stopped, not answering pings) is killed and replaced", async () => {
    const pool = await startPool({ executorCount: 1, pingIntervalMs: 100, pingTimeoutMs: 600 });
    const io = manualIo();
    const pid = pool.pids()[0]!;
    const p = run(pool, "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", 1, io.owner);
    await eventually(() => io.pending.length === 1);
    process.kill(pid, "SIGSTOP");
    const err = expectError(await p, "EXECUTOR_HUNG");
    expect(err.retryable).toBe(true);
    await eventually(() => pool.stats().executors[0]!.state === "READY");
    expect(pool.pids()[0]).not.toBe(pid);
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'replaced'\n"))).toBe("replaced");
  });
});

describe("isolation", () => {
  test("user code cannot connect to a loopback TCP server the test opens", async () => {
    let connections = 0;
    const server = createServer(() => connections++);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const pool = await startPool();
      const src = `import socket\ndef main(ctx, x):\n    socket.create_connection(('127.0.0.1', ${port}), timeout=2)\n    return 'connected'\n`;
      const err = expectError(await run(pool, src), "USER_ERROR");
      expect(err.message).toMatch(/PermissionError|Network is unreachable|OSError/);
      expect(connections).toBe(0);
    } finally {
      server.close();
    }
  });

  test("a fork bomb is contained: os.fork, subprocess and ctypes are denied", async () => {
    const pool = await startPool();
    const bomb = "import os\ndef main(ctx, x):\n    while True:\n        os.fork()\n";
    expect(expectError(await run(pool, bomb), "USER_ERROR").message).toContain("PermissionError");
    const sub = "import subprocess\ndef main(ctx, x):\n    return subprocess.run(['true']).returncode\n";
    expect(expectError(await run(pool, sub), "USER_ERROR").message).toContain("PermissionError");
    const viaLibc = "import ctypes\ndef main(ctx, x):\n    libc = ctypes.CDLL(None)\n    while True:\n        libc.fork()\n";
    expect(expectError(await run(pool, viaLibc), "USER_ERROR").message).toContain("PermissionError");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return 'alive'\n"))).toBe("alive");
  });

  test("user code works in a scratch directory of its own", async () => {
    const pool = await startPool();
    const src = "import os\ndef main(ctx, x):\n    open('f.txt', 'w').write('hi')\n    return [os.getcwd(), open('f.txt').read()]\n";
    const [cwd, content] = expectOk(await run(pool, src)) as [string, string];
    // The sandbox shows the executor's own folder (under the pool's, wiped at its exit) at /scratch.
    expect(cwd).toBe("/scratch");
    expect(content).toBe("hi");
  });
});

describe("start-up", () => {
  const isRoot = process.getuid?.() === 0;

  test("executors that die at start fail the start at once with their own stderr and the likely cause", async () => {
    // An interpreter that answers the pool's version probe but, as an executor, dies with
    // ModuleNotFoundError before its Hello (what a Python without the package would do).
    const cache = mkdtempSync(join(tmpdir(), "blockx-pool-cache-"));
    chmodSync(cache, 0o755);
    try {
      const good = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, cacheDir: cache }), silentLogger());
      await good.close();
      const python = join(cache, "python-without-the-package");
      writeFileSync(
        python,
        ["#!/bin/sh", 'case "$*" in *sys.executable*) echo "$0"; echo 3.11; exit 0;; esac', 'exec /usr/bin/python3 -c "import blockx_gone_module"', ""].join("\n"),
      );
      chmodSync(python, 0o755);
      let error: unknown = null;
      try {
        // A shell-script interpreter needs /bin/sh, which the sandbox does not show: this is about executors, not the sandbox.
        const p = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2, cacheDir: cache, python, sandbox: "off" }), silentLogger(), { waitForAll: true });
        pools.push(p);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ExecutorStartError);
      const e = error as ExecutorStartError;
      expect(e.code).toBe("EXECUTORS_DIED_AT_START");
      expect(e.message).toContain("ModuleNotFoundError: No module named 'blockx_gone_module'");
      expect(e.message).toContain("exited with code 1");
      expect(e.message).toContain(`likely cause: the module blockx_gone_module is missing: a damaged executor copy at ${good.pythonPath}`);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 20_000);

  test("a damaged executor copy in the cache is never imported: the pool starts from a fresh copy", async () => {
    const cache = mkdtempSync(join(tmpdir(), "blockx-pool-cache-"));
    chmodSync(cache, 0o755);
    try {
      const first = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, cacheDir: cache }), silentLogger());
      const app = join(first.pythonPath, "blockx_executor", "app.py");
      await first.close();
      writeFileSync(app, "import blockx_gone_module\n" + readFileSync(app, "utf8"));
      const again = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, cacheDir: cache }), silentLogger());
      pools.push(again);
      expect(again.pythonPath).not.toBe(first.pythonPath);
      const out = await again.execute({ callId: "c1", fn: { source: "def main(ctx, x):\n    return x + 1\n", entry: "main" }, args: 1 }, {});
      expect(out.ok && out.value).toBe(2);
      rmSync(again.pythonPath, { recursive: true, force: true });
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 20_000);

  test("executor code is copied out of the checkout into a folder of its own, world-readable", async () => {
    const pool = await startPool({ executorCount: 1 });
    expect(pool.pythonPath).not.toContain(join(import.meta.dir, "..", ".."));
    expect(readdirSync(join(pool.pythonPath, "blockx_executor"))).toContain("__main__.py");
    expect(expectOk(await run(pool, "def main(ctx, x):\n    return x * 2\n", 21))).toBe(42);
  });

  test.if(isRoot)("as root, a BLOCKX_CACHE_DIR that EXECUTOR_USER cannot reach stops the start, naming the folder", async () => {
    const secret = mkdtempSync(join(tmpdir(), "blockx-private-")); // mode 0700, like /root
    try {
      let error: unknown = null;
      await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, cacheDir: join(secret, "cache") }), silentLogger()).then(
        (p) => pools.push(p),
        (e) => (error = e),
      );
      expect(error).toBeInstanceOf(ExecutorStartError);
      expect((error as ExecutorStartError).code).toBe("EXECUTOR_CODE_UNREADABLE");
      expect((error as Error).message).toContain(`BLOCKX_CACHE_DIR ${join(secret, "cache")} is not readable by EXECUTOR_USER nobody`);
      expect((error as Error).message).toContain(`${secret} is mode 0700`);
    } finally {
      rmSync(secret, { recursive: true, force: true });
    }
  });
});
