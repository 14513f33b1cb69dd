/**
 * bench/worker/dispatcher-ceiling.ts: calls/s of a no-op function (`def main(ctx, x): return x`)
 * inside ONE task of 100,000 inputs (InputsCallConfig + ReturnValueHandler) through one compiled
 * Worker (dist/blockx worker, real etcd, real Python executors), timed from SubmitTask to the
 * terminal snapshot of WatchTasks. No Coordinator: the slot is requested straight from the Worker.
 *
 * Baseline of the same run: the executor pool alone (src/runtime/executor/executor-pool.ts in this
 * process) with the same number of calls of the same function at 2,000 in flight.
 *
 *   bun bench/worker/dispatcher-ceiling.ts [--calls 100000] [--executors 8,2] [--inflight 2000] [--log-level info]
 */
import { parseArgs } from "node:util";
import { silentLogger } from "../../src/common/logging/logger";
import { TaskState } from "../../src/gen/worker/v1/worker";
import type { CallOwner } from "../../src/runtime/calls/call";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { randomLanePrefix } from "../../test/support/worker-double";
import { inputsTask, TERMINAL_STATES, WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "100000" },
    executors: { type: "string", default: "8,2" },
    inflight: { type: "string", default: "2000" },
    "log-level": { type: "string", default: "info" },
  },
});
const CALLS = Number(values.calls);
const INFLIGHT = Number(values.inflight);
const EXECUTORS = values.executors.split(",").map(Number);
const SOURCE = "def main(ctx, x):\n    return x\n";

let etcd: EtcdProcess | undefined;
const blockx: BlockxProcess[] = [];
async function cleanup(): Promise<void> {
  for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  await etcd?.destroy();
  etcd = undefined;
}
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void cleanup().finally(() => process.exit(130)));

/** poolAlone: CALLS calls of SOURCE through an in-process ExecutorPool, INFLIGHT at a time; calls/s. */
async function poolAlone(executorCount: number): Promise<number> {
  const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount }), silentLogger(), { waitForAll: true });
  const owner: CallOwner = { io: async (r) => ({ ok: true, value: r.params, ioMs: 0 }) };
  // Warm the executors (code load) with a few calls before timing.
  await Promise.all(Array.from({ length: 200 }, (_, i) => pool.execute({ callId: `w${i}`, fn: { source: SOURCE, entry: "main" }, args: i }, owner)));
  let next = 0;
  let failed = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < CALLS) {
      const i = next++;
      const r = (await pool.execute({ callId: `p${i}`, fn: { source: SOURCE, entry: "main" }, args: i }, owner)) as { ok?: boolean };
      if (r && r.ok === false) failed++;
    }
  };
  await Promise.all(Array.from({ length: INFLIGHT }, lane));
  const secs = (performance.now() - t0) / 1000;
  await pool.close();
  if (failed > 0) console.log(`(pool alone: ${failed} failed calls)`);
  return CALLS / secs;
}

/** throughWorker: one task of CALLS inputs through a fresh compiled Worker; calls/s from SubmitTask to the terminal snapshot. */
async function throughWorker(executorCount: number): Promise<{ perSecond: number; state: string; succeeded: number; submitMs: number }> {
  const w = BlockxProcess.spawn(["worker"], {
    // Plaintext: one executor owner for every task (else each task pays fresh executors, issue 17).
    EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared",
    ETCD_ENDPOINTS: etcd!.endpoint,
    BLOCKX_LOG_LEVEL: values["log-level"],
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: String(executorCount),
  });
  blockx.push(w);
  const client = new WorkerClient(await w.grpcAddr());
  try {
    // Warm-up task: executors up, code path hot.
    const warm = await client.requestTaskSlot("warm");
    if (!warm.ok) throw new Error(`requestTaskSlot: ${warm.details}`);
    const ws = await client.submitTask(inputsTask("warm", SOURCE, Array.from({ length: 2000 }, (_, i) => i)), warm.value.slotId);
    if (!ws.ok) throw new Error(`submit warm: ${ws.details}`);
    await client.watch(["warm"]);

    const inputs = Array.from({ length: CALLS }, (_, i) => i);
    const task = inputsTask("ceiling", SOURCE, inputs);
    const slot = await client.requestTaskSlot("ceiling");
    if (!slot.ok) throw new Error(`requestTaskSlot: ${slot.details}`);
    const t0 = performance.now();
    const sub = await client.submitTask(task, slot.value.slotId);
    const submitMs = performance.now() - t0;
    if (!sub.ok) throw new Error(`submit: ${sub.details}`);
    const { snapshots, error } = await client.watch(["ceiling"]);
    const secs = (performance.now() - t0) / 1000;
    if (error) throw error;
    const last = snapshots.at(-1)!;
    if (!TERMINAL_STATES.includes(last.state)) throw new Error(`watch ended in ${TaskState[last.state]}`);
    return { perSecond: CALLS / secs, state: TaskState[last.state]!, succeeded: last.callsSucceeded, submitMs };
  } finally {
    client.close();
    for (const b of blockx.splice(0)) await b.stop("SIGKILL").catch(() => {});
  }
}

try {
  etcd = await EtcdProcess.start();
  console.log(`Dispatcher ceiling: one task of ${CALLS} no-op calls through the compiled Worker vs the executor pool alone (${INFLIGHT} in flight), same run\n`);
  console.log("| EXECUTOR_COUNT | pool alone (baseline) | one task through the Worker | ratio (Worker / pool) | task state | SubmitTask answered after |");
  console.log("| ---: | ---: | ---: | ---: | --- | ---: |");
  for (const n of EXECUTORS) {
    const pool = await poolAlone(n);
    const wk = await throughWorker(n);
    console.log(
      `| ${n} | ${pool.toFixed(0)} calls/s | ${wk.perSecond.toFixed(0)} calls/s | ${(wk.perSecond / pool).toFixed(2)}x | ${wk.state} (${wk.succeeded} ok) | ${wk.submitMs.toFixed(0)} ms |`,
    );
  }
} finally {
  await cleanup();
}
