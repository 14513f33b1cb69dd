import { Database } from "bun:sqlite";
import { join } from "node:path";
import { parquetRootOf } from "../../src/outputs/stores/parquet-layout";
import { catalogTables, duckRows } from "../support/parquet-dataset-reader";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { RUN_GEN_COLUMN, RUN_TASK_COLUMN, type SoakTable } from "./soak-functions";

export const SOAK_CHAIN = "ethereum";

/** CheckedRange: blocks of one table the soak backfilled, and every task id it ran them under, in order. */
export interface CheckedRange {
  readonly table: SoakTable;
  readonly fromBlock: number;
  readonly toBlock: number;
  /** The task ids of this range, first to last (the client reruns a FAILED task under a new id). */
  readonly taskIds: readonly string[];
}

/** CheckResult: rows compared block by block (and call by call); `problems` names the first few that differ. */
export interface CheckResult {
  readonly blocks: number;
  readonly expectedRows: number;
  readonly foundRows: number;
  readonly missingRows: number;
  readonly duplicatedRows: number;
  /** Rows that match no expected row of their block (a wrong value), or lie outside every checked range. */
  readonly unexpectedRows: number;
  /**
   * Rows computed by a run other than the one that must have the last word: over a block of a block
   * table, the last run the cluster claimed (the highest claim order of every task covering it); in
   * a normal table, the final run of the task id that succeeded. A stale run's overwrite, or a
   * second run's rows.
   */
  readonly staleRows: number;
  /** Blocks (block tables) or calls (normal tables) whose rows come from more than one run. */
  readonly mixedRuns: number;
  /** Blocks whose last claimed run did not succeed (or has no run in the store), and ranges none of whose task ids succeeded. */
  readonly unsettled: number;
  /**
   * Normal-table rows of task ids that did not succeed: what such a task committed before it ended
   * stays (a normal table appends; the client's rerun is another task id). Counted, not failed:
   * each of their calls must still hold its rows at most once, from one run.
   */
  readonly leftByFailedRows: number;
  /** Task ids in the store's run table, and those whose run was taken over at least once (generation > 1). */
  readonly runs: { readonly taskIds: number; readonly takenOver: number };
  readonly problems: string[];
}

const MAX_PROBLEMS = 20;

/** A task id's run as the store keeps it (`_blockx_runs`: the final generation, its claim order and end). */
export interface StoredRun {
  readonly generation: number;
  readonly seq: number;
  readonly state: string;
}

type RawRow = Record<string, unknown>;

/** Everything the checker reads: every user table's rows (hidden columns included) and the run table. */
export interface StoreRead {
  readonly tables: Map<string, RawRow[]>;
  readonly runs: Map<string, StoredRun>;
}

function canonical(row: RawRow, columns: readonly string[]): string {
  return JSON.stringify(columns.map((c) => row[c] ?? null));
}

const stampOf = (row: RawRow) => `${String(row[RUN_TASK_COLUMN])} run ${String(row[RUN_GEN_COLUMN])}`;
const runName = (taskId: string, r: StoredRun) => `${taskId} run ${r.generation}`;

/**
 * checkTables verifies the whole table store (a SQLite file, a postgres:// URL, or a parquet://
 * dataset), read with plain SQL (not through the writer's class; a Parquet dataset with DuckDB):
 * every block of every range has exactly the rows
 * recomputed from SyntheticChain, each expected row once, and there is nothing else anywhere: a
 * row of another table, another chain, a scope it does not belong to, or a block outside every
 * range counts as unexpected. A row present twice counts as duplicated, an absent one as missing,
 * a row with any other value as unexpected. And every row must come from the run that has the last
 * word over it (each row carries the run that computed it, read against the store's `_blockx_runs`):
 * for every block of a block or bundle table, rows of exactly one run, the last one the cluster
 * claimed over that block (claims are ordered across task ids), which SUCCEEDED; for a normal
 * table, each call's rows once, from the final run of the task id that succeeded.
 */
export async function checkTables(store: string, ranges: readonly CheckedRange[]): Promise<CheckResult> {
  return checkRead(await readStore(store), ranges);
}

/** readStore reads every user table (hidden columns included) and the run table of a SQLite file, a postgres:// URL or a parquet:// dataset, with plain SQL (DuckDB for Parquet). */
export async function readStore(store: string): Promise<StoreRead> {
  if (store.startsWith("parquet:")) return readParquet(store);
  return /^postgres(ql)?:\/\//.test(store) ? readPostgres(store) : readSqlite(store);
}

/**
 * checkRead is checkTables over a store already read; the tables named in `apart` are left to a
 * check of their own (the soak's followed table, checked against anvil by test/soak/follow-soak.ts)
 * instead of counting as rows outside every range.
 */
export function checkRead(read: StoreRead, ranges: readonly CheckedRange[], apart: readonly string[] = []): CheckResult {
  const tables = new Map([...read.tables].filter(([name]) => !apart.includes(name)));
  return compareRows({ tables, runs: read.runs }, ranges);
}

/** Counters and problems as the comparison goes. */
class Tally {
  blocks = 0;
  expectedRows = 0;
  foundRows = 0;
  missingRows = 0;
  duplicatedRows = 0;
  unexpectedRows = 0;
  staleRows = 0;
  mixedRuns = 0;
  unsettled = 0;
  leftByFailedRows = 0;
  readonly problems: string[] = [];

  problem(s: string): void {
    if (this.problems.length < MAX_PROBLEMS) this.problems.push(s);
  }

  /**
   * values compares one block's (or call's) rows with the expected ones: each expected row once.
   * Returns the counts; the caller adds them where they belong.
   */
  values(want: readonly RawRow[], got: readonly RawRow[]): { miss: number; dup: number; extra: number } {
    const columns = want[0] ? Object.keys(want[0]) : [];
    const left = new Map<string, number>();
    for (const w of want) left.set(canonical(w, columns), (left.get(canonical(w, columns)) ?? 0) + 1);
    const wanted = new Set(left.keys());
    let dup = 0;
    let extra = 0;
    for (const g of got) {
      const k = canonical(g, columns);
      const l = left.get(k);
      if (l !== undefined && l > 0) left.set(k, l - 1);
      else if (wanted.has(k)) dup++;
      else extra++;
    }
    return { miss: [...left.values()].reduce((a, b) => a + b, 0), dup, extra };
  }
}

function compareRows(read: StoreRead, ranges: readonly CheckedRange[]): CheckResult {
  const chain = new SyntheticChain(SOAK_CHAIN);
  const t = new Tally();
  const byTable = new Map<string, CheckedRange[]>();
  for (const r of ranges) byTable.set(r.table.table, [...(byTable.get(r.table.table) ?? []), r]);
  for (const [name, rows] of read.tables) {
    const rs = byTable.get(name);
    if (!rs) {
      // A table no range wrote: every row of it is unexpected.
      for (const row of rows) stray(t, name, row);
      continue;
    }
    if (rs[0]!.table.kind === "normal") compareNormal(t, chain, rs, rows, read.runs);
    else compareBlocks(t, chain, rs, rows, read.runs);
  }
  // Ranges of tables never written: every expected row is missing.
  for (const [name, rs] of byTable) if (!read.tables.has(name)) (rs[0]!.table.kind === "normal" ? compareNormal : compareBlocks)(t, chain, rs, [], read.runs);
  const takenOver = [...read.runs.values()].filter((r) => r.generation > 1).length;
  const { problems, blocks, expectedRows, foundRows, missingRows, duplicatedRows, unexpectedRows, staleRows, mixedRuns, unsettled, leftByFailedRows } = t;
  return { blocks, expectedRows, foundRows, missingRows, duplicatedRows, unexpectedRows, staleRows, mixedRuns, unsettled, leftByFailedRows, runs: { taskIds: read.runs.size, takenOver }, problems };
}

function stray(t: Tally, table: string, row: RawRow): void {
  t.unexpectedRows++;
  t.foundRows++;
  const { _chain, _scope_from, _scope_to, _task_id, _call, _run_seq, _block_hash, ...user } = row;
  const where = "_task_id" in row ? `task ${String(_task_id)}, call ${String(_call)}` : `chain ${String(_chain)}, scope ${String(_scope_from)}..${String(_scope_to)}`;
  t.problem(`${table}: a row outside every checked range (${where}: ${JSON.stringify(user).slice(0, 120)})`);
}

/**
 * compareBlocks: a block or bundle table. A row belongs to a block by its scope (one block) or, in
 * a bundle table, by its `block` column inside its bundle's scope; anything else is stray.
 */
function compareBlocks(t: Tally, chain: SyntheticChain, ranges: readonly CheckedRange[], rows: readonly RawRow[], runs: ReadonlyMap<string, StoredRun>): void {
  const table = ranges[0]!.table;
  const byBlock = new Map<number, RawRow[]>();
  for (const row of rows) {
    const from = row._scope_from;
    const to = row._scope_to;
    const block = table.kind === "bundle" ? row.block : from;
    const fits = row._chain === SOAK_CHAIN && typeof from === "number" && typeof to === "number" && typeof block === "number" && (table.kind === "bundle" ? from <= block && block <= to : from === to);
    if (!fits) {
      stray(t, table.table, row);
      continue;
    }
    byBlock.set(block, [...(byBlock.get(block) ?? []), row]);
  }
  const seen = new Set<number>();
  for (const r of ranges) {
    for (let n = r.fromBlock; n <= r.toBlock; n++) {
      if (seen.has(n)) continue; // the same block in two ranges (a rerun) is one block
      seen.add(n);
      t.blocks++;
      const want = table.expectedRows(chain, n);
      const got = byBlock.get(n) ?? [];
      t.expectedRows += want.length;
      t.foundRows += got.length;
      const { miss, dup, extra } = t.values(want, got);
      t.missingRows += miss;
      t.duplicatedRows += dup;
      t.unexpectedRows += extra;
      if (miss + dup + extra > 0) t.problem(`${table.table} block ${n}: ${want.length} rows expected, ${got.length} found (${miss} missing, ${dup} duplicated, ${extra} unexpected)`);
      // Whose rows: the last run claimed over this block, of every task covering it.
      let last: { taskId: string; run: StoredRun } | undefined;
      for (const c of ranges) {
        if (n < c.fromBlock || n > c.toBlock) continue;
        for (const id of c.taskIds) {
          const run = runs.get(id);
          if (run && (!last || run.seq > last.run.seq)) last = { taskId: id, run };
        }
      }
      if (!last) {
        t.unsettled++;
        t.problem(`${table.table} block ${n}: none of its tasks has a run in the store`);
        continue;
      }
      if (last.run.state !== "SUCCEEDED") {
        t.unsettled++;
        t.problem(`${table.table} block ${n}: the last run claimed over it, ${runName(last.taskId, last.run)}, ended ${last.run.state}`);
      }
      const current = runName(last.taskId, last.run);
      const stamps = new Set(got.map(stampOf));
      const stale = got.filter((g) => stampOf(g) !== current);
      t.staleRows += stale.length;
      if (stamps.size > 1) t.mixedRuns++;
      if (stale.length > 0) t.problem(`${table.table} block ${n}: ${stale.length} of ${got.length} rows from ${[...new Set(stale.map(stampOf))].join(", ")}, not from ${current}, the last run claimed over it`);
    }
  }
  for (const [n, got] of byBlock) {
    if (seen.has(n)) continue;
    t.unexpectedRows += got.length;
    t.foundRows += got.length;
    t.problem(`${table.table} block ${n}: ${got.length} rows outside every checked range`);
  }
}

/**
 * compareNormal: a normal table, row by (task id, call). The task id of a range that succeeded holds
 * each call's rows once, all from its final run; a task id that did not succeed may have left rows,
 * each call's at most once and from one run; rows of any other task id are stray.
 */
function compareNormal(t: Tally, chain: SyntheticChain, ranges: readonly CheckedRange[], rows: readonly RawRow[], runs: ReadonlyMap<string, StoredRun>): void {
  const table = ranges[0]!.table;
  const byTask = new Map<string, Map<number, RawRow[]>>();
  const strays: RawRow[] = [];
  for (const row of rows) {
    if (typeof row._task_id !== "string" || typeof row._call !== "number") {
      strays.push(row);
      continue;
    }
    const calls = byTask.get(row._task_id) ?? new Map<number, RawRow[]>();
    byTask.set(row._task_id, calls);
    calls.set(row._call, [...(calls.get(row._call) ?? []), row]);
  }
  for (const r of ranges) {
    const succeeded = r.taskIds.filter((id) => runs.get(id)?.state === "SUCCEEDED");
    const winner = succeeded.at(-1);
    if (!winner) {
      t.unsettled++;
      t.problem(`${table.table} blocks ${r.fromBlock}..${r.toBlock}: none of ${r.taskIds.join(", ")} succeeded`);
    }
    t.blocks += r.toBlock - r.fromBlock + 1;
    for (const id of r.taskIds) {
      const calls = byTask.get(id) ?? new Map<number, RawRow[]>();
      byTask.delete(id);
      const run = runs.get(id);
      const current = run ? runName(id, run) : `${id} (no run in the store)`;
      for (let n = r.fromBlock; n <= r.toBlock; n++) {
        const call = n - r.fromBlock;
        const want = table.expectedRows(chain, n);
        const got = calls.get(call) ?? [];
        calls.delete(call);
        const { miss, dup, extra } = t.values(want, got);
        const stamps = new Set(got.map(stampOf));
        if (stamps.size > 1) {
          t.mixedRuns++;
          t.problem(`${table.table} task ${id} call ${call}: rows from ${[...stamps].join(", ")}`);
        }
        if (id === winner) {
          t.expectedRows += want.length;
          t.foundRows += got.length;
          t.missingRows += miss;
          t.duplicatedRows += dup;
          t.unexpectedRows += extra;
          if (miss + dup + extra > 0) t.problem(`${table.table} task ${id} call ${call} (block ${n}): ${want.length} rows expected, ${got.length} found (${miss} missing, ${dup} duplicated, ${extra} unexpected)`);
          const stale = got.filter((g) => stampOf(g) !== current);
          t.staleRows += stale.length;
          if (stale.length > 0) t.problem(`${table.table} task ${id} call ${call}: ${stale.length} of ${got.length} rows from ${[...new Set(stale.map(stampOf))].join(", ")}, not from ${current}, its final run`);
          continue;
        }
        // A task id that did not succeed (or a second one that did: its rows are a second run's).
        if (run?.state === "SUCCEEDED") {
          t.duplicatedRows += got.length;
          t.foundRows += got.length;
          if (got.length > 0) t.problem(`${table.table} task ${id} call ${call}: a second task id of blocks ${r.fromBlock}..${r.toBlock} succeeded too (${winner} is the last): its ${got.length} rows are a second run's`);
          continue;
        }
        t.leftByFailedRows += got.length;
        // Left rows must still be right, and each call's once.
        t.duplicatedRows += dup;
        t.unexpectedRows += extra;
        t.foundRows += dup + extra;
        const foreign = got.filter((g) => g[RUN_TASK_COLUMN] !== id);
        t.staleRows += foreign.length;
        if (dup + extra + foreign.length > 0) t.problem(`${table.table} task ${id} call ${call} (a task that did not succeed): ${dup} duplicated, ${extra} unexpected, ${foreign.length} of another task`);
      }
      // Calls past the range's end.
      for (const [call, got] of calls) {
        t.unexpectedRows += got.length;
        t.foundRows += got.length;
        t.problem(`${table.table} task ${id}: ${got.length} rows of call ${call}, past its range's ${r.toBlock - r.fromBlock + 1} calls`);
      }
    }
  }
  for (const [, calls] of byTask) for (const [, got] of calls) strays.push(...got);
  for (const row of strays) stray(t, table.table, row);
}

/** readSqlite reads every user table and the run table of a SQLite table store file. */
function readSqlite(path: string): StoreRead {
  const db = new Database(path, { readonly: true });
  try {
    const tables = new Map<string, RawRow[]>();
    const names = db.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_blockx\\_%' ESCAPE '\\'`).all() as { name: string }[];
    for (const { name } of names) tables.set(name, db.query(`SELECT * FROM "${name}"`).all() as RawRow[]);
    const hasRuns = db.query(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_blockx_runs'`).get() !== null;
    const runs = new Map<string, StoredRun>();
    if (hasRuns) {
      for (const r of db.query(`SELECT task_id, generation, seq, state FROM _blockx_runs`).all() as { task_id: string; generation: number; seq: number; state: string }[]) {
        runs.set(r.task_id, { generation: r.generation, seq: r.seq, state: r.state });
      }
    }
    return { tables, runs };
  } finally {
    db.close();
  }
}

/**
 * readParquet reads every user table of a Parquet dataset with DuckDB, as any engine would (by glob,
 * hidden columns included: a block table's scope, a normal table's task and call), and the run table
 * from the store's catalog with plain SQL. An integer column (digits in the file) comes back as a
 * number when it fits one exactly, as SQLite gives it; the hidden columns as numbers.
 */
async function readParquet(url: string): Promise<StoreRead> {
  const tables = new Map<string, RawRow[]>();
  for (const t of catalogTables(url)) {
    const ints = Object.entries(t.kinds ?? {}).filter(([, k]) => k === "INTEGER").map(([c]) => c);
    const rows = (await duckRows(url, t.name, "", "* EXCLUDE (filename)")).map((r) => {
      for (const c of [...ints, "_scope_from", "_scope_to", "_run_seq", "_call"]) {
        const v = r[c];
        if (typeof v === "bigint" || (typeof v === "string" && Number.isSafeInteger(Number(v)))) r[c] = Number(v);
      }
      delete r._run_seq; // the store's own bookkeeping, not a column SQLite's and Postgres's readers see
      return r;
    });
    tables.set(t.name, rows);
  }
  const catalog = new Database(join(parquetRootOf(url), "_blockx", "catalog.sqlite"), { readonly: true });
  try {
    const runs = new Map<string, StoredRun>();
    for (const r of catalog.query(`SELECT task_id, generation, seq, state FROM _blockx_runs`).all() as { task_id: string; generation: number; seq: number; state: string }[]) {
      runs.set(r.task_id, { generation: r.generation, seq: r.seq, state: r.state });
    }
    return { tables, runs };
  } finally {
    catalog.close();
  }
}

/**
 * readPostgres reads every user table of a Postgres table store (the public schema but the store's
 * own _blockx_ tables) and its run table. An exact integer column (NUMERIC) comes back as its
 * digits, turned into a number when it fits one exactly, as SQLite gives it; the hidden columns as
 * numbers.
 */
async function readPostgres(url: string): Promise<StoreRead> {
  const { SQL } = await import("bun");
  const sql = new SQL(url, { max: 1 });
  try {
    const tables = new Map<string, RawRow[]>();
    const columns = (await sql.unsafe(
      `SELECT table_name AS t, column_name AS c, data_type AS d FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_blockx\\_%' ORDER BY table_name, ordinal_position`,
    )) as { t: string; c: string; d: string }[];
    for (const name of new Set(columns.map((c) => c.t))) {
      const cols = columns.filter((c) => c.t === name);
      const select = cols.map(({ c, d }) => (d === "numeric" || d === "bigint" || d === "integer" || d === "jsonb" ? `"${c}"::text AS "${c}"` : `"${c}"`)).join(", ");
      const exact = new Set(cols.filter((c) => c.d === "numeric" || c.d === "bigint" || c.d === "integer").map((c) => c.c));
      const rows = ((await sql.unsafe(`SELECT ${select} FROM "${name}"`)) as RawRow[]).map((r) => {
        for (const c of exact) if (typeof r[c] === "string" && Number.isSafeInteger(Number(r[c]))) r[c] = Number(r[c]);
        return r;
      });
      tables.set(name, rows);
    }
    const runs = new Map<string, StoredRun>();
    const hasRuns = ((await sql.unsafe(`SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_blockx_runs'`)) as unknown[]).length > 0;
    if (hasRuns) {
      for (const r of (await sql.unsafe(`SELECT task_id, generation::float8 AS generation, seq::float8 AS seq, state FROM _blockx_runs`)) as { task_id: string; generation: number; seq: number; state: string }[]) {
        runs.set(r.task_id, { generation: Number(r.generation), seq: Number(r.seq), state: r.state });
      }
    }
    return { tables, runs };
  } finally {
    await sql.close({ timeout: 0 });
  }
}

export function checkPassed(c: CheckResult): boolean {
  return c.missingRows === 0 && c.duplicatedRows === 0 && c.unexpectedRows === 0 && c.staleRows === 0 && c.mixedRuns === 0 && c.unsettled === 0 && c.foundRows === c.expectedRows;
}
