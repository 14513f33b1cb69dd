/**
 * bench/follow/lag.ts: how far `blockx follow` stays behind a chain that makes a block every 100 ms
 * (anvil, mined by the bench's own timer), on a cluster it has to itself, and where its rounds go.
 *
 * Two clusters in the same run, each a compiled Coordinator and Worker (2 executors) of its own
 * lane and an anvil of its own: one under mTLS (a private CA; the follower's tasks are all one
 * identity's, so the Worker's executors stay warm between them), one in plaintext
 * (BLOCKX_INSECURE=1: every caller anonymous, so each task is its own executor owner and every
 * block pays an executor's start). Interleaved rounds; in each, per cluster:
 *
 * - a fresh table followed from the head by the soak's function (a row per block, with the hash it
 *   read) for --seconds once the follower is level (within 2 blocks), the lag sampled every 100 ms
 *   (anvil's head minus the highest block the table's scope ledger holds that is still canonical);
 *   with --reorgs a reorganisation 1-3 blocks deep (anvil_reorg) every 5 s;
 * - the follower's steps, from its debug lines: reading the headers, the task (reserve, submit, run,
 *   commit), the ledger read back after it;
 * - the baseline: the same cluster's tiniest task (one call, no IO, its value returned) through the
 *   SDK's runTask, one at a time: what a task costs there before it reads a block or writes a table.
 *
 * Prints, per cluster, the medians over rounds: lag p50 / p99 / max and time beyond 2 blocks, the
 * step times, and the follower's task against the baseline task (a ratio).
 *
 *   bun bench/follow/lag.ts [--rounds 3] [--seconds 30] [--reorgs]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FollowLedger } from "../../src/follow/adapters/follow-ledger";
import { openTableStore } from "../../src/outputs/stores/open-table-store";
import type { TableStore } from "../../src/outputs/stores/table-store";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { BLOCK_TIME_MS, FOLLOW_FN, LAG_LIMIT_BLOCKS } from "../../test/soak/follow-soak";
import { lagFigures, percentile, type LagSample } from "../../test/soak/lag-stats";
import { AnvilNode, ANVIL_CHAIN_ID } from "../../test/support/anvil";
import { AnvilMiner } from "../../test/support/anvil-miner";
import { TestCluster } from "../../test/support/cluster";
import { EtcdProcess } from "../../test/support/etcd";
import { canonicalLag, followerStepTimes, type StepTimes } from "../../test/support/follow-lag";
import { makeSuiteCerts } from "../../test/support/suite-tls";
import { inputsTask } from "../../test/support/worker-client";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "3" }, seconds: { type: "string", default: "30" }, reorgs: { type: "boolean", default: false } } });
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const LIMIT = LAG_LIMIT_BLOCKS;
const TINY_TASKS = 60;

type Mode = "mtls" | "plaintext";

interface Side {
  readonly mode: Mode;
  readonly anvil: AnvilNode;
  readonly cluster: TestCluster;
  readonly env: Record<string, string>;
  readonly sdk: BlockxClient;
  readonly store: TableStore;
  readonly fn: string;
}

interface RoundFigures {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly beyondShare: number;
  readonly reorgs: number;
  readonly steps: StepTimes;
  readonly tinyP50: number;
}

// The mTLS side's certificates: the suite's CA (test/support/suite-tls.ts), made for this run.
const tlsDir = mkdtempSync(join(tmpdir(), "blockx-lag-tls-"));
makeSuiteCerts(tlsDir);
process.env.BLOCKX_TEST_TLS_DIR = tlsDir;
const etcd = await EtcdProcess.start();

async function startSide(mode: Mode): Promise<Side> {
  const anvil = await AnvilNode.start();
  await anvil.mine(5);
  const cluster = new TestCluster(undefined, etcd.endpoint);
  const chains = JSON.stringify({ chains: { anvil: { source: "rpc", endpoints: [anvil.url], chainId: ANVIL_CHAIN_ID, finalityDepth: 16 } } });
  const transport: Record<string, string> = mode === "plaintext" ? { BLOCKX_INSECURE: "1" } : {};
  await cluster.worker({ ...transport, CHAINS_CONFIG: chains, EXECUTOR_COUNT: "2" });
  await cluster.withFreeCapacity(1);
  const coordinator = (await cluster.coordinator(transport)).addr;
  const storeEnv = { TABLE_STORE_PATH: cluster.tableStorePath, TABLE_STORE_URL: "" };
  const env = { ...transport, ETCD_ENDPOINTS: etcd.endpoint, BLOCKX_COORDINATOR_ADDRS: coordinator, CHAINS_CONFIG: chains, ...storeEnv };
  const fn = join(cluster.dir, "follow.py");
  writeFileSync(fn, FOLLOW_FN);
  return { mode, anvil, cluster, env, sdk: new BlockxClient(cluster.clientConfig(env)), store: openTableStore(loadClientConfig(storeEnv), { inline: true }), fn };
}

let tableSeq = 0;

async function measure(side: Side): Promise<RoundFigures> {
  const table = `lag_${side.mode}_${++tableSeq}`;
  const ledger = new FollowLedger(side.store, table, "anvil");
  const miner = new AnvilMiner(side.anvil, BLOCK_TIME_MS);
  const from = (await side.anvil.head()) + 1;
  miner.start();
  const follower = side.cluster.spawn("follow", {
    ...side.env,
    FOLLOW_TABLE: table,
    FOLLOW_CHAIN: "anvil",
    FOLLOW_FUNCTION: side.fn,
    FOLLOW_FROM: String(from),
    // As in the soak: the head asked twice a block, a failed step tried again soon.
    FOLLOW_POLL_MS: "50",
    FOLLOW_RETRY_MS: "100",
    BLOCKX_LOG_LEVEL: "debug",
  });
  const samples: LagSample[] = [];
  let reorgs = 0;
  try {
    const levelBy = performance.now() + 60_000;
    while ((await canonicalLag(side.anvil, ledger, 3)) > LIMIT) {
      if (performance.now() > levelBy || follower.proc.exitCode !== null) throw new Error(`the ${side.mode} follower was not level within 60 s: ${follower.tail(5)}`);
      await Bun.sleep(100);
    }
    const linesBefore = follower.lines.length;
    const t0 = performance.now();
    let nextReorgMs = 5_000;
    while (performance.now() - t0 < SECONDS * 1000) {
      const at = performance.now() - t0;
      if (values.reorgs && at >= nextReorgMs) {
        nextReorgMs += 5_000;
        await miner.onChain(() => side.anvil.reorg(1 + (reorgs % 3)));
        reorgs++;
      }
      samples.push({ atMs: Math.round(at), lag: await canonicalLag(side.anvil, ledger, 3) });
      await Bun.sleep(Math.max(0, BLOCK_TIME_MS - (performance.now() - t0 - at)));
    }
    const f = lagFigures(samples, LIMIT);
    return {
      p50: f.p50,
      p99: f.p99,
      max: f.max,
      beyondShare: f.spanMs > 0 ? f.beyondMs / f.spanMs : 0,
      reorgs,
      steps: followerStepTimes(follower.lines.slice(linesBefore)),
      tinyP50: await tinyTaskP50(side),
    };
  } finally {
    await follower.stop("SIGTERM");
    await miner.stop();
  }
}

/** tinyTaskP50: the baseline, the cluster's tiniest task through runTask, one at a time (ms). */
async function tinyTaskP50(side: Side): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < TINY_TASKS; i++) {
    const t = performance.now();
    const run = await side.sdk.runTask(inputsTask(`tiny-${side.mode}-${tableSeq}-${i}`, "def main(ctx, x):\n    return x + 1\n", [1]), { cluster: "block" });
    if (!run.succeeded) throw new Error(`the baseline task failed on the ${side.mode} cluster: ${JSON.stringify(run.result.snapshot?.error)}`);
    ms.push(performance.now() - t);
  }
  return percentile(ms.slice(10), 0.5);
}

const sides: Record<Mode, Side> = { mtls: await startSide("mtls"), plaintext: await startSide("plaintext") };
try {
  console.log(`bench/follow/lag.ts: a block every ${BLOCK_TIME_MS} ms, ${ROUNDS} interleaved rounds of ${SECONDS} s per cluster${values.reorgs ? ", a reorganisation 1-3 deep every 5 s" : ""}`);
  const byMode = await interleavedRounds<Mode, RoundFigures>(["mtls", "plaintext"], ROUNDS, (m) => measure(sides[m]), (r) => console.log(`  round ${r} done`));
  const fmt = (x: number) => (Math.round(x * 10) / 10).toString();
  for (const mode of ["mtls", "plaintext"] as const) {
    const rs = byMode[mode];
    const med = (f: (r: RoundFigures) => number) => median(rs.map(f));
    const stepNames = [...new Set(rs.flatMap((r) => Object.keys(r.steps)))];
    const task = med((r) => r.steps.task?.p50 ?? NaN);
    console.log(
      `${mode}: lag p50 ${med((r) => r.p50)}, p99 ${med((r) => r.p99)}, max ${med((r) => r.max)} blocks (max of rounds ${Math.max(...rs.map((r) => r.max))}); beyond ${LIMIT} blocks ${fmt(100 * med((r) => r.beyondShare))}% of the time; ` +
        `reorganisations ${rs.reduce((s, r) => s + r.reorgs, 0)}`,
    );
    for (const s of stepNames) console.log(`  ${s}: p50 ${fmt(med((r) => r.steps[s]?.p50 ?? NaN))} ms, p99 ${fmt(med((r) => r.steps[s]?.p99 ?? NaN))} ms`);
    console.log(`  baseline, the tiniest task through runTask: p50 ${fmt(med((r) => r.tinyP50))} ms; the follower's task / baseline = ${fmt(task / med((r) => r.tinyP50))}x`);
  }
} finally {
  for (const s of Object.values(sides)) {
    s.sdk.close();
    await s.store.close();
    await s.cluster.stop();
    await s.anvil.stop();
  }
  await etcd.stop();
  rmSync(tlsDir, { recursive: true, force: true });
}
// Open handles (the SDK's channels, etcd's watch) would keep the process up after the figures.
process.exit(0);
