import { existsSync } from "node:fs";
import { openTableStore } from "../../outputs/stores/open-table-store";
import { type CellValue, TableStoreError } from "../../outputs/stores/table-store";
import { UsageError } from "../usage-error";
import { flagValue, intFlag } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";

function cell(v: unknown): string {
  return v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
}

/**
 * `blockx table NAME` reads a table from the store the environment names, as the Workers do:
 * TABLE_STORE_URL (Postgres) when set, else the SQLite file TABLE_STORE_PATH. Integers beyond
 * 2^53 print (and --json writes) every digit.
 */
export const tableRun: ClientCommandRun = async (args, _client, config) => {
  const name = args.positional[0]!; // exactly one: tableMeta's positionals
  if (!name) throw new UsageError("usage: blockx table NAME [--limit N] [--order COLUMN] [--json]");
  if (config.tableStoreUrl.trim() === "" && !existsSync(config.tableStorePath)) {
    throw new UsageError(`no table store at ${config.tableStorePath} (set TABLE_STORE_PATH to the Workers' file, or TABLE_STORE_URL to their Postgres)`);
  }
  const limit = intFlag(args, "limit", 0) ?? 20;
  const order = flagValue(args, "order");
  if (order !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(order)) throw new UsageError(`--order: expected a column name, got ${JSON.stringify(order)}`);
  const store = openTableStore(config, { inline: true });
  let rows: Record<string, CellValue>[];
  try {
    rows = await store.read(name, { ...(order ? { orderBy: order } : {}), limit });
  } catch (e) {
    if (e instanceof TableStoreError) {
      console.error(`blockx table: ${e.message}`);
      return e.code === "STORE_UNAVAILABLE" ? EXIT.UNREACHABLE : EXIT.TASK_FAILED;
    }
    throw e;
  } finally {
    await store.close();
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
