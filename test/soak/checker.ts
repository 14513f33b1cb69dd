import { SyntheticChain } from "../../src/worker/backends/localtestservice/synthetic-chain";
import { SqliteTableStore } from "../../src/worker/writers/table-store";
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
  /** Rows that match no expected row of their block (a wrong value). */
  readonly unexpectedRows: number;
  readonly problems: string[];
}

const MAX_PROBLEMS = 20;

function canonical(row: Record<string, unknown>, columns: readonly string[]): string {
  return JSON.stringify(columns.map((c) => row[c] ?? null));
}

/**
 * checkTables verifies, from the table store alone, that every block of every range has
 * exactly the rows recomputed from SyntheticChain: each expected row once, nothing else. A
 * row present twice counts as duplicated, an absent one as missing, a row with any other value
 * as unexpected.
 */
export function checkTables(tableStorePath: string, ranges: readonly CheckedRange[]): CheckResult {
  const chain = new SyntheticChain(SOAK_CHAIN);
  const store = new SqliteTableStore(tableStorePath);
  let blocks = 0;
  let expectedRows = 0;
  let foundRows = 0;
  let missingRows = 0;
  let duplicatedRows = 0;
  let unexpectedRows = 0;
  const problems: string[] = [];
  const problem = (s: string) => problems.length < MAX_PROBLEMS && problems.push(s);
  try {
    for (const r of ranges) {
      const found = readRange(store, r);
      for (let n = r.fromBlock; n <= r.toBlock; n++) {
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
  } finally {
    store.close();
  }
  return { blocks, expectedRows, foundRows, missingRows, duplicatedRows, unexpectedRows, problems };
}

function readRange(store: SqliteTableStore, r: CheckedRange): Map<number, SoakRow[]> {
  const byBlock = new Map<number, SoakRow[]>();
  let rows: Record<string, unknown>[];
  try {
    rows = store.query(r.table.table, "WHERE _chain = ? AND _scope_from BETWEEN ? AND ?", [SOAK_CHAIN, r.fromBlock, r.toBlock]);
  } catch {
    return byBlock; // the table was never written: every row is missing
  }
  for (const row of rows) {
    const n = Number(row._scope_from);
    let list = byBlock.get(n);
    if (!list) byBlock.set(n, (list = []));
    list.push(row as SoakRow);
  }
  return byBlock;
}

export function checkPassed(c: CheckResult): boolean {
  return c.missingRows === 0 && c.duplicatedRows === 0 && c.unexpectedRows === 0 && c.foundRows === c.expectedRows;
}
