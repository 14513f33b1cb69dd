import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshDatabase } from "../../../test/support/postgres";
import { rawRows } from "../../../test/support/raw-table-reader";
import { exactInt, integerDigits, isExactInt, parseExactJson } from "../json/exact-json";
import { PostgresTableStore, postgresStoreError } from "./postgres-table-store";
import { SqliteTableStore } from "./sqlite-table-store";
import { appendRows, replaceBlockRows, type TableStore, TableStoreError } from "./table-store";

/**
 * One contract, three stores: SQLite on its own thread (the Worker's), SQLite inline (`blockx
 * table`), and Postgres (a private server started by test/support/preload.ts, a fresh database per
 * test). A store is opened twice on one location, as two Worker processes (or hosts) would.
 */
const dirs: string[] = [];
const open: TableStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  for (const s of open.splice(0)) await s.close();
});

interface Kind {
  readonly name: string;
  /** A new empty location (a file path or a database URL). */
  location(): Promise<string>;
  open(location: string): TableStore;
}

export function pgOptions(url: string) {
  return { url, poolSize: 4, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, tls: "", tlsCaFile: "" };
}

const sqliteFile = async () => {
  const d = mkdtempSync(join(tmpdir(), "blockx-tables-"));
  dirs.push(d);
  return join(d, "tables.sqlite");
};

const KINDS: Kind[] = [
  { name: "SQLite (own thread)", location: sqliteFile, open: (p) => new SqliteTableStore(p) },
  { name: "SQLite (inline)", location: sqliteFile, open: (p) => new SqliteTableStore(p, { inline: true }) },
  { name: "Postgres", location: freshDatabase, open: (url) => new PostgresTableStore(pgOptions(url)) },
];

const BIG = (2n ** 255n + 1n).toString();
const NEG = (-(2n ** 63n) - 1n).toString();
/** failure: the error a promise rejects with (bun test's `rejects` hangs on one rejected from a Worker thread's message). */
async function failure(p: Promise<unknown>): Promise<TableStoreError> {
  return p.then(
    () => {
      throw new Error("expected a failure");
    },
    (e: TableStoreError) => e,
  );
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

for (const kind of KINDS) describe(`table store contract: ${kind.name}`, () => {
  const store = (loc: string) => {
    const s = kind.open(loc);
    open.push(s);
    return s;
  };
  /** The table as plain SQL sees it (not through the store under test). */
  const raw = (loc: string, table: string) => rawRows(loc, table);

  test("a block table is created from the first rows; a retried call replaces its block's rows instead of duplicating them", async () => {
    const s = store(await kind.location());
    const scope = { chain: "eth", fromBlock: 7, toBlock: 7 };
    const rows = [
      { tx: "0xa", amount: 5, fee: 0.5, meta: { ok: true } },
      { tx: "0xb", amount: 6, fee: 1, meta: null },
    ];
    await replaceBlockRows(s, "transfers", scope, rows);
    await replaceBlockRows(s, "transfers", { chain: "eth", fromBlock: 8, toBlock: 8 }, [{ tx: "0xc", amount: 1, fee: 0.1, meta: [1] }]);
    await replaceBlockRows(s, "transfers", scope, rows); // the same call again (a retry, a duplicate)
    const got = await s.read("transfers", { orderBy: "tx" });
    expect(got.map((r) => [r.tx, r.amount, r.fee, r.meta, r._scope_from])).toEqual([
      ["0xa", 5, 0.5, { ok: true }, 7],
      ["0xb", 6, 1, null, 7],
      ["0xc", 1, 0.1, [1], 8],
    ]);
    // A call that now returns fewer rows for its block leaves only those.
    await replaceBlockRows(s, "transfers", scope, [{ tx: "0xz", amount: 9, fee: 0, meta: null }]);
    expect((await s.read("transfers")).filter((r) => r._scope_from === 7).map((r) => r.tx)).toEqual(["0xz"]);
    expect(await s.read("transfers", { orderBy: "tx", limit: 1 })).toHaveLength(1);
  });

  test("a block with no rows written before the table exists is a no-op, not an error", async () => {
    const s = store(await kind.location());
    await replaceBlockRows(s, "transfers", { chain: "eth", fromBlock: 7, toBlock: 7 }, []);
    await replaceBlockRows(s, "transfers", { chain: "eth", fromBlock: 8, toBlock: 8 }, [{ block: 8, amount: "5" }]);
    await replaceBlockRows(s, "transfers", { chain: "eth", fromBlock: 9, toBlock: 9 }, []);
    expect(await s.read("transfers")).toEqual([{ block: 8, amount: "5", _chain: "eth", _scope_from: 8, _scope_to: 8 }]);
  });

  test("a rerun with another start or bundle size replaces every overlapping scope: one row per block, never two", async () => {
    const loc = await kind.location();
    const s = store(loc);
    const bundles = async (from: number, to: number, size: number) => {
      for (let f = from; f <= to; f += size) {
        const t = Math.min(to, f + size - 1);
        await replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: f, toBlock: t }, range(f, t).map((block) => ({ block })));
      }
    };
    const blocks = async () => (await raw(loc, "per_block")).map((r) => Number(r.block)).sort((a, b) => a - b);
    await bundles(500, 574, 10);
    await bundles(505, 574, 10); // another start: 500..509 overlaps 505..514, so its rows go whole
    expect(await blocks()).toEqual(range(505, 574));
    await bundles(500, 574, 15); // another bundle size
    expect(await blocks()).toEqual(range(500, 574));
    const out = await replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: 517, toBlock: 521 }, range(517, 521).map((block) => ({ block })));
    expect(out).toEqual({ replacedScopes: 1, uncovered: [{ chain: "eth", fromBlock: 515, toBlock: 529 }] });
    expect(await blocks()).toEqual([...range(500, 514), ...range(517, 521), ...range(530, 574)]);
    // Another chain's rows in the same range are not touched.
    await replaceBlockRows(s, "per_block", { chain: "base", fromBlock: 0, toBlock: 1000 }, [{ block: -1 }]);
    await bundles(500, 574, 10);
    expect(await blocks()).toEqual([-1, ...range(500, 574)]);
    expect((await failure(replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: 9, toBlock: 8 }, []))).message).toContain("block scope 9..8 is not a range of block numbers");
  });

  test("overlap replacement matches a model written from the rule (400 random scopes, widths 1..40, two connections)", async () => {
    const loc = await kind.location();
    const stores = [store(loc), store(loc)];
    let model: { from: number; to: number; id: number }[] = [];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let id = 1; id <= 400; id++) {
      const from = rand(300);
      const to = from + rand(rand(4) === 0 ? 40 : 3);
      await replaceBlockRows(stores[id % 2]!, "m", { chain: "eth", fromBlock: from, toBlock: to }, [{ id }, { id: -id }]);
      model = model.filter((x) => x.to < from || x.from > to).concat({ from, to, id });
      if (id % 20 === 0 || id < 20) {
        const want = model.flatMap((x) => [x.id, -x.id]).sort((a, b) => a - b);
        expect((await raw(loc, "m")).map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(want);
      }
    }
  });

  test("two stores replacing overlapping scopes at once (as two hosts would) leave one call's rows, never both", async () => {
    const loc = await kind.location();
    const [a, b] = [store(loc), store(loc)];
    await replaceBlockRows(a, "race", { chain: "eth", fromBlock: 0, toBlock: 0 }, [{ by: "setup", n: 0 }]);
    for (let round = 1; round <= 20; round++) {
      await Promise.all([
        replaceBlockRows(a, "race", { chain: "eth", fromBlock: 100, toBlock: 109 }, range(100, 109).map((n) => ({ by: "a", n }))),
        replaceBlockRows(b, "race", { chain: "eth", fromBlock: 105, toBlock: 114 }, range(105, 114).map((n) => ({ by: "b", n }))),
      ]);
      const owners = new Set((await raw(loc, "race")).filter((r) => r.by !== "setup").map((r) => r.by));
      expect(owners.size).toBe(1);
    }
  });

  test("all tables written by one call commit in one transaction: a misfit in the second table writes nothing of the first", async () => {
    const loc = await kind.location();
    const s = store(loc);
    await s.commit([
      { kind: "replaceBlock", table: "one", scope: { chain: "eth", fromBlock: 1, toBlock: 1 }, rows: [{ v: 1 }] },
      { kind: "append", table: "two", rows: [{ w: "x" }] },
    ]);
    expect((await failure(
      s.commit([
        { kind: "replaceBlock", table: "one", scope: { chain: "eth", fromBlock: 1, toBlock: 1 }, rows: [{ v: 2 }] },
        { kind: "append", table: "two", rows: [{ w: 5 }] },
      ]),
    )).message).toContain('column "w" of table two holds TEXT, got INTEGER');
    expect((await s.read("one")).map((r) => r.v)).toEqual([1]);
    expect((await s.read("two")).map((r) => r.w)).toEqual(["x"]);
  });

  test("integers beyond 2^53 are exact: 2^255+1 and -(2^63)-1 go in and come back digit for digit, in cells and inside JSON", async () => {
    const loc = await kind.location();
    const s = store(loc);
    const row = parseExactJson(`{"amount": ${BIG}, "small": 3, "doc": {"v": ${NEG}, "l": [${BIG}]}}`) as Record<string, never>;
    await replaceBlockRows(s, "wei", { chain: "eth", fromBlock: 1, toBlock: 1 }, [row, { amount: exactInt(NEG), small: 4, doc: null }, { amount: 12, small: 5, doc: null }]);
    const got = await s.read("wei", { orderBy: "small" });
    expect(isExactInt(got[0]!.amount)).toBe(true);
    expect(integerDigits(got[0]!.amount as never)).toBe(BIG);
    expect(integerDigits(got[1]!.amount as never)).toBe(NEG);
    expect(got[2]!.amount).toBe(12);
    expect(JSON.stringify(got.map((r) => r.amount))).toBe(`[${BIG},${NEG},12]`);
    const doc = got[0]!.doc as { v: unknown; l: unknown[] };
    expect([integerDigits(doc.v as never), integerDigits(doc.l[0] as never)]).toEqual([NEG, BIG]);
    // Plain SQL sees the digits too.
    expect((await raw(loc, "wei")).map((r) => String(r.amount)).sort()).toEqual([NEG, "12", BIG].sort());
    // 79 digits do not fit NUMERIC(78,0): refused before anything is written.
    expect((await failure(appendRows(s, "wei_n", [{ a: exactInt("1" + "0".repeat(78)) }]))).message).toContain("at most 78 digits, got 79 digits");
    // A REAL column does not take an integer it would round.
    await appendRows(s, "reals", [{ r: 0.5 }]);
    expect((await failure(appendRows(s, "reals", [{ r: exactInt(BIG) }]))).message).toContain('column "r" of table reals holds REAL, got INTEGER');
  });

  test("normal tables append", async () => {
    const s = store(await kind.location());
    await appendRows(s, "events", [{ name: "a" }]);
    await appendRows(s, "events", [{ name: "a" }, { name: "b" }]);
    expect((await s.read("events")).map((r) => r.name).sort()).toEqual(["a", "a", "b"]);
  });

  test("a row that does not fit the table fails with ROW_MISMATCH naming table, column and kinds, and writes nothing", async () => {
    const s = store(await kind.location());
    const scope = { chain: "eth", fromBlock: 1, toBlock: 1 };
    await replaceBlockRows(s, "t", scope, [{ a: 1, b: "x" }]);
    const err = async (p: Promise<unknown>) => p.then(() => undefined, (e: TableStoreError) => [e.code, e.message]);
    expect(await err(replaceBlockRows(s, "t", scope, [{ a: 2, b: "y" }, { a: 3, c: true }]))).toEqual(["ROW_MISMATCH", 'row 1: column "c" is not in table t (columns: a, b)']);
    expect(await err(replaceBlockRows(s, "t", scope, [{ a: "nope", b: "y" }]))).toEqual(["ROW_MISMATCH", 'row 0: column "a" of table t holds INTEGER, got TEXT ("nope")']);
    expect((await s.read("t")).map((r) => [r.a, r.b])).toEqual([[1, "x"]]);
    expect((await failure(appendRows(s, "t", [{ a: 1 }]))).message).toContain("is a block table");
    expect((await err(appendRows(s, "u", [{ _hidden: 1 }])))?.[0]).toBe("ROW_MISMATCH");
  });

  test("names that cannot be abused: _blockx*, sqlite_*, pg_* and non-identifiers are INVALID_ARGUMENT; the store's metadata is not writable through a user table", async () => {
    const s = store(await kind.location());
    for (const name of ["_blockx_tables", "_BLOCKX_scope_spans", "sqlite_master", "SQLite_x", "pg_class", "pg_stat", "bad name", 'x"; DROP TABLE y; --']) {
      const e = await appendRows(s, name, [{ a: 1 }]).then(() => undefined, (x: TableStoreError) => x);
      expect([name, e?.code]).toEqual([name, "INVALID_ARGUMENT"]);
      const r = await s.read(name).then(() => undefined, (x: TableStoreError) => x);
      expect([name, r?.code]).toEqual([name, "INVALID_ARGUMENT"]);
    }
    expect((await failure(s.read("t", { orderBy: 'a" DESC; --' }))).message).toContain("not a column name");
    expect((await failure(s.read("never_written"))).message).toContain('no table "never_written"');
    await appendRows(s, "t", [{ a: 1 }]);
    expect((await failure(s.read("t", { orderBy: "b" }))).message).toContain("table t has no column \"b\" to order by (columns: a)");
  });

  test("metadata that someone edited into nonsense is refused when read (CORRUPT_METADATA), not trusted", async () => {
    const loc = await kind.location();
    const s = store(loc);
    await appendRows(s, "good", [{ a: 1 }]);
    await appendRows(s, "bad", [{ a: 1 }]);
    // Edit the metadata behind the store's back, with plain SQL.
    const edit = `UPDATE _blockx_tables SET kinds = '{"a":"INTEGER); DROP TABLE good; --"}' WHERE name = 'bad'`;
    if (loc.startsWith("postgres")) {
      const { SQL } = await import("bun");
      const sql = new SQL(loc, { max: 1 });
      await sql.unsafe(edit);
      await sql.close();
    } else {
      const { Database } = await import("bun:sqlite");
      const db = new Database(loc);
      db.exec(edit);
      db.close();
    }
    const fresh = store(loc); // no cached metadata
    const e = await appendRows(fresh, "bad", [{ a: 2 }]).then(() => undefined, (x: TableStoreError) => x);
    expect(e?.code).toBe("CORRUPT_METADATA");
    expect((await fresh.read("good")).map((r) => r.a)).toEqual([1]);
  });
});

describe("Postgres: a Worker frozen inside a write transaction", () => {
  test("the server ends its session after the idle-in-transaction timeout, so another host's write to that table waits for it, then lands (not a STORE_UNAVAILABLE at the statement timeout)", async () => {
    const url = await freshDatabase();
    const frozen = new PostgresTableStore({ ...pgOptions(url), idleInTransactionTimeoutMs: 1_000, statementTimeoutMs: 8_000 });
    const other = new PostgresTableStore({ ...pgOptions(url), idleInTransactionTimeoutMs: 1_000, statementTimeoutMs: 8_000 });
    open.push(frozen, other);
    await replaceBlockRows(frozen, "held", { chain: "eth", fromBlock: 1, toBlock: 1 }, [{ n: 1 }]);
    // The frozen store's own pool, with its own session settings, takes the lock a replacement of
    // (held, eth) takes and then does nothing: what a Worker stopped between two statements of its
    // transaction looks like to the server.
    const sql = (frozen as unknown as { sql: import("bun").SQL }).sql;
    let lockTaken!: () => void;
    const locked = new Promise<void>((r) => (lockTaken = r));
    const held = sql
      .begin(async (tx) => {
        await tx.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["held", "eth"])]);
        lockTaken();
        await new Promise(() => {});
      })
      .then(
        () => ({ committed: true as const }),
        (e: unknown) => ({ committed: false as const, error: e }),
      );
    await locked;
    const started = performance.now();
    await replaceBlockRows(other, "held", { chain: "eth", fromBlock: 1, toBlock: 2 }, [{ n: 1 }, { n: 2 }]);
    const waitedMs = performance.now() - started;
    // It did wait for the frozen session (the lock was real), and the server freed it long before
    // the 8 s statement timeout would have failed the write.
    expect(waitedMs).toBeGreaterThanOrEqual(500);
    expect((await rawRows(url, "held")).map((r) => Number(r.n)).sort()).toEqual([1, 2]);
    // The frozen session was ended: what its Worker sees on thawing is a retryable STORE_UNAVAILABLE
    // (the transaction was rolled back), not an INTERNAL failure of the call; and its store writes again.
    const ended = await held;
    expect(ended.committed).toBe(false);
    const seen = postgresStoreError(!ended.committed && ended.error, frozen.description);
    expect(seen.code).toBe("STORE_UNAVAILABLE");
    await replaceBlockRows(frozen, "held", { chain: "eth", fromBlock: 3, toBlock: 3 }, [{ n: 3 }]);
    expect((await rawRows(url, "held")).map((r) => Number(r.n)).sort()).toEqual([1, 2, 3]);
  }, 30_000);
});
