import { afterEach, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CRASH_SCENARIOS } from "../../../test/support/parquet-crash-scenarios";
import { duckRows } from "../../../test/support/parquet-dataset-reader";
import { MAX_FILES_PER_COMMIT, MAX_ROW_BYTES, parquetRootOf } from "./parquet-layout";
import { ParquetTables } from "./parquet-tables";
import type { TableStoreError } from "./table-store";

/**
 * The Parquet dataset store's own promises beyond the contract suite: a Worker killed (SIGKILL, a
 * real process) at every step of a commit leaves a dataset in which a reader listing it by glob
 * (DuckDB) sees every scope once, in one whole file, either as before the commit or as after it;
 * the next opening completes the commit exactly when it had passed its commit point. And every
 * bound has its error.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), "blockx-parquet-crash-"));
  dirs.push(d);
  return join(d, "ds");
};
const BUN = process.execPath;

/** What a reader listing the dataset sees of a table: its rows (block, tag, scope), sorted; and that no scope is in two files nor overlaps another. */
async function visible(root: string, table: string): Promise<string[]> {
  const url = `parquet://${root}`;
  const files = await duckRows(url, table, "ORDER BY 2, 3", "DISTINCT filename, _scope_from, _scope_to");
  for (let i = 1; i < files.length; i++) expect([table, Number(files[i]!._scope_from) > Number(files[i - 1]!._scope_to)]).toEqual([table, true]);
  return (await duckRows(url, table)).map((r) => `${r.block}:${r.tag}:${r._scope_from}-${r._scope_to}`).sort();
}

describe("Parquet store: a Worker killed at any step of a commit", () => {
  for (const [name, sc] of Object.entries(CRASH_SCENARIOS)) {
    test(`${name}: at every step (${sc.points.join(", ")}) a reader sees the old or the new state whole; reopening completes it iff the intent was recorded`, async () => {
      const tables = [...new Set(sc.setup.flat().concat(sc.write).map((w) => w.table))];
      const base = fresh();
      const setup = new ParquetTables(base);
      for (const w of sc.setup) setup.commit(w);
      setup.close();
      const before = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await visible(base, t)] as const)));
      // The same commit, not killed: the state after it.
      const done = fresh();
      cpSync(base, done, { recursive: true });
      const run = (root: string, point: string) => Bun.spawnSync([BUN, join(import.meta.dir, "../../../test/support/parquet-crash-child.ts"), root, name, point], { stderr: "pipe" });
      expect(run(done, "never").exitCode).toBe(0);
      const after = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await visible(done, t)] as const)));
      for (const t of tables) if (sc.write.some((w) => w.table === t)) expect(after[t]).not.toEqual(before[t]);
      for (const point of sc.points) {
        const root = fresh();
        cpSync(base, root, { recursive: true });
        const killed = run(root, point);
        expect([point, killed.signalCode ?? killed.stderr.toString()]).toEqual([point, "SIGKILL"]);
        // As it was left: each table wholly before or wholly after, never a mix, a scope twice or a partial file.
        for (const t of tables) {
          const seen = await visible(root, t);
          expect([point, t, seen.join() === before[t]!.join() || seen.join() === after[t]!.join()]).toEqual([point, t, true]);
        }
        // Reopened (the next writer, reader or Worker start): done iff the commit point was passed.
        const reopened = new ParquetTables(root);
        for (const t of tables) {
          const want = point === "afterStage" ? before[t] : after[t];
          expect([point, t, await visible(root, t)]).toEqual([point, t, want!]);
          expect([point, t, (await reopened.read(t)).map((r) => `${r.block}:${r.tag}:${r._scope_from}-${r._scope_to}`).sort()]).toEqual([point, t, want!]);
        }
        reopened.close();
        expect([point, readdirSync(join(root, "_blockx", "swap"))]).toEqual([point, []]);
      }
    }, 60_000);
  }
});

describe("Parquet store: bounds and names", () => {
  const err = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return [(e as TableStoreError).code, (e as TableStoreError).message];
    }
    return undefined;
  };
  test("chain and table names must be safe path parts; a task id too long for a folder name, too many tables per call and too large a row are refused by name", () => {
    const s = new ParquetTables(fresh());
    const block = (table: string, chain: string) => [{ kind: "replaceBlock" as const, table, scope: { chain, fromBlock: 1, toBlock: 1 }, rows: [{ a: 1 }] }];
    for (const chain of ["../etc", "a/b", ".hidden", "", "x".repeat(65), "eth\n"]) expect(err(() => s.commit(block("t", chain)))?.[0]).toBe("INVALID_ARGUMENT");
    expect(err(() => s.commit(block("t", "../x")))?.[1]).toContain("chain name: a Parquet dataset's folder part");
    expect(err(() => s.commit(block("_private", "eth")))?.[1]).toContain("readers skip folders starting with _");
    const fence = { taskId: "x".repeat(201), generation: 1, epoch: "e", seq: 1, callIndex: 0 };
    expect(err(() => s.commit([{ kind: "append", table: "n", rows: [{ a: 1 }] }], fence))?.[1]).toContain("task id: a Parquet dataset's folder part of 1 to 200 bytes once encoded, got 201");
    const many = Array.from({ length: MAX_FILES_PER_COMMIT + 1 }, (_, i) => ({ kind: "append" as const, table: `t${i}`, rows: [{ a: 1 }] }));
    expect(err(() => s.commit(many))).toEqual(["INVALID_ARGUMENT", `a call's commit writes at most ${MAX_FILES_PER_COMMIT} tables (a Parquet file each), got ${MAX_FILES_PER_COMMIT + 1}`]);
    expect(err(() => s.commit([{ kind: "append", table: "big", rows: [{ a: "x".repeat(MAX_ROW_BYTES + 1) }] }]))).toEqual(["ROW_MISMATCH", `row 0 of table big is ${MAX_ROW_BYTES + 1} bytes; a Parquet table store takes rows of at most ${MAX_ROW_BYTES} bytes`]);
    // Nothing of the refused calls is in the dataset: only the store's own folder.
    expect(readdirSync(s.root)).toEqual(["_blockx"]);
    s.close();
  });

  test("a task id of any characters is one folder: bytes outside [A-Za-z0-9_.-] as %XX", async () => {
    const root = fresh();
    const s = new ParquetTables(root);
    s.openEpoch("e", "w", 60_000);
    const c = s.claimRun({ taskId: "a/../b c", epoch: "e", workerAddr: "w", supersede: false });
    if (c.kind !== "claimed") throw new Error("expected a claim");
    s.commit([{ kind: "append", table: "n", rows: [{ a: 1 }] }], { ...c.fence, callIndex: 3 });
    expect(readdirSync(join(root, "n"))).toEqual(["task=a%2F..%2Fb%20c"]);
    expect(readdirSync(join(root, "n", "task=a%2F..%2Fb%20c"))).toEqual(["call=3.parquet"]);
    s.close();
  });

  test("TABLE_STORE_URL: parquet:///abs is absolute, parquet:rel relative; a host is refused", () => {
    expect(parquetRootOf("parquet:///srv/tables")).toBe("/srv/tables");
    expect(parquetRootOf("parquet:tables/x")).toBe("tables/x");
    expect(err(() => parquetRootOf("parquet://host/tables"))?.[1]).toContain("names a local folder");
  });
});
