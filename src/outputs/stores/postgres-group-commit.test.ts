import { SQL } from "bun";
import { afterEach, describe, expect, test } from "bun:test";
import { freshDatabase } from "../../../test/support/postgres";
import { rawRows } from "../../../test/support/raw-table-reader";
import { PostgresTableStore } from "./postgres-table-store";
import { type TableStoreError, type TableWrite } from "./table-store";

/**
 * Group commit on Postgres (a private server, test/support/preload.ts): calls queued behind the
 * transaction in flight go as one transaction, each in its own savepoint. What must hold, as on
 * SQLite: a call the server refuses fails alone and writes nothing; an error of the group's
 * transaction (its connection lost) fails every call of the group and writes nothing; the calls
 * then land once each.
 */
const stores: PostgresTableStore[] = [];
const clients: SQL[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const c of clients.splice(0)) await c.close();
});

function store(url: string): PostgresTableStore {
  const s = new PostgresTableStore({ url, poolSize: 4, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 500, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" });
  stores.push(s);
  return s;
}

const block = (table: string, n: number, rows: Record<string, unknown>[]): TableWrite => ({ kind: "replaceBlock", table, scope: { chain: "eth", fromBlock: n, toBlock: n }, rows: rows as TableWrite["rows"] });
/** shared: calls that went in another call's transaction (0 when every commit had its own). */
const shared = (s: { commitCounts(): { commits: number; transactions: number } }) => s.commitCounts().commits - s.commitCounts().transactions;
const settle = <T>(ps: Promise<T>[]) => Promise.all(ps.map((p) => p.then((value) => ({ ok: true as const, value }), (error: TableStoreError) => ({ ok: false as const, error }))));
const blocksOf = async (url: string, table: string) => (await rawRows(url, table)).map((r) => Number(r.block)).sort((a, b) => a - b);

describe("Postgres group commit", () => {
  test("calls committed together keep their own outcomes: a misfit and a value the server refuses (a NUL in text) fail alone, the rest commit once", async () => {
    const url = await freshDatabase();
    const s = store(url);
    await s.commit([block("stats", 0, [{ block: 0, note: "first" }])]);
    const results = await settle(
      Array.from({ length: 40 }, (_, i) => {
        const n = i + 1;
        if (n === 10) return s.commit([block("stats", n, [{ block: n, note: { not: "text" } }])]); // ROW_MISMATCH, before the transaction
        if (n === 20) return s.commit([block("stats", n, [{ block: n, note: "a\u0000b" }])]); // the server refuses it inside the group's transaction
        return s.commit([block("stats", n, [{ block: n, note: `block ${n}` }])]);
      }),
    );
    expect(shared(s)).toBeGreaterThanOrEqual(1);
    const failed = results.flatMap((r, i) => (r.ok ? [] : [`${i + 1} ${r.error.code}`]));
    expect(failed).toEqual(["10 ROW_MISMATCH", "20 INTERNAL"]);
    expect(await blocksOf(url, "stats")).toEqual(Array.from({ length: 41 }, (_, i) => i).filter((n) => n !== 10 && n !== 20));
  });

  test("a group whose connection is lost mid-transaction (terminated while it waits for a table's lock) fails every call STORE_UNAVAILABLE and writes nothing; the same calls then land once each", async () => {
    const url = await freshDatabase();
    const s = store(url);
    await s.commit([block("stats", 0, [{ block: 0 }]), block("other", 0, [{ block: 0 }])]);
    // Another host's transaction holds the lock of (stats, eth).
    const other = new SQL(url, { max: 2 }); // one reserved to hold the lock, one to look and terminate
    clients.push(other);
    const holder = await other.reserve();
    await holder.unsafe("BEGIN");
    await holder.unsafe(`SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [JSON.stringify(["stats", "eth"])]);
    // The first commit (another table) goes alone; the 30 behind it go as one group and wait for the lock.
    const first = s.commit([block("other", 1, [{ block: 1 }])]);
    const group = settle(Array.from({ length: 30 }, (_, i) => s.commit([block("stats", i + 1, [{ block: i + 1 }])]))); // handled from now on: it fails while we look
    await first;
    let terminated = 0;
    for (let tries = 0; terminated === 0 && tries < 200; tries++) {
      const rows = (await other.unsafe(`SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE application_name = 'blockx' AND wait_event_type = 'Lock' AND datname = current_database()`)) as { t: boolean }[];
      terminated = rows.filter((r) => r.t).length;
      if (terminated === 0) await Bun.sleep(25);
    }
    if (terminated !== 1) console.log(await other.unsafe(`SELECT pid, application_name, state, wait_event_type, wait_event, left(query, 60) AS q FROM pg_stat_activity WHERE datname = current_database()`));
    expect(terminated).toBe(1);
    const results = await group;
    expect(shared(s)).toBeGreaterThanOrEqual(1);
    expect(results.map((r) => (r.ok ? "ok" : r.error.code))).toEqual(Array(30).fill("STORE_UNAVAILABLE"));
    await holder.unsafe("ROLLBACK");
    holder.release();
    expect(await blocksOf(url, "stats")).toEqual([0]);
    // Retried (the Worker retries STORE_UNAVAILABLE) after the reconnect backoff: each lands once.
    let again: Awaited<ReturnType<typeof settle>> = [];
    for (let tries = 0; tries < 50; tries++) {
      again = await settle(Array.from({ length: 30 }, (_, i) => s.commit([block("stats", i + 1, [{ block: i + 1 }])])));
      if (again.every((r) => r.ok)) break;
      await Bun.sleep(100);
    }
    expect(again.every((r) => r.ok)).toBe(true);
    expect(await blocksOf(url, "stats")).toEqual(Array.from({ length: 31 }, (_, i) => i));
  });
});
