import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
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

/** rawRows reads a table with plain SQL, not through the store under test, in insertion order. */
function rawRows(path: string, table: string): Record<string, unknown>[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.query(`SELECT * FROM "${table}" ORDER BY rowid`).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
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

  test("a rerun with another start or bundle size replaces every overlapping scope: one row per block, never two (issue: 145 rows for 75 blocks)", () => {
    const path = dbPath();
    const store = new SqliteTableStore(path);
    const bundles = (from: number, to: number, size: number) => {
      for (let f = from; f <= to; f += size) {
        const t = Math.min(to, f + size - 1);
        store.replaceBlockRows("per_block", { chain: "eth", fromBlock: f, toBlock: t }, Array.from({ length: t - f + 1 }, (_, i) => ({ block: f + i })));
      }
    };
    const blocks = () => rawRows(path, "per_block").map((r) => r.block as number).sort((a, b) => a - b);
    const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
    bundles(500, 574, 10);
    bundles(505, 574, 10); // another start: 500..509 overlaps 505..514, so its rows go whole
    expect(blocks()).toEqual(range(505, 574));
    bundles(500, 574, 15); // another bundle size
    expect(blocks()).toEqual(range(500, 574));
    // Part of one earlier bundle (515..529): that bundle's other blocks lose their rows, and the
    // write says which scopes reached past it.
    const out = store.replaceBlockRows("per_block", { chain: "eth", fromBlock: 517, toBlock: 521 }, range(517, 521).map((block) => ({ block })));
    expect(out).toEqual({ replacedScopes: 1, uncovered: [{ chain: "eth", fromBlock: 515, toBlock: 529 }] });
    expect(blocks()).toEqual([...range(500, 514), ...range(517, 521), ...range(530, 574)]);
    // Another chain's rows in the same range are not touched.
    store.replaceBlockRows("per_block", { chain: "base", fromBlock: 0, toBlock: 1000 }, [{ block: -1 }]);
    bundles(500, 574, 10);
    expect(blocks()).toEqual([-1, ...range(500, 574)]);
    expect(() => store.replaceBlockRows("per_block", { chain: "eth", fromBlock: 9, toBlock: 8 }, [])).toThrow("block scope 9..8 is not a range of block numbers");
    store.close();
  });

  test("overlap replacement matches a model written from the rule (random scopes, widths 1..40, two connections)", () => {
    const path = dbPath();
    const stores = [new SqliteTableStore(path), new SqliteTableStore(path)];
    // The model: a list of written scopes; a write drops every scope with a block in common.
    let model: { from: number; to: number; id: number }[] = [];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let id = 1; id <= 400; id++) {
      const from = rand(300);
      const to = from + rand(rand(4) === 0 ? 40 : 3);
      stores[id % 2]!.replaceBlockRows("m", { chain: "eth", fromBlock: from, toBlock: to }, [{ id }, { id: -id }]);
      model = model.filter((s) => s.to < from || s.from > to).concat({ from, to, id });
      const want = model.flatMap((s) => [s.id, -s.id]).sort((a, b) => a - b);
      expect(rawRows(path, "m").map((r) => r.id as number).sort((a, b) => a - b)).toEqual(want);
    }
    for (const s of stores) s.close();
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
