/**
 * The client measures time on a monotonic clock (issue 51, item 7): its deadlines and intervals
 * (a quiet watch stream, an unreachable Worker, progress rates) were Date.now() differences, so a
 * wall clock stepped forward mid-run (NTP, a laptop waking) ended a healthy run at its deadline,
 * and one stepped back left a hung Worker undetected. Here the test process's wall clock (Date.now,
 * which grpc-js reads too, as a real step would move it) jumps an hour ahead while a task runs:
 * the run still ends SUCCEEDED on its first attempt, with no deadline exceeded and no Worker lost.
 */
import { afterEach, expect, test } from "bun:test";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { TestCluster } from "../support/cluster";
import { inputsTask } from "../support/worker-client";

const realNow = Date.now;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  Date.now = realNow;
  for (const c of cleanups.splice(0).reverse()) await c();
});

// Calls of 2.5 s: the watch stream is quiet for longer than the client's probe interval (1 s), so
// the client probes the Worker, with deadlines, after the step.
const SLOW = "import time\ndef main(ctx, x):\n    time.sleep(2.5)\n    return x\n";

test("a wall clock stepped an hour ahead mid-run: the run ends SUCCEEDED on its first attempt, not at its deadline", async () => {
  const cluster = new TestCluster();
  cleanups.push(() => cluster.stop());
  await cluster.worker();
  const coord = await cluster.coordinator({ COORDINATOR_CPU_RED_LINE: "1" });
  await cluster.withFreeCapacity(1);
  const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coord.addr, BLOCKX_WORKER_LOST_AFTER_MS: "3000" }));
  cleanups.push(() => client.close());
  let stepped = false;
  const run = await client.runTask(inputsTask(`wall-step-${Date.now().toString(36)}`, SLOW, [1, 2, 3, 4]), {
    timeoutMs: 120_000,
    onProgress: (p) => {
      if (!stepped) {
        stepped = true;
        Date.now = () => realNow() + 3_600_000;
      }
    },
  });
  expect(stepped).toBe(true);
  expect(run.state).toBe("SUCCEEDED");
  expect(run.attempts).toBe(1);
  expect(run.events.filter((e) => e.kind === "workerLost")).toEqual([]);
}, 120_000);

