/**
 * `blockx follow` (issue 50 items 1, 2 and 5) against a node that really reorganises (anvil), a
 * compiled Coordinator and Worker, and a real SQLite table store: the follower catches up, follows
 * block by block, survives reorganisations 1 and 3 blocks deep (the orphaned blocks' rows replaced
 * by the canonical ones; `blockx verify` then finds nothing, and the table equals a fresh backfill
 * of the canonical chain), resumes exactly once after a restart from the table's scope ledger, and
 * stops with the blocks named on a reorganisation deeper than its finality depth.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { scopeLedgerName } from "../../src/outputs/stores/table-schema";
import { AnvilNode, ANVIL_CHAIN_ID } from "../support/anvil";
import { BLOCKX_BINARY, type BlockxProcess, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { RawTableReader } from "../support/raw-table-reader";

/** One row per block: its number and the hash of the block the call read (so a row computed from an orphan shows it). */
const FN = `
def main(ctx, input):
    b = ctx.blockdb.block(input["blockNumber"], full=False)
    return [{"block": input["blockNumber"], "hash": b["hash"], "parent": b["parentHash"]}]
`;

let anvil: AnvilNode;
let cluster: TestCluster;
let coordinatorAddr: string;
let fnPath: string;
let chains: string;

beforeAll(async () => {
  anvil = await AnvilNode.start();
  await anvil.mine(20);
  cluster = new TestCluster();
  fnPath = join(cluster.dir, "blocks.py");
  writeFileSync(fnPath, FN);
  // Finality depth 8: a reorganisation 3 deep is followed, one 10 deep is not.
  // And `ethereum`, the synthetic local test chain (blockx dev's), which cannot reorganise.
  chains = JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [anvil.url], chainId: ANVIL_CHAIN_ID, finalityDepth: 8 }, ethereum: { source: "localtestservice" } } });
  await cluster.worker({ CHAINS_CONFIG: chains, EXECUTOR_COUNT: "2" });
  await cluster.withFreeCapacity(1);
  coordinatorAddr = (await cluster.coordinator()).addr;
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await anvil?.stop();
});

function clientEnv(): Record<string, string> {
  return { ETCD_ENDPOINTS: cluster.etcd, BLOCKX_COORDINATOR_ADDRS: coordinatorAddr, TABLE_STORE_PATH: cluster.tableStorePath, TABLE_STORE_URL: "", CHAINS_CONFIG: chains, ...transportEnv({}, "client") };
}

function follow(table: string, env: Record<string, string> = {}): BlockxProcess {
  return cluster.spawn("follow", { ...clientEnv(), FOLLOW_TABLE: table, FOLLOW_CHAIN: "dev", FOLLOW_FUNCTION: fnPath, FOLLOW_POLL_MS: "100", FOLLOW_RETRY_MS: "200", ...env });
}

/** ledger: the blocks the table's scope ledger holds, with their hashes. */
function ledger(table: string, chain = "dev"): Map<number, string> {
  const r = new RawTableReader(cluster.tableStorePath);
  try {
    if (!r.hasTable(scopeLedgerName(table))) return new Map();
    return new Map(r.query(scopeLedgerName(table), "WHERE _chain = ? ORDER BY _scope_from", [chain]).map((x) => [Number(x._scope_to), String(x._block_hash)]));
  } finally {
    r.close();
  }
}

/** rows: the table's (block, hash) pairs in block order. */
function rows(table: string): [number, string][] {
  const r = new RawTableReader(cluster.tableStorePath);
  try {
    return r.query(table, "ORDER BY block").map((x) => [Number(x.block), String(x.hash)]);
  } finally {
    r.close();
  }
}

/** caughtUp waits until the ledger holds every block up to the node's head, each with the node's hash now. */
async function caughtUp(table: string, p: BlockxProcess, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const head = await anvil.head();
    const l = ledger(table);
    if (l.get(head) === (await anvil.block(head)).hash) return head;
    if (Date.now() > deadline) throw new Error(`the follower of ${table} did not reach head ${head} (ledger up to ${Math.max(-1, ...l.keys())}); stderr:\n${p.stderr}`);
    if (p.proc.exitCode !== null) throw new Error(`the follower exited ${p.proc.exitCode}: ${p.stderr}`);
    await Bun.sleep(100);
  }
}

/** canonical: the node's (block, hash) of every block from..to. */
async function canonical(from: number, to: number): Promise<[number, string][]> {
  const out: [number, string][] = [];
  for (let n = from; n <= to; n++) out.push([n, (await anvil.block(n)).hash]);
  return out;
}

function run(args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync([BLOCKX_BINARY, ...args], { env: { ...process.env, ...clientEnv() } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

/** backfill: the same function over from..to into `table` by `blockx submit` (a fresh backfill of the chain as it is now). */
function backfill(table: string, from: number, to: number): void {
  const r = run(["submit", "--function", fnPath, "--blocks", `${from}..${to}`, "--chain", "dev", "--table", table, "--watch", "--json"]);
  expect([r.code, JSON.parse(r.out).state]).toEqual([0, "SUCCEEDED"]);
}

describe("blockx follow against anvil", () => {
  for (const depth of [1, 3]) {
    test(`a reorganisation ${depth} deep: the orphaned blocks' rows are replaced, verify finds nothing, the table equals a fresh backfill`, async () => {
      const table = `follow_d${depth}`;
      const from = (await anvil.head()) - 6;
      const p = follow(table, { FOLLOW_FROM: String(from) });
      try {
        const head = await caughtUp(table, p);
        const orphaned = (await anvil.block(head)).hash;
        await anvil.reorg(depth); // blocks head-depth+1..head are other blocks now
        await anvil.mine(1);
        expect((await anvil.block(head)).hash).not.toBe(orphaned);
        const rewound = await p.waitForLog((l) => String(l.msg).startsWith("rewound the table to block"), 30_000);
        expect(rewound.forkBlock).toBe(head - depth);
        const newHead = await caughtUp(table, p);
        expect(newHead).toBe(head + 1);
        // What `blockx tasks` shows of it: the follower's own status, published in etcd.
        const deadline = Date.now() + 10_000;
        let shown: Record<string, unknown> | undefined;
        while (Date.now() < deadline) {
          const t = run(["tasks", "--followers", "--json"]);
          shown = (JSON.parse(t.out) as Record<string, unknown>[]).find((f) => f.table === table);
          if (shown && shown.position === newHead) break;
          await Bun.sleep(100);
        }
        expect(shown).toMatchObject({ chain: "dev", state: "IDLE", position: newHead, lag: 0, reorgs: 1, lastReorg: { forkBlock: head - depth, orphanedFrom: head - depth + 1, orphanedTo: head } });
      } finally {
        expect(await p.stop("SIGTERM")).toBe(0);
      }
      const to = await anvil.head();
      expect(rows(table)).toEqual(await canonical(from, to));
      const v = run(["verify", table, "--chain", "dev", "--blocks", `${from}..${to}`]);
      expect([v.code, v.err]).toEqual([0, ""]);
      expect(v.out).toContain("nothing missing, stale or doubled");
      backfill(`fresh_d${depth}`, from, to);
      expect(rows(table)).toEqual(rows(`fresh_d${depth}`));
    }, 120_000);
  }

  test("blocks dropped from the chain's tip (anvil_rollback): their rows are removed at once, before the chain grows again", async () => {
    const table = "follow_rollback";
    const from = (await anvil.head()) - 4;
    const p = follow(table, { FOLLOW_FROM: String(from) });
    try {
      const head = await caughtUp(table, p);
      await anvil.rollback(2);
      const rewound = await p.waitForLog((l) => String(l.msg).startsWith("rewound the table to block"), 30_000);
      expect(rewound.forkBlock).toBe(head - 2);
      expect(rows(table)).toEqual(await canonical(from, head - 2));
      expect(Math.max(...ledger(table).keys())).toBe(head - 2);
      await anvil.mine(3);
      expect(await caughtUp(table, p)).toBe(head + 1);
    } finally {
      expect(await p.stop("SIGTERM")).toBe(0);
    }
    expect(rows(table)).toEqual(await canonical(from, await anvil.head()));
  }, 120_000);

  test("restarted, it resumes after the last block the ledger holds: every block once, none skipped", async () => {
    const table = "follow_restart";
    const from = (await anvil.head()) - 3;
    let p = follow(table, { FOLLOW_FROM: String(from) });
    const head = await caughtUp(table, p);
    expect(await p.stop("SIGTERM")).toBe(0);
    await anvil.mine(4);
    p = follow(table); // no --from: the ledger says where
    try {
      const resumed = await p.waitForLog((l) => String(l.msg).startsWith("resuming after block"), 30_000);
      expect(resumed.position).toBe(head);
      expect(await caughtUp(table, p)).toBe(head + 4);
    } finally {
      await p.stop("SIGTERM");
    }
    const r = new RawTableReader(cluster.tableStorePath);
    const counts = r.query(table, "GROUP BY block ORDER BY block").length;
    const all = r.query(table).length;
    r.close();
    expect([counts, all]).toEqual([head + 4 - from + 1, head + 4 - from + 1]);
    expect(rows(table)).toEqual(await canonical(from, head + 4));
  }, 120_000);

  test("a reorganisation deeper than the finality depth stops the follower (exit 1) naming the blocks, and nothing is rewound", async () => {
    const table = "follow_deep";
    const from = (await anvil.head()) - 10; // the table holds blocks below the fork: the depth is known
    const p = follow(table, { FOLLOW_FROM: String(from), FOLLOW_FINALITY_DEPTH: "4" });
    const head = await caughtUp(table, p);
    const before = rows(table);
    await anvil.reorg(6);
    await anvil.mine(1);
    const code = await Promise.race([p.exited, Bun.sleep(30_000).then(() => "still running")]);
    expect([code, p.stderr]).toEqual([1, expect.any(String)]);
    expect(p.stderr).toContain("a reorganisation deeper than the finality depth (4)");
    expect(p.stderr).toContain(`the written blocks ${head - 5}..${head} are not canonical any more`);
    expect(rows(table)).toEqual(before);
    // What verify says about the table now: the six orphaned blocks, each named stale.
    const v = run(["verify", table, "--chain", "dev", "--blocks", `${from}..${head}`]);
    expect(v.code).toBe(1);
    expect(v.out.split("\n").filter((l) => l.startsWith("stale: scope"))).toHaveLength(6);
  }, 120_000);

  test("on the local test chain (blockx dev's, which cannot reorganise and records no hashes) it follows from the hashes it reads", async () => {
    const table = "follow_local";
    const p = follow(table, { FOLLOW_CHAIN: "ethereum", FOLLOW_FROM: "19999990" });
    try {
      const deadline = Date.now() + 60_000;
      while (Math.max(-1, ...ledger(table, "ethereum").keys()) < 20_000_000 && Date.now() < deadline && p.proc.exitCode === null) await Bun.sleep(100);
      if (p.proc.exitCode !== null) await Bun.sleep(200);
      expect([p.proc.exitCode, p.stderr, [...ledger(table, "ethereum").keys()].length]).toEqual([null, "", 11]);
    } finally {
      expect(await p.stop("SIGTERM")).toBe(0);
    }
    expect(rows(table).map(([n]) => n)).toEqual(Array.from({ length: 11 }, (_, i) => 19_999_990 + i));
  }, 120_000);

  test("in plaintext it warns at start that each of its blocks pays an executor's start, and says what to do instead", async () => {
    const p = follow("follow_plain", { FOLLOW_FROM: "1", BLOCKX_INSECURE: "1", BLOCKX_TLS_CA_FILE: "", BLOCKX_TLS_CERT_FILE: "", BLOCKX_TLS_KEY_FILE: "" });
    try {
      const warn = await p.waitForLog((l) => l.level === "warn" && String(l.msg).includes("BLOCKX_INSECURE=1"));
      expect(String(warn.msg)).toContain("each block pays an executor's start");
      expect(String(warn.msg)).toContain("EXECUTOR_OWNER_WITHOUT_IDENTITY=shared");
    } finally {
      await p.stop("SIGKILL");
    }
  }, 60_000);

  test("bad input is a usage error naming it (exit 2): no table, no chain, no function, an empty table without --from, a chain CHAINS_CONFIG lacks", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ FOLLOW_TABLE: "" }, "TABLE (or FOLLOW_TABLE) is required"],
      [{ FOLLOW_CHAIN: "" }, "--chain (or FOLLOW_CHAIN) is required"],
      [{ FOLLOW_FUNCTION: "" }, "--function (or FOLLOW_FUNCTION) is required"],
      [{ FOLLOW_TABLE: "_blockx_x" }, "TABLE: names starting with _blockx are reserved"],
      [{ FOLLOW_TABLE: "never_written" }, "holds no block of chain dev"],
      [{ FOLLOW_CHAIN: "other" }, "--chain other"],
      [{ FOLLOW_FROM: "x" }, "FOLLOW_FROM: expected a block number, or empty"],
    ];
    for (const [env, message] of cases) {
      const p = follow("follow_bad", env);
      const code = await p.exited;
      expect([JSON.stringify(env), code]).toEqual([JSON.stringify(env), 2]);
      expect(p.stderr).toContain(message);
    }
  }, 120_000);
});
