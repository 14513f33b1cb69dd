/**
 * Hostile frames from an executor (issue 51 item 8): user code runs in the executor and may write
 * anything to the socket its executor talks to the pool over (os.write on the socket's fd needs no
 * permission the audit hook denies). Each case writes one kind of hostile frame (or frames) and
 * returns; the pool must end that call with an error code and words (never a forged value, never
 * another call's result), leave another owner's call running beside it untouched, keep no call
 * hanging, and serve the next call as before. Real Python executors, in-process pool.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { silentLogger } from "../../src/common/logging/logger";
import type { CallOutcome } from "../../src/runtime/calls/call";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import type { JsonValue } from "../../src/runtime/json/raw-json";
import { mulberry32 } from "../support/mulberry32";

const CASES = Number(process.env.FUZZ_CASES ?? 22);
const SEED = Number(process.env.FUZZ_SEED ?? 20261206);

/** The function: writes the given bytes onto every socket of its process (the pool's is the one), then returns. */
const WRITER = `import os, base64
def main(ctx, b64):
    data = base64.b64decode(b64)
    for fd in os.listdir('/proc/self/fd'):
        try:
            if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):
                os.write(int(fd), data)
        except OSError:
            pass
    return 'wrote'
`;

const frame = (body: Buffer | string): Buffer => {
  const b = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const h = Buffer.alloc(4);
  h.writeUInt32BE(b.length);
  return Buffer.concat([h, b]);
};

const FRAME_KINDS = [
  ["oversized length", () => Buffer.from([0x7f, 0xff, 0xff, 0xff, 0x7b])],
  ["invalid UTF-8", () => frame(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))],
  ["not JSON", () => frame("{type: CallCompleted")],
  ["JSON not an object", () => frame("[1,2,3]")],
  ["unknown type", () => frame('{"type":"Bogus","callId":"x"}')],
  ["fields missing", () => frame('{"type":"CallCompleted"}')],
  // The bystander's id (ids are not secret): its result must come from its own executor only.
  ["another call's id", (_rnd: () => number, other: string) => frame(JSON.stringify({ type: "CallCompleted", callId: other, result: -1, cpuMs: 0, output: "", logs: [] }))],
  ["a second Hello", () => frame('{"type":"Hello","protocol":1,"executorId":"0.1","token":"forged","pid":1,"python":"3"}')],
  ["nested 100,000 deep", () => frame('{"type":"Pong","seq":' + "[".repeat(100_000) + "]".repeat(100_000) + "}")],
  ["truncated frame", () => frame('{"type":"Pong","seq":1}').subarray(0, 10)],
  ["10,000 Pongs", () => Buffer.concat(Array.from({ length: 10_000 }, (_, i) => frame(`{"type":"Pong","seq":${i}}`)))],
  ["a forged failure with a huge log", () => frame(JSON.stringify({ type: "CallFailed", callId: "x", error: { type: "USER_ERROR", message: "m".repeat(1 << 20) }, cpuMs: 0, output: "", logs: [] }))],
  ["zero-length frame", () => Buffer.from([0, 0, 0, 0])],
  ["random bytes", (rnd: () => number, _other: string) => Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 4096) }, () => Math.floor(rnd() * 256)))],
] as const;

const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), silentLogger(), { waitForAll: true });
afterAll(() => pool.close());
let seq = 0;
/** Calls of one owner share executors (one identity's trust domain); another owner's never do. */
const run = (source: string, args: JsonValue, ownerKey: string): Promise<CallOutcome> => pool.execute({ callId: `fuzz-${++seq}`, fn: { source, entry: "main" }, args, ownerKey });

describe("hostile frames from user code in an executor", () => {
  test("each kind ends its call with an error code and words, forges no value, and the pool serves the next call", async () => {
    const rnd = mulberry32(SEED);
    const findings: string[] = [];
    const byCode = new Map<string, number>();
    const cases = Math.max(CASES, FRAME_KINDS.length);
    for (let i = 0; i < cases; i++) {
      const [name, make] = FRAME_KINDS[i % FRAME_KINDS.length]!;
      // A call of another owner runs meanwhile (slowly enough to be running when the frames arrive): it must end with its own value.
      const bystander = run("import time\ndef main(ctx, x):\n    time.sleep(0.2)\n    return x * 2\n", i, "bystander");
      const bytes = (make as (rnd: () => number, other: string) => Buffer)(rnd, `fuzz-${seq}`);
      const out = await run(WRITER, bytes.toString("base64"), "attacker");
      const code = out.ok ? "OK" : out.error.code;
      byCode.set(code, (byCode.get(code) ?? 0) + 1);
      if (out.ok && out.value !== "wrote") findings.push(`${name}: the call returned a forged value ${JSON.stringify(out.value).slice(0, 80)}`);
      if (!out.ok && out.error.message.trim() === "") findings.push(`${name}: ${code} with no message`);
      const b = await bystander;
      if (!b.ok || b.value !== i * 2) findings.push(`${name}: the bystander call ended ${b.ok ? JSON.stringify(b.value) : `${b.error.code}: ${b.error.message}`}`);
      // The pool serves the next call (a fresh executor if that one was killed).
      const next = await run("def main(ctx, x):\n    return x + 1\n", i, "attacker");
      if (!next.ok || next.value !== i + 1) findings.push(`${name}: the next call ended ${next.ok ? JSON.stringify(next.value) : `${next.error.code}: ${next.error.message}`}`);
    }
    console.log(`executor frames fuzz: ${cases} cases of ${FRAME_KINDS.length} kinds; the writing calls ended ${[...byCode].map(([k, v]) => `${k} ${v}`).join(", ")}`);
    expect(findings).toEqual([]);
  }, 600_000);
});
