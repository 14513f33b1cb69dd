import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileEtcdAccess, type EtcdAccess } from "../../src/common/etcd/etcd-access";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { followerStatusKey } from "../../src/follow/core/follower-status";
import { StandInFollower, testFollowerStatus } from "../support/follower-status";
import type { EtcdTlsFiles } from "../../src/common/tls/cert-issuer";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { BlockxProcess } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { EtcdProcess } from "../support/etcd";
import { TestCa } from "../support/test-ca";
import { inputsTask } from "../support/worker-client";

// etcd over TLS with client-certificate authentication and the roles `blockx etcd-roles` sets up
// (issue 16, item 4): the compiled Worker and Coordinator reach etcd with their own etcd
// identities and a task runs end to end; etcd itself refuses a heartbeat written with a
// non-Worker identity, and a client without a certificate. A follower (`blockx follow`) publishes
// its status under /blockx/followers/ with its own identity, and may write nowhere else.

const ca = TestCa.create();
const etcdCerts = {
  server: ca.issueEtcd("etcd-server", "etcd-server", ["127.0.0.1", "localhost"]),
  root: ca.issueEtcd("etcd-root", "root"),
  worker: ca.issueEtcd("etcd-worker", "blockx-worker"),
  coordinator: ca.issueEtcd("etcd-coordinator", "blockx-coordinator"),
  client: ca.issueEtcd("etcd-client", "blockx-client"),
  follower: ca.issueEtcd("etcd-follower", "blockx-follower"),
};
const grpcCerts = {
  worker: ca.issue("worker", "blockx://role/worker/w1"),
  coordinator: ca.issue("coordinator", "blockx://role/coordinator"),
  alice: ca.issue("alice", "blockx://role/client/alice"),
};

const accessOf = (f: EtcdTlsFiles): EtcdAccess =>
  compileEtcdAccess({ etcdTlsCaFile: f.ETCD_TLS_CA_FILE, etcdTlsCertFile: f.ETCD_TLS_CERT_FILE, etcdTlsKeyFile: f.ETCD_TLS_KEY_FILE, etcdUsername: "", etcdPasswordFile: "", etcdPassword: "" }, []);

let etcd: EtcdProcess;
let cluster: TestCluster;
let coordAddr = "";

beforeAll(async () => {
  etcd = await EtcdProcess.start({
    caFile: ca.caFile,
    certFile: etcdCerts.server.ETCD_TLS_CERT_FILE,
    keyFile: etcdCerts.server.ETCD_TLS_KEY_FILE,
    clientCertAuth: true,
    probe: { certFile: etcdCerts.root.ETCD_TLS_CERT_FILE, keyFile: etcdCerts.root.ETCD_TLS_KEY_FILE },
  });
  // The README's role setup, run as an operator would: the binary, as etcd's root (CN=root).
  const roles = BlockxProcess.spawn(["etcd-roles"], { ETCD_ENDPOINTS: etcd.endpoint, ...etcdCerts.root });
  const code = await roles.exited;
  if (code !== 0) throw new Error(`blockx etcd-roles exited ${code}: ${roles.stderr}\n${roles.tail()}`);
  cluster = new TestCluster(undefined, etcd.endpoint);
  await cluster.worker({ ...grpcCerts.worker, ...etcdCerts.worker });
  coordAddr = (await cluster.coordinator({ ...grpcCerts.coordinator, ...etcdCerts.coordinator })).addr;
});

afterAll(async () => {
  await cluster?.stop();
  await etcd?.destroy();
});

describe("etcd over TLS with client certificates and BlockX's roles", () => {
  test("a Worker and a Coordinator with their etcd identities work end to end: a task is reserved, submitted and runs", async () => {
    const sdk = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coordAddr, ...grpcCerts.alice, ...etcdCerts.client }));
    try {
      const run = (i: number) =>
        sdk.runTask(inputsTask(`etcd-tls-${process.pid}-${i}`, "def main(ctx, x):\n    return x + 1\n", [41])).then(
          (r) => (r.succeeded ? "SUCCEEDED" : r.state),
          (e: Error) => e.message,
        );
      // The Coordinator's view fills within a heartbeat or two of its start.
      let outcome = await run(0);
      for (let i = 1; i < 50 && outcome !== "SUCCEEDED"; i++) {
        await Bun.sleep(200);
        outcome = await run(i);
      }
      expect(outcome).toBe("SUCCEEDED");
      // A client reads the registry with its own etcd identity (blockx workers).
      const { readRegisteredWorkers } = await import("../../src/sdk/worker-registry");
      const workers = await readRegisteredWorkers(cluster.clientConfig({ ...etcdCerts.client }));
      expect(workers.some((w) => w.prefix === cluster.blockPrefix)).toBe(true);
    } finally {
      sdk.close();
    }
  });

  test("a heartbeat written with the Coordinator's etcd identity is refused by etcd (permission denied); the Coordinator may read the registry", async () => {
    const asCoordinator = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 5_000, access: accessOf(etcdCerts.coordinator) });
    try {
      const registered = await asCoordinator.getAll().prefix(cluster.blockPrefix).keys();
      expect(registered.length).toBe(1);
      const forged = JSON.stringify({ workerAddr: "127.0.0.1:1", freeSlots: 1000 });
      const err = await asCoordinator
        .put(`${cluster.blockPrefix}127.0.0.1:1`)
        .value(forged)
        .then(() => null, (e: Error) => e);
      expect(err?.message ?? "written").toContain("permission denied");
      expect(await asCoordinator.getAll().prefix(cluster.blockPrefix).keys()).toEqual(registered);
    } finally {
      asCoordinator.close();
    }
  });

  test("blockx-follower publishes its status under /blockx/followers/ with a lease, and a client reads it with its own identity; it cannot write a Worker registry prefix, and a client cannot write a status", async () => {
    const asFollower = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 5_000, access: accessOf(etcdCerts.follower) });
    const asClient = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 5_000, access: accessOf(etcdCerts.client) });
    const follower = await StandInFollower.start(asFollower);
    try {
      await follower.publish(testFollowerStatus("blocks", "mainnet", { head: 103, lag: 3 }));
      const sdk = new BlockxClient(cluster.clientConfig({ ...grpcCerts.alice, ...etcdCerts.client }));
      try {
        expect((await sdk.followers()).followers.map((f) => [f.table, f.chain, f.head, f.lag])).toEqual([["blocks", "mainnet", 103, 3]]);
      } finally {
        sdk.close();
      }
      expect((await asFollower.getAll().prefix(cluster.blockPrefix).keys()).length).toBe(1); // reads /blockx/
      const denied = (put: { exec(): Promise<unknown> }) => put.exec().then(() => "written", (e: Error) => e.message);
      const forged = JSON.stringify({ workerAddr: "127.0.0.1:1", freeSlots: 1000 });
      expect(await denied(asFollower.put(`${cluster.blockPrefix}127.0.0.1:1`).value(forged))).toContain("permission denied");
      expect(await denied(asFollower.put("/blockx/workers/127.0.0.1:1").value(forged))).toContain("permission denied");
      expect(await denied(asClient.put(followerStatusKey("blocks", "mainnet")).value("{}"))).toContain("permission denied");
      expect(await asClient.get(followerStatusKey("blocks", "mainnet")).string()).toContain('"head":103');
    } finally {
      await follower.stop();
      asFollower.close();
      asClient.close();
    }
  });

  test("a client without an etcd client certificate is refused", async () => {
    const anonymous = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 2_000, access: { tls: { caFile: ca.caFile, client: null }, auth: null } });
    try {
      const err = await anonymous
        .getAll()
        .prefix("/blockx/")
        .keys()
        .then(() => null, (e: Error) => e);
      expect(err).not.toBeNull();
    } finally {
      anonymous.close();
    }
  });

  test("a half-set etcd TLS configuration exits 2 naming the missing variable", async () => {
    const p = BlockxProcess.spawn(["worker"], { ETCD_ENDPOINTS: etcd.endpoint, ...grpcCerts.worker, ETCD_TLS_CA_FILE: ca.caFile, ETCD_TLS_CERT_FILE: etcdCerts.worker.ETCD_TLS_CERT_FILE });
    expect(await p.exited).toBe(2);
    expect(p.stderr).toContain("ETCD_TLS_KEY_FILE: expected the private key of ETCD_TLS_CERT_FILE");
    const pw = join(ca.dir, "empty.password");
    writeFileSync(pw, "");
    const q = BlockxProcess.spawn(["coordinator"], { ETCD_ENDPOINTS: etcd.endpoint, ...grpcCerts.coordinator, ETCD_PASSWORD_FILE: pw });
    expect(await q.exited).toBe(2);
    expect(q.stderr).toContain("ETCD_USERNAME: expected the etcd user of ETCD_PASSWORD_FILE");
  });
});
