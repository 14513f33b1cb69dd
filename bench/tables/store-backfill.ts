/**
 * bench/tables/store-backfill.ts: rows/s of a backfill into the Postgres table store, against
 * (1) a plain bulk insert of the same rows from one process (multi-row INSERT, 1,000 rows per
 * statement, one transaction per 10,000 rows) into the same server, (2) the same backfill into
 * the SQLite table store and (3) into the Parquet dataset store (one file per block), with the
 * bytes on disk per row of each store's table (Postgres: pg_total_relation_size; SQLite: the
 * file after a checkpoint, less the warm-up table's pages; Parquet: the table's files). One compiled Worker (EXECUTOR_COUNT 2 by default), one block_table task
 * whose function returns ROWS rows per block without IO, so the table store is what is measured.
 * CPU per row counts the Worker and its executors, plus the Postgres server's processes for the
 * Postgres lines (this bench's own process for the bulk insert). All in the same run.
 *
 *   bun bench/tables/store-backfill.ts [--blocks 5000] [--rows 5] [--executors 2]
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SQL } from "bun";
import { FunctionCallConfig, Task, TaskState } from "../../src/gen/worker/v1/worker";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { startPostgres } from "../../test/support/postgres";
import { treeCpuSeconds } from "../../test/support/proc-scan";
import { rawRows } from "../../test/support/raw-table-reader";
import { randomLanePrefix } from "../../test/support/worker-double";
import { WorkerClient } from "../../test/support/worker-client";

const { values } = parseArgs({ options: { blocks: { type: "string", default: "5000" }, rows: { type: "string", default: "5" }, executors: { type: "string", default: "2" } } });
const BLOCKS = Number(values.blocks);
const ROWS = Number(values.rows);
const FN = `def main(ctx, input):\n    n = input['blockNumber']\n    return [{'block': n, 'i': i, 'amount': n * 1000 + i, 'note': 'row'} for i in range(${ROWS})]\n`;

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-tables-"));
Bun.spawnSync(["chmod", "755", dir]);
const etcd = await EtcdProcess.start();
const pg = await startPostgres();

interface Figures {
  readonly rowsPerSecond: number;
  readonly cpuMsPerRow: number;
  readonly rows: number;
  readonly bytesPerRow: number;
}

/** bytesOf: bytes on disk of the table `rows` in a store (see the header). */
async function bytesOf(store: Record<string, string>): Promise<number> {
  const url = store.TABLE_STORE_URL ?? "";
  if (url.startsWith("postgres")) {
    const sql = new SQL(url, { max: 1 });
    const n = Number(((await sql.unsafe(`SELECT pg_total_relation_size('rows')::bigint AS n`)) as { n: string }[])[0]!.n);
    await sql.close();
    return n;
  }
  if (url.startsWith("parquet:")) {
    const walk = (d: string): number => readdirSync(d, { withFileTypes: true }).reduce((s, e) => s + (e.isDirectory() ? walk(join(d, e.name)) : statSync(join(d, e.name)).size), 0);
    return walk(join(url.slice("parquet://".length), "rows"));
  }
  const { Database } = await import("bun:sqlite");
  const db = new Database(store.TABLE_STORE_PATH!);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  // dbstat is not compiled into every SQLite: the file's pages less the warm-up table's share (rows: 1/(1+200/BLOCKS)).
  const pages = (db.query("PRAGMA page_count").get() as { page_count: number }).page_count * (db.query("PRAGMA page_size").get() as { page_size: number }).page_size;
  db.close();
  return pages * (BLOCKS / (BLOCKS + 200));
}

/** backfill: one task of BLOCKS blocks through a fresh Worker writing to `store`. */
async function backfill(name: string, store: Record<string, string>): Promise<Figures> {
  const w = BlockxProcess.spawn(["worker"], { ETCD_ENDPOINTS: etcd.endpoint, BLOCKX_LOG_LEVEL: "info", WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: randomLanePrefix("block"), EXECUTOR_COUNT: values.executors!, EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared", ...store });
  const client = new WorkerClient(await w.grpcAddr());
  try {
    const run = async (taskId: string, from: number, to: number, table: string) => {
      const slot = await client.requestTaskSlot(taskId);
      if (!slot.ok) throw new Error(slot.details);
      const task = Task.fromPartial({
        taskId,
        functionCallConfig: FunctionCallConfig.fromPartial({ function: { source: FN, entry: "main" }, config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } } }),
        outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
      });
      const isPg = (store.TABLE_STORE_URL ?? "").startsWith("postgres");
      const cpu0 = treeCpuSeconds(w.proc.pid).self + treeCpuSeconds(w.proc.pid).children + (isPg ? pgCpu() : 0);
      const t0 = performance.now();
      const sub = await client.submitTask(task, slot.value.slotId);
      if (!sub.ok) throw new Error(sub.details);
      const last = (await client.watch([taskId])).snapshots.at(-1)!;
      const seconds = (performance.now() - t0) / 1000;
      const cpu1 = treeCpuSeconds(w.proc.pid).self + treeCpuSeconds(w.proc.pid).children + (isPg ? pgCpu() : 0);
      if (last.state !== TaskState.SUCCEEDED) throw new Error(`${name}: ${TaskState[last.state]} ${last.error?.message}`);
      return { seconds, cpu: cpu1 - cpu0 };
    };
    await run(`${name}-warm`, 1_000_000, 1_000_199, "warm");
    const r = await run(`${name}-run`, 0, BLOCKS - 1, "rows");
    const n = (await rawRows(store.TABLE_STORE_URL ?? store.TABLE_STORE_PATH!, "rows")).length;
    if (n !== BLOCKS * ROWS) throw new Error(`${name}: ${n} rows, expected ${BLOCKS * ROWS}`);
    return { rowsPerSecond: n / r.seconds, cpuMsPerRow: (r.cpu * 1000) / n, rows: n, bytesPerRow: (await bytesOf(store)) / n };
  } finally {
    client.close();
    await w.stop("SIGKILL");
  }
}

function pgCpu(): number {
  const t = treeCpuSeconds(pg.pid!);
  return t.self + t.children;
}

/** bulk: the same rows, from this process, in multi-row INSERTs into a table of the same types. */
async function bulk(url: string): Promise<Figures> {
  const sql = new SQL(url, { max: 1 });
  await sql.unsafe(`CREATE TABLE bulk_rows (block NUMERIC(78,0), i NUMERIC(78,0), amount NUMERIC(78,0), note TEXT, _chain TEXT NOT NULL, _scope_from BIGINT NOT NULL, _scope_to BIGINT NOT NULL)`);
  const cpu0 = process.cpuUsage();
  const pg0 = pgCpu();
  const t0 = performance.now();
  const per = 1000;
  for (let start = 0; start < BLOCKS; start += 10_000 / ROWS) {
    await sql.begin(async (tx) => {
      const rows: (string | number)[][] = [];
      for (let n = start; n < Math.min(BLOCKS, start + 10_000 / ROWS); n++) for (let i = 0; i < ROWS; i++) rows.push([String(n), String(i), String(n * 1000 + i), "row", "ethereum", String(n), String(n)]);
      for (let k = 0; k < rows.length; k += per) {
        const part = rows.slice(k, k + per);
        const params = part.flat();
        const tuples = part.map((_, j) => `(${[0, 1, 2].map((c) => `$${j * 7 + c + 1}::text::numeric`).join(", ")}, $${j * 7 + 4}::text, $${j * 7 + 5}::text, $${j * 7 + 6}::text::bigint, $${j * 7 + 7}::text::bigint)`);
        await tx.unsafe(`INSERT INTO bulk_rows VALUES ${tuples.join(", ")}`, params);
      }
    });
  }
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  const cpu = (c.user + c.system) / 1e6 + (pgCpu() - pg0);
  const n = Number(((await sql.unsafe(`SELECT count(*)::int AS n FROM bulk_rows`)) as { n: number }[])[0]!.n);
  await sql.close();
  return { rowsPerSecond: n / seconds, cpuMsPerRow: (cpu * 1000) / n, rows: n, bytesPerRow: 0 };
}

try {
  console.log(`Table stores: a ${BLOCKS}-block backfill, ${ROWS} rows per block, through one compiled Worker (EXECUTOR_COUNT=${values.executors}); same run, same machine\n`);
  const b = await bulk(await pg.createDatabase("bulk"));
  const p = await backfill("postgres", { TABLE_STORE_URL: await pg.createDatabase("backfill") });
  const s = await backfill("sqlite", { TABLE_STORE_PATH: join(dir, "tables.sqlite") });
  const q = await backfill("parquet", { TABLE_STORE_URL: `parquet://${join(dir, "dataset")}` });
  console.log("| measure | plain bulk INSERT, one process (baseline) | backfill into Postgres | backfill into SQLite | backfill into Parquet | Postgres / bulk | Postgres / SQLite | Parquet / SQLite |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  console.log(`| rows/s | ${b.rowsPerSecond.toFixed(0)} | ${p.rowsPerSecond.toFixed(0)} | ${s.rowsPerSecond.toFixed(0)} | ${q.rowsPerSecond.toFixed(0)} | ${(p.rowsPerSecond / b.rowsPerSecond).toFixed(2)}x | ${(p.rowsPerSecond / s.rowsPerSecond).toFixed(2)}x | ${(q.rowsPerSecond / s.rowsPerSecond).toFixed(2)}x |`);
  console.log(`| CPU ms per row | ${b.cpuMsPerRow.toFixed(3)} | ${p.cpuMsPerRow.toFixed(3)} | ${s.cpuMsPerRow.toFixed(3)} | ${q.cpuMsPerRow.toFixed(3)} | ${(p.cpuMsPerRow / b.cpuMsPerRow).toFixed(2)}x | ${(p.cpuMsPerRow / s.cpuMsPerRow).toFixed(2)}x | ${(q.cpuMsPerRow / s.cpuMsPerRow).toFixed(2)}x |`);
  console.log(`| bytes on disk per row | | ${p.bytesPerRow.toFixed(0)} | ${s.bytesPerRow.toFixed(0)} | ${q.bytesPerRow.toFixed(0)} | | ${(p.bytesPerRow / s.bytesPerRow).toFixed(2)}x | ${(q.bytesPerRow / s.bytesPerRow).toFixed(2)}x |`);
  console.log(`\n(rows checked: bulk ${b.rows}, Postgres ${p.rows}, SQLite ${s.rows}, Parquet ${q.rows}; the backfill lines include the executors' Python and the Worker's call path; calls' commits are grouped, one transaction per group; Parquet rows read back by DuckDB)`);
} finally {
  await pg.destroy();
  await etcd.destroy();
  rmSync(dir, { recursive: true, force: true });
}
