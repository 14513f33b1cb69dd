/**
 * Worker faults with real processes: compiled Coordinators and Workers, real etcd, real
 * executors. Each test tells the operator's story it checks.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { HealthCheckResponse_ServingStatus as Serving } from "../../src/gen/grpc/health/v1/health";
import { BlockxProcess } from "../support/blockx-process";
import { healthCheck, NO_HOST_RED_LINES, reserve, waitFor, type ReserveOutcome } from "../support/coordinator-client";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { EtcdProcess } from "../support/etcd";
import { freePort } from "../support/ports";
import { randomLanePrefix } from "../support/worker-double";
import { inputsTask, WorkerClient } from "../support/worker-client";

const sharedEtcd = () => process.env.BLOCKX_TEST_ETCD_ENDPOINT!;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function spawn(role: string, env: Record<string, string>): BlockxProcess {
  const p = BlockxProcess.spawn([role], { ETCD_ENDPOINTS: sharedEtcd(), BLOCKX_LOG_LEVEL: "info", ...env });
  cleanups.push(() => p.stop("SIGKILL"));
  return p;
}

function worker(prefix: string, env: Record<string, string> = {}): BlockxProcess {
  // Some Coordinators here filter after 2-3 s: an idle Worker must refresh its heartbeat sooner
  // (HEARTBEAT_REFRESH_MS below COORDINATOR_HEARTBEAT_TIMEOUT_MS, as the README says).
  return spawn("worker", { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: prefix, EXECUTOR_COUNT: "1", HEARTBEAT_REFRESH_MS: "500", ...env });
}

function coordinator(prefix: string, env: Record<string, string> = {}): BlockxProcess {
  return spawn("coordinator", { ...NO_HOST_RED_LINES, COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: prefix, COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: "100", ...env });
}

const ok = (o: ReserveOutcome) => o.ok;
const codeOf = (o: ReserveOutcome) => (o.ok ? "OK" : grpc.status[o.code]);

describe("worker faults", () => {
  test("a restarted Worker rejects slot ids from its earlier incarnation", async () => {
    const prefix = randomLanePrefix("block");
    const port = await freePort();
    const w1 = worker(prefix, { WORKER_LISTEN: `127.0.0.1:${port}` });
    const addr = await w1.grpcAddr();
    const client = new WorkerClient(addr);
    cleanups.push(() => client.close());
    const slot = await client.requestTaskSlot("t", 60_000);
    if (!slot.ok) throw new Error(slot.details);
    await w1.stop("SIGKILL");
    const w2 = worker(prefix, { WORKER_LISTEN: `127.0.0.1:${port}` });
    await w2.grpcAddr();
    const stale = await waitFor(() => client.submitTask(inputsTask("t", "def main(ctx, x):\n    return x\n", [1]), slot.value.slotId), (r) => r.ok || r.code !== grpc.status.UNAVAILABLE);
    expect(stale).toMatchObject({ ok: false, code: grpc.status.NOT_FOUND });
    expect(!stale.ok && stale.details).toContain("earlier incarnation");
  }, 60_000);

  test("a Worker that stops answering: RequestTaskSlot times out and the client gets ABORTED (slot uncertain)", async () => {
    const prefix = randomLanePrefix("block");
    const w = worker(prefix);
    await w.grpcAddr();
    const c = coordinator(prefix, { COORDINATOR_WORKER_RPC_TIMEOUT_MS: "300" });
    const caddr = await c.grpcAddr();
    await waitFor(() => reserve(caddr, "warm"), ok);
    process.kill(w.proc.pid, "SIGSTOP");
    try {
      expect(codeOf(await reserve(caddr, "during-stop"))).toBe("ABORTED");
    } finally {
      process.kill(w.proc.pid, "SIGCONT");
    }
  }, 60_000);

  test("a dead Worker still registered: connection refused sends the Coordinator to the next Worker at once; after the heartbeat timeout it is not tried at all", async () => {
    const prefix = randomLanePrefix("block");
    const big = worker(prefix, { TASK_SLOTS: "100" });
    const small = worker(prefix, { TASK_SLOTS: "10" });
    const bigAddr = await big.grpcAddr();
    const smallAddr = await small.grpcAddr();
    const c = coordinator(prefix, { COORDINATOR_HEARTBEAT_TIMEOUT_MS: "2000", COORDINATOR_WATCH_GRACE_PERIOD_MS: "2000" });
    const caddr = await c.grpcAddr();
    // Both registered: the one with more free slots is chosen.
    const first = await waitFor(() => reserve(caddr, "first"), (o) => o.ok && o.res.workerAddr === bigAddr);
    expect(first.ok).toBe(true);
    const watch = new WorkerClient(bigAddr);
    cleanups.push(() => watch.close());
    await watch.submitTask(inputsTask("long", "import time\ndef main(ctx, x):\n    time.sleep(30)\n", [1]), "");
    const watching = watch.watch(["long"]);
    await Bun.sleep(300);
    await big.stop("SIGKILL");
    // The client watching a task on the dead Worker hears about it.
    expect((await watching).error?.code).toBe(grpc.status.UNAVAILABLE);
    // Its heartbeat key lives on (lease TTL 10 s), so it is still a candidate: refused -> next.
    const next = await reserve(caddr, "after-kill");
    expect(next.ok && next.res.workerAddr).toBe(smallAddr);
    expect(c.lines.some((l) => l.msg === "worker rejected slot request" && l.workerAddr === bigAddr && l.code === "WORKER_UNREACHABLE")).toBe(true);
    // Once its heartbeat is older than the timeout, it is filtered out without being contacted.
    await Bun.sleep(2_500);
    const before = c.lines.length;
    for (let i = 0; i < 5; i++) expect(((await reserve(caddr, `later-${i}`)) as { ok: true; res: { workerAddr: string } }).res.workerAddr).toBe(smallAddr);
    expect(c.lines.slice(before).some((l) => l.workerAddr === bigAddr)).toBe(false);
  }, 60_000);

  test("two Coordinators racing for the last slots of one Worker never over-allocate", async () => {
    const prefix = randomLanePrefix("block");
    const w = worker(prefix, { TASK_SLOTS: "5" });
    await w.grpcAddr();
    const c1 = coordinator(prefix);
    const c2 = coordinator(prefix);
    const [a1, a2] = [await c1.grpcAddr(), await c2.grpcAddr()];
    await waitFor(() => reserve(a1, "probe-1"), ok);
    await waitFor(() => reserve(a2, "probe-2"), ok);
    // 2 slots taken by the probes; 40 tasks race for the last 3.
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => reserve(i % 2 ? a1 : a2, `race-${i}`)));
    const granted = results.filter((r) => r.ok);
    expect(granted).toHaveLength(3);
    expect(new Set(granted.map((r) => (r as { res: { slotId: string } }).res.slotId)).size).toBe(3);
    for (const r of results) if (!r.ok) expect(grpc.status[r.code]).toBe("RESOURCE_EXHAUSTED");
  }, 60_000);

  test("etcd restarted after the lease expired: the Worker registers again and is chosen again", async () => {
    const etcd = await EtcdProcess.start();
    cleanups.push(() => etcd.destroy());
    const prefix = randomLanePrefix("block");
    const w = worker(prefix, { ETCD_ENDPOINTS: etcd.endpoint, HEARTBEAT_LEASE_TTL_S: "2" });
    const waddr = await w.grpcAddr();
    const c = coordinator(prefix, { ETCD_ENDPOINTS: etcd.endpoint, COORDINATOR_HEARTBEAT_TIMEOUT_MS: "3000", COORDINATOR_WATCH_GRACE_PERIOD_MS: "3000" });
    const caddr = await c.grpcAddr();
    await waitFor(() => reserve(caddr, "before"), ok);
    const etcdClient = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 1000 });
    cleanups.push(() => etcdClient.close());
    // The Worker's registration: its key under the prefix, and the lease that keeps it.
    const registration = async () => {
      try {
        const kv = (await etcdClient.getAll().prefix(prefix).exec()).kvs.find((k) => k.key.toString().endsWith(waddr));
        return kv ? String(kv.lease) : "";
      } catch {
        return ""; // etcd is still coming back
      }
    };
    const leaseBefore = await registration();
    expect(leaseBefore).not.toBe("");
    await etcd.stop();
    await Bun.sleep(5_000); // > 2x the 2 s TTL
    await etcd.start();
    // A restarted etcd resets the TTLs of the leases it kept, so the Worker's lease would just
    // survive and nothing would have to register again. Revoking it is what etcd does when a
    // lease expires: the key goes, and only a new registration brings the Worker back.
    await waitFor(
      () => etcdClient.leaseClient.leaseRevoke({ ID: leaseBefore }).then(() => true, (e: Error) => (/not found/i.test(e.message) ? true : false)),
      (done) => done,
      30_000,
      200,
    );
    const leaseAfter = await waitFor(registration, (l) => l !== "" && l !== leaseBefore, 30_000, 100);
    expect(leaseAfter).not.toBe(leaseBefore);
    const back = await waitFor(() => reserve(caddr, "after"), ok, 30_000, 200);
    expect(back.ok && back.res.workerAddr).toBe(waddr);
  }, 60_000);

  test("SIGTERM drains: no new slots, the running task finishes, the Worker leaves the registry and exits 0", async () => {
    const prefix = randomLanePrefix("block");
    const w = worker(prefix, { WORKER_DRAIN_TIMEOUT_MS: "20000" });
    const waddr = await w.grpcAddr();
    const c = coordinator(prefix);
    const caddr = await c.grpcAddr();
    const slot = await waitFor(() => reserve(caddr, "draining-task"), ok);
    const client = new WorkerClient(waddr);
    cleanups.push(() => client.close());
    await client.submitTask(inputsTask("draining-task", "import time\ndef main(ctx, x):\n    time.sleep(1.5)\n    return x * 2\n", [21]), (slot as { res: { slotId: string } }).res.slotId);
    const watching = client.watch(["draining-task"]);
    await Bun.sleep(300);
    w.proc.kill("SIGTERM");
    await waitFor(() => healthCheck(waddr), (s) => s === Serving.NOT_SERVING, 5_000, 50);
    const refused = await client.requestTaskSlot("new-during-drain");
    expect(refused).toMatchObject({ ok: false, code: grpc.status.RESOURCE_EXHAUSTED });
    // The lease is revoked: Coordinators drop the Worker at once.
    expect(codeOf(await waitFor(() => reserve(caddr, "elsewhere"), (o) => !o.ok, 5_000))).toBe("RESOURCE_EXHAUSTED");
    const last = (await watching).snapshots.at(-1)!;
    expect(last.state).toBe(TaskState.SUCCEEDED);
    expect(await w.exited).toBe(0);
  }, 60_000);
});
