import { Database } from "bun:sqlite";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import type { SoakRow, SoakTable } from "./soak-functions";

export const SOAK_CHAIN = "ethereum";

export interface CheckedRange {
  readonly table: SoakTable;
  readonly fromBlock: number;
  readonly toBlock: number;
}

/** CheckResult: rows compared block by block; `problems` names the first few blocks that differ. */
export interface CheckResult {
  readonly blocks: number;
  readonly expectedRows: number;
  readonly foundRows: number;
  readonly missingRows: number;
  readonly duplicatedRows: number;
  /** Rows that match no expected row of their block (a wrong value), or lie outside every checked range. */
  readonly unexpectedRows: number;
  readonly problems: string[];
}

const MAX_PROBLEMS = 20;

function canonical(row: Record<string, unknown>, columns: readonly string[]): string {
  return JSON.stringify(columns.map((c) => row[c] ?? null));
}

interface RawRow extends Record<string, unknown> {
  readonly _chain?: unknown;
  readonly _scope_from?: unknown;
  readonly _scope_to?: unknown;
}

/** Every user table of a store: rows of one block of the soak chain by block, the rest as stray. */
type TablesRead = Map<string, { byBlock: Map<number, RawRow[]>; stray: string[] }>;

/**
 * checkTables verifies the whole table store (a SQLite file, or a postgres:// URL), read with plain
 * SQL (not through the writer's class): every block of every range has exactly the rows
 * recomputed from SyntheticChain, each expected row once, and there is nothing else anywhere: a
 * row of another table, another chain, a scope wider than one block, or a block outside every
 * range counts as unexpected. A row present twice counts as duplicated, an absent one as missing,
 * a row with any other value as unexpected.
 */
export async function checkTables(store: string, ranges: readonly CheckedRange[]): Promise<CheckResult> {
  return compareRows(/^postgres(ql)?:\/\//.test(store) ? await readEveryPostgresTable(store) : readEverySqliteTable(store), ranges);
}

function compareRows(byTable: TablesRead, ranges: readonly CheckedRange[]): CheckResult {
  const chain = new SyntheticChain(SOAK_CHAIN);
  let blocks = 0;
  let expectedRows = 0;
  let foundRows = 0;
  let missingRows = 0;
  let duplicatedRows = 0;
  let unexpectedRows = 0;
  const problems: string[] = [];
  const problem = (s: string) => problems.length < MAX_PROBLEMS && problems.push(s);
  const checked = new Map<string, Set<number>>();
  for (const r of ranges) {
    const found = byTable.get(r.table.table)?.byBlock ?? new Map<number, RawRow[]>();
    let seen = checked.get(r.table.table);
    if (!seen) checked.set(r.table.table, (seen = new Set()));
    for (let n = r.fromBlock; n <= r.toBlock; n++) {
      if (seen.has(n)) continue; // the same block in two ranges (a rerun) is one block
      seen.add(n);
      blocks++;
      const want = r.table.expectedRows(chain, n);
      const columns = want[0] ? Object.keys(want[0]) : [];
      const got = found.get(n) ?? [];
      expectedRows += want.length;
      foundRows += got.length;
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
      const miss = [...left.values()].reduce((a, b) => a + b, 0);
      missingRows += miss;
      duplicatedRows += dup;
      unexpectedRows += extra;
      if (miss + dup + extra > 0) problem(`${r.table.table} block ${n}: ${want.length} rows expected, ${got.length} found (${miss} missing, ${dup} duplicated, ${extra} unexpected)`);
    }
  }
  // Everything no range accounts for: stray tables, stray chains and scopes, blocks outside every range.
  for (const [table, t] of byTable) {
    const seen = checked.get(table);
    for (const s of t.stray) {
      unexpectedRows++;
      foundRows++;
      problem(`${table}: a row outside every checked range (${s})`);
    }
    for (const [n, rows] of t.byBlock) {
      if (seen?.has(n)) continue;
      unexpectedRows += rows.length;
      foundRows += rows.length;
      problem(`${table} block ${n}: ${rows.length} rows outside every checked range`);
    }
  }
  return { blocks, expectedRows, foundRows, missingRows, duplicatedRows, unexpectedRows, problems };
}

/** readEverySqliteTable reads every user table of a SQLite table store file. */
function readEverySqliteTable(path: string): TablesRead {
  const db = new Database(path, { readonly: true });
  try {
    const out: TablesRead = new Map();
    const tables = db.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_blockx\\_%' ESCAPE '\\'`).all() as { name: string }[];
    for (const { name } of tables) out.set(name, sortRows(db.query(`SELECT * FROM "${name}"`).all() as RawRow[]));
    return out;
  } finally {
    db.close();
  }
}

/**
 * readEveryPostgresTable reads every user table of a Postgres table store (the public schema but
 * the store's own _blockx_ tables). An exact integer column (NUMERIC) comes back as its digits,
 * turned into a number when it fits one exactly, as SQLite gives it; the scope columns as numbers.
 */
async function readEveryPostgresTable(url: string): Promise<TablesRead> {
  const { SQL } = await import("bun");
  const sql = new SQL(url, { max: 1 });
  try {
    const out: TablesRead = new Map();
    const columns = (await sql.unsafe(
      `SELECT table_name AS t, column_name AS c, data_type AS d FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_blockx\\_%' ORDER BY table_name, ordinal_position`,
    )) as { t: string; c: string; d: string }[];
    for (const name of new Set(columns.map((c) => c.t))) {
      const cols = columns.filter((c) => c.t === name);
      const select = cols.map(({ c, d }) => (d === "numeric" || d === "bigint" || d === "integer" || d === "jsonb" ? `"${c}"::text AS "${c}"` : `"${c}"`)).join(", ");
      const exact = new Set(cols.filter((c) => c.d === "numeric" || c.d === "bigint" || c.d === "integer").map((c) => c.c));
      const rows = ((await sql.unsafe(`SELECT ${select} FROM "${name}"`)) as Record<string, unknown>[]).map((r) => {
        for (const c of exact) if (typeof r[c] === "string" && Number.isSafeInteger(Number(r[c]))) r[c] = Number(r[c]);
        return r as RawRow;
      });
      out.set(name, sortRows(rows));
    }
    return out;
  } finally {
    await sql.close({ timeout: 0 });
  }
}

/** sortRows files a table's rows: one block of the soak chain by block, anything else as stray. */
function sortRows(rows: readonly RawRow[]): { byBlock: Map<number, RawRow[]>; stray: string[] } {
  const t = { byBlock: new Map<number, RawRow[]>(), stray: [] as string[] };
  for (const row of rows) {
    const { _chain, _scope_from, _scope_to, _run_seq, ...user } = row;
    if (_chain !== SOAK_CHAIN || typeof _scope_from !== "number" || _scope_from !== _scope_to) {
      t.stray.push(`chain ${String(_chain)}, scope ${String(_scope_from)}..${String(_scope_to)}: ${JSON.stringify(user).slice(0, 120)}`);
      continue;
    }
    let list = t.byBlock.get(_scope_from);
    if (!list) t.byBlock.set(_scope_from, (list = []));
    list.push(user as SoakRow);
  }
  return t;
}

export function checkPassed(c: CheckResult): boolean {
  return c.missingRows === 0 && c.duplicatedRows === 0 && c.unexpectedRows === 0 && c.foundRows === c.expectedRows;
}
