/**
 * bench/tables/scope-ledger.ts: what the scope ledger costs a backfill. A block-table commit with
 * record_scopes also writes its scope to the table's ledger (`_blockx_scopes_<table>`, one row) in
 * the same transaction: the rows a follower resumes from and verify reads for scopes without rows. The same
 * backfill through the store, as a Worker's task runner drives it (tasks of TASK_BLOCKS blocks,
 * TASKS at once, IN_FLIGHT calls committing at once so they share group commits, one call per block,
 * ROWS rows each, fenced as Workers do), twice per round in the same run, order rotated:
 *  - ledger: BlockTableWriter's writes with record_scopes (the rows and the ledger's row), as a
 *    follower's tasks commit;
 *  - rows-only: the same commits without the ledger's write (record_scopes off, the default).
 * Rows/s and CPU per row (this process, plus the server's for Postgres), and their ratio per round.
 * The Worker's other work per call is the same either way and left out: the ratio is the worst
 * case a real backfill sees. Aim: with the ledger within 10% (ratio >= 0.90).
 *
 *   bun bench/tables/scope-ledger.ts [--store sqlite|postgres] [--blocks 4000] [--rows 5] [--rounds 5]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BlockTableWriter } from "../../src/outputs/block-table-output";
import { PostgresTableStore } from "../../src/outputs/stores/postgres-table-store";
import { SqliteTableStore } from "../../src/outputs/stores/sqlite-table-store";
import type { TableStore, TableWrite } from "../../src/outputs/stores/table-store";
import type { JsonValue } from "../../src/runtime/json/raw-json";
import { startPostgres } from "../../test/support/postgres";
import { treeCpuSeconds } from "../../test/support/proc-scan";
import { interleavedRounds, interferenceNote, median } from "../support/rounds";
import { driveBackfill } from "../support/store-backfill-driver";

const { values } = parseArgs({
  options: {
    store: { type: "string", default: "sqlite" },
    blocks: { type: "string", default: "4000" },
    rows: { type: "string", default: "5" },
    rounds: { type: "string", default: "5" },
    "in-flight": { type: "string", default: "64" },
    "task-blocks": { type: "string", default: "100" },
    tasks: { type: "string", default: "4" },
  },
});
const BLOCKS = Number(values.blocks);
const ROWS = Number(values.rows);
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = Number(values["in-flight"]);
const TASK_BLOCKS = Number(values["task-blocks"]);
const TASKS_IN_FLIGHT = Number(values.tasks);

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-ledger-"));
const pg = values.store === "postgres" ? await startPostgres() : null;
const store: TableStore = pg
  ? new PostgresTableStore({ url: await pg.createDatabase("ledger_bench"), poolSize: 8, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" })
  : new SqliteTableStore(join(dir, "tables.sqlite"));
await store.openEpoch("bench-epoch", "bench", 600_000);

type Series = "ledger" | "rows-only";
interface Figures {
  rowsPerSecond: number;
  cpuMsPerRow: number;
}

function cpuSeconds(): number {
  const own = process.cpuUsage();
  const server = pg ? treeCpuSeconds(pg.pid!) : { self: 0, children: 0 };
  return (own.user + own.system) / 1e6 + server.self + server.children;
}

let round = 0;
async function backfill(series: Series): Promise<Figures> {
  const table = `rows_${series.replace("-", "_")}_${round++}`;
  const writer = new BlockTableWriter(table, (input) => ({ chain: "eth", fromBlock: (input as { n: number }).n, toBlock: (input as { n: number }).n }), series === "ledger");
  const hash = "0x" + "ab".repeat(32);
  const write = (block: number): TableWrite[] => {
    const staged = writer.stage({ index: block, input: { n: block }, value: Array.from({ length: ROWS }, (_, i) => ({ block, i, amount: block * 1000 + i, note: "row" })) as unknown as JsonValue, blockHash: hash });
    return staged;
  };
  await store.commit(write(BLOCKS + 1), null); // the tables are made outside the timing
  const cpu0 = cpuSeconds();
  const seconds = await driveBackfill(store, { blocks: BLOCKS, taskBlocks: TASK_BLOCKS, tasks: TASKS_IN_FLIGHT, inFlight: IN_FLIGHT }, table, write, true);
  const cpu = cpuSeconds() - cpu0;
  const rows = BLOCKS * ROWS;
  return { rowsPerSecond: rows / seconds, cpuMsPerRow: (cpu * 1000) / rows };
}

console.log(`scope ledger cost: ${BLOCKS} blocks x ${ROWS} rows into ${store.description}, tasks of ${TASK_BLOCKS} blocks, ${TASKS_IN_FLIGHT} at once, ${IN_FLIGHT} calls in flight, ${ROUNDS} interleaved rounds`);
await backfill("ledger"); // warm both paths
await backfill("rows-only");
const results = await interleavedRounds<Series, Figures>(["ledger", "rows-only"], ROUNDS, backfill, (r) => console.log(`  round ${r} done`));
const ratios = results.ledger.map((f, i) => f.rowsPerSecond / results["rows-only"][i]!.rowsPerSecond);
const fmt = (xs: number[], d = 0) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})`;
console.log(`rows-only: ${fmt(results["rows-only"].map((x) => x.rowsPerSecond))} rows/s, ${fmt(results["rows-only"].map((x) => x.cpuMsPerRow), 4)} CPU ms/row`);
console.log(`ledger:    ${fmt(results.ledger.map((x) => x.rowsPerSecond))} rows/s, ${fmt(results.ledger.map((x) => x.cpuMsPerRow), 4)} CPU ms/row`);
console.log(`ledger/rows-only rows/s per round: ${ratios.map((r) => r.toFixed(3)).join(", ")}; median ${median(ratios).toFixed(3)} (aim >= 0.90: ${median(ratios) >= 0.9 ? "met" : "not met"})`);
const note = interferenceNote({ ledger: results.ledger.map((x) => x.cpuMsPerRow), "rows-only": results["rows-only"].map((x) => x.cpuMsPerRow) }, "row");
if (note) console.log(note);
await store.close();
await pg?.destroy();
rmSync(dir, { recursive: true, force: true });
