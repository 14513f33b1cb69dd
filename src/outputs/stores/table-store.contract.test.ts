import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshDatabase } from "../../../test/support/postgres";
import { rawRows } from "../../../test/support/raw-table-reader";
import { exactInt, integerDigits, isExactInt, parseExactJson } from "../../common/json/exact-json";
import { PostgresTableStore, postgresStoreError } from "./postgres-table-store";
import { canonicalRow, catalogTables, duckRows } from "../../../test/support/parquet-dataset-reader";
import { ParquetTableStore } from "./parquet-table-store";
import { SqliteTableStore } from "./sqlite-table-store";
import { parquetRootOf } from "./parquet-layout";
import { appendRows, replaceBlockRows, type TableStore, TableStoreError } from "./table-store";
import type { RunClaim, RunFence } from "./run-fence";

/**
 * One contract, three stores: SQLite on its own thread (the Worker's), SQLite inline (`blockx
 * table`), and Postgres (a private server started by test/support/preload.ts, a fresh database per
 * test). A store is opened twice on one location, as two Worker processes (or hosts) would.
 */
const dirs: string[] = [];
const open: TableStore[] = [];
/** Parquet datasets a test wrote: after it, DuckDB must read what the store reads. */
const datasets: string[] = [];
afterEach(async () => {
  for (const url of datasets.splice(0)) await expectReadersAgree(url);
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
  return { url, poolSize: 4, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" };
}

const sqliteFile = async () => {
  const d = mkdtempSync(join(tmpdir(), "blockx-tables-"));
  dirs.push(d);
  return join(d, "tables.sqlite");
};

const parquetDataset = async () => {
  const d = mkdtempSync(join(tmpdir(), "blockx-parquet-"));
  dirs.push(d);
  const url = `parquet://${join(d, "dataset")}`;
  datasets.push(url);
  return url;
};

/**
 * expectReadersAgree: DuckDB, listing and reading the dataset by glob as any engine would, sees
 * exactly the rows the store's own reader gives, table by table; every block scope lies in one
 * file, and no two files' scopes of a chain overlap (no scope twice, no removed scope's file).
 */
async function expectReadersAgree(url: string): Promise<void> {
  const reader = new ParquetTableStore(parquetRootOf(url), { inline: true });
  try {
    for (const t of catalogTables(url)) {
      if (!t.kinds) continue; // metadata a test corrupted on purpose
      const mine = (await reader.read(t.name)).map((r) => canonicalRow(t.kinds!, t.block, r)).sort();
      const duck = (await duckRows(url, t.name)).map((r) => canonicalRow(t.kinds!, t.block, r)).sort();
      expect([t.name, duck]).toEqual([t.name, mine]);
      if (!t.block) continue;
      const files = await duckRows(url, t.name, "GROUP BY ALL ORDER BY 2, 3", "DISTINCT filename, _chain, _scope_from, _scope_to");
      const scopes = files.map((f) => `${f._chain}:${f._scope_from}-${f._scope_to}`);
      expect([t.name, scopes.length]).toEqual([t.name, new Set(scopes).size]);
      for (let i = 1; i < files.length; i++) {
        const [a, b] = [files[i - 1]!, files[i]!];
        if (a._chain === b._chain) expect([t.name, Number(b._scope_from) > Number(a._scope_to)]).toEqual([t.name, true]);
      }
    }
  } finally {
    await reader.close();
  }
}

const KINDS: Kind[] = [
  { name: "SQLite (own thread)", location: sqliteFile, open: (p) => new SqliteTableStore(p) },
  { name: "SQLite (inline)", location: sqliteFile, open: (p) => new SqliteTableStore(p, { inline: true }) },
  { name: "Postgres", location: freshDatabase, open: (url) => new PostgresTableStore(pgOptions(url)) },
  { name: "Parquet (own thread)", location: parquetDataset, open: (url) => new ParquetTableStore(parquetRootOf(url)) },
  { name: "Parquet (inline)", location: parquetDataset, open: (url) => new ParquetTableStore(parquetRootOf(url), { inline: true }) },
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
    expect(await s.read("transfers")).toEqual([{ block: 8, amount: "5", _chain: "eth", _scope_from: 8, _scope_to: 8, _block_hash: null }]);
  });

  test("every row of a block table records the hash of its scope's last block (_block_hash); a rerun's rows record the new one; a malformed hash is INVALID_ARGUMENT", async () => {
    const s = store(await kind.location());
    const h = (c: string) => "0x" + c.repeat(64);
    await replaceBlockRows(s, "hashed", { chain: "eth", fromBlock: 1, toBlock: 2, blockHash: h("a") }, [{ n: 1 }, { n: 2 }]);
    await replaceBlockRows(s, "hashed", { chain: "eth", fromBlock: 3, toBlock: 3, blockHash: h("b") }, [{ n: 3 }]);
    const hashes = async () => (await s.read("hashed", { orderBy: "n" })).map((r) => `${r.n}:${r._block_hash}`);
    expect(await hashes()).toEqual([`1:${h("a")}`, `2:${h("a")}`, `3:${h("b")}`]);
    // After a reorganisation block 3 is another block: its rows are replaced and record its hash.
    await replaceBlockRows(s, "hashed", { chain: "eth", fromBlock: 3, toBlock: 3, blockHash: h("c") }, [{ n: 3 }]);
    expect(await hashes()).toEqual([`1:${h("a")}`, `2:${h("a")}`, `3:${h("c")}`]);
    expect((await s.read("hashed", { orderBy: "_block_hash" }))[0]!._block_hash).toBe(h("a"));
    const e = await failure(replaceBlockRows(s, "hashed", { chain: "eth", fromBlock: 4, toBlock: 4, blockHash: "0xABC" }, [{ n: 4 }]));
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toContain('block hash "0xABC" is not a 32-byte lowercase 0x hash');
  });

  test("scopeCounts lists a block table's scopes starting in a range with their hash, run and rows; scopeBounds its lowest and highest block; a normal or missing table is refused", async () => {
    const s = store(await kind.location());
    const h = (c: string) => "0x" + c.repeat(64);
    await replaceBlockRows(s, "counted", { chain: "eth", fromBlock: 1, toBlock: 1, blockHash: h("a") }, [{ n: 1 }, { n: 2 }]);
    await replaceBlockRows(s, "counted", { chain: "eth", fromBlock: 2, toBlock: 4, blockHash: h("b") }, [{ n: 3 }]);
    await replaceBlockRows(s, "counted", { chain: "eth", fromBlock: 6, toBlock: 6 }, [{ n: 4 }]);
    await replaceBlockRows(s, "counted", { chain: "base", fromBlock: 1, toBlock: 1 }, [{ n: 5 }]);
    expect(await s.scopeCounts("counted", "eth", 0, 10)).toEqual([
      { fromBlock: 1, toBlock: 1, blockHash: h("a"), runSeq: 0, rows: 2 },
      { fromBlock: 2, toBlock: 4, blockHash: h("b"), runSeq: 0, rows: 1 },
      { fromBlock: 6, toBlock: 6, blockHash: null, runSeq: 0, rows: 1 },
    ]);
    expect((await s.scopeCounts("counted", "eth", 2, 5)).map((c) => c.fromBlock)).toEqual([2]);
    expect(await s.scopeBounds("counted", "eth")).toEqual({ fromBlock: 1, toBlock: 6 });
    expect(await s.scopeBounds("counted", "polygon")).toBeNull();
    await appendRows(s, "plain", [{ a: 1 }]);
    expect((await failure(s.scopeCounts("plain", "eth", 0, 1))).code).toBe("INVALID_ARGUMENT");
    expect((await failure(s.scopeBounds("nothing", "eth"))).code).toBe("NO_SUCH_TABLE");
  });

  test("a rerun replaces every overlapping scope that lies inside its own; one that would cut an earlier scope is refused (SCOPE_CONFLICT) and changes nothing", async () => {
    const loc = await kind.location();
    const s = store(loc);
    const bundles = async (from: number, to: number, size: number) => {
      for (let f = from; f <= to; f += size) {
        const t = Math.min(to, f + size - 1);
        await replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: f, toBlock: t }, range(f, t).map((block) => ({ block, size })));
      }
    };
    const blocks = async () => (await raw(loc, "per_block")).map((r) => Number(r.block)).sort((a, b) => a - b);
    await bundles(500, 574, 10);
    // Another start: 505..514 would remove 500..509 whole (rows carry no block of their own), and
    // blocks 500..504 would be left without rows. Refused; the earlier 75 rows stay.
    const cut = await failure(replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: 505, toBlock: 514 }, range(505, 514).map((block) => ({ block, size: 0 }))));
    expect([cut.code, cut.message]).toEqual([
      "SCOPE_CONFLICT",
      "writing blocks 505..514 of table per_block would remove the rows of earlier scope 500..509 (rows carry no block of their own), leaving blocks outside 505..514 without rows: rerun a range whose bundles cover 500..509 whole",
    ]);
    expect(await blocks()).toEqual(range(500, 574));
    // A wider scope covering earlier ones whole replaces them all: bundles of 20 aligned on 500.
    await bundles(500, 574, 20);
    expect(await blocks()).toEqual(range(500, 574));
    expect(new Set((await raw(loc, "per_block")).map((r) => Number(r.size)))).toEqual(new Set([20]));
    expect(await replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: 500, toBlock: 539 }, range(500, 539).map((block) => ({ block, size: 40 })))).toEqual({ replacedScopes: 2 });
    // wideScopes lists what a rerun must align with: the multi-block scopes overlapping a range.
    expect(await s.wideScopes("per_block", "eth", 545, 562, 100)).toEqual([
      { fromBlock: 540, toBlock: 559 },
      { fromBlock: 560, toBlock: 574 },
    ]);
    expect(await s.wideScopes("per_block", "base", 545, 562, 100)).toEqual([]);
    expect(await s.wideScopes("no_such_table", "eth", 0, 10, 100)).toEqual([]);
    expect((await failure(s.wideScopes("per_block", "eth", 0, 1000, 2))).message).toContain("more than 2 multi-block scopes");
    // Another chain's rows in the same range are not touched.
    await replaceBlockRows(s, "per_block", { chain: "base", fromBlock: 0, toBlock: 1000 }, [{ block: -1, size: 0 }]);
    expect(await blocks()).toEqual([-1, ...range(500, 574)]);
    expect((await failure(replaceBlockRows(s, "per_block", { chain: "eth", fromBlock: 9, toBlock: 8 }, []))).message).toContain("block scope 9..8 is not a range of block numbers");
  });

  test("overlap replacement matches a model written from the rule (400 random scopes, widths 1..40, two connections): covered scopes go, a cut is refused", async () => {
    const loc = await kind.location();
    const stores = [store(loc), store(loc)];
    let model: { from: number; to: number; id: number }[] = [];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let refused = 0;
    for (let id = 1; id <= 400; id++) {
      const from = rand(300);
      const to = from + rand(rand(4) === 0 ? 40 : 3);
      const overlapping = model.filter((x) => !(x.to < from || x.from > to));
      const cuts = overlapping.some((x) => x.from < from || x.to > to);
      const done = await replaceBlockRows(stores[id % 2]!, "m", { chain: "eth", fromBlock: from, toBlock: to }, [{ id }, { id: -id }]).then(
        () => null,
        (e: TableStoreError) => e.code,
      );
      expect([id, done]).toEqual([id, cuts ? "SCOPE_CONFLICT" : null]);
      if (cuts) refused++;
      else model = model.filter((x) => x.to < from || x.from > to).concat({ from, to, id });
      if (id % 20 === 0 || id < 20) {
        const want = model.flatMap((x) => [x.id, -x.id]).sort((a, b) => a - b);
        expect((await raw(loc, "m")).map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(want);
      }
    }
    expect(refused).toBeGreaterThan(20); // the rule was exercised both ways
  });

  test("two stores replacing overlapping scopes at once (as two hosts would) leave one call's rows, never both; the other is refused as a cut", async () => {
    const loc = await kind.location();
    const [a, b] = [store(loc), store(loc)];
    await replaceBlockRows(a, "race", { chain: "eth", fromBlock: 0, toBlock: 0 }, [{ by: "setup", n: 0 }]);
    for (let round = 1; round <= 20; round++) {
      await raw(loc, "race"); // (a round starts from whatever the last one left)
      const outcomes = await Promise.allSettled([
        replaceBlockRows(a, "race", { chain: "eth", fromBlock: 100, toBlock: 109 }, range(100, 109).map((n) => ({ by: "a", n }))),
        replaceBlockRows(b, "race", { chain: "eth", fromBlock: 105, toBlock: 114 }, range(105, 114).map((n) => ({ by: "b", n }))),
      ]);
      const owners = new Set((await raw(loc, "race")).filter((r) => r.by !== "setup").map((r) => r.by));
      expect(owners.size).toBe(1);
      // A refusal is only ever the cut rule (the other one's scope, committed first, reaches past it).
      for (const o of outcomes) if (o.status === "rejected") expect((o.reason as TableStoreError).code).toBe("SCOPE_CONFLICT");
      expect(outcomes.some((o) => o.status === "fulfilled")).toBe(true);
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

  test("fencing: a claim per task id, refused while current elsewhere or after SUCCEEDED; a superseded, ended or lease-expired run's commits are STALE_RUN and write nothing", async () => {
    const loc = await kind.location();
    const [w1, w2] = [store(loc), store(loc)];
    await w1.openEpoch("e1", "10.0.0.1:7000", 60_000);
    await w2.openEpoch("e2", "10.0.0.2:7000", 60_000);
    const claim = (s: TableStore, epoch: string, taskId: string, supersede = false) => s.claimRun({ taskId, epoch, workerAddr: epoch === "e1" ? "10.0.0.1:7000" : "10.0.0.2:7000", supersede });
    const fenceOf = (c: RunClaim) => {
      if (c.kind !== "claimed") throw new Error(`expected a claim, got ${JSON.stringify(c)}`);
      return c.fence;
    };
    const a1 = fenceOf(await claim(w1, "e1", "t"));
    expect(a1).toMatchObject({ taskId: "t", generation: 1, epoch: "e1" });
    // The same Worker asking again gets its own run back.
    expect(fenceOf(await claim(w1, "e1", "t"))).toEqual(a1);
    // A second Worker is refused, told where the run is.
    const refused = await claim(w2, "e2", "t");
    expect(refused).toMatchObject({ kind: "refused", current: { generation: 1, epoch: "e1", workerAddr: "10.0.0.1:7000", state: "RUNNING", leaseLive: true } });
    const write = (s: TableStore, fence: RunFence, callIndex: number, rows: Record<string, number>[]) =>
      s.commit([{ kind: "replaceBlock", table: "fenced", scope: { chain: "eth", fromBlock: callIndex, toBlock: callIndex }, rows }, { kind: "append", table: "log", rows }], { ...fence, callIndex });
    await write(w1, a1, 1, [{ v: 1 }]);
    // The client gave up on w1 and resubmits: generation 2 on w2 fences generation 1 off.
    const a2 = fenceOf(await claim(w2, "e2", "t", true));
    expect(a2).toMatchObject({ generation: 2, epoch: "e2" });
    expect(a2.seq).toBeGreaterThan(a1.seq);
    const stale = await failure(write(w1, a1, 2, [{ v: 2 }]));
    expect([stale.code, stale.message]).toEqual(["STALE_RUN", "task t was resubmitted (run 2 on 10.0.0.2:7000 replaced run 1 on this one): this run's rows are refused"]);
    // Normal tables: the new run's call 1 replaces the old run's call 1 (a call's rows land once).
    await write(w2, a2, 1, [{ v: 21 }]);
    await write(w2, a2, 2, [{ v: 22 }]);
    expect((await raw(loc, "log")).map((r) => Number(r.v)).sort()).toEqual([21, 22]);
    expect((await raw(loc, "fenced")).map((r) => Number(r.v)).sort()).toEqual([21, 22]);
    // Ended: SUCCEEDED refuses a plain claim; a run that ended is not written to any more.
    await w2.endRun(a2, "SUCCEEDED");
    expect((await failure(write(w2, a2, 3, [{ v: 23 }]))).message).toContain("already ended (SUCCEEDED)");
    expect(await claim(w1, "e1", "t")).toMatchObject({ kind: "refused", current: { state: "SUCCEEDED" } });
    // A run that FAILED may be run again without asking.
    const b1 = fenceOf(await claim(w1, "e1", "u"));
    await w1.endRun(b1, "FAILED");
    expect(fenceOf(await claim(w2, "e2", "u"))).toMatchObject({ generation: 2, epoch: "e2" });
    expect((await raw(loc, "fenced")).map((r) => Number(r.v)).sort()).toEqual([21, 22]);
  });

  test("fencing: a Worker whose lease expired (paused past it) cannot renew it, claim, or commit; its runs may be taken over without asking", async () => {
    const loc = await kind.location();
    const [w1, w2] = [store(loc), store(loc)];
    await w1.openEpoch("short", "10.0.0.1:7000", 300);
    await w2.openEpoch("long", "10.0.0.2:7000", 60_000);
    const c = await w1.claimRun({ taskId: "p", epoch: "short", workerAddr: "10.0.0.1:7000", supersede: false });
    if (c.kind !== "claimed") throw new Error("expected a claim");
    expect(await w1.renewEpoch("short", 300)).toBe(true);
    await Bun.sleep(700);
    expect(await w1.renewEpoch("short", 60_000)).toBe(false); // an expired lease stays expired
    expect(await w1.claimRun({ taskId: "q", epoch: "short", workerAddr: "10.0.0.1:7000", supersede: false })).toEqual({ kind: "leaseLost" });
    const e = await failure(w1.commit([{ kind: "append", table: "late", rows: [{ v: 1 }] }], { ...c.fence, callIndex: 0 }));
    expect([e.code, e.message]).toEqual(["STALE_RUN", "this Worker's lease in the table store expired (paused or cut off from the store for longer than its lease): run 1 of task p is no longer current and its rows are refused"]);
    expect(await w2.claimRun({ taskId: "p", epoch: "long", workerAddr: "10.0.0.2:7000", supersede: false })).toMatchObject({ kind: "claimed", fence: { generation: 2 }, tookOver: { epoch: "short", leaseLive: false } });
  });

  test("fencing: rows of a block written by a run claimed later are never replaced by an earlier run's write (the later submission wins, whatever order the commits come in)", async () => {
    const loc = await kind.location();
    const s = store(loc);
    await s.openEpoch("e", "w", 60_000);
    const early = await s.claimRun({ taskId: "v1", epoch: "e", workerAddr: "w", supersede: false });
    const late = await s.claimRun({ taskId: "v2", epoch: "e", workerAddr: "w", supersede: false });
    if (early.kind !== "claimed" || late.kind !== "claimed") throw new Error("expected claims");
    const block = (n: number, by: string) => [{ kind: "replaceBlock" as const, table: "b", scope: { chain: "eth", fromBlock: n, toBlock: n }, rows: [{ n, by }] }];
    await s.commit(block(1, "v1"), { ...early.fence, callIndex: 0 });
    await s.commit(block(1, "v2"), { ...late.fence, callIndex: 0 }); // later run over earlier rows: fine
    await s.commit(block(2, "v2"), { ...late.fence, callIndex: 1 });
    const e = await failure(s.commit(block(2, "v1"), { ...early.fence, callIndex: 1 }));
    expect([e.code, e.message]).toEqual(["STALE_RUN", "blocks 2..2 of table b were written by a run submitted after this one (run 1 of task v1): its rows there are refused, the later task's stay"]);
    expect((await raw(loc, "b")).map((r) => [Number(r.n), r.by]).sort()).toEqual([
      [1, "v2"],
      [2, "v2"],
    ]);
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

  /** sqlOn runs plain SQL on the store's database, behind the store's back (an operator's psql or sqlite3). */
  const sqlOn = async (loc: string, statements: string[]) => {
    if (loc.startsWith("postgres")) {
      const { SQL } = await import("bun");
      const sql = new SQL(loc, { max: 1 });
      for (const st of statements) await sql.unsafe(st);
      await sql.close();
    } else {
      const { Database } = await import("bun:sqlite");
      const db = new Database(loc);
      for (const st of statements) db.exec(st);
      db.close();
    }
  };

  // Issue 51, item 7: the metadata was cached for the process's life, so a table dropped or restored
  // behind the store's back failed every later write as INTERNAL until the Worker restarted.
  if (!kind.name.startsWith("Parquet")) {
    test("a table dropped behind the store's back (with its metadata, or without) is made again by the next write; one restored with other columns takes rows of those; no restart needed", async () => {
      const loc = await kind.location();
      const s = store(loc);
      const scope = { chain: "eth", fromBlock: 1, toBlock: 1 };
      await appendRows(s, "t", [{ a: 1, b: "x" }]);
      await replaceBlockRows(s, "blocks", scope, [{ n: 1 }]);
      // The operator drops both: `t` leaving its metadata row, `blocks` with it.
      await sqlOn(loc, [`DROP TABLE t`, `DROP TABLE blocks`, `DELETE FROM _blockx_tables WHERE name = 'blocks'`]);
      await appendRows(s, "t", [{ a: 2, b: "y" }]);
      await replaceBlockRows(s, "blocks", scope, [{ n: 2 }]);
      expect((await s.read("t")).map((r) => [r.a, r.b])).toEqual([[2, "y"]]);
      expect((await s.read("blocks")).map((r) => r.n)).toEqual([2]);
      // Restored from elsewhere with other columns (b gone, c new), metadata and all.
      const integer = loc.startsWith("postgres") ? "NUMERIC" : "";
      await sqlOn(loc, [`DROP TABLE t`, `CREATE TABLE t (a ${integer}, c TEXT, _task_id TEXT, _call ${loc.startsWith("postgres") ? "BIGINT" : "INTEGER"})`, `UPDATE _blockx_tables SET kinds = '{"a":"INTEGER","c":"TEXT"}' WHERE name = 't'`]);
      await appendRows(s, "t", [{ a: 3, c: "z" }]);
      expect((await s.read("t")).map((r) => [r.a, r.c])).toEqual([[3, "z"]]);
      // A row that fits neither the old nor the new shape is still the caller's mistake, not INTERNAL.
      expect((await failure(appendRows(s, "t", [{ a: 4, b: "old" }]))).code).toBe("ROW_MISMATCH");
      // A second store on the file (another Worker) that cached the table before: the same, for it.
      const other = store(loc);
      expect((await other.read("t")).length).toBe(1);
      await sqlOn(loc, [`DROP TABLE t`]);
      await appendRows(other, "t", [{ a: 5, d: 1.5 }]);
      expect((await other.read("t")).map((r) => [r.a, r.d])).toEqual([[5, 1.5]]);
    });
  }

  if (kind.name.startsWith("SQLite")) {
    test("SQLite's table names ignore case: a table differing from an existing one only by case is refused, naming it, and the metadata stays one table's", async () => {
      const loc = await kind.location();
      const s = store(loc);
      await appendRows(s, "stats", [{ a: 1 }]);
      const e = await failure(appendRows(s, "STATS", [{ b: "x" }]));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toContain('the table "stats" exists, and SQLite table names ignore case');
      expect((await failure(replaceBlockRows(s, "Stats", { chain: "eth", fromBlock: 1, toBlock: 1 }, [{ a: 2 }]))).code).toBe("INVALID_ARGUMENT");
      const { Database } = await import("bun:sqlite");
      const db = new Database(loc, { readonly: true });
      expect(db.query(`SELECT name FROM _blockx_tables WHERE name = 'stats' COLLATE NOCASE`).all()).toEqual([{ name: "stats" }]);
      db.close();
      expect((await s.read("stats")).map((r) => r.a)).toEqual([1]);
    });
  }

  // Issue 51, item 4: any identity could write any table, and a block call with no rows for a
  // range deleted every row of that range, whoever had written them.
  test("owners: a table belongs to the writer that created it; another identity's write (rows, or an empty block scope that would delete) is NOT_OWNER naming table and owner, and writes nothing of the call; its owner and an admin may write", async () => {
    const loc = await kind.location();
    const [w1, w2] = [store(loc), store(loc)];
    await w1.openEpoch("e1", "10.0.0.1:7000", 60_000);
    const runOf = async (taskId: string) => {
      const c = await w1.claimRun({ taskId, epoch: "e1", workerAddr: "10.0.0.1:7000", supersede: false });
      if (c.kind !== "claimed") throw new Error(`expected a claim, got ${JSON.stringify(c)}`);
      return c.fence;
    };
    // One after another: the admin's run is the latest, so its block writes are never refused as older.
    const [ta, tb, tp, tq, tc] = [await runOf("ta"), await runOf("tb"), await runOf("tp"), await runOf("tq"), await runOf("tc")];
    const alice = { identity: "client/alice", admin: false };
    const bob = { identity: "client/bob", admin: false };
    const block = (table: string, from: number, rows: Record<string, number>[]) => ({ kind: "replaceBlock" as const, table, scope: { chain: "eth", fromBlock: from, toBlock: from }, rows });
    const append = (table: string, rows: Record<string, number>[]) => ({ kind: "append" as const, table, rows });
    let call = 0;
    const as = (s: TableStore, fence: RunFence, writer: { identity: string; admin: boolean }, ...writes: Parameters<TableStore["commit"]>[0]) => s.commit(writes, { ...fence, callIndex: ++call, writer });
    await as(w1, ta, alice, block("blocks", 1, [{ v: 1 }]), block("blocks", 2, [{ v: 2 }]), append("events", [{ v: 1 }]));
    // Bob's call: a table of his own first, then alice's block 1 with no rows (a delete) and her events.
    for (const theirs of [block("blocks", 1, []), append("events", [{ v: 9 }]), block("blocks", 3, [{ v: 9 }])]) {
      const e = await failure(as(w2, tb, bob, append("bobs", [{ v: 9 }]), theirs));
      expect([e.code, e.message]).toEqual(["NOT_OWNER", `table ${theirs.table} belongs to client/alice: client/bob may not write it (only its owner or an admin may)`]);
    }
    expect((await raw(loc, "blocks")).map((r) => Number(r.v)).sort()).toEqual([1, 2]);
    expect((await raw(loc, "events")).map((r) => Number(r.v))).toEqual([1]);
    expect(await w1.read("bobs")).toEqual([]); // made (it is his), but none of the refused call's rows
    // Refused in a group too: calls arriving together, each gets its own answer.
    const [mine, theirs] = await Promise.allSettled([as(w1, ta, alice, block("blocks", 4, [{ v: 4 }])), as(w1, tb, bob, block("blocks", 2, []))]);
    expect([mine.status, theirs.status === "rejected" && (theirs.reason as TableStoreError).code]).toEqual(["fulfilled", "NOT_OWNER"]);
    // Two Unix users behind one proxy are two owners.
    await as(w1, tp, { identity: "proxy/gw/uid:1000", admin: false }, append("p", [{ v: 1 }]));
    expect((await failure(as(w2, tq, { identity: "proxy/gw/uid:1001", admin: false }, append("p", [{ v: 2 }])))).message).toContain("table p belongs to proxy/gw/uid:1000: proxy/gw/uid:1001 may not write it");
    // The owner replaces its rows; an admin may write any table, and does not take it over.
    await as(w2, ta, alice, block("blocks", 1, [{ v: 11 }]));
    await as(w2, tc, { identity: "admin/ops", admin: true }, block("blocks", 2, []), append("events", [{ v: 3 }]));
    expect((await raw(loc, "blocks")).map((r) => Number(r.v)).sort()).toEqual([11, 4]);
    expect((await failure(as(w2, tb, bob, append("events", [{ v: 9 }])))).code).toBe("NOT_OWNER");
    // A writer with no identity (BLOCKX_INSECURE) is not checked, and the table it makes is anyone's, for good.
    await appendRows(w1, "events", [{ v: 4 }]);
    await appendRows(w1, "shared", [{ v: 1 }]);
    await as(w2, tb, bob, append("shared", [{ v: 2 }]));
    await as(w2, ta, alice, append("shared", [{ v: 3 }]));
    await as(w2, tb, bob, append("shared", [{ v: 4 }]));
    expect((await raw(loc, "shared")).map((r) => Number(r.v)).sort()).toEqual([1, 2, 3, 4]);
  });

  test("owners: a store made before owners keeps working: its tables are unowned (anyone may write them), new tables get owners, and an owner an operator sets in the metadata is enforced at once", async () => {
    const loc = await kind.location();
    const catalog = loc.startsWith("parquet:") ? join(parquetRootOf(loc), "_blockx", "catalog.sqlite") : loc;
    const first = store(loc);
    await appendRows(first, "old", [{ v: 1 }]);
    await first.close();
    open.splice(open.indexOf(first), 1);
    // The metadata as a version without owners left it.
    await sqlOn(catalog, [`ALTER TABLE _blockx_tables DROP COLUMN owner`]);
    const s = store(loc);
    await s.openEpoch("e1", "10.0.0.1:7000", 60_000);
    const c = await s.claimRun({ taskId: "t", epoch: "e1", workerAddr: "10.0.0.1:7000", supersede: false });
    if (c.kind !== "claimed") throw new Error("expected a claim");
    const bob = { ...c.fence, callIndex: 1, writer: { identity: "client/bob", admin: false } };
    await s.commit([{ kind: "append", table: "old", rows: [{ v: 2 }] }], bob);
    await s.commit([{ kind: "append", table: "new", rows: [{ v: 1 }] }], bob);
    await sqlOn(catalog, [`UPDATE _blockx_tables SET owner = 'client/alice' WHERE name = 'old'`]);
    expect((await failure(s.commit([{ kind: "append", table: "old", rows: [{ v: 3 }] }], { ...bob, callIndex: 2 }))).message).toContain("table old belongs to client/alice");
    expect((await raw(loc, "old")).map((r) => Number(r.v)).sort()).toEqual([1, 2]);
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
      const db = new Database(loc.startsWith("parquet:") ? join(parquetRootOf(loc), "_blockx", "catalog.sqlite") : loc);
      db.exec(edit);
      db.close();
    }
    const fresh = store(loc); // no cached metadata
    const e = await appendRows(fresh, "bad", [{ a: 2 }]).then(() => undefined, (x: TableStoreError) => x);
    expect(e?.code).toBe("CORRUPT_METADATA");
    expect((await fresh.read("good")).map((r) => r.a)).toEqual([1]);
  });
});

describe("Postgres: connections", () => {
  test("TCP keepalive is on for every connection of the store (the server probes a silent Worker and ends its session)", async () => {
    const url = await freshDatabase();
    const s = new PostgresTableStore(pgOptions(url));
    open.push(s);
    await s.check();
    const sql = (s as unknown as { sql: import("bun").SQL }).sql;
    const got = (await sql.unsafe(`SELECT current_setting('tcp_keepalives_idle') AS idle, current_setting('tcp_keepalives_interval') AS every, current_setting('tcp_keepalives_count') AS count`)) as { idle: string; every: string; count: string }[];
    expect(got[0]).toEqual({ idle: "10", every: "5", count: "3" });
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
