import { Database } from "bun:sqlite";
import { SyntheticChain } from "../../src/worker/backends/localtestservice/synthetic-chain";
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

/**
 * checkTables verifies the whole table store file, read with plain SQL (not through the writer's
 * class): every block of every range has exactly the rows recomputed from SyntheticChain, each
 * expected row once, and there is nothing else anywhere: a row of another table, another chain, a
 * scope wider than one block, or a block outside every range counts as unexpected. A row present
 * twice counts as duplicated, an absent one as missing, a row with any other value as unexpected.
 */
export function checkTables(tableStorePath: string, ranges: readonly CheckedRange[]): CheckResult {
  const chain = new SyntheticChain(SOAK_CHAIN);
  const db = new Database(tableStorePath, { readonly: true });
  let blocks = 0;
  let expectedRows = 0;
  let foundRows = 0;
  let missingRows = 0;
  let duplicatedRows = 0;
  let unexpectedRows = 0;
  const problems: string[] = [];
  const problem = (s: string) => problems.length < MAX_PROBLEMS && problems.push(s);
  try {
    const byTable = readEveryTable(db);
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
  } finally {
    db.close();
  }
  return { blocks, expectedRows, foundRows, missingRows, duplicatedRows, unexpectedRows, problems };
}

/** readEveryTable reads every user table of the file: rows of one block of the soak chain by block, the rest as stray. */
function readEveryTable(db: Database): Map<string, { byBlock: Map<number, RawRow[]>; stray: string[] }> {
  const out = new Map<string, { byBlock: Map<number, RawRow[]>; stray: string[] }>();
  const tables = db.query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_blockx\\_%' ESCAPE '\\'`).all() as { name: string }[];
  for (const { name } of tables) {
    const t = { byBlock: new Map<number, RawRow[]>(), stray: [] as string[] };
    out.set(name, t);
    for (const row of db.query(`SELECT * FROM "${name}"`).all() as RawRow[]) {
      const { _chain, _scope_from, _scope_to, ...user } = row;
      if (_chain !== SOAK_CHAIN || typeof _scope_from !== "number" || _scope_from !== _scope_to) {
        t.stray.push(`chain ${String(_chain)}, scope ${String(_scope_from)}..${String(_scope_to)}: ${JSON.stringify(user).slice(0, 120)}`);
        continue;
      }
      let list = t.byBlock.get(_scope_from);
      if (!list) t.byBlock.set(_scope_from, (list = []));
      list.push(user as SoakRow);
    }
  }
  return out;
}

export function checkPassed(c: CheckResult): boolean {
  return c.missingRows === 0 && c.duplicatedRows === 0 && c.unexpectedRows === 0 && c.foundRows === c.expectedRows;
}
