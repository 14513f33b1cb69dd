/**
 * bench/executor/frames.ts: the executor protocol's frame codec on the Worker's side, each figure
 * beside a baseline measured in the same run (medians of interleaved rounds):
 *  - decoding a large frame (a big result or answer) that arrives in 64 KiB chunks, as a Unix socket
 *    hands it over, against the same frame arriving in one chunk (the floor: one UTF-8 decode and one
 *    JSON.parse); and the decoder before 2026-12-03, which joined its buffer and each chunk anew
 *    (kept here as a reference: it was quadratic in the frame's size);
 *  - encoding a call's ExecuteCall frame: JSON written straight into the frame, against
 *    TextEncoder.encode and a copy behind the length (the encoder before);
 *  - a call returning a large string through a real executor pool (one executor): the pool
 *    process's CPU for the result, against decoding the same frame in one chunk (the floor above).
 *    `--pool-from DIR` takes the pool from another checkout's src/ (e.g. an older commit's, from
 *    `git worktree add`, with node_modules linked) and measures it too, in the same rounds.
 *
 *   bun bench/executor/frames.ts [--mib 4,16,32] [--rounds 5] [--pool-from DIR]
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { encodeFrame, FrameDecoder } from "../../src/runtime/executor/frame-codec";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({ options: { mib: { type: "string", default: "4,16,32" }, rounds: { type: "string", default: "5" }, "pool-from": { type: "string" } } });
const SIZES = values.mib.split(",").map(Number);
const ROUNDS = Number(values.rounds);
const CHUNK = 64 * 1024;

/** The decoder before: every chunk joined to what was buffered (one new array per chunk). */
class JoiningDecoder {
  private buf = new Uint8Array(0);
  push(chunk: Uint8Array): unknown[] {
    let data = chunk;
    if (this.buf.length > 0) {
      data = new Uint8Array(this.buf.length + chunk.length);
      data.set(this.buf, 0);
      data.set(chunk, this.buf.length);
    }
    const out: unknown[] = [];
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let pos = 0;
    while (data.length - pos >= 4) {
      const len = view.getUint32(pos, false);
      if (data.length - pos - 4 < len) break;
      out.push(JSON.parse(new TextDecoder().decode(data.subarray(pos + 4, pos + 4 + len))));
      pos += 4 + len;
    }
    this.buf = pos === data.length ? new Uint8Array(0) : data.slice(pos);
    return out;
  }
}

function decodeMs(frame: Uint8Array, how: "whole" | "chunks" | "joining"): number {
  const d = how === "joining" ? new JoiningDecoder() : new FrameDecoder();
  const t = performance.now();
  let n = 0;
  if (how === "whole") n = d.push(frame).length;
  else for (let off = 0; off < frame.length; off += CHUNK) n += d.push(frame.subarray(off, off + CHUNK)).length;
  if (n !== 1) throw new Error("the frame did not decode");
  return performance.now() - t;
}

console.log(`Frame codec (Worker side), medians of ${ROUNDS} interleaved rounds\n`);
console.log("| frame | in one chunk (floor) | in 64 KiB chunks | ratio | the joining decoder before, 64 KiB chunks | ratio |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const mib of SIZES) {
  const frame = encodeFrame({ type: "CallCompleted", callId: "c1", result: "r".repeat(mib << 20) });
  const r = await interleavedRounds(["whole", "chunks", "joining"] as const, ROUNDS, async (k) => decodeMs(frame, k));
  const [w, c, j] = [median(r.whole), median(r.chunks), median(r.joining)];
  console.log(`| ${mib} MiB result | ${w.toFixed(1)} ms | ${c.toFixed(1)} ms | ${(c / w).toFixed(2)}x | ${j.toFixed(0)} ms | ${(j / w).toFixed(1)}x |`);
}

const encoder = new TextEncoder();
function encodeThenCopy(m: unknown): Uint8Array {
  const body = encoder.encode(JSON.stringify(m));
  const f = new Uint8Array(4 + body.length);
  new DataView(f.buffer).setUint32(0, body.length, false);
  f.set(body, 4);
  return f;
}
const call = (i: number) => ({ type: "ExecuteCall", callId: `task-1/c${i}`, digest: "d".repeat(64), entry: "main", args: { chain: "ethereum", blockNumber: i }, budgetMs: 5000 });
const N = 200_000;
const enc = await interleavedRounds(["direct", "copy"] as const, ROUNDS, async (k) => {
  const t = performance.now();
  for (let i = 0; i < N; i++) (k === "direct" ? encodeFrame : encodeThenCopy)(call(i));
  return ((performance.now() - t) * 1000) / N;
});
const [direct, copy] = [median(enc.direct), median(enc.copy)];
console.log(`\n| ExecuteCall frame (${encodeFrame(call(1)).length} bytes) | encode, then copy behind the length (baseline) | written into the frame | ratio |`);
console.log("| --- | ---: | ---: | ---: |");
console.log(`| µs per frame | ${copy.toFixed(3)} | ${direct.toFixed(3)} | ${(direct / copy).toFixed(2)}x |`);

interface PoolHandle {
  execute(source: string, id: string): Promise<{ ok: boolean }>;
  close(): Promise<void>;
}

/** poolOf: an executor pool of one executor, from this checkout's src/ or another's. */
async function poolOf(root: string): Promise<PoolHandle> {
  const { ExecutorPool } = await import(join(root, "src/runtime/executor/executor-pool"));
  const { defaultExecutorPoolConfig } = await import(join(root, "src/runtime/executor/executor-pool-config"));
  const { silentLogger } = await import(join(root, "src/common/logging/logger"));
  const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), silentLogger(), { waitForAll: true });
  return { execute: (source, id) => pool.execute({ callId: id, fn: { source, entry: "main" }, args: 0 }), close: () => pool.close() };
}
const pools: Record<string, PoolHandle> = { "this checkout": await poolOf(join(import.meta.dir, "..", "..")) };
if (values["pool-from"]) pools[values["pool-from"]] = await poolOf(values["pool-from"]);
let callSeq = 0;
/** resultCpuMs: the pool process's CPU while one call returns `mib` MiB (Python builds it in its own process). */
async function resultCpuMs(pool: PoolHandle, mib: number): Promise<number> {
  const source = `def main(ctx, x):\n    return 'r' * (${mib} << 20)\n`;
  await pool.execute(source, `warm-${callSeq++}`);
  const c0 = process.cpuUsage();
  const o = await pool.execute(source, `c-${callSeq++}`);
  const c = process.cpuUsage(c0);
  if (!o.ok) throw new Error("the call failed");
  return (c.user + c.system) / 1000;
}
console.log(`\n| a call returning N MiB, one executor | decoding its frame in one chunk (floor) | ${Object.keys(pools).map((k) => `pool process CPU, ${k}`).join(" | ")} |`);
console.log(`| --- | ---: | ${Object.keys(pools).map(() => "---: |").join(" ")}`);
for (const mib of SIZES) {
  const frame = encodeFrame({ type: "CallCompleted", callId: "c1", result: "r".repeat(mib << 20) });
  const keys = ["floor", ...Object.keys(pools)];
  const r = await interleavedRounds(keys, ROUNDS, async (k) => (k === "floor" ? decodeMs(frame, "whole") : resultCpuMs(pools[k]!, mib)));
  const floorMs = median(r.floor!);
  console.log(`| ${mib} MiB | ${floorMs.toFixed(1)} ms | ${Object.keys(pools).map((k) => `${median(r[k]!).toFixed(0)} ms (${(median(r[k]!) / floorMs).toFixed(1)}x)`).join(" | ")} |`);
}
for (const p of Object.values(pools)) await p.close();
