/**
 * The client retry rules of SYSTEM.md section 2, against real compiled Coordinators and
 * Workers, each run both directly and through a real `blockx proxy` (PROXY_SOCKET_PATH):
 * Unavailable -> at once on the next Coordinator; ResourceExhausted -> back off until a slot
 * frees; Aborted -> wait at least one slot TTL, then retry.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { BlockxClient, type ClientEvent } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { TestCluster } from "../support/cluster";
import { EtcdProcess } from "../support/etcd";
import { inputsTask, WorkerClient } from "../support/worker-client";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ECHO = "def main(ctx, x):\n    return x * 2\n";

type Mode = "direct" | "proxy";

/** clientFor builds the SDK client for the mode: direct to the Coordinators, or via a proxy process in front of them. */
async function clientFor(mode: Mode, cluster: TestCluster, coordinators: string[], env: Record<string, string> = {}): Promise<BlockxClient> {
  let extra: Record<string, string> = {};
  if (mode === "proxy") {
    const socket = join(cluster.dir, "proxy.sock");
    const proxy = cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_COORDINATOR_ADDRS: coordinators.join(",") });
    await proxy.grpcAddr();
    extra = { PROXY_SOCKET_PATH: socket };
  }
  const client = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coordinators.join(","), ...env, ...extra }));
  cleanups.push(() => client.close());
  return client;
}

function refusals(events: ClientEvent[], failure: string) {
  return events.filter((e) => e.kind === "reserveRefused" && e.failure === failure);
}

for (const mode of ["direct", "proxy"] as const) {
  describe(`retry rules (${mode})`, () => {
    test("Unavailable: a Coordinator whose etcd is down answers Unavailable; the client moves at once to the next Coordinator", async () => {
      const cluster = new TestCluster();
      cleanups.push(() => cluster.stop());
      const etcd = await EtcdProcess.start();
      cleanups.push(() => etcd.destroy());
      await etcd.stop();
      const blind = await cluster.coordinator({ ETCD_ENDPOINTS: etcd.endpoint });
      const worker = await cluster.worker();
      const good = await cluster.coordinator();
      const client = await clientFor(mode, cluster, [blind.addr, good.addr]);
      const run = await client.runTask(inputsTask(`unavail-${mode}`, ECHO, [1, 2, 3]));
      expect(run.state).toBe("SUCCEEDED");
      expect(run.returnValues).toEqual([2, 4, 6]);
      expect(run.workers).toEqual([worker.addr]);
      const refused = refusals(run.events, "UNAVAILABLE");
      expect(refused.length).toBeGreaterThanOrEqual(1);
      if (mode === "direct") expect(refused[0]).toMatchObject({ coordinator: blind.addr });
      expect(run.events.find((e) => e.kind === "submitted")).toMatchObject({ workerAddr: worker.addr, coordinator: mode === "direct" ? good.addr : expect.stringMatching(/^proxy:/) });
    }, 60_000);

    test("ResourceExhausted: the only slot is busy; a short deadline gives NO_CAPACITY; a patient client backs off and gets the slot when the running task ends", async () => {
      const cluster = new TestCluster();
      cleanups.push(() => cluster.stop());
      const worker = await cluster.worker({ TASK_SLOTS: "1" });
      const coord = await cluster.coordinator();
      const client = await clientFor(mode, cluster, [coord.addr]);
      await client.runTask(inputsTask(`warm-re-${mode}`, ECHO, [0])); // the Coordinator has listed the Worker
      const direct = new WorkerClient(worker.addr);
      cleanups.push(() => direct.close());
      const busy = await direct.submitTask(inputsTask(`busy-${mode}`, "import time\ndef main(ctx, x):\n    time.sleep(x)\n    return x\n", [4]));
      expect(busy.ok).toBe(true);
      // A caller whose deadline comes first gets NO_CAPACITY (the CLI's exit code 3).
      const impatient = await client.runTask(inputsTask(`impatient-${mode}`, ECHO, [1]), { timeoutMs: 1000 }).catch((e: unknown) => e);
      expect(impatient).toBeInstanceOf(BlockxError);
      expect((impatient as BlockxError).code).toBe("NO_CAPACITY");
      expect((impatient as BlockxError).message).toContain("no free slot before the deadline; last answer: ");
      expect((impatient as BlockxError).message).toMatch(/(last answer|last capacity refusal): RESOURCE_EXHAUSTED from /);
      const run = await client.runTask(inputsTask(`waits-${mode}`, ECHO, [5]));
      expect(run.state).toBe("SUCCEEDED");
      expect(run.returnValues).toEqual([10]);
      const refused = refusals(run.events, "RESOURCE_EXHAUSTED");
      expect(refused.length).toBeGreaterThanOrEqual(2);
      // Back-off grows between refusals (exponential, jitter within [half, whole]).
      const delays = refused.map((e) => (e.kind === "reserveRefused" ? e.delayMs : 0));
      expect(Math.max(...delays)).toBeGreaterThan(delays[0]!);
    }, 60_000);

    test("Aborted: the Worker hangs (SIGSTOP); the client waits at least one slot TTL before retrying, and succeeds once it is back", async () => {
      const cluster = new TestCluster();
      cleanups.push(() => cluster.stop());
      const worker = await cluster.worker();
      const coord = await cluster.coordinator({ COORDINATOR_WORKER_RPC_TIMEOUT_MS: "300" });
      const client = await clientFor(mode, cluster, [coord.addr], { BLOCKX_SLOT_TTL_MS: "1500" });
      await client.runTask(inputsTask(`warm-${mode}`, ECHO, [0])); // the Coordinator has seen the Worker
      const pid = worker.proc.proc.pid;
      process.kill(pid, "SIGSTOP");
      cleanups.push(() => process.kill(pid, "SIGCONT"));
      let abortedAt = 0;
      let submittedAt = 0;
      const run = await client.runTask(inputsTask(`aborted-${mode}`, ECHO, [21]), {
        onEvent: (e) => {
          if (e.kind === "reserveRefused" && e.failure === "ABORTED" && !abortedAt) {
            abortedAt = Date.now();
            process.kill(pid, "SIGCONT");
          }
          if (e.kind === "submitted") submittedAt = Date.now();
        },
      });
      expect(run.state).toBe("SUCCEEDED");
      expect(run.returnValues).toEqual([42]);
      const aborted = refusals(run.events, "ABORTED");
      expect(aborted.length).toBeGreaterThanOrEqual(1);
      expect(aborted.every((e) => e.kind === "reserveRefused" && e.delayMs >= 1500)).toBe(true);
      expect(submittedAt - abortedAt).toBeGreaterThanOrEqual(1500);
    }, 60_000);
  });
}
