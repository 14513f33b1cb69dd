/**
 * bench/executor/sandbox.ts: what the executor sandbox (EXECUTOR_SANDBOX=on: bubblewrap, two
 * seccomp filters) costs, against the same pool with it off, measured in the same run: two pools
 * of one executor each, rounds interleaved (on, off, off, on, ...), medians of the rounds.
 * - round trip: serial `def main(ctx, x): return x + 1` calls, p50 per round;
 * - backfill CPU per block: a call reading one block of the local test chain through the IO
 *   subsystem (ctx.blockdb.block) and summing its transactions' values; this process's CPU
 *   (user + system: Bun, IO, the pool) plus the executor's (its cpuMs) per block.
 *
 *   bun bench/executor/sandbox.ts [--rounds 7] [--calls 400] [--blocks 150]
 */
import { parseArgs } from "node:util";
import { loadEnvConfig } from "../../src/common/config/env-config";
import { silentLogger } from "../../src/common/logging/logger";
import { MetricsRegistry } from "../../src/common/metrics/metrics";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { buildBackendSet, buildIoSubsystem } from "../../src/runtime/io/io-assembly";
import { FaultInjector } from "../../src/runtime/io/fault-injection";
import { ioSettingsFrom, ioVars } from "../../src/runtime/io/io-config";
import { latency } from "../support/measure";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "7" }, calls: { type: "string", default: "400" }, blocks: { type: "string", default: "150" } } });
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const BLOCKS = Number(values.blocks);

const settings = ioSettingsFrom(loadEnvConfig(ioVars, {}));
const faults = new FaultInjector(settings.localTestFaults, settings.localTestFaultsFile, silentLogger()).start();
const { registry: backends } = buildBackendSet({ chains: settings.chains, localTestChain: { ...settings.localTestChain, enabled: true, head: 10_000_000 }, faults, functions: () => null });
const io = buildIoSubsystem(backends, settings.io, new MetricsRegistry());

const INC = "def main(ctx, x):\n    return x + 1\n";
const BACKFILL = "def main(ctx, n):\n    b = ctx.blockdb.block(n, chain='ethereum')\n    return sum(int(t['value'], 16) for t in b['transactions']) % 1000\n";

const pools = {
  on: await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, sandbox: "on" }), silentLogger()),
  off: await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, sandbox: "off" }), silentLogger()),
};
type Mode = keyof typeof pools;
let seq = 0;
let block = 1_000_000;

async function roundTrip(mode: Mode): Promise<number> {
  const pool = pools[mode];
  const r = await latency(async (i) => {
    const o = await pool.execute({ callId: `${mode}-${seq++}`, fn: { source: INC, entry: "main" }, args: i });
    if (!o.ok) throw new Error(o.error.message);
  }, CALLS, 50);
  return r.p50;
}

async function backfillCpuPerBlockUs(mode: Mode): Promise<number> {
  const pool = pools[mode];
  const taskIo = io.forTask(`bench-${mode}-${seq++}`);
  const owner = { io: (req: { backend: string; op: string; params: unknown }) => taskIo.call(req.backend, req.op, req.params as never).then((r) => r.answer) };
  let executorCpuMs = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < BLOCKS; i++) {
    // A fresh block each time: nothing comes from the read cache.
    const o = await pool.execute({ callId: `${mode}-${seq++}`, fn: { source: BACKFILL, entry: "main" }, args: block++ }, owner as never);
    if (!o.ok) throw new Error(o.error.message);
    executorCpuMs += o.cpuMs;
  }
  const used = process.cpuUsage(before);
  taskIo.end();
  return (used.user + used.system + executorCpuMs * 1000) / BLOCKS;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rt: Record<Mode, number[]> = { on: [], off: [] };
const cpu: Record<Mode, number[]> = { on: [], off: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order: Mode[] = round % 2 === 0 ? ["on", "off"] : ["off", "on"];
  for (const m of order) rt[m].push(await roundTrip(m));
  for (const m of order) cpu[m].push(await backfillCpuPerBlockUs(m));
}
await pools.on.close();
await pools.off.close();
faults.stop();

const f = (x: number) => x.toFixed(0).padStart(7);
console.log(`executor sandbox: ${ROUNDS} interleaved rounds, ${CALLS} serial calls and ${BLOCKS} blocks per round per mode (medians)`);
console.log(`                          sandbox on   sandbox off   on/off`);
console.log(`round trip p50 (µs)       ${f(median(rt.on))}      ${f(median(rt.off))}      ${(median(rt.on) / median(rt.off)).toFixed(3)}`);
console.log(`backfill CPU/block (µs)   ${f(median(cpu.on))}      ${f(median(cpu.off))}      ${(median(cpu.on) / median(cpu.off)).toFixed(3)}`);
