import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRows } from "../../../test/support/raw-table-reader";
import { SqliteTableStore, sqliteStoreError } from "./sqlite-table-store";
import { SqliteTables } from "./sqlite-tables";
import { type ReplaceOutcome, type TableStoreError, type TableWrite } from "./table-store";

/**
 * Group commit (SqliteTableStore on its thread): commits queued behind one on the thread go as one
 * transaction, each call in its own savepoint. What must hold: every call's outcome is its own (a
 * call that fails writes nothing and fails no other), a failure of the group's transaction fails
 * every call in it and writes nothing, and nothing resolves before its rows are committed.
 */
const dirs: string[] = [];
const stores: SqliteTableStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function freshStore(options: { busyTimeoutMs?: number } = {}): { path: string; store: SqliteTableStore } {
  const d = mkdtempSync(join(tmpdir(), "blockx-group-commit-"));
  dirs.push(d);
  const path = join(d, "tables.sqlite");
  const store = new SqliteTableStore(path, options);
  stores.push(store);
  return { path, store };
}

const block = (table: string, n: number, rows: Record<string, unknown>[]): TableWrite => ({ kind: "replaceBlock", table, scope: { chain: "eth", fromBlock: n, toBlock: n }, rows: rows as TableWrite["rows"] });

/** shared: calls that went in another call's transaction (0 when every commit had its own). */
const shared = (s: { commitCounts(): { commits: number; transactions: number } }) => s.commitCounts().commits - s.commitCounts().transactions;
/** settle: each promise's value or error, in order (never rejects). */
const settle = <T>(ps: Promise<T>[]) => Promise.all(ps.map((p) => p.then((value) => ({ ok: true as const, value }), (error: TableStoreError) => ({ ok: false as const, error }))));

describe("SQLite group commit", () => {
  test("calls committed together keep their own outcomes: misfit, reserved-name and corrupt-metadata calls fail alone and write nothing, the rest commit once", async () => {
    const { path, store } = freshStore();
    // The tables exist first, with their kinds; block 5 of `stats` already has a row (replaced below).
    await store.commit([block("stats", 5, [{ block: 5, gas: 1 }]), block("marks", 0, [{ block: 0 }])]);
    // `marks`' scope span edited into nonsense: a call writing it fails CORRUPT_METADATA *inside* the group's transaction.
    const db = new Database(path);
    db.exec("PRAGMA busy_timeout = 5000");
    const spans = () => db.query(`SELECT max_span FROM _blockx_scope_spans WHERE name = 'marks'`).get();
    const blocks = Array.from({ length: 60 }, (_, i) => i);
    const commits = blocks.map((n) => {
      if (n === 10) return store.commit([block("stats", n, [{ block: n, gas: "not an integer" }])]); // ROW_MISMATCH (bound before the transaction)
      if (n === 20) return store.commit([block("_blockx_tables", n, [{ block: n }])]); // INVALID_ARGUMENT
      if (n === 30) return store.commit([block("stats", n, [{ block: n, gas: n }]), block("marks", n, [{ block: n }])]); // its first table's rows must go too
      return store.commit([block("stats", n, [{ block: n, gas: n }])]);
    });
    db.query(`UPDATE _blockx_scope_spans SET max_span = -7 WHERE name = 'marks'`).run(); // before the thread gets to the group
    const results = await settle(commits);
    db.query(`UPDATE _blockx_scope_spans SET max_span = 0 WHERE name = 'marks'`).run();
    expect(spans()).toEqual({ max_span: 0 });
    db.close();

    // The test is about groups: they formed, at least 29 calls riding in another's transaction.
    expect(shared(store)).toBeGreaterThanOrEqual(29);
    const failed = Object.fromEntries(results.flatMap((r, n) => (r.ok ? [] : [[n, r.error.code]])));
    expect(failed).toEqual({ 10: "ROW_MISMATCH", 20: "INVALID_ARGUMENT", 30: "CORRUPT_METADATA" });
    expect((results[5] as { value: ReplaceOutcome[] }).value).toEqual([{ replacedScopes: 1 }]);
    expect((results[6] as { value: ReplaceOutcome[] }).value).toEqual([{ replacedScopes: 0 }]);
    const stats = (await rawRows(path, "stats")).map((r) => Number(r.block)).sort((a, b) => a - b);
    expect(stats).toEqual(blocks.filter((n) => n !== 10 && n !== 20 && n !== 30));
    expect((await rawRows(path, "marks")).map((r) => Number(r.block))).toEqual([0]);
  });

  test("a group whose transaction cannot be had (the file locked past the busy timeout) fails every call in it STORE_UNAVAILABLE and writes nothing; later commits land", async () => {
    const { path, store } = freshStore({ busyTimeoutMs: 300 });
    await store.commit([block("stats", 0, [{ block: 0, gas: 0 }])]);
    const other = new Database(path);
    other.exec("PRAGMA busy_timeout = 0");
    other.exec("BEGIN IMMEDIATE"); // another process's write transaction holds the lock
    const results = await settle(Array.from({ length: 20 }, (_, i) => store.commit([block("stats", i + 1, [{ block: i + 1, gas: i }])])));
    other.exec("ROLLBACK");
    other.close();
    expect(shared(store)).toBeGreaterThanOrEqual(1);
    expect(results.map((r) => (r.ok ? "ok" : r.error.code))).toEqual(Array(20).fill("STORE_UNAVAILABLE"));
    expect((await rawRows(path, "stats")).map((r) => Number(r.block))).toEqual([0]);
    // Unlocked: the same writes (the Worker retries STORE_UNAVAILABLE) land, each once.
    const again = await settle(Array.from({ length: 20 }, (_, i) => store.commit([block("stats", i + 1, [{ block: i + 1, gas: i }])])));
    expect(again.every((r) => r.ok)).toBe(true);
    expect((await rawRows(path, "stats")).map((r) => Number(r.block)).sort((a, b) => a - b)).toEqual(Array.from({ length: 21 }, (_, i) => i));
  });

  test("a statement the database refuses for one call's data (a trigger's abort) fails that call alone, INTERNAL naming the refusal; the rest of its group commits", async () => {
    const { path, store } = freshStore();
    await store.commit([block("stats", 0, [{ block: 0, gas: 0 }])]);
    const db = new Database(path);
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec(`CREATE TRIGGER refuse_block_20 BEFORE INSERT ON stats WHEN NEW.block = 20 BEGIN SELECT RAISE(ABORT, 'block 20 refused'); END`);
    const results = await settle(Array.from({ length: 40 }, (_, i) => store.commit([block("stats", i + 1, [{ block: i + 1, gas: i }])])));
    db.exec("DROP TRIGGER refuse_block_20");
    db.close();
    expect(shared(store)).toBeGreaterThanOrEqual(1);
    const failed = results.flatMap((r, i) => (r.ok ? [] : [`${i + 1} ${r.error.code} ${r.error.message.includes("block 20 refused")}`]));
    expect(failed).toEqual(["20 INTERNAL true"]);
    expect((await rawRows(path, "stats")).map((r) => Number(r.block)).sort((a, b) => a - b)).toEqual(Array.from({ length: 41 }, (_, i) => i).filter((n) => n !== 20));
  });

  test("an error that means the store is not available (the disk failing mid-group) fails every call of the group and writes nothing of it", () => {
    const d = mkdtempSync(join(tmpdir(), "blockx-group-commit-"));
    dirs.push(d);
    const path = join(d, "tables.sqlite");
    const tables = new SqliteTables(path);
    tables.commit([block("stats", 0, [{ block: 0, gas: 0 }])]);
    // The engine's own insert, failing at block 20 as SQLite reports a disk error (its code, SQLITE_IOERR_WRITE).
    const engine = tables as unknown as { insert: (table: string, info: unknown, rows: unknown[][], scope: unknown[]) => void };
    const insert = engine.insert.bind(tables);
    engine.insert = (table, info, rows, scope) => {
      if (scope[1] === 20) throw Object.assign(new Error("disk I/O error"), { code: "SQLITE_IOERR_WRITE" });
      insert(table, info, rows, scope);
    };
    const groups = Array.from({ length: 40 }, (_, i) => ({ writes: [block("stats", i + 1, [{ block: i + 1, gas: i }])], fence: null }));
    expect(() => tables.commitGroup(groups, (e) => sqliteStoreError(e, "test"))).toThrow("disk I/O error");
    engine.insert = insert;
    expect(tables.read("stats").map((r) => Number(r.block))).toEqual([0]);
    // The same group again, the disk well: all of it, once.
    expect(tables.commitGroup(groups, (e) => sqliteStoreError(e, "test")).every((r) => r.ok)).toBe(true);
    expect(tables.read("stats").map((r) => Number(r.block)).sort((a, b) => a - b)).toEqual(Array.from({ length: 41 }, (_, i) => i));
    tables.close();
  });

  test("a commit resolves only once its rows are in the file (read by another connection at that moment)", async () => {
    const { path, store } = freshStore();
    await store.commit([block("stats", 0, [{ block: 0, gas: 0 }])]);
    const reader = new Database(path, { readonly: true });
    const seen: boolean[] = [];
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.commit([block("stats", i + 1, [{ block: i + 1, gas: i }])]).then(() => {
          seen.push((reader.query(`SELECT COUNT(*) AS n FROM stats WHERE block = ?`).get(i + 1) as { n: number }).n === 1);
        }),
      ),
    );
    reader.close();
    expect(shared(store)).toBeGreaterThanOrEqual(1);
    expect(seen).toEqual(Array(100).fill(true));
  });
});
