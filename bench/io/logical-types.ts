/**
 * bench/io/logical-types.ts: decoded ERC-20 Transfers per second through `ctx.logical_types`
 * against the same decoding written by hand in plain Python inside the function (topic slicing,
 * int(data, 16)), per block of the local test chain. Real Python executors (the pool `blockx exec`
 * uses) and the Worker's IO subsystem over the Worker's backends, in this process.
 *
 * Both functions get the block's Transfer logs from `ctx.blockdb.logs` (read once beforehand, so
 * the read cache answers both alike and the chain's generation is not timed); then the baseline
 * slices them in Python and the other sends them to `logicalTypes.decodeLogs` (one more
 * suspension, viem's decoder in the Worker, exact ints back). Each round takes fresh blocks
 * (decodeLogs answers are cached by digest: a block decoded twice would be a cache hit) and runs
 * both functions over the same blocks, in alternating order; the figure is the median of the
 * rounds' ratios.
 *
 *   bun bench/io/logical-types.ts [--rounds 7] [--blocks 40] [--executors 2]
 */
import { parseArgs } from "node:util";
import { loadEnvConfig } from "../../src/common/config/env-config";
import { createLogger } from "../../src/common/logging/logger";
import { MetricsRegistry } from "../../src/common/metrics/metrics";
import type { CallOwner } from "../../src/runtime/calls/call";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { executorPoolConfigFrom, executorPoolVars } from "../../src/runtime/executor/executor-pool-config";
import { SyntheticChain, TRANSFER_TOPIC } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { buildBackendSet, buildIoSubsystem } from "../../src/runtime/io/io-assembly";
import { FaultInjector } from "../../src/runtime/io/fault-injection";
import { ioSettingsFrom, ioVars } from "../../src/runtime/io/io-config";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "7" }, blocks: { type: "string", default: "40" }, executors: { type: "string", default: "2" } } });
const ROUNDS = Number(values.rounds);
const BLOCKS = Number(values.blocks);
const FROM = 18_000_000;

const COMMON = `
TRANSFER = '${TRANSFER_TOPIC}'
ABI = ['event Transfer(address indexed from, address indexed to, uint256 value)']
`;
const PLAIN = `${COMMON}
def main(ctx, n):
    total = 0
    count = 0
    for log in ctx.blockdb.logs(n, n, topics=[TRANSFER], chain='ethereum'):
        t = log['topics']
        if len(t) != 3:
            continue
        sender = '0x' + t[1][26:]
        recipient = '0x' + t[2][26:]
        total += int(log['data'], 16)
        count += 1
    return [count, str(total)]
`;
const DECODED = `${COMMON}
def main(ctx, n):
    logs = ctx.blockdb.logs(n, n, topics=[TRANSFER], chain='ethereum')
    total = 0
    count = 0
    for d in ctx.logical_types.decode_logs(ABI, logs):
        if d['error'] is not None:
            continue
        a = d['args']
        sender, recipient = a['from'], a['to']
        total += a['value']
        count += 1
    return [count, str(total)]
`;

const v = loadEnvConfig({ ...executorPoolVars, ...ioVars }, { EXECUTOR_COUNT: values.executors! });
const settings = ioSettingsFrom(v);
const log = createLogger("warn", { role: "bench" }, 2);
const faults = new FaultInjector(settings.localTestFaults, settings.localTestFaultsFile, log).start();
const { registry } = buildBackendSet({ chains: settings.chains, localTestChain: { ...settings.localTestChain, enabled: true, head: 20_000_000 }, faults, functions: () => null });
const io = buildIoSubsystem(registry, { ...settings.io, readOnly: true }, new MetricsRegistry());
const taskIo = io.forTask("bench");
const owner: CallOwner = {
  io: (req) => taskIo.call(req.backend, req.op, req.params).then((r) => r.answer),
  subCall: async () => ({ ok: false, error: { type: "UNSUPPORTED", message: "no sub-calls here" } }),
};
const pool = await ExecutorPool.start(executorPoolConfigFrom(v), log);

let seq = 0;
async function runBlocks(source: string, blocks: number[]): Promise<{ ms: number; transfers: number; totals: string[] }> {
  const t0 = performance.now();
  const outs = await Promise.all(blocks.map((n) => pool.execute({ callId: `b-${++seq}`, fn: { source, entry: "main" }, args: n }, owner)));
  const ms = performance.now() - t0;
  let transfers = 0;
  const totals: string[] = [];
  for (const o of outs) {
    if (!o.ok) throw new Error(`${o.error.code}: ${o.error.message}\n${o.error.traceback}`);
    const [count, total] = o.value as [number, string];
    transfers += count;
    totals.push(total);
  }
  return { ms, transfers, totals };
}

// The expected totals, from the chain itself: both functions must decode the same amounts.
const chain = new SyntheticChain("ethereum");
const expectedTotal = (n: number) =>
  chain
    .logs({ fromBlock: n, toBlock: n, topics: [TRANSFER_TOPIC] })
    .filter((l) => l.topics.length === 3)
    .reduce((s, l) => s + BigInt(l.data), 0n)
    .toString();

try {
  // Warm-up: compile both functions, JIT the paths.
  const warm = Array.from({ length: 8 }, (_, i) => FROM - 100 + i);
  await runBlocks(PLAIN, warm);
  await runBlocks(DECODED, warm);
  const ratios: number[] = [];
  const plainRates: number[] = [];
  const decodedRates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const blocks = Array.from({ length: BLOCKS }, (_, i) => FROM + r * BLOCKS + i);
    // The logs of these blocks enter the read cache first: neither function pays for generation.
    await Promise.all(blocks.map((n) => taskIo.call("blockdb", "logs", { chain: "ethereum", fromBlock: n, toBlock: n, topics: [TRANSFER_TOPIC] })));
    const order = r % 2 === 0 ? ["plain", "decoded"] : ["decoded", "plain"];
    const res: Record<string, Awaited<ReturnType<typeof runBlocks>>> = {};
    for (const which of order) res[which] = await runBlocks(which === "plain" ? PLAIN : DECODED, blocks);
    const want = blocks.map(expectedTotal);
    for (const which of order) if (JSON.stringify(res[which]!.totals) !== JSON.stringify(want)) throw new Error(`${which}: decoded amounts differ from the chain's`);
    const plainRate = (res.plain!.transfers / res.plain!.ms) * 1000;
    const decodedRate = (res.decoded!.transfers / res.decoded!.ms) * 1000;
    plainRates.push(plainRate);
    decodedRates.push(decodedRate);
    ratios.push(decodedRate / plainRate);
    console.log(`round ${r + 1}: ${BLOCKS} blocks, ${res.plain!.transfers} transfers; plain Python ${plainRate.toFixed(0)}/s, logicalTypes ${decodedRate.toFixed(0)}/s`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `[bench/io/logical-types] decoded Transfers/s, median of ${ROUNDS} interleaved rounds (${values.executors} executors): ` +
      `plain Python slicing ${median(plainRates).toFixed(0)}/s, logicalTypes.decodeLogs ${median(decodedRates).toFixed(0)}/s, ratio logicalTypes/plain ${median(ratios).toFixed(2)}`,
  );
} finally {
  taskIo.end();
  faults.stop();
  await pool.close();
}
