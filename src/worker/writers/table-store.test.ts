import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteTableStore, TableStoreError } from "./table-store";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dbPath(): string {
  const d = mkdtempSync(join(tmpdir(), "blockx-tables-"));
  dirs.push(d);
  return join(d, "tables.sqlite");
}

describe("SqliteTableStore", () => {
  test("a block table is created from the first rows; a retried call replaces its block's rows instead of duplicating them", () => {
    const store = new SqliteTableStore(dbPath());
    const scope = { chain: "eth", fromBlock: 7, toBlock: 7 };
    store.replaceBlockRows("transfers", scope, [
      { tx: "0xa", amount: 5, fee: 0.5, meta: { ok: true } },
      { tx: "0xb", amount: 6, fee: 1, meta: null },
    ]);
    store.replaceBlockRows("transfers", { chain: "eth", fromBlock: 8, toBlock: 8 }, [{ tx: "0xc", amount: 1, fee: 0.1, meta: [1] }]);
    // The same call again (a retry, a duplicate): still exactly its rows.
    store.replaceBlockRows("transfers", scope, [
      { tx: "0xa", amount: 5, fee: 0.5, meta: { ok: true } },
      { tx: "0xb", amount: 6, fee: 1, meta: null },
    ]);
    const rows = store.query("transfers", "ORDER BY tx");
    expect(rows.map((r) => [r.tx, r.amount, r.fee, r.meta, r._scope_from])).toEqual([
      ["0xa", 5, 0.5, { ok: true }, 7],
      ["0xb", 6, 1, null, 7],
      ["0xc", 1, 0.1, [1], 8],
    ]);
    // A call that now returns fewer rows for its block leaves only those.
    store.replaceBlockRows("transfers", scope, [{ tx: "0xz", amount: 9, fee: 0, meta: null }]);
    expect(store.query("transfers", "WHERE _scope_from = 7").map((r) => r.tx)).toEqual(["0xz"]);
    store.close();
  });

  test("a block with no rows written before the table exists is a no-op, not an error (found by the soak: an empty first block failed its task)", () => {
    const store = new SqliteTableStore(dbPath());
    store.replaceBlockRows("transfers", { chain: "eth", fromBlock: 7, toBlock: 7 }, []);
    store.replaceBlockRows("transfers", { chain: "eth", fromBlock: 8, toBlock: 8 }, [{ block: 8, amount: "5" }]);
    store.replaceBlockRows("transfers", { chain: "eth", fromBlock: 9, toBlock: 9 }, []);
    expect(store.query("transfers")).toEqual([{ block: 8, amount: "5", _chain: "eth", _scope_from: 8, _scope_to: 8 }]);
    store.close();
  });

  test("bundles replace exactly their own range", () => {
    const store = new SqliteTableStore(dbPath());
    store.replaceBlockRows("stats", { chain: "eth", fromBlock: 0, toBlock: 9 }, [{ block: 0 }, { block: 9 }]);
    store.replaceBlockRows("stats", { chain: "eth", fromBlock: 10, toBlock: 19 }, [{ block: 10 }]);
    store.replaceBlockRows("stats", { chain: "eth", fromBlock: 0, toBlock: 9 }, [{ block: 1 }]);
    expect(store.query("stats", "ORDER BY block").map((r) => r.block)).toEqual([1, 10]);
  });

  test("normal tables append", () => {
    const store = new SqliteTableStore(dbPath());
    store.appendRows("events", [{ name: "a" }]);
    store.appendRows("events", [{ name: "a" }, { name: "b" }]);
    expect(store.query("events").map((r) => r.name)).toEqual(["a", "a", "b"]);
  });

  test("a row that does not fit the table fails with a clear error and writes nothing", () => {
    const store = new SqliteTableStore(dbPath());
    const scope = { chain: "eth", fromBlock: 1, toBlock: 1 };
    store.replaceBlockRows("t", scope, [{ a: 1, b: "x" }]);
    expect(() => store.replaceBlockRows("t", scope, [{ a: 2, b: "y" }, { a: 3, c: true }])).toThrow(
      'row 1: column "c" is not in table t (columns: a, b)',
    );
    expect(() => store.replaceBlockRows("t", scope, [{ a: "nope", b: "y" }])).toThrow('row 0: column "a" of table t holds INTEGER, got TEXT ("nope")');
    // The failed transactions left the earlier rows as they were.
    expect(store.query("t").map((r) => [r.a, r.b])).toEqual([[1, "x"]]);
    expect(() => store.appendRows("t", [{ a: 1 }])).toThrow("is a block table");
    expect(() => store.appendRows("bad name", [{ a: 1 }])).toThrow(TableStoreError);
    expect(() => store.appendRows("u", [{ _hidden: 1 }])).toThrow("must be an identifier not starting with _");
  });

  test("two connections on one file, as two Worker processes would hold, see each other's tables (WAL)", () => {
    const path = dbPath();
    const a = new SqliteTableStore(path);
    const b = new SqliteTableStore(path);
    a.replaceBlockRows("shared", { chain: "eth", fromBlock: 1, toBlock: 1 }, [{ v: 1 }]);
    b.replaceBlockRows("shared", { chain: "eth", fromBlock: 2, toBlock: 2 }, [{ v: 2 }]);
    expect(a.query("shared", "ORDER BY v").map((r) => r.v)).toEqual([1, 2]);
    a.close();
    b.close();
  });
});
