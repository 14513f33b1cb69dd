/**
 * Bounds a hostile call hits, each with a clear error, while the pool (the Worker's executors)
 * keeps serving other calls, with real executors: an input nested 10,000 deep, a frame over the
 * 64 MiB limit (a huge source), answers too large for one frame, and a flood of stderr (lines
 * without end, at any rate) that reaches the log only bounded in length and rate.
 * Not here (not built yet): a source sent once per executor then by digest, inputs per task,
 * task-id lengths on every RPC, return-value bytes per task (see the report).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import pino from "pino";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { RawJson, type JsonValue } from "../../src/runtime/executor/protocol";
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
  const source = `${INC}# ${"x".repeat(65 * 1024 * 1024)}\n`;
  const rssBefore = process.memoryUsage().rss;
  const o = await pool.execute({ callId: `huge-${seq++}`, fn: { source, entry: "main" }, args: 1 });
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
