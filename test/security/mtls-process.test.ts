import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PeerCertificate } from "node:tls";
import { channelFor } from "../../src/common/tls/grpc-tls";
import { compileTlsSetting } from "../../src/common/tls/tls-setting";
import { TaskState } from "../../src/gen/worker/v1/worker";
import { blockTableTask } from "../support/block-table-task";
import { TestCluster } from "../support/cluster";
import { reserve } from "../support/coordinator-client";
import { TestCa, type TlsEnv } from "../support/test-ca";
import { WorkerClient, inputsTask } from "../support/worker-client";

// The trust boundary with the compiled binary: a Coordinator and Workers under mTLS, clients with
// certificates of their own (issue 16). Every refusal is checked at the process that must refuse.

const ca = TestCa.create();
const certs = ca.clusterCerts();

const tlsOf = (env: TlsEnv) => compileTlsSetting({ tlsCaFile: env.BLOCKX_TLS_CA_FILE, tlsCertFile: env.BLOCKX_TLS_CERT_FILE, tlsKeyFile: env.BLOCKX_TLS_KEY_FILE, insecure: "0" });
const asEnv = (env: TlsEnv): Record<string, string> => ({ ...env });
/** workerAs: a Worker client holding `who`'s certificate (a fresh connection each time). */
const workerAs = (addr: string, who: TlsEnv) => new WorkerClient(addr, fresh(channelFor(tlsOf(who), addr, ["worker"])));
const fresh = (c: ReturnType<typeof channelFor>) => ({ credentials: c.credentials, options: { ...c.options, "grpc.use_local_subchannel_pool": 1 } });

const BLOCK_STATS = [
  "def main(ctx, input):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber']})",
  "    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions'])}]",
].join("\n");

let cluster: TestCluster;
let workerAddr = "";
let coordAddr = "";
// The Worker's certificate files live where the rotation test replaces them.
const workerCertDir = join(ca.dir, "worker-live");

beforeAll(async () => {
  mkdirSync(workerCertDir);
  copyFileSync(certs.worker.BLOCKX_TLS_CERT_FILE, join(workerCertDir, "cert.pem"));
  copyFileSync(certs.worker.BLOCKX_TLS_KEY_FILE, join(workerCertDir, "key.pem"));
  cluster = new TestCluster();
  const w = await cluster.worker({
    BLOCKX_TLS_CA_FILE: ca.caFile,
    BLOCKX_TLS_CERT_FILE: join(workerCertDir, "cert.pem"),
    BLOCKX_TLS_KEY_FILE: join(workerCertDir, "key.pem"),
    WORKER_MAX_SLOT_TTL_MS: "8000",
  });
  workerAddr = w.addr;
  // Its first heartbeat (sent while its executors start) shows no free slot: the reservations below need one.
  await cluster.withFreeCapacity(1);
  coordAddr = (await cluster.coordinator(asEnv(certs.coordinator))).addr;
});

afterAll(async () => {
  await cluster?.stop();
});

/** reserveAs: ReserveWorkerSlot on the Coordinator with `who`'s certificate; retried while the Coordinator's view fills. */
async function reserveAs(who: TlsEnv, taskId: string) {
  const channel = fresh(channelFor(tlsOf(who), coordAddr, ["coordinator"]));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await reserve(coordAddr, taskId, "block", channel);
    if (r.ok || r.code !== grpc.status.UNAVAILABLE || Date.now() > deadline) return r;
    await Bun.sleep(200);
  }
}

describe("who may connect", () => {
  test("a client without a certificate, or in plaintext, is refused by the Worker and by the Coordinator", async () => {
    const caPem = readFileSync(ca.caFile);
    const noCert = { credentials: grpc.credentials.createSsl(caPem, null, null, { checkServerIdentity: () => undefined }), options: { "grpc.ssl_target_name_override": "blockx-peer" } };
    for (const channel of [noCert, { credentials: grpc.credentials.createInsecure(), options: {} }]) {
      const r = await new WorkerClient(workerAddr, channel).getTaskResult("anything");
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.code).toBe(grpc.status.UNAVAILABLE);
      const c = await reserve(coordAddr, "anything", "block", channel);
      expect(c.ok ? grpc.status.OK : c.code).toBe(grpc.status.UNAVAILABLE);
    }
  });

  test("a client certificate from another CA is refused by the Worker, though the client trusts the Worker", async () => {
    const other = TestCa.create("other-ca");
    const mallory = other.issue("mallory", "blockx://role/client/alice");
    const channel = {
      credentials: grpc.credentials.createSsl(readFileSync(ca.caFile), readFileSync(mallory.BLOCKX_TLS_KEY_FILE), readFileSync(mallory.BLOCKX_TLS_CERT_FILE), { checkServerIdentity: () => undefined }),
      options: { "grpc.ssl_target_name_override": "blockx-peer" },
    };
    const r = await new WorkerClient(workerAddr, channel).getTaskResult("anything");
    expect(r.ok ? grpc.status.OK : r.code).toBe(grpc.status.UNAVAILABLE);
  });

  test("a client certificate may not call RequestTaskSlot; a Coordinator must name the client it reserves for", async () => {
    const asClient = await workerAs(workerAddr, certs.alice).requestTaskSlot("direct-1");
    expect(asClient.ok ? grpc.status.OK : asClient.code).toBe(grpc.status.PERMISSION_DENIED);
    const asCoordinator = await workerAs(workerAddr, certs.coordinator).requestTaskSlot("direct-2");
    expect(asCoordinator.ok ? grpc.status.OK : asCoordinator.code).toBe(grpc.status.INVALID_ARGUMENT);
    // And a Coordinator may not run tasks of its own.
    const submit = await workerAs(workerAddr, certs.coordinator).submitTask(inputsTask("direct-3", "def main(ctx, x):\n    return x\n", [1]));
    expect(submit.ok ? grpc.status.OK : submit.code).toBe(grpc.status.PERMISSION_DENIED);
  });
});

describe("a task belongs to the identity that reserved it", () => {
  test("bob's slot-less submit of alice's reserved task id is refused; alice's own submit runs; bob may neither read, watch nor cancel it; an admin may read it", async () => {
    const r = await reserveAs(certs.alice, "owned-1");
    if (!r.ok) throw new Error(`reserve: ${r.code} ${r.details}`);
    expect(r.res.workerAddr).toBe(workerAddr);
    const task = inputsTask("owned-1", "import time\ndef main(ctx, x):\n    time.sleep(0.5)\n    return x\n", [1, 2]);
    const bob = workerAs(workerAddr, certs.bob);
    const stolen = await bob.submitTask(task, "");
    expect(stolen.ok ? "accepted" : grpc.status[stolen.code]).toBe("PERMISSION_DENIED");
    const alice = workerAs(workerAddr, certs.alice);
    const mine = await alice.submitTask(task, r.res.slotId);
    expect(mine.ok && mine.value.slotId).toBe(r.res.slotId);
    for (const denied of [await bob.getTaskResult("owned-1"), await bob.cancelTask("owned-1")]) {
      expect(denied.ok ? "allowed" : grpc.status[denied.code]).toBe("PERMISSION_DENIED");
    }
    const watched = await bob.watch(["owned-1"]);
    expect(watched.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(watched.snapshots).toEqual([]);
    const seen = await workerAs(workerAddr, certs.root).getTaskResult("owned-1");
    expect(seen.ok).toBe(true);
    const done = await alice.watch(["owned-1"]);
    expect(done.snapshots.at(-1)?.state).toBe(TaskState.SUCCEEDED);
  });

  test("bob reserving alice's task id through the Coordinator gets PERMISSION_DENIED, not her slot", async () => {
    const r = await reserveAs(certs.alice, "owned-2");
    expect(r.ok).toBe(true);
    const b = await reserveAs(certs.bob, "owned-2");
    expect(b.ok ? "reserved" : grpc.status[b.code]).toBe("PERMISSION_DENIED");
  });

  test("ttl_ms of an hour is cut to WORKER_MAX_SLOT_TTL_MS, and repeats do not extend it past that", async () => {
    const md = () => {
      const m = new grpc.Metadata();
      m.set("x-blockx-client-identity", "client/alice");
      return m;
    };
    const coord = new WorkerClient(workerAddr, fresh(channelFor(tlsOf(certs.coordinator), workerAddr, ["worker"])), md);
    const first = await coord.requestTaskSlot("hour-1", 3_600_000);
    if (!first.ok) throw new Error(first.details);
    expect(first.value.deadlineMs - first.value.allocatedAtMs).toBe(8_000);
    for (let i = 0; i < 5; i++) {
      const again = await coord.requestTaskSlot("hour-1", 3_600_000);
      expect(again.ok && again.value.deadlineMs).toBe(first.value.allocatedAtMs + 8_000);
    }
  });
});

describe("a client that is not grpc-js", () => {
  const PY_CLIENT = join(import.meta.dir, "..", "support", "py_grpc_client.py");
  const py = (env: Record<string, string>, ...args: string[]) =>
    JSON.parse(Bun.spawnSync(["/usr/bin/python3", PY_CLIENT, ...args], { env: { PATH: "/usr/bin:/bin", ...env } }).stdout.toString()) as Record<string, unknown>;

  test("python3-grpcio reserves a slot over mTLS with its client certificate (gzip request) and reads the Worker's health; without one it is refused", () => {
    expect(py(asEnv(certs.alice), coordAddr, "reserve", "coordinator.v1.CoordinatorService", "py-mtls-1")).toMatchObject({ ok: true, taskId: "py-mtls-1", workerAddr });
    expect(py(asEnv(certs.alice), workerAddr, "health")).toEqual({ ok: true, status: "SERVING" });
    expect(py({}, workerAddr, "health")).toMatchObject({ ok: false, code: "UNAVAILABLE" });
  });
});

describe("Workers are checked against the address they advertise", () => {
  test("a Worker whose certificate does not cover its advertised address is refused on first contact", async () => {
    const lane = new TestCluster();
    try {
      const wrong = ca.issue("worker-elsewhere", "blockx://role/worker/elsewhere", ["10.9.8.7"]);
      await lane.worker(asEnv(wrong));
      await lane.registered(1);
      const coord = (await lane.coordinator(asEnv(certs.coordinator))).addr;
      const channel = fresh(channelFor(tlsOf(certs.alice), coord, ["coordinator"]));
      let r = await reserve(coord, "elsewhere-1", "block", channel);
      // Until the first contact: the Coordinator not ready yet (UNAVAILABLE), or the Worker's first
      // heartbeats, sent while its executors start, showing no free capacity (RESOURCE_EXHAUSTED).
      // The first contact's answer is the one tested (after a few, the Worker's circuit breaker opens).
      for (let i = 0; i < 50 && !r.ok && !r.details.includes("WORKER_UNREACHABLE"); i++) {
        await Bun.sleep(200);
        r = await reserve(coord, "elsewhere-1", "block", channel);
      }
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.details).toContain("WORKER_UNREACHABLE");
    } finally {
      await lane.stop();
    }
  });
});

describe("certificate rotation", () => {
  test("the Worker's certificate is replaced while a backfill runs: the backfill completes and new connections see the new certificate", async () => {
    const r = await reserveAs(certs.alice, "rotate-1");
    if (!r.ok) throw new Error(`reserve: ${r.details}`);
    const alice = workerAs(workerAddr, certs.alice);
    const started = await alice.submitTask(blockTableTask("rotate-1", BLOCK_STATS, 1, 400, "rotation_stats"), r.res.slotId);
    expect(started.ok).toBe(true);
    const finished = alice.watch(["rotate-1"]);
    const renewed = ca.issue("worker-renewed", "blockx://role/worker/w1-renewed");
    copyFileSync(renewed.BLOCKX_TLS_KEY_FILE, join(workerCertDir, "key.pem"));
    copyFileSync(renewed.BLOCKX_TLS_CERT_FILE, join(workerCertDir, "cert.pem"));
    // Within the reload interval (1 s) new connections get the new certificate.
    let seen = "";
    for (let i = 0; i < 40 && !seen.includes("w1-renewed"); i++) {
      await Bun.sleep(250);
      seen = await peerUri(workerAddr, certs.bob);
    }
    expect(seen).toContain("blockx://role/worker/w1-renewed");
    const end = await finished;
    expect(end.error).toBeUndefined();
    expect(end.snapshots.at(-1)?.state).toBe(TaskState.SUCCEEDED);
    expect(end.snapshots.at(-1)?.callsSucceeded).toBe(400);
  });
});

/** peerUri: the URI SAN the Worker presents to a new connection (read in the client's identity check). */
async function peerUri(addr: string, who: TlsEnv): Promise<string> {
  let uri = "";
  const caPem = readFileSync(who.BLOCKX_TLS_CA_FILE);
  const channel = {
    credentials: grpc.credentials.createSsl(caPem, readFileSync(who.BLOCKX_TLS_KEY_FILE), readFileSync(who.BLOCKX_TLS_CERT_FILE), {
      checkServerIdentity: (_h: string, cert: PeerCertificate) => {
        uri = cert.subjectaltname ?? "";
        return undefined;
      },
    }),
    options: { "grpc.ssl_target_name_override": "blockx-peer", "grpc.use_local_subchannel_pool": 1 },
  };
  const c = new WorkerClient(addr, channel);
  await c.getTaskResult("probe");
  c.close();
  return uri;
}
