/**
 * Reading follower statuses (issue 50, item 2: "the dashboard and `blockx tasks` show the
 * follower's head, lag and last reorg"), against a real etcd: a stand-in follower publishes
 * under a lease as `blockx follow` will, and the SDK reads what is there.
 * - BlockxClient.followers() returns each status, sorted by table and chain;
 * - a value that is not a status (not JSON, the wrong shape, or a status of another table than
 *   its key names) is left out and its key named, never trusted;
 * - the Worker registry reader, which reads all of /blockx/, takes nothing under /blockx/followers/
 *   for a Worker, even a value shaped like a heartbeat;
 * - a follower whose lease ends leaves no status behind;
 * - an etcd that does not answer is UNREACHABLE within BLOCKX_RPC_TIMEOUT_MS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Etcd3 } from "etcd3";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { FOLLOWER_STATUS_PREFIX, followerStatusKey } from "../../src/follow/core/follower-status";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { readRegisteredWorkers } from "../../src/sdk/worker-registry";
import { StandInFollower, testFollowerStatus } from "../support/follower-status";
import { testHeartbeat } from "../support/heartbeat";
import { freePort } from "../support/ports";

const ENDPOINT = process.env.BLOCKX_TEST_ETCD_ENDPOINT!;
const RUN = `t${Date.now().toString(36)}`;
let etcd: Etcd3;
let follower: StandInFollower;
let client: BlockxClient;

beforeAll(async () => {
  etcd = await createEtcdClient({ endpoints: [ENDPOINT], dialTimeoutMs: 2_000 });
  follower = await StandInFollower.start(etcd);
  client = new BlockxClient(loadClientConfig({ ...process.env, ETCD_ENDPOINTS: ENDPOINT, BLOCKX_RPC_TIMEOUT_MS: "3000" }));
});

afterAll(async () => {
  await follower?.stop().catch(() => {});
  client?.close();
  etcd?.close();
});

/** mine: the statuses of this file's tables (other test files may publish too). */
const mine = <T extends { table: string }>(xs: T[]) => xs.filter((x) => x.table.startsWith(RUN));

describe("BlockxClient.followers", () => {
  test("returns every published status, by table then chain, with head, lag and last reorg as published", async () => {
    const reorg = { forkBlock: 100, orphanedFrom: 101, orphanedTo: 103, atMs: Date.now() - 5_000 };
    await follower.publish(testFollowerStatus(`${RUN}_b`, "mainnet"));
    await follower.publish(testFollowerStatus(`${RUN}_a`, "sepolia", { head: 2_000, position: 1_990, lag: 10, lastReorg: reorg, reorgs: 2 }));
    await follower.publish(testFollowerStatus(`${RUN}_a`, "mainnet", { state: "STOPPED", stoppedReason: "reorg of 80 blocks (101..180) deeper than the finality depth 64" }));
    const { followers } = await client.followers();
    expect(mine(followers).map((f) => `${f.table}/${f.chain}`)).toEqual([`${RUN}_a/mainnet`, `${RUN}_a/sepolia`, `${RUN}_b/mainnet`]);
    expect(mine(followers)[1]).toMatchObject({ head: 2_000, position: 1_990, lag: 10, lastReorg: reorg, reorgs: 2 });
    expect(mine(followers)[0]).toMatchObject({ state: "STOPPED", stoppedReason: "reorg of 80 blocks (101..180) deeper than the finality depth 64" });
  });

  test("values that are not a status for their key are left out and their keys named", async () => {
    const notJson = followerStatusKey(`${RUN}_bad`, "notjson");
    const wrongShape = followerStatusKey(`${RUN}_bad`, "shape");
    const elsewhere = followerStatusKey(`${RUN}_bad`, "elsewhere");
    await follower.putRaw(notJson, "{not json");
    await follower.putRaw(wrongShape, JSON.stringify({ ...testFollowerStatus(`${RUN}_bad`, "shape"), lag: -3 }));
    // A well-formed status of another follower, under this key: its key does not name it.
    await follower.putRaw(elsewhere, JSON.stringify(testFollowerStatus(`${RUN}_c`, "mainnet")));
    const { followers, skippedKeys } = await client.followers();
    expect(skippedKeys.filter((k) => k.includes(RUN)).sort()).toEqual([elsewhere, notJson, wrongShape].sort());
    expect(followers.some((f) => f.table === `${RUN}_bad` || f.table === `${RUN}_c`)).toBe(false);
    expect(mine(followers)).toHaveLength(3);
  });

  test("the Worker registry reader (all of /blockx/) takes nothing under /blockx/followers/ for a Worker, even a heartbeat-shaped value", async () => {
    const key = `${FOLLOWER_STATUS_PREFIX}workers/127.0.0.1:9`;
    await follower.putRaw(key, JSON.stringify(testHeartbeat("127.0.0.1:9", { lastHeartbeatMs: Date.now() })));
    const all = await etcd.getAll().prefix("/blockx/").keys();
    expect(all).toContain(key); // it is there to be read
    expect(all.some((k) => k.startsWith(followerStatusKey(`${RUN}_a`, "")))).toBe(true);
    const workers = await readRegisteredWorkers(client.config);
    expect(workers.filter((w) => w.addr === "127.0.0.1:9" || w.prefix.startsWith(FOLLOWER_STATUS_PREFIX))).toEqual([]);
  });

  test("a follower whose lease ends leaves no status behind", async () => {
    const other = await StandInFollower.start(etcd);
    await other.publish(testFollowerStatus(`${RUN}_gone`, "mainnet"));
    expect((await client.followers()).followers.some((f) => f.table === `${RUN}_gone`)).toBe(true);
    await other.stop();
    expect((await client.followers()).followers.some((f) => f.table === `${RUN}_gone`)).toBe(false);
  });

  test("an etcd that does not answer is UNREACHABLE, naming it", async () => {
    const silent = new BlockxClient(loadClientConfig({ ...process.env, ETCD_ENDPOINTS: `127.0.0.1:${await freePort()}`, BLOCKX_RPC_TIMEOUT_MS: "500" }));
    try {
      const err = await silent.followers().then(() => null, (e: Error & { code?: string }) => e);
      expect(err?.code).toBe("UNREACHABLE");
      expect(err?.message).toContain("etcd at 127.0.0.1:");
    } finally {
      silent.close();
    }
  });
});
