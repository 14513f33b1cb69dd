/**
 * A block table written before rows recorded their block's hash (no `_block_hash` column) keeps
 * working: the store adds the column when it first opens the table, old rows read null, new ones
 * their hash. SQLite and Postgres (a Parquet file without the column reads null: parquet-codec.ts).
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshDatabase } from "../../../test/support/postgres";
import { PostgresTableStore } from "./postgres-table-store";
import { SqliteTableStore } from "./sqlite-table-store";
import { replaceBlockRows, type TableStore } from "./table-store";

const pgOptions = (url: string) => ({ url, poolSize: 2, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" });

const dir = mkdtempSync(join(tmpdir(), "blockx-hash-col-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const HASH = "0x" + "d".repeat(64);

async function oldTableThenNewRows(open: () => TableStore, dropColumn: () => Promise<void>): Promise<string[]> {
  const before = open();
  await replaceBlockRows(before, "old", { chain: "eth", fromBlock: 1, toBlock: 1 }, [{ n: 1 }]);
  await before.close();
  await dropColumn(); // as a table written by the previous release looks
  const after = open();
  await replaceBlockRows(after, "old", { chain: "eth", fromBlock: 2, toBlock: 2, blockHash: HASH }, [{ n: 2 }]);
  const rows = (await after.read("old", { orderBy: "n" })).map((r) => `${r.n}:${r._block_hash}`);
  await after.close();
  return rows;
}

test("SQLite: a block table without _block_hash gets it; old rows read null", async () => {
  const path = join(dir, "t.sqlite");
  const rows = await oldTableThenNewRows(
    () => new SqliteTableStore(path, { inline: true }),
    async () => {
      const db = new Database(path);
      db.exec(`ALTER TABLE "old" DROP COLUMN _block_hash`);
      db.close();
    },
  );
  expect(rows).toEqual(["1:null", `2:${HASH}`]);
});

test("Postgres: a block table without _block_hash gets it; old rows read null", async () => {
  const url = await freshDatabase();
  const rows = await oldTableThenNewRows(
    () => new PostgresTableStore(pgOptions(url)),
    async () => {
      const sql = new SQL(url);
      await sql.unsafe(`ALTER TABLE "old" DROP COLUMN _block_hash`);
      await sql.close();
    },
  );
  expect(rows).toEqual(["1:null", `2:${HASH}`]);
});
