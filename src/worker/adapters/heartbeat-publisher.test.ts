/** HeartbeatPublisher against a real etcd: publish, survive an outage, re-register, leave on stop. */
import { afterEach, describe, expect, test } from "bun:test";
import type { Etcd3 } from "etcd3";
import { EtcdProcess } from "../../../test/support/etcd";
import { testHeartbeat } from "../../../test/support/heartbeat";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { silentLogger } from "../../common/logging/logger";
import { parseWorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { HeartbeatPublisher } from "./heartbeat-publisher";
import { eventually } from "../../../test/support/eventually";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function valueAt(client: Etcd3, key: string): Promise<string | null> {
  try {
    return await client.get(key).string();
  } catch {
    return null;
  }
}

function publisherOn(client: Etcd3, prefix: string, addr: string, leaseTtlSeconds = 10) {
  let n = 0;
  const p = new HeartbeatPublisher(client, { prefix, workerAddr: addr, intervalMs: 50, leaseTtlSeconds }, () => testHeartbeat(addr, { lastHeartbeatMs: Date.now(), runningTasks: ++n % 5 }), silentLogger());
  cleanups.push(() => p.stop());
  return p;
}

describe("HeartbeatPublisher", () => {
  test("puts a parsable WorkerHeartbeat under a lease, refreshed every interval; stop() revokes it", async () => {
    const client = await createEtcdClient({ endpoints: [process.env.BLOCKX_TEST_ETCD_ENDPOINT!], dialTimeoutMs: 2000 });
    cleanups.push(() => client.close());
    const prefix = `/blockx/test/lanes/hb${Date.now()}/block-workers/`;
    const p = publisherOn(client, prefix, "10.0.0.1:7000");
    p.start();
    await eventually(async () => (await valueAt(client, p.key)) !== null, { timeoutMs: 30_000 });
    const first = parseWorkerHeartbeat((await valueAt(client, p.key))!);
    expect(first.ok && first.heartbeat.workerAddr).toBe("10.0.0.1:7000");
    const lease = (await client.get(p.key).exec()).kvs[0]!.lease;
    expect(String(lease)).not.toBe("0");
    await eventually(() => p.published >= 5, { timeoutMs: 30_000 });
    await p.stop();
    expect(await valueAt(client, p.key)).toBeNull();
  });

  test("an etcd outage longer than the lease TTL: the Worker is registered again, and kept alive, once etcd returns", async () => {
    const etcd = await EtcdProcess.start();
    cleanups.push(() => etcd.destroy());
    const client = await createEtcdClient({ endpoints: [etcd.endpoint], dialTimeoutMs: 1000 });
    cleanups.push(() => client.close());
    const prefix = "/blockx/workers/";
    const p = publisherOn(client, prefix, "10.0.0.2:7000", 2);
    p.start();
    await eventually(async () => (await valueAt(client, p.key)) !== null, { timeoutMs: 30_000 });
    const leaseBefore = String((await client.get(p.key).exec()).kvs[0]!.lease);
    await etcd.stop();
    const publishedDuringOutage = p.published;
    await Bun.sleep(5_000); // > 2x the 2 s TTL
    // A restarted etcd resets the TTLs of the leases it kept, so the old lease would simply
    // survive and nothing would have to register again. Wiping the data forces it: the etcd
    // that returns knows neither the lease nor the key, as after an expiry.
    etcd.wipeData();
    await etcd.start();
    await eventually(async () => p.published > publishedDuringOutage && (await valueAt(client, p.key)) !== null, { timeoutMs: 30_000 });
    const leaseAfter = String((await client.get(p.key).exec()).kvs[0]!.lease);
    expect(leaseAfter).not.toBe("0");
    expect(leaseAfter).not.toBe(leaseBefore); // the old lease does not exist in this etcd
    const again = parseWorkerHeartbeat((await valueAt(client, p.key))!);
    expect(again.ok && again.heartbeat.workerAddr).toBe("10.0.0.2:7000");
    // The new lease is kept alive: 2 TTLs later the key is still there.
    await Bun.sleep(4_500);
    expect(await valueAt(client, p.key)).not.toBeNull();
  }, 60_000);

  test("a lease revoked behind the Worker's back (as when it expires) is replaced by a new one and the key comes back", async () => {
    const client = await createEtcdClient({ endpoints: [process.env.BLOCKX_TEST_ETCD_ENDPOINT!], dialTimeoutMs: 2000 });
    cleanups.push(() => client.close());
    const p = publisherOn(client, `/blockx/test/lanes/rv${Date.now()}/block-workers/`, "10.0.0.3:7000");
    p.start();
    await eventually(async () => (await valueAt(client, p.key)) !== null, { timeoutMs: 30_000 });
    const leaseBefore = String((await client.get(p.key).exec()).kvs[0]!.lease);
    // Revoking deletes the key and the lease: what etcd does when a lease expires.
    await client.leaseClient.leaseRevoke({ ID: leaseBefore });
    await eventually(async () => {
      const kv = (await client.get(p.key).exec()).kvs[0];
      return kv !== undefined && String(kv.lease) !== leaseBefore && String(kv.lease) !== "0";
    }, { timeoutMs: 30_000 });
  });
});
