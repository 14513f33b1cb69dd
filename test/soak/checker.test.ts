/**
 * The soak's checker against a real table store, SQLite and Postgres (the private server of
 * test/support/preload.ts, a fresh database per test): rows written the way a Worker writes them
 * (runs claimed under an epoch, every commit fenced, block-scope and per-call replacement, each
 * row stamped with its run as the soak's functions do), then each way the promise can break put
 * there by hand, bypassing the fence as a broken store would: a duplicated row, a missing block, a
 * wrong value, stray rows, a stale run's overwrite, an earlier task's rows over a later one's, rows
 * of two runs in one block, a last run that did not succeed, a call's rows twice in a normal table,
 * a second task id's rows. Each must be counted and named.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { PostgresTableStore } from "../../src/outputs/stores/postgres-table-store";
import { SqliteTableStore } from "../../src/outputs/stores/sqlite-table-store";
import type { RunFence, RunState } from "../../src/outputs/stores/run-fence";
import { ParquetTableStore } from "../../src/outputs/stores/parquet-table-store";
import { appendRows, replaceBlockRows, type Row, type TableStore } from "../../src/outputs/stores/table-store";
import { freshDatabase } from "../support/postgres";
import { checkPassed, checkTables, SOAK_CHAIN, type CheckedRange } from "./checker";
import { BLOCK_STATS, BUNDLE_STATS, ERC20_TRANSFERS, NORMAL_STATS, RUN_GEN_COLUMN, RUN_TASK_COLUMN, type SoakTable } from "./soak-functions";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The stores the checker reads: a new empty location of each, how a Worker would open it, and a raw insert (what a broken store would leave). */
const KINDS = [
  {
    name: "SQLite",
    location: async () => {
      const dir = mkdtempSync(join(tmpdir(), "blockx-checker-"));
      dirs.push(dir);
      return join(dir, "tables.sqlite");
    },
    open: (path: string): TableStore => new SqliteTableStore(path, { inline: true }),
    insertRaw: async (path: string, table: string, row: Record<string, string | number>) => {
      const db = new Database(path);
      try {
        const cols = Object.keys(row);
        db.query(`INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`).run(...Object.values(row));
      } finally {
        db.close();
      }
    },
  },
  {
    name: "Postgres",
    location: freshDatabase,
    open: (url: string): TableStore =>
      new PostgresTableStore({ url, poolSize: 2, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" }),
    insertRaw: async (url: string, table: string, row: Record<string, string | number>) => {
      const { SQL } = await import("bun");
      const sql = new SQL(url, { max: 1 });
      try {
        const types = (await sql.unsafe(`SELECT column_name AS c, data_type AS d FROM information_schema.columns WHERE table_name = $1`, [table])) as { c: string; d: string }[];
        const cols = Object.keys(row);
        const typeOf = (c: string) => types.find((t) => t.c === c)!.d;
        await sql.unsafe(`INSERT INTO "${table}" (${cols.map((c) => `"${c}"`).join(", ")}) VALUES (${cols.map((c, i) => `$${i + 1}::text::${typeOf(c) === "text" ? "text" : typeOf(c) === "numeric" ? "numeric" : "bigint"}`).join(", ")})`, Object.values(row).map(String));
      } finally {
        await sql.close({ timeout: 0 });
      }
    },
  },
  {
    name: "Parquet",
    location: async () => {
      const dir = mkdtempSync(join(tmpdir(), "blockx-checker-"));
      dirs.push(dir);
      return `parquet://${join(dir, "dataset")}`;
    },
    open: (url: string): TableStore => new ParquetTableStore(url.slice("parquet://".length), { inline: true }),
    // A dataset takes no row but through its writer: the one test of rows a broken store would leave is SQL's.
    insertRaw: null,
  },
] as const;

const chain = new SyntheticChain(SOAK_CHAIN);
const stamped = (rows: readonly Record<string, string | number>[], f: RunFence): Row[] => rows.map((r) => ({ ...r, [RUN_TASK_COLUMN]: f.taskId, [RUN_GEN_COLUMN]: f.generation }));

for (const kind of KINDS) {
  /**
   * Cluster: two Workers' side of the store (an epoch with a lease each), running soak tasks the
   * way a Worker does: claim the run, commit each call under its fence, record the run's end. A
   * resubmission (supersede) is claimed by the second Worker, as the SDK's lands elsewhere.
   */
  class Cluster {
    readonly store: TableStore;
    private readonly opened = new Set<number>();
    constructor(readonly location: string) {
      this.store = kind.open(location);
    }

    async claim(taskId: string, supersede = false): Promise<RunFence> {
      const worker = supersede ? 2 : 1;
      if (!this.opened.has(worker)) await this.store.openEpoch(`epoch-${worker}`, `worker-${worker}`, 600_000);
      this.opened.add(worker);
      const c = await this.store.claimRun({ taskId, epoch: `epoch-${worker}`, workerAddr: `worker-${worker}`, supersede });
      if (c.kind !== "claimed") throw new Error(`claim of ${taskId}: ${c.kind}`);
      return c.fence;
    }

    /** writeCalls commits the task's calls over from..to (only those `only` keeps) under `fence`, as its Worker would. */
    async writeCalls(fence: RunFence, table: SoakTable, from: number, to: number, only: (block: number) => boolean = () => true): Promise<void> {
      if (table.kind === "bundle") {
        for (let f = from, call = 0; f <= to; f += table.bundleSize!, call++) {
          const t = Math.min(to, f + table.bundleSize! - 1);
          if (!only(f)) continue;
          const rows = Array.from({ length: t - f + 1 }, (_, i) => table.expectedRows(chain, f + i)).flat();
          await this.store.commit([{ kind: "replaceBlock", table: table.table, scope: { chain: SOAK_CHAIN, fromBlock: f, toBlock: t }, rows: stamped(rows, fence) }], { ...fence, callIndex: call });
        }
        return;
      }
      for (let n = from; n <= to; n++) {
        if (!only(n)) continue;
        const rows = stamped(table.expectedRows(chain, n), fence);
        const write = table.kind === "normal" ? ({ kind: "append", table: table.table, rows } as const) : ({ kind: "replaceBlock", table: table.table, scope: { chain: SOAK_CHAIN, fromBlock: n, toBlock: n }, rows } as const);
        await this.store.commit([write], { ...fence, callIndex: n - from });
      }
    }

    /** run: a whole task, claimed, written and ended (SUCCEEDED unless told). */
    async run(taskId: string, table: SoakTable, from: number, to: number, o: { supersede?: boolean; end?: Exclude<RunState, "RUNNING">; only?: (block: number) => boolean } = {}): Promise<RunFence> {
      const fence = await this.claim(taskId, o.supersede);
      await this.writeCalls(fence, table, from, to, o.only);
      await this.store.endRun(fence, o.end ?? "SUCCEEDED");
      return fence;
    }

    async close(): Promise<void> {
      await this.store.close();
    }
  }

  async function cluster(): Promise<Cluster> {
    return new Cluster(await kind.location());
  }

  const range = (table: SoakTable, fromBlock: number, toBlock: number, ...taskIds: string[]): CheckedRange => ({ table, fromBlock, toBlock, taskIds });

  describe(`soak checker (${kind.name})`, () => {
    test("rows of the last current run pass: block, bundle and normal tables, a task whose run was taken over, a range rerun under a later task; the transfer table has several rows per block", async () => {
      const c = await cluster();
      // A first run of "a" got as far as block 104, then the client resubmitted it (a new run fenced the first off).
      await c.run("a", BLOCK_STATS, 100, 119, { end: "FAILED", only: (n) => n <= 104 });
      await c.run("a", BLOCK_STATS, 100, 119, { supersede: true });
      await c.run("b", ERC20_TRANSFERS, 100, 119);
      await c.run("c", BUNDLE_STATS, 200, 224);
      await c.run("c-rerun", BUNDLE_STATS, 200, 224);
      await c.run("d", NORMAL_STATS, 300, 309, { end: "FAILED", only: (n) => n <= 303 });
      await c.run("d", NORMAL_STATS, 300, 309, { supersede: true });
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 119, "a"), range(ERC20_TRANSFERS, 100, 119, "b"), range(BUNDLE_STATS, 200, 224, "c"), range(BUNDLE_STATS, 200, 224, "c-rerun"), range(NORMAL_STATS, 300, 309, "d")]);
      expect(check).toMatchObject({ blocks: 75, missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: 0, mixedRuns: 0, unsettled: 0, leftByFailedRows: 0, runs: { taskIds: 5, takenOver: 2 }, problems: [] });
      expect(check.expectedRows).toBeGreaterThan(75);
      expect(checkPassed(check)).toBe(true);
    });

    test("a duplicated row, a missing block and a wrong value are each counted and named", async () => {
      const c = await cluster();
      const f = await c.run("a", ERC20_TRANSFERS, 100, 119);
      await c.run("b", BLOCK_STATS, 100, 119);
      // Written again by hand under the block's scope, bypassing fences: what a non-idempotent rerun would leave.
      const transfers = stamped(ERC20_TRANSFERS.expectedRows(chain, 105), f);
      await replaceBlockRows(c.store, ERC20_TRANSFERS.table, { chain: SOAK_CHAIN, fromBlock: 105, toBlock: 105 }, [...transfers, transfers[0]!]);
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 110, toBlock: 110 }, []);
      const g = { taskId: "b", generation: 1 } as RunFence;
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 111, toBlock: 111 }, stamped([{ ...BLOCK_STATS.expectedRows(chain, 111)[0]!, gas_used: 1 }], g));
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 119, "b"), range(ERC20_TRANSFERS, 100, 119, "a")]);
      expect(check).toMatchObject({ missingRows: 2, duplicatedRows: 1, unexpectedRows: 1, staleRows: 0 });
      expect(checkPassed(check)).toBe(false);
      expect(check.problems).toContain(`soak_erc20_transfers block 105: ${transfers.length} rows expected, ${transfers.length + 1} found (0 missing, 1 duplicated, 0 unexpected)`);
      expect(check.problems).toContain("soak_block_stats block 110: 1 rows expected, 0 found (1 missing, 0 duplicated, 0 unexpected)");
    });

    test("every row of the store counts: another table, another chain, a wide scope, a block outside every range and a normal row of an unknown task are each unexpected", async () => {
      const c = await cluster();
      const f = await c.run("a", BLOCK_STATS, 100, 119);
      await c.run("n", NORMAL_STATS, 300, 304);
      const right = stamped(BLOCK_STATS.expectedRows(chain, 130), f);
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 130, toBlock: 130 }, right); // right values, outside the ranges
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: "base", fromBlock: 105, toBlock: 105 }, stamped(BLOCK_STATS.expectedRows(chain, 105), f)); // another chain
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 140, toBlock: 141 }, right); // a scope of two blocks
      await appendRows(c.store, "stray_table", [{ x: 1 }]);
      await appendRows(c.store, NORMAL_STATS.table, stamped(NORMAL_STATS.expectedRows(chain, 300), f)); // no task id: appended unfenced
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 119, "a"), range(NORMAL_STATS, 300, 304, "n")]);
      expect(check).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 5 });
      expect(checkPassed(check)).toBe(false);
      expect(check.problems).toContain("soak_block_stats block 130: 1 rows outside every checked range");
      expect(check.problems.filter((p) => p.includes("a row outside every checked range (chain base, scope 105..105"))).toHaveLength(1);
      expect(check.problems.filter((p) => p.includes("scope 140..141"))).toHaveLength(1);
      expect(check.problems.filter((p) => p.startsWith("stray_table: a row outside every checked range"))).toHaveLength(1);
      expect(check.problems.filter((p) => p.startsWith("soak_normal_stats: a row outside every checked range (task null"))).toHaveLength(1);
    });

    test("a stale run's overwrite: a block whose rows a superseded run of the same task wrote after the new run did", async () => {
      const c = await cluster();
      const first = await c.claim("a");
      await c.writeCalls(first, BLOCK_STATS, 100, 119, (n) => n < 105);
      await c.run("a", BLOCK_STATS, 100, 119, { supersede: true });
      // The first run's late commit of block 107, let through (no fence): right values, wrong run.
      await replaceBlockRows(c.store, BLOCK_STATS.table, { chain: SOAK_CHAIN, fromBlock: 107, toBlock: 107 }, stamped(BLOCK_STATS.expectedRows(chain, 107), first));
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 119, "a")]);
      expect(check).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: 1, mixedRuns: 0, unsettled: 0 });
      expect(checkPassed(check)).toBe(false);
      expect(check.problems).toEqual(["soak_block_stats block 107: 1 of 1 rows from a run 1, not from a run 2, the last run claimed over it"]);
    });

    test("an earlier task's rows over blocks a task claimed after it rewrote (claim order across task ids), in a bundle table", async () => {
      const c = await cluster();
      const early = await c.run("early", BUNDLE_STATS, 200, 224);
      await c.run("later", BUNDLE_STATS, 200, 224);
      // The earlier task's bundle 210..214 lands again last, let through: the later task's rows are gone there.
      const rows = stamped([210, 211, 212, 213, 214].flatMap((n) => BUNDLE_STATS.expectedRows(chain, n)), early);
      await replaceBlockRows(c.store, BUNDLE_STATS.table, { chain: SOAK_CHAIN, fromBlock: 210, toBlock: 214 }, rows);
      await c.close();
      const check = await checkTables(c.location, [range(BUNDLE_STATS, 200, 224, "early"), range(BUNDLE_STATS, 200, 224, "later")]);
      expect(check).toMatchObject({ blocks: 25, missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: 5, unsettled: 0 });
      expect(check.problems[0]).toBe("soak_bundle_stats block 210: 1 of 1 rows from early run 1, not from later run 1, the last run claimed over it");
    });

    test("rows of two runs in one block are counted as mixed, and the stale ones as stale", async () => {
      const c = await cluster();
      // A block with several transfers; half of them from the first run, left behind.
      const n = Array.from({ length: 50 }, (_, i) => 100 + i).find((b) => ERC20_TRANSFERS.expectedRows(chain, b).length >= 2)!;
      const first = await c.claim("a");
      const second = await c.run("a", ERC20_TRANSFERS, n, n, { supersede: true });
      const want = ERC20_TRANSFERS.expectedRows(chain, n);
      const half = Math.floor(want.length / 2);
      await replaceBlockRows(c.store, ERC20_TRANSFERS.table, { chain: SOAK_CHAIN, fromBlock: n, toBlock: n }, [...stamped(want.slice(0, half), first), ...stamped(want.slice(half), second)]);
      await c.close();
      const check = await checkTables(c.location, [range(ERC20_TRANSFERS, n, n, "a")]);
      expect(check).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: half, mixedRuns: 1 });
      expect(checkPassed(check)).toBe(false);
    });

    test("the last run claimed over a block did not succeed: unsettled, whatever rows are there", async () => {
      const c = await cluster();
      await c.run("a", BLOCK_STATS, 100, 109);
      // A rerun claimed after "a", FAILED before it wrote anything, and never run again.
      await c.run("a-rerun", BLOCK_STATS, 100, 109, { end: "FAILED", only: () => false });
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 109, "a"), range(BLOCK_STATS, 100, 109, "a-rerun")]);
      expect(check).toMatchObject({ missingRows: 0, unsettled: 10, staleRows: 10 });
      expect(check.problems[0]).toBe("soak_block_stats block 100: the last run claimed over it, a-rerun run 1, ended FAILED");
      expect(checkPassed(check)).toBe(false);
    });

    if (kind.insertRaw) test("normal table: a call's rows twice and a superseded run's rows in a call of the task that succeeded are counted (duplicated, stale, mixed)", async () => {
      const insertRaw = kind.insertRaw!;
      const c = await cluster();
      const first = await c.claim("n");
      await c.writeCalls(first, NORMAL_STATS, 300, 309, (b) => b <= 305);
      await c.run("n", NORMAL_STATS, 300, 309, { supersede: true });
      await c.close();
      // What a store without per-call replacement (or without the fence) would leave: the first run's call 3 once more.
      const row = { ...NORMAL_STATS.expectedRows(chain, 303)[0]!, [RUN_TASK_COLUMN]: "n", [RUN_GEN_COLUMN]: 1, _task_id: "n", _call: 3 };
      await insertRaw(c.location, NORMAL_STATS.table, row);
      const check = await checkTables(c.location, [range(NORMAL_STATS, 300, 309, "n")]);
      expect(check).toMatchObject({ blocks: 10, expectedRows: 10, foundRows: 11, missingRows: 0, duplicatedRows: 1, unexpectedRows: 0, staleRows: 1, mixedRuns: 1 });
      expect(check.problems).toContain("soak_normal_stats task n call 3: 1 of 2 rows from n run 1, not from n run 2, its final run");
      expect(checkPassed(check)).toBe(false);
    });

    test("normal table: what a task that FAILED committed stays and is counted, not failed; a second task id that succeeded over the same blocks is a second run", async () => {
      const c = await cluster();
      await c.run("f", NORMAL_STATS, 300, 309, { end: "FAILED", only: (b) => b <= 304 });
      await c.run("f-run2", NORMAL_STATS, 300, 309);
      await c.run("g", NORMAL_STATS, 400, 404);
      await c.run("g-again", NORMAL_STATS, 400, 404);
      await c.close();
      const left = await checkTables(c.location, [range(NORMAL_STATS, 300, 309, "f", "f-run2")]);
      // g's range is not checked here: its rows are stray; f's rerun passes with f's five rows left.
      expect(left).toMatchObject({ leftByFailedRows: 5, missingRows: 0, duplicatedRows: 0, staleRows: 0, unexpectedRows: 10 });
      const both = await checkTables(c.location, [range(NORMAL_STATS, 300, 309, "f", "f-run2"), range(NORMAL_STATS, 400, 404, "g", "g-again")]);
      expect(both).toMatchObject({ leftByFailedRows: 5, duplicatedRows: 5, unexpectedRows: 0, staleRows: 0 });
      expect(both.problems[0]).toBe("soak_normal_stats task g call 0: a second task id of blocks 400..404 succeeded too (g-again is the last): its 1 rows are a second run's");
      const onlyF = await checkTables(c.location, [range(NORMAL_STATS, 300, 309, "f", "f-run2"), range(NORMAL_STATS, 400, 404, "g-again")]);
      expect(onlyF).toMatchObject({ unexpectedRows: 5 }); // g's rows: a task id no range names
    });

    test("a rerun range counts its blocks once; its rows are checked like any other", async () => {
      const c = await cluster();
      await c.run("a", BLOCK_STATS, 100, 119);
      await c.run("a-rerun", BLOCK_STATS, 110, 119);
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 100, 119, "a"), range(BLOCK_STATS, 110, 119, "a-rerun")]);
      expect(check).toMatchObject({ blocks: 20, expectedRows: 20, foundRows: 20, missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: 0, unsettled: 0 });
    });

    test("a table never written counts every row as missing", async () => {
      const c = await cluster();
      await c.run("a", BLOCK_STATS, 1, 5);
      await c.close();
      const check = await checkTables(c.location, [range(BLOCK_STATS, 1, 5, "a"), range(ERC20_TRANSFERS, 1, 5, "b")]);
      expect(check.missingRows).toBe(check.expectedRows - 5);
      expect(checkPassed(check)).toBe(false);
    });
  });
}
