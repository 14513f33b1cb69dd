/**
 * A process that stands still (SIGSTOP, a frozen VM) while a call waits on its backend. Found by
 * the soak: a Worker stopped for 7 s failed the call it was serving with BUDGET_EXCEEDED ("cpu 0 ms
 * + io 7230 ms"), a user error for the Worker's own stall, and the time also ran the executor's
 * pong deadline out. The Sync Invoker runs the same executor pool and IO subsystem as a Worker,
 * with one call to follow: stopped for longer than both the call's budget and the ping timeout,
 * it resumes, the call succeeds, charged only for the backend's own latency, and its executor
 * lives on. The same holds when the stop lands inside the backend's own work on the process's
 * thread (the local chain generating data), which CI's soak met later.
 */
import { expect, test } from "bun:test";
import { BlockxProcess } from "../support/blockx-process";
import { checkDurations, SyncInvokerClient } from "../support/syncinvoker-client";
import type { Durations } from "../../src/gen/syncinvoker/v1/sync_invoker";

const READ_ONE_BLOCK = [
  "import os",
  "def main(ctx, x):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': x, 'full': False})",
  "    return [int(b['number'], 16), os.getpid()]",
].join("\n");

// The local chain works out getLogs on its generator thread, block by block: over 1,000 blocks
// (LOCALTESTSERVICE_MAX_LOG_BLOCKS raised for it) that is seconds of work inside the process (an
// address nothing logs keeps the answer small).
const SCAN_LOGS = [
  "import os",
  "def main(ctx, x):",
  "    logs = ctx.io('localtestservice', 'eth_getLogs', {'chain': 'eth', 'fromBlock': x, 'toBlock': x + 999, 'address': '0x000000000000000000000000000000000000dead'})",
  "    return [len(logs), os.getpid()]",
].join("\n");

const PINGS = { EXECUTOR_COUNT: "1", EXECUTOR_PING_INTERVAL_MS: "200", EXECUTOR_PING_TIMEOUT_MS: "2000", BLOCKX_LOG_LEVEL: "info" };

/**
 * stoppedCall runs `source` once to warm its executor, then again with `args`, stopping the Sync
 * Invoker for `stoppedForMs` from `stopAfterMs` into that call. It checks that both calls succeed in
 * the same executor and that none was killed as hung, and gives both calls' durations and results.
 */
async function stoppedCall(
  env: Record<string, string>,
  source: string,
  warmArgs: string,
  args: string,
  stopAfterMs: number,
  stoppedForMs: number,
): Promise<{ warm: Durations; stopped: Durations; result: [number, number] }> {
  const proc = BlockxProcess.spawn(["syncinvoker"], { SYNCINVOKER_LISTEN: "127.0.0.1:0", ...PINGS, ...env });
  const client = new SyncInvokerClient(await proc.grpcAddr());
  try {
    const warm = await client.invoke({ source, args: warmArgs, timeoutMs: 60_000 });
    if (!warm.ok) throw new Error(warm.details);
    expect(warm.value.error).toBeUndefined();
    const [, executorPid] = JSON.parse(warm.value.result.toString()) as [number, number];

    const call = client.invoke({ source, args, timeoutMs: 60_000 });
    await Bun.sleep(stopAfterMs);
    proc.proc.kill("SIGSTOP");
    await Bun.sleep(stoppedForMs);
    proc.proc.kill("SIGCONT");
    const r = await call;
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    const result = JSON.parse(r.value.result.toString()) as [number, number];
    expect(result[1]).toBe(executorPid);
    // A few more pings' time: the executor answered them once the process read its socket again.
    await Bun.sleep(1_000);
    expect(proc.lines.filter((l) => /executor hung|executor down/.test(String(l.msg)))).toEqual([]);
    return { warm: checkDurations(warm.value.durations), stopped: checkDurations(r.value.durations), result };
  } finally {
    client.close();
    await proc.stop("SIGKILL");
  }
}

test("a Sync Invoker stopped for longer than the call budget and the ping timeout: the call succeeds, charged the backend's latency only; no executor is killed as hung", async () => {
  const stoppedFor = 4_000;
  // Every uncached block waits 1 s on the backend; the call is in that wait when the process stops.
  const { stopped: d, result } = await stoppedCall({ LOCALTESTSERVICE_LATENCY_MS: "1000", EXECUTOR_CALL_BUDGET_MS: "3000" }, READ_ONE_BLOCK, "100", "200", 400, stoppedFor);
  expect(result[0]).toBe(200);
  // Charged the time the backend ran, not the four seconds the process stood still (that would be
  // over the 3 s budget). The local chain's latency is a timer in this very process: it was 400 ms
  // into its second when the process stopped and fired on resume, so about 400-600 ms are charged.
  expect(d.ioMs).toBeGreaterThanOrEqual(300);
  expect(d.ioMs).toBeLessThan(2_000);
  // The whole took the stop too: the test did stop the process while the call was in flight.
  expect(d.totalMs).toBeGreaterThanOrEqual(stoppedFor);
}, 60_000);

test("a Sync Invoker stopped while its backend works on its own thread: the stop is not charged to the call, the work is", async () => {
  const stoppedFor = 4_000;
  // The first scan's work is about 2.5 s on the 2-core box: 300 ms into the second, it is under way.
  const { warm, stopped: d, result } = await stoppedCall({ LOCALTESTSERVICE_MAX_LOG_BLOCKS: "1000" }, SCAN_LOGS, "1000000", "2000000", 300, stoppedFor);
  expect(result[0]).toBe(0);
  console.log(`work of the first scan ${Math.round(warm.ioMs)} ms; the stopped one: ${JSON.stringify(d)}`);
  // The stop was inside the call, and it is not in the charge: at most the call's time without it.
  expect(d.totalMs).toBeGreaterThanOrEqual(stoppedFor);
  expect(d.ioMs).toBeLessThan(d.totalMs - stoppedFor + 500);
}, 90_000);
