/**
 * The soak's checker against a real table store, SQLite and Postgres (the private server of
 * test/support/preload.ts, a fresh database per test): rows written the way a Worker writes them
 * (block-scope replacement), then a duplicated row, a missing block and a wrong value injected by
 * hand; each must be counted.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { PostgresTableStore } from "../../src/common/tables/postgres-table-store";
import { SqliteTableStore } from "../../src/common/tables/sqlite-table-store";
import { appendRows, replaceBlockRows, type TableStore } from "../../src/common/tables/table-store";
import { freshDatabase } from "../support/postgres";
import { checkPassed, checkTables, SOAK_CHAIN } from "./checker";
import { BLOCK_STATS, ERC20_TRANSFERS, type SoakTable } from "./soak-functions";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The stores the checker reads: a new empty location of each, and how a Worker would open it. */
const KINDS = [
  {
    name: "SQLite",
    location: async () => {
      const dir = mkdtempSync(join(tmpdir(), "blockx-checker-"));
      dirs.push(dir);
      return join(dir, "tables.sqlite");
    },
    open: (path: string): TableStore => new SqliteTableStore(path, { inline: true }),
  },
  {
    name: "Postgres",
    location: freshDatabase,
    open: (url: string): TableStore =>
      new PostgresTableStore({ url, poolSize: 2, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" }),
  },
] as const;

for (const kind of KINDS) {
  async function storeWith(tables: SoakTable[], from: number, to: number): Promise<string> {
    const path = await kind.location();
    const chain = new SyntheticChain(SOAK_CHAIN);
    const store = kind.open(path);
    for (const t of tables) for (let n = from; n <= to; n++) await replaceBlockRows(store, t.table, { chain: SOAK_CHAIN, fromBlock: n, toBlock: n }, t.expectedRows(chain, n));
    await store.close();
    return path;
  }

  const ranges = (from: number, to: number) => [
    { table: BLOCK_STATS, fromBlock: from, toBlock: to },
    { table: ERC20_TRANSFERS, fromBlock: from, toBlock: to },
  ];

  describe(`soak checker (${kind.name})`, () => {
    test("exact rows pass; the transfer table has several rows per block", async () => {
      const path = await storeWith([BLOCK_STATS, ERC20_TRANSFERS], 100, 119);
      const c = await checkTables(path, ranges(100, 119));
      expect(c).toMatchObject({ blocks: 40, missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, problems: [] });
      expect(c.expectedRows).toBeGreaterThan(40);
      expect(checkPassed(c)).toBe(true);
    });

    test("a duplicated row, a missing block and a wrong value are each counted and named", async () => {
      const path = await storeWith([BLOCK_STATS, ERC20_TRANSFERS], 100, 119);
      const chain = new SyntheticChain(SOAK_CHAIN);
      const store = kind.open(path);
      // Appended again under another scope of the same block: what a non-idempotent rerun would leave.
      const dupRows = ERC20_TRANSFERS.expectedRows(chain, 105).slice(0, 1);
      await replaceBlockRows(store, ERC20_TRANSFERS.table, { chain: SOAK_CHAIN, fromBlock: 105, toBlock: 105 }, [...ERC20_TRANSFERS.expectedRows(chain, 105), ...dupRows]);
      await replaceBlockRows(store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 110, toBlock: 110 }, []);
      await replaceBlockRows(store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 111, toBlock: 111 }, [{ ...BLOCK_STATS.expectedRows(chain, 111)[0]!, gas_used: 1 }]);
      await store.close();
      const c = await checkTables(path, ranges(100, 119));
      expect(c).toMatchObject({ missingRows: 2, duplicatedRows: 1, unexpectedRows: 1 });
      expect(checkPassed(c)).toBe(false);
      expect(c.problems).toContain("soak_erc20_transfers block 105: " + `${dupRows.length + ERC20_TRANSFERS.expectedRows(chain, 105).length - 1} rows expected, ${ERC20_TRANSFERS.expectedRows(chain, 105).length + 1} found (0 missing, 1 duplicated, 0 unexpected)`);
      expect(c.problems).toContain("soak_block_stats block 110: 1 rows expected, 0 found (1 missing, 0 duplicated, 0 unexpected)");
    });

    test("every row of the file counts: another table, another chain, a wide scope and a block outside every range are each unexpected", async () => {
      const path = await storeWith([BLOCK_STATS, ERC20_TRANSFERS], 100, 119);
      const chain = new SyntheticChain(SOAK_CHAIN);
      const store = kind.open(path);
      const right = BLOCK_STATS.expectedRows(chain, 130);
      await replaceBlockRows(store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 130, toBlock: 130 }, right); // right values, outside the ranges
      await replaceBlockRows(store, BLOCK_STATS.table, { chain: "base", fromBlock: 105, toBlock: 105 }, BLOCK_STATS.expectedRows(chain, 105)); // another chain
      await replaceBlockRows(store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 140, toBlock: 141 }, right); // a scope of two blocks
      await appendRows(store, "stray_table", [{ x: 1 }]);
      await store.close();
      const c = await checkTables(path, ranges(100, 119));
      expect(c).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 4 });
      expect(checkPassed(c)).toBe(false);
      expect(c.problems).toContain("soak_block_stats block 130: 1 rows outside every checked range");
      expect(c.problems.filter((p) => p.includes("a row outside every checked range (chain base, scope 105..105"))).toHaveLength(1);
      expect(c.problems.filter((p) => p.includes("scope 140..141"))).toHaveLength(1);
      expect(c.problems.filter((p) => p.startsWith("stray_table: a row outside every checked range (chain undefined"))).toHaveLength(1);
    });

    test("a rerun range counts its blocks once; its rows are checked like any other", async () => {
      const path = await storeWith([BLOCK_STATS], 100, 119);
      const c = await checkTables(path, [...ranges(100, 119).slice(0, 1), { table: BLOCK_STATS, fromBlock: 110, toBlock: 119 }]);
      expect(c).toMatchObject({ blocks: 20, expectedRows: 20, foundRows: 20, missingRows: 0, duplicatedRows: 0, unexpectedRows: 0 });
    });

    test("a table never written counts every row as missing", async () => {
      const path = await storeWith([BLOCK_STATS], 1, 5);
      const c = await checkTables(path, ranges(1, 5));
      expect(c.missingRows).toBe(c.expectedRows - 5);
      expect(checkPassed(c)).toBe(false);
    });
  });
}
