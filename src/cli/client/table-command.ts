import { existsSync } from "node:fs";
import { SqliteTableStore, TableStoreError } from "../../common/tables/table-store";
import { UsageError } from "../exec-command";
import { flagValue, intFlag } from "./args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";

function cell(v: unknown): string {
  return v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
}

export const tableRun: ClientCommandRun = async (args, _client, config) => {
  const [name, ...extra] = args.positional;
  if (!name || extra.length > 0) throw new UsageError("usage: blockx table NAME [--limit N] [--order COLUMN] [--json]");
  if (!existsSync(config.tableStorePath)) throw new UsageError(`no table store at ${config.tableStorePath} (set TABLE_STORE_PATH to the Workers' file)`);
  const limit = intFlag(args, "limit", 0) ?? 20;
  const order = flagValue(args, "order");
  if (order !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(order)) throw new UsageError(`--order: expected a column name, got ${JSON.stringify(order)}`);
  const store = new SqliteTableStore(config.tableStorePath);
  let rows: Record<string, unknown>[];
  try {
    rows = store.query(name, `${order ? `ORDER BY "${order}"` : ""} ${limit > 0 ? "LIMIT ?" : ""}`, limit > 0 ? [limit] : []);
  } catch (e) {
    if (e instanceof TableStoreError || (e as Error).name === "SQLiteError") {
      console.error(`blockx table: ${(e as Error).message}`);
      return EXIT.TASK_FAILED;
    }
    throw e;
  } finally {
    store.close();
  }
  if (args.flags.has("json")) {
    console.log(JSON.stringify(rows));
    return EXIT.OK;
  }
  if (rows.length === 0) {
    console.log(`table ${name}: no rows`);
    return EXIT.OK;
  }
  const cols = Object.keys(rows[0]!);
  const grid = [cols, ...rows.map((r) => cols.map((c) => cell(r[c])))];
  const widths = cols.map((_, i) => Math.min(60, Math.max(...grid.map((r) => r[i]!.length))));
  for (const r of grid) console.log(r.map((c, i) => (c.length > 60 ? c.slice(0, 57) + "..." : c).padEnd(widths[i]!)).join("  ").trimEnd());
  return EXIT.OK;
};
