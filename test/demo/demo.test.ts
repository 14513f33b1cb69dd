/**
 * scripts/demo.sh (what `make demo` runs after deps and build) end to end on a smaller range:
 * blockx dev comes up, the block-statistics example fills its table, the first rows are
 * printed, and everything is stopped: the script exits 0 and nothing of dev is left running.
 * It runs with bubblewrap absent from PATH, as on a fresh machine: the executors' sandbox comes
 * from the checkout's .cache/bubblewrap, which `make demo` fetches (scripts/demo-fresh-clone.sh
 * runs the whole `make demo` from a fresh clone the same way).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { RawTableReader } from "../support/raw-table-reader";
import { processesMentioning } from "../support/proc-scan";
import { pathWithout } from "../support/path-without";

const REPO = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "blockx-demotest-"));
const noBwrap = pathWithout(["bwrap"]);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  noBwrap.remove();
});

test("make demo's script, bubblewrap absent from PATH: dev up, the example over 500 blocks, first rows printed, everything stopped", async () => {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", join(REPO, "scripts", "demo.sh")], {
    cwd: REPO,
    env: { PATH: noBwrap.path, HOME: process.env.HOME ?? "/root", DEMO_BLOCKS: "18000000..18000499", DEMO_DIR: dir, DEV_WORKERS: "1", DEV_BUNDLE_WORKERS: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text(), await proc.exited];
  if (code !== 0) throw new Error(`demo.sh exited ${code}\n${out}\n${err}`);
  expect(out).toContain("== blockx submit --function examples/block-stats/block_stats.py --entry main --blocks 18000000..18000499");
  expect(out).toContain("18000000");
  expect(out).toContain("== done");
  expect(err).toContain("SIGINT: stopping every child");
  const store = new RawTableReader(join(dir, "tables.sqlite"));
  const rows = store.query("block_stats", "ORDER BY block");
  store.close();
  const chain = new SyntheticChain("ethereum");
  expect(rows.length).toBe(500);
  expect(rows.map((r) => r.tx_count)).toEqual(Array.from({ length: 500 }, (_, i) => chain.block(18_000_000 + i, false)!.transactions.length));
  expect(processesMentioning(dir)).toEqual([]);
}, 240_000);
