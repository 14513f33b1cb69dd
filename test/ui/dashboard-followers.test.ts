/**
 * The dashboard's Followers panel (issue 50, item 2), in Debian's headless chromium against the
 * compiled `blockx ui`: a stand-in follower publishes statuses in the run's real etcd under a lease,
 * as `blockx follow` does, and the overview page shows each follower's state, position, head, lag
 * and last reorg, a stopped follower's reason, and names a value that is not a status instead of
 * showing it. The panel follows the event stream: a new head appears without reloading the page.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Etcd3 } from "etcd3";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { followerStatusKey } from "../../src/follow/core/follower-status";
import { BlockxProcess } from "../support/blockx-process";
import { HeadlessChromium } from "../support/chromium";
import { StandInFollower, testFollowerStatus } from "../support/follower-status";

const ETCD = process.env.BLOCKX_TEST_ETCD_ENDPOINT!;
const TABLE = `ui_${Date.now().toString(36)}`;
const REORG = { forkBlock: 4_000, orphanedFrom: 4_001, orphanedTo: 4_003, atMs: Date.now() - 30_000 };
const REASON = "reorg of 80 blocks (9921..10000) is deeper than the finality depth 64";

let etcd: Etcd3;
let follower: StandInFollower;
let ui: BlockxProcess;
let browser: HeadlessChromium;

beforeAll(async () => {
  etcd = await createEtcdClient({ endpoints: [ETCD], dialTimeoutMs: 2_000 });
  follower = await StandInFollower.start(etcd);
  await follower.publish(testFollowerStatus(TABLE, "mainnet", { position: 4_010, head: 4_012, lag: 2, lastReorg: REORG, reorgs: 3, blocksWritten: 4_011 }));
  await follower.publish(testFollowerStatus(TABLE, "sepolia", { state: "STOPPED", position: 10_000, head: 10_050, lag: 50, stoppedReason: REASON }));
  await follower.putRaw(followerStatusKey(TABLE, "broken"), "not a status");
  ui = BlockxProcess.spawn(["ui"], { ETCD_ENDPOINTS: ETCD, UI_LISTEN: "127.0.0.1:0", UI_REFRESH_MS: "300", BLOCKX_RPC_TIMEOUT_MS: "3000" });
  const url = await ui.dashboardUrl();
  browser = await HeadlessChromium.start();
  await browser.navigate(url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await ui?.stop("SIGINT");
  await follower?.stop().catch(() => {});
  etcd?.close();
}, 30_000);

/** cells: the text of each cell of the follower's row, by its header's name. */
async function cells(chain: string, timeoutMs = 30_000): Promise<Record<string, string>> {
  return browser.waitUntil<Record<string, string>>(
    `(() => {
      const row = document.querySelector('#followers tr[data-follower="${TABLE}/${chain}"]');
      if (!row) return null;
      const heads = [...document.querySelectorAll('#followers th')].map((th) => th.textContent);
      return Object.fromEntries([...row.children].map((td, i) => [heads[i], td.textContent]));
    })()`,
    timeoutMs,
  );
}

describe("the dashboard's Followers panel, in chromium against `blockx ui`", () => {
  test("shows a follower's state, position, head, lag and last reorg", async () => {
    const c = await cells("mainnet");
    expect(c).toMatchObject({ table: TABLE, chain: "mainnet", state: "WRITING", position: "4010", head: "4012", lag: "2", reorgs: "3", "blocks written": "4011", owner: "alice@follower-host", "stopped because": "" });
    const at = new Date(REORG.atMs);
    const clock = [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
    expect(c["last reorg"]).toBe(`blocks 4001..4003 at ${clock}, fork 4000`);
    expect(c.updated).toMatch(/ ago\)$/);
  }, 60_000);

  test("shows a stopped follower with its reason", async () => {
    const c = await cells("sepolia");
    expect(c).toMatchObject({ state: "STOPPED", head: "10050", lag: "50", "last reorg": "–", "stopped because": REASON });
  }, 60_000);

  test("a value that is not a status is named, not shown as a follower", async () => {
    const note = await browser.waitUntil<string>(`document.querySelector('#followers-skipped')?.textContent ?? ''`, 30_000);
    expect(note).toContain(followerStatusKey(TABLE, "broken"));
    expect(await browser.evaluate<boolean>(`document.querySelector('#followers tr[data-follower="${TABLE}/broken"]') !== null`)).toBe(false);
  }, 60_000);

  test("a new head and a new reorg appear without reloading the page (the overview's event stream)", async () => {
    await follower.publish(testFollowerStatus(TABLE, "mainnet", { position: 4_020, head: 4_025, lag: 5, lastReorg: { ...REORG, forkBlock: 4_018, orphanedFrom: 4_019, orphanedTo: 4_019 }, reorgs: 4 }));
    await browser.waitUntil(`document.querySelector('#followers tr[data-follower="${TABLE}/mainnet"]')?.dataset.head === '4025'`, 30_000);
    const c = await cells("mainnet");
    expect(c).toMatchObject({ head: "4025", lag: "5", reorgs: "4" });
    expect(c["last reorg"]).toStartWith("block 4019 at ");
    expect(c["last reorg"]).toEndWith(", fork 4018");
  }, 60_000);
});
