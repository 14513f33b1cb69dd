/**
 * bench/tables/verify.ts: how long `blockx verify` takes over a large block table, against a
 * plain scan of the same table (every row read once with bun:sqlite, in this process), same run.
 * The table: BLOCKS blocks of a synthetic block table in the SQLite store, ROWS rows per block,
 * each recording its block's hash (written with plain SQL in the store's own schema: the table is
 * made by the store, its rows bulk-inserted). The chain: a minimal JSON-RPC node in this process
 * that answers eth_getBlockByNumber with a header (number, hash = sha256 of the number, parentHash
 * the previous block's), so the node costs little and verify's own work is what is measured; its
 * CPU is reported apart. verify runs as the compiled binary (dist/blockx), the JSON report read back.
 *
 *   bun bench/tables/verify.ts [--blocks 1000000] [--rows 1]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SqliteTableStore } from "../../src/outputs/stores/sqlite-table-store";
import { replaceBlockRows } from "../../src/outputs/stores/table-store";
import { BLOCKX_BINARY } from "../../test/support/blockx-process";

const { values } = parseArgs({ options: { blocks: { type: "string", default: "1000000" }, rows: { type: "string", default: "1" } } });
const BLOCKS = Number(values.blocks);
const ROWS = Number(values.rows);

const hashOf = (n: number) => (n < 0 ? "0x" + "0".repeat(64) : "0x" + new Bun.CryptoHasher("sha256").update(String(n)).digest("hex"));

// The node: headers only, batches as JSON-RPC clients send them.
let nodeRequests = 0;
const node = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (r) => {
    nodeRequests++;
    const body = (await r.json()) as { id: number; method: string; params: [string, boolean] }[] | { id: number; method: string; params: [string, boolean] };
    const answer = (q: { id: number; method: string; params: [string, boolean] }) => {
      if (q.method === "eth_chainId") return { jsonrpc: "2.0", id: q.id, result: "0x7a69" };
      const n = parseInt(q.params[0], 16);
      return { jsonrpc: "2.0", id: q.id, result: { number: q.params[0], hash: hashOf(n), parentHash: hashOf(n - 1) } };
    };
    return Response.json(Array.isArray(body) ? body.map(answer) : answer(body));
  },
});

const dir = mkdtempSync(join(tmpdir(), "blockx-bench-verify-"));
const path = join(dir, "tables.sqlite");
try {
  // The table, made by the store (schema, metadata, index), then filled with plain SQL.
  let t0 = performance.now();
  const store = new SqliteTableStore(path, { inline: true });
  await replaceBlockRows(store, "facts", { chain: "dev", fromBlock: 0, toBlock: 0, blockHash: hashOf(0) }, Array.from({ length: ROWS }, (_, i) => ({ block: 0, i, amount: i, note: "row" })));
  await store.close();
  const db = new Database(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");
  const insert = db.query(`INSERT INTO facts (block, i, amount, note, _chain, _scope_from, _scope_to, _run_seq, _block_hash) VALUES (?, ?, ?, 'row', 'dev', ?, ?, 1, ?)`);
  db.transaction(() => {
    for (let n = 1; n < BLOCKS; n++) {
      const h = hashOf(n);
      for (let i = 0; i < ROWS; i++) insert.run(n, i, n * 1000 + i, n, n, h);
    }
  })();
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  const buildS = (performance.now() - t0) / 1000;
  const mb = statSync(path).size / 1e6;

  // Baseline: every row of the table read once.
  t0 = performance.now();
  const reader = new Database(path, { readonly: true });
  let scanned = 0;
  for (const _row of reader.query(`SELECT * FROM facts`).iterate()) scanned++;
  reader.close();
  const scanS = (performance.now() - t0) / 1000;

  // verify, as a user runs it.
  const cpu0 = process.cpuUsage();
  t0 = performance.now();
  const p = Bun.spawn([BLOCKX_BINARY, "verify", "facts", "--chain", "dev", "--json"], {
    env: { ...process.env, TABLE_STORE_PATH: path, TABLE_STORE_URL: "", CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: [`http://127.0.0.1:${node.port}`], chainId: 31337 } } }) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const verifyS = (performance.now() - t0) / 1000;
  const nodeCpu = process.cpuUsage(cpu0);
  if (code !== 0) throw new Error(`verify exited ${code}: ${err} ${out.slice(0, 500)}`);
  const report = JSON.parse(out) as { scopes: number; rows: number; clean: boolean; seconds: number };
  console.log(
    JSON.stringify({
      blocks: BLOCKS,
      rowsPerBlock: ROWS,
      tableMB: Number(mb.toFixed(1)),
      buildSeconds: Number(buildS.toFixed(1)),
      plainScan: { rows: scanned, seconds: Number(scanS.toFixed(2)), rowsPerSecond: Math.round(scanned / scanS) },
      verify: { clean: report.clean, scopes: report.scopes, rows: report.rows, seconds: Number(verifyS.toFixed(2)), ownSeconds: report.seconds, blocksPerSecond: Math.round(BLOCKS / verifyS) },
      verifyOverScan: Number((verifyS / scanS).toFixed(1)),
      node: { httpRequests: nodeRequests, cpuSeconds: Number(((nodeCpu.user + nodeCpu.system) / 1e6).toFixed(1)) },
    }),
  );
} finally {
  node.stop(true);
  rmSync(dir, { recursive: true, force: true });
}
