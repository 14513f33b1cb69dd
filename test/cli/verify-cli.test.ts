/**
 * `blockx verify` (issue 50 item 4) against a real node that reorganises (anvil) and a real table
 * store: a table written from the chain is clean; an orphaned row (its block replaced by anvil_reorg),
 * a missing scope and a doubled scope are each named; bad input is a usage error (exit 2).
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteTableStore } from "../../src/outputs/stores/sqlite-table-store";
import { replaceBlockRows } from "../../src/outputs/stores/table-store";
import { BlockTableWriter } from "../../src/outputs/block-table-output";
import { AnvilNode, ANVIL_CHAIN_ID } from "../support/anvil";
import { BLOCKX_BINARY } from "../support/blockx-process";

let anvil: AnvilNode;
const dir = mkdtempSync(join(tmpdir(), "blockx-verify-"));
beforeAll(async () => {
  anvil = await AnvilNode.start();
  await anvil.mine(12);
}, 60_000);
afterAll(async () => {
  await anvil?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** writeTable: a block table `facts` with rows for each block of `blocks`, each recording the node's hash of its block now. */
async function writeTable(path: string, blocks: number[]): Promise<void> {
  const store = new SqliteTableStore(path, { inline: true });
  for (const n of blocks) {
    const hash = (await anvil.block(n)).hash;
    await replaceBlockRows(store, "facts", { chain: "dev", fromBlock: n, toBlock: n, blockHash: hash }, [{ block: n, tag: "a" }, { block: n, tag: "b" }]);
  }
  await store.close();
}

function verify(path: string, ...args: string[]): { code: number; out: string; err: string } {
  const p = Bun.spawnSync([BLOCKX_BINARY, "verify", ...args], {
    env: { ...process.env, TABLE_STORE_PATH: path, TABLE_STORE_URL: "", CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [anvil.url], chainId: ANVIL_CHAIN_ID } } }) },
  });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe("blockx verify", () => {
  test("a table written from the chain verifies clean (exit 0), over its own range or the one asked", async () => {
    const path = join(dir, "clean.sqlite");
    await writeTable(path, range(1, 8));
    const r = verify(path, "facts", "--chain", "dev");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("verified facts on dev, blocks 1..8: 8 blocks, 8 scopes, 16 rows");
    expect(r.out).toContain("nothing missing, stale or doubled");
    const json = JSON.parse(verify(path, "facts", "--chain", "dev", "--blocks", "2..5", "--json").out) as Record<string, unknown>;
    expect(json).toMatchObject({ table: "facts", chain: "dev", fromBlock: 2, toBlock: 5, clean: true, scopes: 4, rows: 8, findings: [] });
  });

  test("an orphaned row (its block replaced by a reorganisation), a missing scope and a doubled scope are each named; exit 1", async () => {
    const path = join(dir, "planted.sqlite");
    await writeTable(path, [...range(1, 5), ...range(7, 12)]); // block 6: no scope
    // A doubled scope: block 3's rows written a second time by another run (as a store bug or a hand-made insert would).
    const db = new Database(path);
    db.query(`INSERT INTO facts (block, tag, _chain, _scope_from, _scope_to, _run_seq, _block_hash) VALUES (3, 'x', 'dev', 3, 3, 7, ?)`).run((await anvil.block(3)).hash);
    db.close();
    const orphaned = (await anvil.block(11)).hash;
    await anvil.reorg(2); // blocks 11 and 12 are new blocks now: their rows were computed from orphans
    const canonical = (await anvil.block(11)).hash;
    expect(canonical).not.toBe(orphaned);
    const r = verify(path, "facts", "--chain", "dev", "--blocks", "1..12");
    expect(r.code).toBe(1);
    const lines = r.out.trim().split("\n");
    expect(lines).toContain(`stale: scope 11..11 was computed from block 11 ${orphaned}, but the chain's block 11 is ${canonical} (orphaned by a reorganisation)`);
    expect(lines.filter((l) => l.startsWith("stale: scope 12..12"))).toHaveLength(1);
    expect(lines).toContain("missing: block 6 has no rows");
    expect(lines.find((l) => l.startsWith("doubled: scope 3..3 written 2 times: run 0 (2 rows"))).toBeDefined();
    expect(lines.at(-1)).toContain("FAILED facts on dev, blocks 1..12: 12 blocks");
    expect(lines.at(-1)).toContain("1 block(s) missing, 2 stale scope(s), 1 doubled scope(s)");
  });

  test("blocks whose function returned no rows are written, not missing: the table's scope ledger records them (stale ones too)", async () => {
    // Written the way a Worker writes a follower's task (record_scopes): BlockTableWriter stages the rows and the scope ledger's entry, one commit per call.
    const write = async (path: string, table: string, blocks: number[], rowsOf: (n: number) => { block: number }[]) => {
      const store = new SqliteTableStore(path, { inline: true });
      const w = new BlockTableWriter(table, (input) => ({ chain: "dev", fromBlock: (input as { n: number }).n, toBlock: (input as { n: number }).n }), true);
      for (const n of blocks) await store.commit(w.stage({ index: n, input: { n }, value: rowsOf(n), blockHash: (await anvil.block(n)).hash }));
      await store.close();
    };
    const head = await anvil.head();
    const path = join(dir, "ledger.sqlite");
    await write(path, "sparse", range(head - 5, head), (n) => (n % 2 === 0 ? [{ block: n }] : []));
    await write(path, "nothing", range(head - 2, head), () => []);
    const sparse = verify(path, "sparse", "--chain", "dev");
    expect([sparse.code, sparse.err]).toEqual([0, ""]);
    expect(sparse.out).toContain(`verified sparse on dev, blocks ${head - 5}..${head}: 6 blocks, 6 scopes (3 with no rows, in the scope ledger), 3 rows`);
    const nothing = verify(path, "nothing", "--chain", "dev", "--json");
    expect(JSON.parse(nothing.out)).toMatchObject({ clean: true, fromBlock: head - 2, toBlock: head, scopes: 3, rows: 0, emptyScopes: 3 });
    // An empty scope computed from a block a reorganisation then replaced is stale like any other.
    await anvil.reorg(1);
    const stale = verify(path, "nothing", "--chain", "dev");
    expect(stale.code).toBe(1);
    expect(stale.out).toContain(`stale: scope ${head}..${head} was computed from block ${head}`);
  });

  test("bad input is a usage error naming it (exit 2): no --chain, a range backwards, no such table, a normal table, a chain of another id", async () => {
    const path = join(dir, "clean2.sqlite");
    await writeTable(path, [1]);
    const store = new SqliteTableStore(path, { inline: true });
    await store.commit([{ kind: "append", table: "plain", rows: [{ a: 1 }] }]);
    await store.close();
    const cases: [string[], string][] = [
      [["facts"], "--chain is required"],
      [["facts", "--chain", "dev", "--blocks", "5..1"], '--blocks: expected A..B with A <= B (block numbers), got "5..1"'],
      [["facts", "--chain", "dev", "--blocks", "x"], "--blocks: expected A..B"],
      [["nothing", "--chain", "dev"], 'no table "nothing"'],
      [["plain", "--chain", "dev"], "table plain is a normal table; only block tables record blocks"],
      [["facts", "--chain", "dev", "--chains-config", JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [anvil.url], chainId: 1 } } })], `reports chain id ${ANVIL_CHAIN_ID}, but CHAINS_CONFIG says chainId 1`],
      [["facts", "--chain", "other"], 'no chain "other" in CHAINS_CONFIG'],
    ];
    for (const [args, message] of cases) {
      const r = verify(path, ...args);
      expect([args.join(" "), r.code]).toEqual([args.join(" "), 2]);
      expect(r.err).toContain(message);
    }
    const gone = verify(join(dir, "absent.sqlite"), "facts", "--chain", "dev");
    expect(gone.code).toBe(2);
    expect(gone.err).toContain("no table store at");
  });
});
