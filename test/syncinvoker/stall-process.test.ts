/**
 * A process that stands still (SIGSTOP, a frozen VM) while a call waits on its backend. Found by
 * the soak: a Worker stopped for 7 s failed the call it was serving with BUDGET_EXCEEDED ("cpu 0 ms
 * + io 7230 ms"), a user error for the Worker's own stall, and the time also ran the executor's
 * pong deadline out. The Sync Invoker runs the same executor pool and IO subsystem as a Worker,
 * with one call to follow: stopped for longer than both the call's budget and the ping timeout,
 * it resumes, the call succeeds, charged only for the backend's own latency, and its executor
 * lives on.
 */
import { expect, test } from "bun:test";
import { BlockxProcess } from "../support/blockx-process";
import { checkDurations, SyncInvokerClient } from "../support/syncinvoker-client";

const READ_ONE_BLOCK = [
  "import os",
  "def main(ctx, x):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': 'eth', 'number': x, 'full': False})",
  "    return [int(b['number'], 16), os.getpid()]",
].join("\n");

test("a Sync Invoker stopped for longer than the call budget and the ping timeout: the call succeeds, charged the backend's latency only; no executor is killed as hung", async () => {
  const proc = BlockxProcess.spawn(["syncinvoker"], {
    SYNCINVOKER_LISTEN: "127.0.0.1:0",
    EXECUTOR_COUNT: "1",
    // Every uncached block waits 1 s on the backend; the stop below lasts 4 s.
    LOCALTESTSERVICE_LATENCY_MS: "1000",
    EXECUTOR_CALL_BUDGET_MS: "3000",
    EXECUTOR_PING_INTERVAL_MS: "200",
    EXECUTOR_PING_TIMEOUT_MS: "2000",
    BLOCKX_LOG_LEVEL: "info",
  });
  const client = new SyncInvokerClient(await proc.grpcAddr());
  try {
    const warm = await client.invoke({ source: READ_ONE_BLOCK, args: "100", timeoutMs: 20_000 });
    if (!warm.ok) throw new Error(warm.details);
    expect(warm.value.error).toBeUndefined();
    const [, executorPid] = JSON.parse(warm.value.result.toString()) as [number, number];

    const stoppedFor = 4_000;
    const call = client.invoke({ source: READ_ONE_BLOCK, args: "200", timeoutMs: 20_000 });
    // The call is in its backend's 1 s wait when the process stops.
    await Bun.sleep(400);
    proc.proc.kill("SIGSTOP");
    await Bun.sleep(stoppedFor);
    proc.proc.kill("SIGCONT");
    const r = await call;
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    const [block, pid] = JSON.parse(r.value.result.toString()) as [number, number];
    expect(block).toBe(200);
    expect(pid).toBe(executorPid);
    const d = checkDurations(r.value.durations);
    // Charged the time the backend ran, not the four seconds the process stood still (that would be
    // over the 3 s budget). The local chain's latency is a timer in this very process: it was 400 ms
    // into its second when the process stopped and fired on resume, so about 400-600 ms are charged.
    expect(d.ioMs).toBeGreaterThanOrEqual(300);
    expect(d.ioMs).toBeLessThan(2_000);
    // The whole took the stop too: the test did stop the process while the call was in flight.
    expect(d.totalMs).toBeGreaterThanOrEqual(stoppedFor);
    // A few more pings' time: the executor answered them once the process read its socket again.
    await Bun.sleep(1_000);
    expect(proc.lines.filter((l) => /executor hung|executor down/.test(String(l.msg)))).toEqual([]);
  } finally {
    client.close();
    await proc.stop("SIGKILL");
  }
}, 60_000);

// The local chain works out getLogs on the Sync Invoker's own thread, block by block: over 1,000
// blocks that is seconds of synchronous work (an address nothing logs keeps the answer small).
const SCAN_LOGS = [
  "import os",
  "def main(ctx, x):",
  "    logs = ctx.io('localtestservice', 'eth_getLogs', {'chain': 'eth', 'fromBlock': x, 'toBlock': x + 999, 'address': '0x000000000000000000000000000000000000dead'})",
  "    return [len(logs), os.getpid()]",
].join("\n");

test("a Sync Invoker stopped while its backend works on its own thread: the stop is not charged to the call, the work is", async () => {
  const proc = BlockxProcess.spawn(["syncinvoker"], {
    SYNCINVOKER_LISTEN: "127.0.0.1:0",
    EXECUTOR_COUNT: "1",
    EXECUTOR_PING_INTERVAL_MS: "200",
    EXECUTOR_PING_TIMEOUT_MS: "2000",
    BLOCKX_LOG_LEVEL: "info",
  });
  const client = new SyncInvokerClient(await proc.grpcAddr());
  try {
    const warm = await client.invoke({ source: SCAN_LOGS, args: "1000000", timeoutMs: 60_000 });
    if (!warm.ok) throw new Error(warm.details);
    expect(warm.value.error).toBeUndefined();
    const [, executorPid] = JSON.parse(warm.value.result.toString()) as [number, number];
    // The handler's own work, uncached (about 2.5 s on the 2-core box): the stop below lands in it.
    const workMs = checkDurations(warm.value.durations).ioMs;

    const stoppedFor = 4_000;
    const call = client.invoke({ source: SCAN_LOGS, args: "2000000", timeoutMs: 60_000 });
    await Bun.sleep(300);
    proc.proc.kill("SIGSTOP");
    await Bun.sleep(stoppedFor);
    proc.proc.kill("SIGCONT");
    const r = await call;
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    expect(JSON.parse(r.value.result.toString())).toEqual([0, executorPid]);
    const d = checkDurations(r.value.durations);
    console.log(`work of the first scan ${Math.round(workMs)} ms; the stopped one: ${JSON.stringify(d)}`);
    // The stop was inside the call, and it is not in the charge: at most the call's time without it.
    expect(d.totalMs).toBeGreaterThanOrEqual(stoppedFor);
    expect(d.ioMs).toBeLessThan(d.totalMs - stoppedFor + 500);
    await Bun.sleep(1_000);
    expect(proc.lines.filter((l) => /executor hung|executor down/.test(String(l.msg)))).toEqual([]);
  } finally {
    client.close();
    await proc.stop("SIGKILL");
  }
}, 90_000);
