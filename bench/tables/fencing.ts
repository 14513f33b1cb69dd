/**
 * bench/tables/fencing.ts: what fencing costs a backfill into the Postgres table store. The same
 * backfill through PostgresTableStore, as Workers' task runners drive it (tasks of TASK_BLOCKS
 * blocks, TASKS at once, IN_FLIGHT calls in all committing at once, so their commits share group
 * commits; one call per block, ROWS rows each), twice per round in the same run, order rotated:
 *  - fenced: each task's run claimed first (claimRun), every commit under its fence (the run read
 *    FOR SHARE in the group's transaction, the claim order kept with each block's rows);
 *  - unfenced: the same commits without a fence (what the store did before fencing).
 * Rows/s and CPU per row (this process plus the Postgres server's) for each, and their ratio per
 * round. The Worker's own work per call (executors, dispatch) is the same either way and is left
 * out, so the ratio is the worst case a real backfill sees. Aim: fenced within 10% (ratio >= 0.90).
 *
 *   bun bench/tables/fencing.ts [--blocks 4000] [--rows 5] [--rounds 5] [--in-flight 64] [--tasks 4] [--task-blocks 100]
 */
import { parseArgs } from "node:util";
import { PostgresTableStore } from "../../src/outputs/stores/postgres-table-store";
import type { TableWrite } from "../../src/outputs/stores/table-store";
import { startPostgres } from "../../test/support/postgres";
import { treeCpuSeconds } from "../../test/support/proc-scan";
import { interleavedRounds, interferenceNote, median } from "../support/rounds";
import { driveBackfill } from "../support/store-backfill-driver";

const { values } = parseArgs({ options: { blocks: { type: "string", default: "4000" }, rows: { type: "string", default: "5" }, rounds: { type: "string", default: "5" }, "in-flight": { type: "string", default: "64" }, "task-blocks": { type: "string", default: "100" }, tasks: { type: "string", default: "4" } } });
const BLOCKS = Number(values.blocks);
const ROWS = Number(values.rows);
const ROUNDS = Number(values.rounds);
const IN_FLIGHT = Number(values["in-flight"]);
const TASK_BLOCKS = Number(values["task-blocks"]);
const TASKS_IN_FLIGHT = Number(values.tasks);

const pg = await startPostgres();
const url = await pg.createDatabase("fencing_bench");
const store = new PostgresTableStore({ url, poolSize: 8, statementTimeoutMs: 30_000, idleInTransactionTimeoutMs: 10_000, connectTimeoutMs: 5_000, reconnectMinMs: 100, reconnectMaxMs: 2_000, deadlineMarginMs: 2_000, tls: "", tlsCaFile: "" });
await store.openEpoch("bench-epoch", "bench", 600_000);

type Series = "fenced" | "unfenced";
interface Figures {
  rowsPerSecond: number;
  cpuMsPerRow: number;
}

function cpuSeconds(): number {
  const own = process.cpuUsage();
  const server = treeCpuSeconds(pg.pid!);
  return (own.user + own.system) / 1e6 + server.self + server.children;
}

let round = 0;
/**
 * backfill writes BLOCKS blocks into a fresh table as a client's backfill does: tasks of TASK_BLOCKS
 * blocks, TASKS_IN_FLIGHT of them at once (the SDK's runTasks concurrency), each running
 * IN_FLIGHT / TASKS_IN_FLIGHT calls at once; a fenced task first claims its run (when a Worker
 * accepts it), while the other tasks' calls go on.
 */
async function backfill(series: Series): Promise<Figures> {
  const table = `rows_${series}_${round++}`;
  const write = (block: number): TableWrite[] => [
    { kind: "replaceBlock", table, scope: { chain: "eth", fromBlock: block, toBlock: block }, rows: Array.from({ length: ROWS }, (_, i) => ({ block, i, amount: block * 1000 + i, note: "row" })) },
  ];
  // The first call creates the table (as a task's first commit does), outside the timing.
  await store.commit(write(BLOCKS + 1), null);
  const cpu0 = cpuSeconds();
  const seconds = await driveBackfill(store, { blocks: BLOCKS, taskBlocks: TASK_BLOCKS, tasks: TASKS_IN_FLIGHT, inFlight: IN_FLIGHT }, table, write, series === "fenced");
  const cpu = cpuSeconds() - cpu0;
  const rows = BLOCKS * ROWS;
  return { rowsPerSecond: rows / seconds, cpuMsPerRow: (cpu * 1000) / rows };
}

console.log(`fencing cost: ${BLOCKS} blocks x ${ROWS} rows into Postgres, tasks of ${TASK_BLOCKS} blocks, ${TASKS_IN_FLIGHT} at once, ${IN_FLIGHT} calls in flight, ${ROUNDS} interleaved rounds`);
await backfill("fenced"); // warm both paths and the server
await backfill("unfenced");
const results = await interleavedRounds<Series, Figures>(["fenced", "unfenced"], ROUNDS, backfill, (r) => console.log(`  round ${r} done`));
const ratios = results.fenced.map((f, i) => f.rowsPerSecond / results.unfenced[i]!.rowsPerSecond);
const fmt = (xs: number[], d = 0) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})`;
console.log(`unfenced: ${fmt(results.unfenced.map((x) => x.rowsPerSecond))} rows/s, ${fmt(results.unfenced.map((x) => x.cpuMsPerRow), 4)} CPU ms/row`);
console.log(`fenced:   ${fmt(results.fenced.map((x) => x.rowsPerSecond))} rows/s, ${fmt(results.fenced.map((x) => x.cpuMsPerRow), 4)} CPU ms/row`);
console.log(`fenced/unfenced rows/s per round: ${ratios.map((r) => r.toFixed(3)).join(", ")}; median ${median(ratios).toFixed(3)} (aim >= 0.90: ${median(ratios) >= 0.9 ? "met" : "not met"})`);
const note = interferenceNote({ fenced: results.fenced.map((x) => x.cpuMsPerRow), unfenced: results.unfenced.map((x) => x.cpuMsPerRow) }, "row");
if (note) console.log(note);
await store.close();
await pg.destroy();
