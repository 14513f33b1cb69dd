import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FollowLedger } from "../../src/follow/adapters/follow-ledger";
import { openTableStore } from "../../src/outputs/stores/open-table-store";
import type { TableStore } from "../../src/outputs/stores/table-store";
import { loadClientConfig } from "../../src/sdk/client-config";
import { AnvilNode, ANVIL_CHAIN_ID, ANVIL_DEV_ACCOUNTS } from "../support/anvil";
import { AnvilMiner, type MinerFigures } from "../support/anvil-miner";
import { canonicalLag, followerStepTimes, type StepTimes } from "../support/follow-lag";
import { BLOCKX_BINARY, BlockxProcess, transportEnv } from "../support/blockx-process";
import { coinciding, lagFigures, type Excursion, type Happening, type LagFigures, type LagSample } from "./lag-stats";
import { reorgSchedule, type ReorgEvent } from "./reorg-schedule";
import type { SoakCluster } from "./soak-cluster";


/** The followed table, its chain (anvil) and what the follower may follow through (deeper stops it). */
export const FOLLOW_TABLE = "soak_follow";
export const FOLLOW_CHAIN = "anvil";
export const FOLLOW_FINALITY_DEPTH = 16;
/** The issue's figure: a follower keeps its table within this many blocks of the head. */
export const LAG_LIMIT_BLOCKS = 2;
/** A block is mined this often (AnvilMiner: anvil_mine from the soak's own timer). */
export const BLOCK_TIME_MS = 100;
/** Reorganisations: a few a minute, 1..3 deep, a quarter of them rollbacks (the tip dropped). */
const REORG_MEAN_GAP_MS = 15_000;
const REORG_MAX_DEPTH = 3;
const ROLLBACK_SHARE = 0.25;
/** The lag is sampled this often (anvil's head against the highest canonical block the table's ledger holds). */
const SAMPLE_EVERY_MS = 100;
/** The follower counts as level (its lag figures begin) once within the limit this many samples in a row (1 s). */
const LEVEL_SAMPLES = 10;
/** A reorganisation explains an excursion that begins this soon after it (its orphaned blocks are behind until rewritten). */
const REORG_SETTLE_MS = 1_000;
/** A follower catches up this long after a fault heals, and an excursion that begins within it is laid to that fault. */
const RECOVERY_MS = 5_000;

/** One row per block: its number and the hash of the block the call read (a row computed from an orphan shows it). */
export const FOLLOW_FN = `
def main(ctx, input):
    b = ctx.blockdb.block(input["blockNumber"], full=False)
    return [{"block": input["blockNumber"], "hash": b["hash"], "parent": b["parentHash"]}]
`;

/** The Workers' (and the follower's) route to anvil: straight to the node (see README "Soak": not through the fault relays). */
export function anvilChain(anvil: AnvilNode): Record<string, unknown> {
  return { source: "rpc", endpoints: [anvil.url], chainId: ANVIL_CHAIN_ID, finalityDepth: FOLLOW_FINALITY_DEPTH };
}

/** The soak's phases the lag is reported for: the follower alone on the cluster, beside the fault-free backfill, and under the faults. */
type LagPhase = "alone" | "baseline" | "faulted";

/** How long the follower runs alone on the cluster once level, before the backfill starts, unless set (`make soak ALONE_SECONDS=n`): its lag on an idle cluster. */
export const DEFAULT_ALONE_MS = 20_000;
/** A reorganisation waits this long at most for the follower to hold a block it would orphan (else it goes ahead). */
const REORG_WAIT_MS = 10_000;

/** ExcursionReport: a stretch beyond the limit, and what the soak was doing then (faults, reorganisations). */
export interface ExcursionReport extends Excursion {
  readonly coinciding: string[];
}

/** FollowCheck: the followed table against anvil's canonical chain after the follower stopped. */
export interface FollowCheck {
  readonly head: number;
  readonly rows: number;
  /** Blocks 1..head with no row. */
  readonly missing: number;
  /** Rows beyond a block's one. */
  readonly duplicated: number;
  /** Rows whose hash (the row's or its _block_hash) is not the canonical block's now. */
  readonly notCanonical: number;
  /** Rows holding a hash of a block a reorganisation of the schedule orphaned. */
  readonly orphaned: number;
  /** Rows outside 1..head, of another chain, or of a scope wider than one block. */
  readonly unexpected: number;
  readonly problems: string[];
}

export interface FollowReport {
  readonly table: string;
  readonly chain: string;
  readonly blockTimeMs: number;
  /** Blocks the soak mined (anvil_mine on its timer) and at what rate; ticks that came late and mined several blocks at once. */
  readonly mined: MinerFigures;
  readonly finalityDepth: number;
  /** Reorganisations the schedule made, by kind and depth; `tipHeld`: those done while the follower held a block they orphaned; `orphanedBlocks`: blocks whose hash they changed or dropped. */
  readonly reorgs: { readonly planned: number; readonly alone: number; readonly reorg: number; readonly rollback: number; readonly byDepth: Record<string, number>; readonly tipHeld: number; readonly orphanedBlocks: number; readonly failed: string[] };
  /** Reorganisations the follower went through: its "rewound the table" lines, and its published status's `reorgs`. */
  readonly survived: { readonly rewinds: number; readonly statusReorgs: number | null };
  /** Lag of the follower alone on the cluster (once level), beside the fault-free backfill (the baseline), and under the faults (and reorganisations). */
  readonly lagAlone: LagFigures;
  /** Of lagAlone's excursions, those that began within REORG_SETTLE_MS of a reorganisation. */
  readonly aloneExcursionsAtReorg: number;
  /** The lag alone, leaving out the samples within REORG_SETTLE_MS after each reorganisation. */
  readonly lagAloneBetweenReorgs: LagFigures;
  readonly lagBaseline: LagFigures;
  readonly lagFaulted: LagFigures;
  /** The follower's step times in each stretch. */
  readonly steps: { readonly alone: StepTimes; readonly baseline: StepTimes; readonly faulted: StepTimes };
  readonly excursions: ExcursionReport[];
  /** After the faults: mining stopped, how long the follower took to hold every block up to the head. */
  readonly catchUpMs: number | null;
  readonly check: FollowCheck | null;
  readonly verify: { readonly code: number; readonly out: string } | null;
  /** The follower's exit code on SIGTERM (0 expected), and anything that went wrong with it (each fails the soak). */
  readonly followerExit: number | null;
  readonly errors: string[];
  readonly passed: boolean;
}

/**
 * FollowSoak is the soak's follower variant (`make soak REORGS=1`, issue 50): anvil mining a
 * block every 100 ms, `blockx follow` (the compiled binary) keeping `soak_follow` current through
 * the soak's Coordinators and Workers while the backfill and its faults run, a seeded plan of
 * reorganisations (anvil_reorg 1..3 deep, sometimes anvil_rollback), and the follower's lag sampled
 * every 100 ms. At the end it stops mining, lets the follower catch up and stops it, then checks the
 * table against anvil (every block 1..head exactly once, each row's hash the canonical one, nothing
 * of an orphaned block) and runs `blockx verify`.
 */
export class FollowSoak {
  private follower: BlockxProcess | undefined;
  private readonly store: TableStore;
  private readonly ledger: FollowLedger;
  private readonly samples: { phase: LagPhase; sample: LagSample }[] = [];
  private phase: "starting" | LagPhase = "starting";
  /** When each stretch began (wall clock, as the follower's log lines carry it): its steps' times are told apart by it. */
  private readonly stretchSince: Partial<Record<LagPhase, number>> = {};
  private sampling = false;
  private levelRun = 0;
  private samplerDone: Promise<void> = Promise.resolve();
  private faultsStartMs = 0;
  /** Hashes of blocks the schedule's reorganisations orphaned (changed or dropped). */
  readonly orphanedHashes = new Set<string>();
  /** The reorganisations done, each with when it changed the chain on the lag samples' clock (`doneAtMs`). */
  private readonly done: (ReorgEvent & { readonly stretch: "alone" | "faulted"; readonly doneAtMs: number })[] = [];
  private readonly reorgErrors: string[] = [];
  private planned = 0;
  private readonly errors: string[] = [];
  private readonly miner: AnvilMiner;
  constructor(
    private readonly cluster: SoakCluster,
    private readonly anvil: AnvilNode,
    private readonly log: (line: string) => void,
  ) {
    const config = loadClientConfig(this.storeEnv());
    this.store = openTableStore(config, { inline: true });
    this.ledger = new FollowLedger(this.store, FOLLOW_TABLE, FOLLOW_CHAIN);
    this.miner = new AnvilMiner(anvil, BLOCK_TIME_MS);
  }

  /** storeEnv: the Workers' table store, reached directly (the follower and the soak run on the client's host). */
  private storeEnv(): Record<string, string> {
    const s = this.cluster.tableStore;
    return /^(postgres(ql)?|parquet):/.test(s) ? { TABLE_STORE_URL: s } : { TABLE_STORE_URL: "", TABLE_STORE_PATH: s };
  }

  private chainsConfig(): string {
    return JSON.stringify({ chains: { [FOLLOW_CHAIN]: anvilChain(this.anvil) } });
  }

  /** start mines, runs the follower from block 1 and the lag sampler (the baseline's figures start once it is level). */
  start(): void {
    this.miner.start();
    const fn = join(this.cluster.dir, "soak-follow.py");
    writeFileSync(fn, FOLLOW_FN);
    this.follower = BlockxProcess.spawn(["follow"], {
      ...transportEnv({}, "client"),
      ETCD_ENDPOINTS: this.cluster.etcd.endpoint,
      BLOCKX_COORDINATOR_ADDRS: this.cluster.coordinators.map((m) => m.addr).join(","),
      ...this.storeEnv(),
      CHAINS_CONFIG: this.chainsConfig(),
      FOLLOW_TABLE: FOLLOW_TABLE,
      FOLLOW_CHAIN: FOLLOW_CHAIN,
      FOLLOW_FUNCTION: fn,
      FOLLOW_FROM: "1",
      // Poll twice a block, retry soon: the lag measured is the cluster's, not the follower's waits.
      FOLLOW_POLL_MS: "50",
      FOLLOW_RETRY_MS: "100",
      // Its debug lines time each step (headers, task, rewind): where a round goes, per stretch.
      BLOCKX_LOG_LEVEL: "debug",
      // The soak client's patience (SOAK_THRESHOLDS): a lost Worker's task is resubmitted as quickly.
      BLOCKX_WORKER_LOST_AFTER_MS: "2000",
      BLOCKX_RPC_TIMEOUT_MS: "5000",
      BLOCKX_MAX_ATTEMPTS: "20",
    });
    void this.follower.exited.then((code) => this.noteExit(code));
    this.sampling = true;
    this.samplerDone = this.sampleLoop();
  }

  private enter(phase: LagPhase): void {
    this.phase = phase;
    this.stretchSince[phase] = Date.now();
  }

  /** stepTimes: the follower's step times (its debug lines) in one stretch, p50 and p99 by step, ms. */
  private stepTimes(phase: LagPhase): StepTimes {
    const order: LagPhase[] = ["alone", "baseline", "faulted"];
    const from = this.stretchSince[phase];
    if (from === undefined) return {};
    const to = order.slice(order.indexOf(phase) + 1).map((p) => this.stretchSince[p]).find((t) => t !== undefined) ?? Infinity;
    return followerStepTimes(this.follower?.lines ?? [], from, to);
  }

  private stopping = false;
  private noteExit(code: number): void {
    if (this.stopping) return;
    this.errors.push(`the follower exited on its own with ${code}: ${this.follower?.stderr.slice(-1_500)}; last lines: ${this.follower?.tail(5)}`);
  }

  /**
   * alone: once the follower is level with the head (it starts from block 1), `aloneMs` of it alone
   * on the cluster with the chain reorganising at random (the lag of a follower on an idle cluster,
   * which is what the issue's figure can be held to: see README "Soak"), then the backfill's
   * baseline begins.
   */
  async alone(seed: number, aloneMs: number): Promise<void> {
    const since = performance.now();
    while (this.phase === "starting" && performance.now() - since < 120_000 && this.follower?.proc.exitCode === null) await Bun.sleep(100);
    if (this.phase === "starting") this.errors.push(`the follower was not level with anvil's head within 120 s of its start; last lines: ${this.follower?.tail(5)}`);
    const t0 = performance.now();
    // Its own stream of the seed: the faulted stretch's plan stays what it was.
    const plan = reorgSchedule({ seed: seed + 0x10000, startMs: 2_000, endMs: aloneMs, meanGapMs: REORG_MEAN_GAP_MS, maxDepth: REORG_MAX_DEPTH, rollbackShare: ROLLBACK_SHARE });
    this.planned += plan.length;
    await this.carryOutPlan(plan, () => performance.now() - t0, "alone");
    await Bun.sleep(Math.max(0, aloneMs - (performance.now() - t0)));
    this.enter("baseline");
  }

  /** faultsStarted: from now the samples count as under faults, and the reorganisations begin (until durationMs after). */
  faultsStarted(nowMs: number, seed: number, durationMs: number, elapsed: () => number): Promise<void> {
    this.faultsStartMs = nowMs;
    this.enter("faulted");
    const plan = reorgSchedule({ seed, startMs: 5_000, endMs: durationMs, meanGapMs: REORG_MEAN_GAP_MS, maxDepth: REORG_MAX_DEPTH, rollbackShare: ROLLBACK_SHARE });
    this.planned += plan.length;
    return this.carryOutPlan(plan, elapsed, "faulted");
  }

  /** carryOutPlan does a plan's reorganisations at their times (`elapsed`: the plan's clock), noting each under its stretch. */
  private async carryOutPlan(plan: readonly ReorgEvent[], elapsed: () => number, stretch: "alone" | "faulted"): Promise<void> {
    for (const e of plan) {
      if (e.atMs > elapsed()) await Bun.sleep(e.atMs - elapsed());
      await this.reorganise(e, stretch).catch((err: unknown) => this.reorgErrors.push(`${e.kind} ${e.depth} at ${e.atMs} ms (${stretch}): ${String(err)}`));
    }
  }

  /**
   * reorganise waits (REORG_WAIT_MS at most) until the follower's ledger holds a block the event
   * would orphan, then does it: a follower under load lags more than 3 blocks most of the time, and
   * a reorganisation of blocks it has not written yet is no reorganisation to it.
   */
  private async reorganise(e: ReorgEvent, stretch: "alone" | "faulted"): Promise<void> {
    const since = performance.now();
    let held = false;
    while (!held && performance.now() - since < REORG_WAIT_MS) {
      const top = (await this.ledger.tail(1).catch(() => []))[0];
      held = top !== undefined && top.number > (await this.anvil.head()) - e.depth;
      if (!held) await Bun.sleep(20);
    }
    if (held) this.tipHeld++;
    return this.miner.onChain(() => this.reorganiseNow(e, stretch));
  }

  private transfers = 0;

  /** Reorganisations done while the follower held a block they orphaned (the others waited REORG_WAIT_MS in vain). */
  private tipHeld = 0;

  /** reorganiseNow does one event of the plan, keeping the hashes it orphaned (those that changed or went). */
  private async reorganiseNow(e: ReorgEvent, stretch: "alone" | "faulted"): Promise<void> {
    const head = await this.anvil.head();
    const before = new Map<number, string>();
    for (let n = Math.max(1, head - e.depth - 1); n <= head; n++) {
      const h = await this.anvil.hashAt(n);
      if (h) before.set(n, h);
    }
    // The chain changes from here: an excursion from now on may be this reorganisation's.
    const changedAtMs = Math.round(performance.now() - this.faultsStartMs);
    // AnvilNode.reorg puts a transfer in the new blocks: without one anvil may mine the very same
    // blocks again (the same hashes: seen for anvil_reorg of empty blocks within one second).
    if (e.kind === "reorg") {
      await this.anvil.reorg(e.depth);
    } else {
      await this.anvil.rollback(e.depth);
      // In the next block mined at the dropped height; without it the same block may come back.
      const transfer = { from: ANVIL_DEV_ACCOUNTS[0], to: ANVIL_DEV_ACCOUNTS[1], value: "0x" + (++this.transfers).toString(16) };
      await this.anvil.rpc("eth_sendTransaction", transfer).catch((err: unknown) => this.log(`a transfer after anvil_rollback failed: ${String(err)}`));
      // The transfer is mined at once (automine), unless anvil left it pending: then the chain grows
      // back here, before anything else touches it. (Two rollbacks of 3 a moment apart, the first
      // one's transfer not mined, were followed by a chain with no blocks 7118..7120 below its head.)
      if ((await this.anvil.head()) <= head - e.depth) await this.anvil.mine(1);
    }
    // A node whose chain has a hole below its head (it answers null there) is broken: no follower
    // can go past it, and the run says so by name rather than as the follower's failure.
    const after = await this.anvil.head();
    for (let n = Math.max(1, head - e.depth - 1); n <= after; n++) {
      if ((await this.anvil.hashAt(n)) === null) {
        this.errors.push(`anvil broke its chain: after ${e.kind} ${e.depth} deep at head ${head} it answers null for block ${n} below its head ${after}`);
        break;
      }
    }
    let orphaned = 0;
    for (const [n, h] of before) {
      if ((await this.anvil.hashAt(n)) !== h) {
        this.orphanedHashes.add(h);
        orphaned++;
      }
    }
    this.done.push({ ...e, stretch, doneAtMs: changedAtMs });
    const at = stretch === "faulted" ? `${((performance.now() - this.faultsStartMs) / 1000).toFixed(1)} s` : `alone, ${(e.atMs / 1000).toFixed(1)} s`;
    this.log(`[${at}] ${e.kind} ${e.depth} deep at head ${head}: ${orphaned} blocks orphaned`);
  }

  private async sampleLoop(): Promise<void> {
    while (this.sampling) {
      const t0 = performance.now();
      try {
        const lag = await canonicalLag(this.anvil, this.ledger, REORG_MAX_DEPTH);
        // Level once within the limit for LEVEL_SAMPLES samples in a row: the last catch-up ranges may bounce past it.
        this.levelRun = lag <= LAG_LIMIT_BLOCKS ? this.levelRun + 1 : 0;
        if (this.phase === "starting" && this.levelRun >= LEVEL_SAMPLES) this.enter("alone");
        if (this.phase !== "starting") this.samples.push({ phase: this.phase, sample: { atMs: Math.round(t0 - this.faultsStartMs), lag } });
      } catch {
        // The store or the node did not answer this time (a held lock, a busy box): the next sample will.
      }
      await Bun.sleep(Math.max(0, SAMPLE_EVERY_MS - (performance.now() - t0)));
    }
  }

  /**
   * finish: after the faults and the backfill. Stops mining, waits until the ledger holds every
   * block up to the head with its canonical hash (the follower caught up), reads its published
   * status, and stops it (SIGTERM: exit 0 expected).
   */
  async finish(reorgs: Promise<void>): Promise<{ head: number; catchUpMs: number | null; statusReorgs: number | null }> {
    await reorgs;
    this.sampling = false;
    await this.samplerDone;
    await this.miner.stop();
    const head = await this.anvil.head();
    const since = performance.now();
    let catchUpMs: number | null = null;
    while (performance.now() - since < 120_000 && this.follower?.proc.exitCode === null) {
      const top = (await this.ledger.tail(1))[0];
      if (top && top.number === head && top.hash === (await this.anvil.hashAt(head))) {
        catchUpMs = Math.round(performance.now() - since);
        break;
      }
      await Bun.sleep(100);
    }
    if (catchUpMs === null) this.errors.push(`the follower did not hold every block up to head ${head} within 120 s of the end (ledger up to ${(await this.ledger.tail(1))[0]?.number ?? "none"}); last lines: ${this.follower?.tail(10)}`);
    const statusReorgs = await this.statusReorgs();
    this.stopping = true;
    const code = await this.follower!.stop("SIGTERM");
    if (code !== 0) this.errors.push(`the follower exited ${code} on SIGTERM: ${this.follower!.stderr.slice(-1_000)}`);
    this.exitCode = code;
    return { head, catchUpMs, statusReorgs };
  }

  private exitCode: number | null = null;

  /** statusReorgs: the follower's published status (`blockx tasks --followers --json`), its `reorgs`. */
  private async statusReorgs(): Promise<number | null> {
    const p = Bun.spawn([BLOCKX_BINARY, "tasks", "--followers", "--json"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv({}, "client"), ETCD_ENDPOINTS: this.cluster.etcd.endpoint }, stdout: "pipe", stderr: "pipe" });
    const [out, code] = [await new Response(p.stdout).text(), await p.exited];
    try {
      const all = JSON.parse(out) as { table: string; chain: string; reorgs: number }[];
      return all.find((s) => s.table === FOLLOW_TABLE && s.chain === FOLLOW_CHAIN)?.reorgs ?? null;
    } catch {
      this.errors.push(`blockx tasks --followers --json exited ${code}: ${out.slice(0, 300)} ${(await new Response(p.stderr).text()).slice(0, 300)}`);
      return null;
    }
  }

  /**
   * check compares the followed table's rows (as the soak's checker read them, plain SQL) with
   * anvil's canonical chain now: blocks 1..head, one row each, the row's hash and its _block_hash
   * the canonical block's, none holding a hash a reorganisation orphaned, nothing else.
   */
  async check(rows: readonly Record<string, unknown>[], head: number): Promise<FollowCheck> {
    const problems: string[] = [];
    const problem = (s: string) => void (problems.length < 20 && problems.push(s));
    const byBlock = new Map<number, Record<string, unknown>[]>();
    let unexpected = 0;
    for (const r of rows) {
      const n = Number(r.block);
      if (r._chain !== FOLLOW_CHAIN || Number(r._scope_from) !== n || Number(r._scope_to) !== n || !(n >= 1 && n <= head)) {
        unexpected++;
        problem(`a row outside blocks 1..${head} of ${FOLLOW_CHAIN} (or of a wider scope): ${JSON.stringify(r).slice(0, 200)}`);
        continue;
      }
      byBlock.set(n, [...(byBlock.get(n) ?? []), r]);
    }
    let missing = 0;
    let duplicated = 0;
    let notCanonical = 0;
    let orphaned = 0;
    for (let n = 1; n <= head; n++) {
      const got = byBlock.get(n) ?? [];
      if (got.length === 0) {
        missing++;
        problem(`block ${n}: no row`);
        continue;
      }
      if (got.length > 1) {
        duplicated += got.length - 1;
        problem(`block ${n}: ${got.length} rows`);
      }
      const canonical = await this.anvil.hashAt(n);
      for (const r of got) {
        if (r.hash !== canonical || r._block_hash !== canonical) {
          notCanonical++;
          problem(`block ${n}: row hash ${String(r.hash)} (recorded ${String(r._block_hash)}), canonical ${canonical}`);
        }
        if ((r.hash !== canonical && this.orphanedHashes.has(String(r.hash))) || (r._block_hash !== canonical && this.orphanedHashes.has(String(r._block_hash)))) orphaned++;
      }
    }
    return { head, rows: rows.length, missing, duplicated, notCanonical, orphaned, unexpected, problems };
  }

  /** verify runs `blockx verify soak_follow --chain anvil --blocks 1..head` (exit 0: nothing missing, stale or doubled). */
  async verify(head: number): Promise<{ code: number; out: string }> {
    const p = Bun.spawn([BLOCKX_BINARY, "verify", FOLLOW_TABLE, "--chain", FOLLOW_CHAIN, "--blocks", `1..${head}`], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...this.storeEnv(), CHAINS_CONFIG: this.chainsConfig() },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
    return { code, out: (out + err).trim().slice(-1_500) };
  }

  /** report: the figures, with each excursion beyond the limit and the faults and reorganisations that coincide with it. */
  report(o: { happenings: readonly Happening[]; head: number; catchUpMs: number | null; statusReorgs: number | null; check: FollowCheck | null; verify: { code: number; out: string } | null }): FollowReport {
    const of = (phase: LagPhase) => this.samples.filter((s) => s.phase === phase).map((s) => s.sample);
    const lagFaulted = lagFigures(of("faulted"), LAG_LIMIT_BLOCKS);
    const windows = (stretch: "alone" | "faulted"): Happening[] => this.done.filter((e) => e.stretch === stretch).map((e) => ({ fromMs: e.doneAtMs, toMs: e.doneAtMs, what: `${e.kind} ${e.depth} deep` }));
    const reorgWindows = windows("faulted");
    // Alone, an excursion right after a reorganisation is the reorganisation itself: its orphaned
    // blocks count as behind until the follower has rewound and rewritten them.
    const aloneReorgs = windows("alone");
    const alone = of("alone");
    const atReorg = (atMs: number) => aloneReorgs.some((w) => atMs >= w.fromMs && atMs <= w.toMs + REORG_SETTLE_MS);
    const lagAlone = lagFigures(alone, LAG_LIMIT_BLOCKS);
    const aloneExcursionsAtReorg = lagAlone.excursions.filter((e) => coinciding(e, aloneReorgs, REORG_SETTLE_MS).length > 0).length;
    const excursions = lagFaulted.excursions.map((e) => ({ ...e, coinciding: coinciding(e, [...o.happenings, ...reorgWindows], RECOVERY_MS).map((h) => h.what) }));
    const byDepth: Record<string, number> = {};
    for (const e of this.done) byDepth[String(e.depth)] = (byDepth[String(e.depth)] ?? 0) + 1;
    const rewinds = [...(this.follower?.lines ?? [])].filter((l) => String(l.msg).startsWith("rewound the table to block")).length;
    const c = o.check;
    const errors = [...this.errors, ...this.reorgErrors];
    if (this.done.length === 0) errors.push("no reorganisation happened: the variant proves nothing");
    if (rewinds === 0) errors.push("the follower survived no reorganisation (no table rewound): the variant proves nothing");
    if (c && c.missing + c.duplicated + c.notCanonical + c.orphaned + c.unexpected > 0) errors.push(`the followed table is wrong: ${c.problems.slice(0, 3).join("; ")}`);
    if (!c || c.head === 0) errors.push("the followed table was not checked");
    if (o.verify?.code !== 0) errors.push(`blockx verify exited ${o.verify?.code}: ${o.verify?.out}`);
    return {
      table: FOLLOW_TABLE,
      chain: FOLLOW_CHAIN,
      blockTimeMs: BLOCK_TIME_MS,
      mined: this.miner.figures(),
      finalityDepth: FOLLOW_FINALITY_DEPTH,
      reorgs: { planned: this.planned, alone: this.done.filter((e) => e.stretch === "alone").length, reorg: this.done.filter((e) => e.kind === "reorg").length, rollback: this.done.filter((e) => e.kind === "rollback").length, byDepth, tipHeld: this.tipHeld, orphanedBlocks: this.orphanedHashes.size, failed: this.reorgErrors },
      survived: { rewinds, statusReorgs: o.statusReorgs },
      lagAlone,
      aloneExcursionsAtReorg,
      lagAloneBetweenReorgs: lagFigures(alone.filter((x) => !atReorg(x.atMs)), LAG_LIMIT_BLOCKS, 2 * SAMPLE_EVERY_MS),
      lagBaseline: lagFigures(of("baseline"), LAG_LIMIT_BLOCKS),
      lagFaulted,
      steps: { alone: this.stepTimes("alone"), baseline: this.stepTimes("baseline"), faulted: this.stepTimes("faulted") },
      excursions,
      catchUpMs: o.catchUpMs,
      check: c,
      verify: o.verify,
      followerExit: this.exitCode,
      errors,
      passed: errors.length === 0,
    };
  }

  async stop(): Promise<void> {
    this.sampling = false;
    await this.miner.stop();
    this.stopping = true;
    await this.follower?.stop("SIGKILL");
    await this.store.close();
    await this.anvil.stop();
  }
}

/** formatFollowReport: the follower's part of the soak's report. */
export function formatFollowReport(f: FollowReport): string {
  const steps = (t: StepTimes) =>
    Object.entries(t)
      .map(([k, v]) => `${k} ${v.p50} / ${v.p99}`)
      .join(", ") || "none";
  const lag = (l: LagFigures) =>
    `${l.samples} samples over ${(l.spanMs / 1000).toFixed(0)} s: max ${l.max}, p50 ${l.p50}, p99 ${l.p99} blocks; beyond ${l.limit} blocks ${(l.beyondMs / 1000).toFixed(1)} s (${l.spanMs > 0 ? ((100 * l.beyondMs) / l.spanMs).toFixed(1) : "0"}% of the time) in ${l.excursions.length} excursions`;
  const during = f.excursions.filter((e) => e.coinciding.some((w) => !/^(reorg|rollback) /.test(w)));
  const reorgOnly = f.excursions.filter((e) => e.coinciding.length > 0 && e.coinciding.every((w) => /^(reorg|rollback) /.test(w)));
  const none = f.excursions.filter((e) => e.coinciding.length === 0);
  const c = f.check;
  const lines = [
    `follower (blockx follow ${f.table} --chain ${f.chain}: a block mined on anvil every ${f.blockTimeMs} ms, finality depth ${f.finalityDepth}): ${f.passed ? "PASSED" : "FAILED"}`,
    `  mined: ${f.mined.blocks} blocks, ${f.mined.perSecond}/s; ${f.mined.lateTicks} ticks came late and mined several at once (at most ${f.mined.mostAtOnce})`,
    `  blocks followed: ${c?.head ?? "?"} (1..${c?.head ?? "?"}); caught up ${f.catchUpMs === null ? "never" : `${f.catchUpMs} ms`} after the end`,
    `  reorganisations done: ${f.reorgs.reorg + f.reorgs.rollback} of ${f.reorgs.planned} planned (${f.reorgs.reorg} anvil_reorg, ${f.reorgs.rollback} anvil_rollback; by depth ${JSON.stringify(f.reorgs.byDepth)}), ${f.reorgs.tipHeld} while the follower held a block they orphaned; ${f.reorgs.orphanedBlocks} blocks orphaned`,
    `  reorganisations the follower survived (table rewound): ${f.survived.rewinds}; its status says ${f.survived.statusReorgs ?? "?"}`,
    `  lag alone on the cluster (${f.reorgs.alone} of the reorganisations): ${lag(f.lagAlone)}; ${f.aloneExcursionsAtReorg} of its excursions began within ${REORG_SETTLE_MS / 1000} s after a reorganisation; outside those seconds: ${lag(f.lagAloneBetweenReorgs)}`,
    `  lag beside the backfill, no faults: ${lag(f.lagBaseline)}`,
    `  lag under faults:   ${lag(f.lagFaulted)}`,
    `  the follower's steps (p50 / p99 ms): alone ${steps(f.steps.alone)}; beside the backfill ${steps(f.steps.baseline)}; under faults ${steps(f.steps.faulted)}`,
    `  lag limit ${LAG_LIMIT_BLOCKS} blocks: ${f.lagAloneBetweenReorgs.max <= LAG_LIMIT_BLOCKS ? "held" : "NOT held"} alone between reorganisations, ${f.lagFaulted.max <= LAG_LIMIT_BLOCKS ? "held" : "NOT held"} under faults (reported, not asserted); excursions: ${during.length} during or just after a fault, ${reorgOnly.length} at a reorganisation only, ${none.length} with neither`,
    ...[...f.excursions]
      .sort((a, b) => b.maxLag - a.maxLag)
      .slice(0, 12)
      .map((e) => `    ${(e.fromMs / 1000).toFixed(1)}-${(e.toMs / 1000).toFixed(1)} s: up to ${e.maxLag} blocks; ${e.coinciding.length ? e.coinciding.join(" | ").slice(0, 240) : "no fault, no reorganisation"}`),
    c ? `  check: ${c.rows} rows for blocks 1..${c.head}: missing ${c.missing}, duplicated ${c.duplicated}, not canonical ${c.notCanonical}, holding an orphaned hash ${c.orphaned}, unexpected ${c.unexpected}` : "  check: not done",
    `  blockx verify ${f.table} --chain ${f.chain}: exit ${f.verify?.code ?? "?"}${f.verify ? ` (${f.verify.out.split("\n").at(-1)})` : ""}`,
    ...f.errors.map((e) => `  FAILED: ${e.slice(0, 600)}`),
    ...(c?.problems ?? []).slice(0, 10).map((p) => `    ${p}`),
  ];
  return lines.join("\n");
}
