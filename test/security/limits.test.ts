/**
 * Bounds a hostile call hits, each with a clear error, while the pool (the Worker's executors)
 * keeps serving other calls, with real executors: an input nested 10,000 deep, a frame over the
 * 64 MiB limit, a source over EXECUTOR_MAX_SOURCE_BYTES, answers too large for one frame or too
 * deep for Python's JSON reader, a flood of stderr (lines without end, at any rate) that reaches
 * the log only bounded in length and rate; a source goes to each executor once, then by digest
 * (an evicted one is resent); sub-calls share their parent's budget and wait past its window.
 * The compiled Worker's side (its RSS under hostile tasks, inputs per task, task ids on every RPC,
 * return-value bytes per task) is in limits-worker.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import pino from "pino";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { RawJson, type JsonValue } from "../../src/runtime/json/raw-json";
import { createCallOwner, runOnce } from "../../src/runtime/calls/call-owner";
import type { CallOutcome } from "../../src/runtime/calls/call";
import { STDERR_LINES_PER_SECOND, STDERR_MAX_LINE_CHARS } from "../../src/runtime/executor/stderr-gate";

const logged: { msg: string; stream?: string; cut?: boolean; droppedLines?: number; droppedLinesBefore?: number }[] = [];
let pool: ExecutorPool;
let seq = 0;
/** The test process's RSS may grow at most this much across the hostile calls. */
const RSS_BOUND_BYTES = 400 * 1024 * 1024;

beforeAll(async () => {
  const log = pino({ level: "warn" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), log, { waitForAll: true });
});
afterAll(() => pool.close());

const INC = "def main(ctx, x):\n    return x + 1\n";
async function stillServing(): Promise<void> {
  const o = await pool.execute({ callId: `ok-${seq++}`, fn: { source: INC, entry: "main" }, args: 41 });
  expect(o.ok && o.value).toBe(42);
}

test("an input nested 10,000 deep is refused at once as INPUT_REJECTED, not a RecursionError that orphans the call", async () => {
  let nested: JsonValue = 0;
  for (let i = 0; i < 10_000; i++) nested = [nested];
  const o = await pool.execute({ callId: `deep-${seq++}`, fn: { source: INC, entry: "main" }, args: nested });
  expect(o.ok).toBe(false);
  if (!o.ok) {
    expect(o.error.code).toBe("INPUT_REJECTED");
    expect(o.error.retryable).toBe(false);
    expect(o.error.message).toContain("nests more than 256 levels deep");
  }
  await stillServing();
}, 30_000);

test("a call whose frame would exceed 64 MiB is refused before sending (the executor would die reading it)", async () => {
  const source = `${INC}# ${"x".repeat(30 * 1024 * 1024)}\n`;
  const rssBefore = process.memoryUsage().rss;
  const o = await pool.execute({ callId: `huge-${seq++}`, fn: { source, entry: "main" }, args: "y".repeat(40 * 1024 * 1024) });
  expect(o.ok).toBe(false);
  if (!o.ok) {
    expect(o.error.code).toBe("INPUT_REJECTED");
    expect(o.error.message).toMatch(/ExecuteCall frame of \d+ bytes exceeds the 67108864-byte limit/);
  }
  expect(pool.stats().restarts).toBe(0); // no executor died of it
  await stillServing();
  expect(process.memoryUsage().rss - rssBefore).toBeLessThan(RSS_BOUND_BYTES);
}, 60_000);

test("answers too large for one frame reach the call as errors; its executor lives", async () => {
  const big = new RawJson(JSON.stringify("y".repeat(40 * 1024 * 1024)));
  const source = "def main(ctx, x):\n    try:\n        ctx.io_many([('b', 'op', 1), ('b', 'op', 2)])\n    except Exception as e:\n        return type(e).__name__ + ': ' + str(e)[:200]\n";
  const o = await pool.execute({ callId: `answers-${seq++}`, fn: { source, entry: "main" }, args: null }, { io: async () => ({ ok: true, value: big, ioMs: 0 }) as never });
  if (!o.ok) throw new Error(`${o.error.code}: ${o.error.message}`);
  expect(String(o.value)).toContain("do not fit in one frame");
  expect(pool.stats().restarts).toBe(0);
  await stillServing();
}, 60_000);

test("a stderr flood (100,000 lines, and a 10 MiB line without end) reaches the log bounded in rate and length, with a count of what was dropped", async () => {
  const rssBefore = process.memoryUsage().rss;
  const before = logged.length;
  const source = [
    "import os",
    "def main(ctx, x):",
    "    for i in range(100_000):",
    "        os.write(2, b'flood line %d\\n' % i)",
    "    os.write(2, b'z' * (10 << 20))",
    "    os.write(2, b'\\nafter the long line\\n')",
    "    return 'flooded'",
    "",
  ].join("\n");
  const o = await pool.execute({ callId: `flood-${seq++}`, fn: { source, entry: "main" }, args: null });
  expect(o.ok && o.value).toBe("flooded");
  await stillServing();
  await Bun.sleep(1500); // the pipe drains after the call's answer
  const lines = logged.slice(before).filter((l) => l.stream === "stderr");
  // At most one second's worth per second of the flood's duration (a few seconds at most here), never 100,000.
  expect(lines.length).toBeLessThan(STDERR_LINES_PER_SECOND * 30);
  expect(lines.every((l) => l.msg.length <= STDERR_MAX_LINE_CHARS)).toBe(true);
  const dropped = logged.slice(before).reduce((n, l) => n + (l.droppedLinesBefore ?? 0) + (l.droppedLines ?? 0), 0);
  expect(dropped).toBeGreaterThan(0);
  expect(process.memoryUsage().rss - rssBefore).toBeLessThan(RSS_BOUND_BYTES);
}, 120_000);

function ok(o: CallOutcome): JsonValue {
  if (!o.ok) throw new Error(`${o.error.code}: ${o.error.message}`);
  return o.value;
}

test("a source over EXECUTOR_MAX_SOURCE_BYTES is refused at once as INPUT_REJECTED naming the limit", async () => {
  const source = `${INC}# ${"x".repeat(33 * 1024 * 1024)}\n`;
  const o = await pool.execute({ callId: `big-source-${seq++}`, fn: { source, entry: "main" }, args: 1 });
  expect(o.ok).toBe(false);
  if (!o.ok) {
    expect(o.error.code).toBe("INPUT_REJECTED");
    expect(o.error.message).toContain("over the limit of 33554432 (EXECUTOR_MAX_SOURCE_BYTES)");
  }
  await stillServing();
}, 60_000);

test("a source goes to each executor once, then only its digest: calls by digest run it, two sources never mix", async () => {
  const one = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), pino({ level: "silent" }), { waitForAll: true });
  try {
    const twice = "def main(ctx, x):\n    return ['twice', x * 2]\n";
    const thrice = "def main(ctx, x):\n    return ['thrice', x * 3]\n";
    const outs = await Promise.all(
      Array.from({ length: 40 }, (_, i) => one.execute({ callId: `d-${i}`, fn: { source: i % 2 ? thrice : twice, entry: "main" }, args: i, ownerKey: "A" })),
    );
    outs.forEach((o, i) => expect(ok(o)).toEqual(i % 2 ? ["thrice", i * 3] : ["twice", i * 2]));
    expect(one.stats().sourcesSent).toBe(2);
    // A new owner gets a fresh executor (a recycle): it has never seen the source, so the source goes again, with no miss.
    expect(ok(await one.execute({ callId: "d-b", fn: { source: twice, entry: "main" }, args: 5, ownerKey: "B" }))).toEqual(["twice", 10]);
    expect(one.stats().sourcesSent).toBe(3);
    expect(one.stats().sourceResends).toBe(0);
  } finally {
    await one.close();
  }
}, 120_000);

test("a large source goes to every executor from one encoding (accents and emoji intact), dropped when its last call ends", async () => {
  const two = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), pino({ level: "silent" }), { waitForAll: true });
  try {
    // 5 MiB of comment (2 Mi characters), past the sharing threshold: its bytes go by reference into both executors' frames.
    const source = `WORD = "ünï😀"\ndef main(ctx, x):\n    return [WORD, len(WORD) + x]\n# ${"é☃".repeat(1 << 20)}\n`;
    const pending = Array.from({ length: 40 }, (_, i) => two.execute({ callId: `shared-${i}`, fn: { source, entry: "main" }, args: i }));
    expect(two.stats().sharedSources).toBe(1);
    const outs = await Promise.all(pending);
    outs.forEach((o, i) => expect(ok(o)).toEqual(["ünï😀", 4 + i]));
    expect(new Set(outs.map((o) => o.executorId)).size).toBe(2);
    expect(two.stats().sourcesSent).toBe(2);
    expect(two.stats().sharedSources).toBe(0);
    // A small source is not held at all.
    expect(ok(await two.execute({ callId: "small-1", fn: { source: INC, entry: "main" }, args: 1 }))).toBe(2);
    expect(two.stats().sharedSources).toBe(0);
  } finally {
    await two.close();
  }
}, 120_000);

test("a source the executor evicted (its store holds 256) is sent again for the call that needs it: no call fails of a miss", async () => {
  const one = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), pino({ level: "silent" }), { waitForAll: true });
  try {
    const src = (i: number) => `def main(ctx, x):\n    return ${i}\n`;
    expect(ok(await one.execute({ callId: "e-first", fn: { source: src(0), entry: "main" }, args: null }))).toBe(0);
    for (let i = 1; i <= 300; i++) ok(await one.execute({ callId: `e-${i}`, fn: { source: src(i), entry: "main" }, args: null }));
    expect(one.stats().sourceResends).toBe(0);
    // The pool still counts source 0 as sent; the executor has let it go.
    expect(ok(await one.execute({ callId: "e-again", fn: { source: src(0), entry: "main" }, args: null }))).toBe(0);
    expect(one.stats().sourceResends).toBe(1);
  } finally {
    await one.close();
  }
}, 120_000);

test("answers too deep for Python's JSON reader fail the call naming the RecursionError; the executor lives", async () => {
  const deep = new RawJson(`${"[".repeat(5000)}0${"]".repeat(5000)}`);
  const source = "def main(ctx, x):\n    return ctx.io('b', 'op', 1)\n";
  const restarts = pool.stats().restarts;
  const o = await pool.execute({ callId: `deep-answer-${seq++}`, fn: { source, entry: "main" }, args: null }, { io: async () => ({ ok: true, value: deep, ioMs: 0 }) as never });
  expect(o.ok).toBe(false);
  if (!o.ok) {
    expect(o.error.code).toBe("INPUT_REJECTED");
    expect(o.error.message).toContain("RecursionError");
  }
  expect(pool.stats().restarts).toBe(restarts);
  await stillServing();
}, 60_000);

test("a sub-call's budget is what remains of its parent's, and its time is charged to the parent", async () => {
  const burn = "import time\ndef burn(ms):\n    end = time.thread_time() + ms / 1000\n    while time.thread_time() < end:\n        pass\n";
  const child = `${burn}def main(ctx, x):\n    burn(100000)\n`;
  const parent = `${burn}from blockx_executor import SubCallError\ndef main(ctx, x):\n    burn(400)\n    try:\n        ctx.call({'source': ${JSON.stringify(child)}}, None)\n    except SubCallError as e:\n        return e.code + ': ' + str(e)\n`;
  const budgets: (number | undefined)[] = [];
  const runSubCall = runOnce(pool);
  const owner = createCallOwner({
    io: async () => ({ ok: true, value: null, ioMs: 0 }),
    functions: null,
    role: "test",
    budgetMs: 1000,
    runSubCall: (call, o) => (budgets.push(call.budgetMs), runSubCall(call, o)),
  });
  const o = await pool.execute({ callId: `budget-${seq++}`, fn: { source: parent, entry: "main" }, args: null, budgetMs: 1000 }, owner);
  // 1000 minus the parent's 400 ms (and a little), not a fresh 1000.
  expect(budgets).toHaveLength(1);
  expect(budgets[0]!).toBeGreaterThan(0);
  expect(budgets[0]!).toBeLessThanOrEqual(600);
  // The child used up what was left: charged with it, the parent is over its own budget.
  expect(o.ok).toBe(false);
  if (!o.ok) expect(o.error.code).toBe("BUDGET_EXCEEDED");
}, 60_000);

test("a call's sub-calls past its window wait for a place (ctx.call_many of 12 with a window of 3): all complete, at most 3 at once", async () => {
  let running = 0;
  let most = 0;
  const childSource = "def main(ctx, x):\n    return ctx.io('probe', 'hold', x)\n";
  const owner = createCallOwner({
    io: async (req) => {
      running++;
      most = Math.max(most, running);
      await Bun.sleep(50);
      running--;
      return { ok: true, value: req.params, ioMs: 0 };
    },
    functions: null,
    role: "test",
    budgetMs: undefined,
    runSubCall: runOnce(pool),
    subCallWindow: 3,
  });
  const parent = `def main(ctx, x):\n    return ctx.call_many([({'source': ${JSON.stringify(childSource)}}, i) for i in range(12)])\n`;
  const o = await pool.execute({ callId: `fan-${seq++}`, fn: { source: parent, entry: "main" }, args: null }, owner);
  expect(ok(o)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  expect(most).toBeLessThanOrEqual(3);
  expect(most).toBeGreaterThan(0);
}, 60_000);
