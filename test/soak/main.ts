/**
 * `make soak SEED=n MINUTES=m [BASELINE_SECONDS=60] [STORE=sqlite|postgres|parquet] [REORGS=1 [ALONE_SECONDS=20]]`: the long soak, after
 * a fault-free baseline on the same cluster. Every Worker is a host of its own on the network (TCP
 * fault relays to its clients, etcd and, with STORE=postgres, Postgres: a private server started for
 * the soak). Prints the fault log as it goes, then the report; writes every task's outcome to
 * soak-report-<store>-<seed>.json; exits 1 on any missing, duplicated or stale row or any task that
 * never succeeded. REORGS=1: also anvil mining every 100 ms and reorganising at random, and
 * `blockx follow` keeping a table current through it all, ALONE_SECONDS of it alone on the cluster
 * first (README "Soak": the follower under faults).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeSuiteCerts } from "../support/suite-tls";
import { formatReport, runSoak } from "./soak-run";

function intArg(name: string, fallback: number, min = 0): number {
  const raw = process.env[name] ?? "";
  if (raw === "") return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > 1_000_000) {
    console.error(`${name} must be an integer from ${min} to 1000000, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return v;
}

const seed = intArg("SEED", 1);
const minutes = intArg("MINUTES", 10);
const baselineSeconds = intArg("BASELINE_SECONDS", 60);
const store = process.env.STORE || "sqlite";
const follow = intArg("REORGS", 0) > 0;
// With REORGS=1: how long the follower runs alone on the cluster, the chain reorganising, before the backfill (default 20 s).
const aloneSeconds = intArg("ALONE_SECONDS", 20, 1);
if (store !== "sqlite" && store !== "postgres" && store !== "parquet") {
  console.error(`STORE must be sqlite, postgres or parquet, got ${JSON.stringify(store)}`);
  process.exit(2);
}
// Postgres and Parquet move fewer rows per second here (every commit of a table waits for its lock;
// a Parquet commit encodes and fsyncs files): smaller tasks, fewer at once, unless set.
const slower = store === "postgres" || store === "parquet";
const blocksPerTask = intArg("BLOCKS_PER_TASK", slower ? 25 : 100, 1);
const concurrency = intArg("CONCURRENCY", slower ? 4 : 6, 1);
// Worker variables to try under the soak, passed through: IO_*, CALL_MAX_ATTEMPTS, EXECUTOR_*.
const workerEnv = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => /^(IO_|EXECUTOR_|CALL_MAX_ATTEMPTS$)/.test(e[0]) && e[1] !== undefined));
// mTLS with a role certificate each, as under `make test` and as a production cluster runs: one
// private CA for the soak. (In plaintext every caller is anonymous, so each task is its own executor
// owner and every task paid an executor's start, 100-200 ms: the follower's rounds were mostly that.)
const tlsDir = mkdtempSync(join(tmpdir(), "blockx-soak-tls-"));
makeSuiteCerts(tlsDir);
process.env.BLOCKX_TEST_TLS_DIR = tlsDir;
process.on("exit", () => rmSync(tlsDir, { recursive: true, force: true }));
const started = new Date().toISOString();
console.log(`soak: seed ${seed}, table store ${store}, tasks of ${blocksPerTask} blocks, ${concurrency} at once, ${baselineSeconds} s of backfill without faults, then ${minutes} minutes with${follow ? `, and a follower of anvil reorganising at random (${aloneSeconds} s of it alone first)` : ""} (mTLS, a private CA; started ${started})`);
const report = await runSoak({ seed, store, blocksPerTask, concurrency, durationMs: minutes * 60_000, baselineMs: baselineSeconds * 1000, workerEnv, follow, followAloneMs: aloneSeconds * 1000, log: (l) => console.log(l) });
const out = `soak-report-${store}-${seed}.json`;
writeFileSync(out, JSON.stringify({ started, minutes, ...report }, null, 2));
console.log("\n" + formatReport(report));
console.log(`\nevery task's outcome: ${out}`);
process.exit(report.passed ? 0 : 1);
