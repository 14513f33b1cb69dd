import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FollowLedger } from "../../src/follow/adapters/follow-ledger";
import { openTableStore } from "../../src/outputs/stores/open-table-store";
import type { TableStore } from "../../src/outputs/stores/table-store";
import { loadClientConfig } from "../../src/sdk/client-config";
import { AnvilNode, ANVIL_CHAIN_ID, ANVIL_DEV_ACCOUNTS } from "../support/anvil";
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
/**
 * A block is mined this often, by anvil_mine from the soak's own timer: anvil's `--block-time 0.1`
 * takes fractions of a second, but under interval mining (anvil 1.7.1) an anvil_rollback left a
 * hole the node answered null for, and the follower stopped there.
 */
export const BLOCK_TIME_MS = 100;
/** Reorganisations: a few a minute, 1..3 deep, a quarter of them rollbacks (the tip dropped). */
const REORG_MEAN_GAP_MS = 15_000;
const REORG_MAX_DEPTH = 3;
const ROLLBACK_SHARE = 0.25;
/** The lag is sampled this often (anvil's head against the highest canonical block the table's ledger holds). */
const SAMPLE_EVERY_MS = 100;
/** A follower catches up this long after a fault heals, and an excursion that begins within it is laid to that fault. */
const RECOVERY_MS = 5_000;

/** One row per block: its number and the hash of the block the call read (a row computed from an orphan shows it). */
const FOLLOW_FN = `
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

/** How long the follower runs alone on the cluster once level, before the backfill starts: its lag on an idle cluster. */
export const ALONE_MS = 20_000;
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
  readonly mined: { readonly blocks: number; readonly perSecond: number; readonly lateTicks: number; readonly mostAtOnce: number };
  readonly finalityDepth: number;
  /** Reorganisations the schedule made, by kind and depth; `tipHeld`: those done while the follower held a block they orphaned; `orphanedBlocks`: blocks whose hash they changed or dropped. */
  readonly reorgs: { readonly planned: number; readonly reorg: number; readonly rollback: number; readonly byDepth: Record<string, number>; readonly tipHeld: number; readonly orphanedBlocks: number; readonly failed: string[] };
  /** Reorganisations the follower went through: its "rewound the table" lines, and its published status's `reorgs`. */
  readonly survived: { readonly rewinds: number; readonly statusReorgs: number | null };
  /** Lag of the follower alone on the cluster (once level), beside the fault-free backfill (the baseline), and under the faults (and reorganisations). */
  readonly lagAlone: LagFigures;
  readonly lagBaseline: LagFigures;
  readonly lagFaulted: LagFigures;
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
  private sampling = false;
  private samplerDone: Promise<void> = Promise.resolve();
  private faultsStartMs = 0;
  /** Hashes of blocks the schedule's reorganisations orphaned (changed or dropped). */
  readonly orphanedHashes = new Set<string>();
  private readonly done: ReorgEvent[] = [];
  private readonly reorgErrors: string[] = [];
  private planned = 0;
  private readonly errors: string[] = [];
  /** Mining: blocks mined by the timer, ticks that found more than one block due (the soak's process was late), the most at once. */
  private mining = false;
  private miningDone: Promise<void> = Promise.resolve();
  private readonly mined = { blocks: 0, lateTicks: 0, mostAtOnce: 0, ms: 0 };
  /** Every call that changes the chain goes through here, one at a time: a reorganisation never interleaves with a mined block. */
  private chainOps: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cluster: SoakCluster,
    private readonly anvil: AnvilNode,
    private readonly log: (line: string) => void,
  ) {
    const config = loadClientConfig(this.storeEnv());
    this.store = openTableStore(config, { inline: true });
    this.ledger = new FollowLedger(this.store, FOLLOW_TABLE, FOLLOW_CHAIN);
  }

  /** storeEnv: the Workers' table store, reached directly (the follower and the soak run on the client's host). */
  private storeEnv(): Record<string, string> {
    const s = this.cluster.tableStore;
    return /^(postgres(ql)?|parquet):/.test(s) ? { TABLE_STORE_URL: s } : { TABLE_STORE_URL: "", TABLE_STORE_PATH: s };
  }

  private chainsConfig(): string {
    return JSON.stringify({ chains: { [FOLLOW_CHAIN]: anvilChain(this.anvil) } });
  }

  private onChain<T>(op: () => Promise<T>): Promise<T> {
    const p = this.chainOps.then(op);
    this.chainOps = p.catch(() => {});
    return p;
  }

  /**
   * mineLoop mines the blocks due every BLOCK_TIME_MS since it started: a tick that comes late (the
   * soak's process is busy) mines every block due at once, so the chain keeps its rate on average.
   */
  private async mineLoop(): Promise<void> {
    const t0 = performance.now();
    while (this.mining) {
      const due = Math.floor((performance.now() - t0) / BLOCK_TIME_MS) - this.mined.blocks;
      if (due > 0) {
        await this.onChain(() => this.anvil.mine(due));
        this.mined.blocks += due;
        if (due > 1) this.mined.lateTicks++;
        this.mined.mostAtOnce = Math.max(this.mined.mostAtOnce, due);
      }
      await Bun.sleep(Math.max(1, t0 + (this.mined.blocks + 1) * BLOCK_TIME_MS - performance.now()));
    }
    this.mined.ms = performance.now() - t0;
  }

  /** start mines, runs the follower from block 1 and the lag sampler (the baseline's figures start once it is level). */
  start(): void {
    this.mining = true;
    this.miningDone = this.mineLoop();
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
      // The soak client's patience (SOAK_THRESHOLDS): a lost Worker's task is resubmitted as quickly.
      BLOCKX_WORKER_LOST_AFTER_MS: "2000",
      BLOCKX_RPC_TIMEOUT_MS: "5000",
      BLOCKX_MAX_ATTEMPTS: "20",
    });
    void this.follower.exited.then((code) => this.noteExit(code));
    this.sampling = true;
    this.samplerDone = this.sampleLoop();
  }

  private stopping = false;
  private noteExit(code: number): void {
    if (this.stopping) return;
    this.errors.push(`the follower exited on its own with ${code}: ${this.follower?.stderr.slice(-1_500)}; last lines: ${this.follower?.tail(5)}`);
  }

  /**
   * alone: once the follower is level with the head (it starts from block 1), ALONE_MS of it alone
   * on the cluster (the lag of a follower on an idle cluster), then the backfill's baseline begins.
   */
  async alone(): Promise<void> {
    const since = performance.now();
    while (this.phase === "starting" && performance.now() - since < 120_000 && this.follower?.proc.exitCode === null) await Bun.sleep(100);
    if (this.phase === "starting") this.errors.push(`the follower was not level with anvil's head within 120 s of its start; last lines: ${this.follower?.tail(5)}`);
    await Bun.sleep(ALONE_MS);
    this.phase = "baseline";
  }

  /** faultsStarted: from now the samples count as under faults, and the reorganisations begin (until durationMs after). */
  faultsStarted(nowMs: number, seed: number, durationMs: number, elapsed: () => number): Promise<void> {
    this.faultsStartMs = nowMs;
    this.phase = "faulted";
    const plan = reorgSchedule({ seed, startMs: 5_000, endMs: durationMs, meanGapMs: REORG_MEAN_GAP_MS, maxDepth: REORG_MAX_DEPTH, rollbackShare: ROLLBACK_SHARE });
    this.planned = plan.length;
    return (async () => {
      for (const e of plan) {
        if (e.atMs > elapsed()) await Bun.sleep(e.atMs - elapsed());
        await this.reorganise(e).catch((err: unknown) => this.reorgErrors.push(`${e.kind} ${e.depth} at ${e.atMs} ms: ${String(err)}`));
      }
    })();
  }

  /** reorganise does one event of the plan, keeping the hashes it orphaned (those that changed or went). */
  /**
   * reorganise waits (REORG_WAIT_MS at most) until the follower's ledger holds a block the event
   * would orphan, then does it: a follower under load lags more than 3 blocks most of the time, and
   * a reorganisation of blocks it has not written yet is no reorganisation to it.
   */
  private async reorganise(e: ReorgEvent): Promise<void> {
    const since = performance.now();
    let held = false;
    while (!held && performance.now() - since < REORG_WAIT_MS) {
      const top = (await this.ledger.tail(1).catch(() => []))[0];
      held = top !== undefined && top.number > (await this.anvil.head()) - e.depth;
      if (!held) await Bun.sleep(20);
    }
    if (held) this.tipHeld++;
    return this.onChain(() => this.reorganiseNow(e));
  }

  private transfers = 0;

  /** Reorganisations done while the follower held a block they orphaned (the others waited REORG_WAIT_MS in vain). */
  private tipHeld = 0;

  private async reorganiseNow(e: ReorgEvent): Promise<void> {
    const head = await this.anvil.head();
    const before = new Map<number, string>();
    for (let n = Math.max(1, head - e.depth - 1); n <= head; n++) {
      const h = await this.hashAt(n);
      if (h) before.set(n, h);
    }
    // AnvilNode.reorg puts a transfer in the new blocks: without one anvil may mine the very same
    // blocks again (the same hashes: seen for anvil_reorg of empty blocks within one second).
    if (e.kind === "reorg") {
      await this.anvil.reorg(e.depth);
    } else {
      await this.anvil.rollback(e.depth);
      // In the next block mined at the dropped height; without it the same block may come back.
      const transfer = { from: ANVIL_DEV_ACCOUNTS[0], to: ANVIL_DEV_ACCOUNTS[1], value: "0x" + (++this.transfers).toString(16) };
      await this.anvil.rpc("eth_sendTransaction", transfer).catch((err: unknown) => this.log(`a transfer after anvil_rollback failed: ${String(err)}`));
    }
    let orphaned = 0;
    for (const [n, h] of before) {
      if ((await this.hashAt(n)) !== h) {
        this.orphanedHashes.add(h);
        orphaned++;
      }
    }
    this.done.push(e);
    this.log(`[${((performance.now() - this.faultsStartMs) / 1000).toFixed(1)} s] ${e.kind} ${e.depth} deep at head ${head}: ${orphaned} blocks orphaned`);
  }

  private async hashAt(n: number): Promise<string | null> {
    const b = (await this.anvil.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as { hash: string } | null;
    return b?.hash ?? null;
  }

  /** canonicalLag: anvil's head minus the highest block the ledger holds that is still canonical (orphaned blocks not yet rewound count as behind). */
  private async canonicalLag(): Promise<number> {
    const head = await this.anvil.head();
    const tail = await this.ledger.tail(REORG_MAX_DEPTH + 2);
    for (let i = tail.length - 1; i >= 0; i--) {
      const b = tail[i]!;
      if (b.hash !== null && b.hash === (await this.hashAt(b.number))) return Math.max(0, head - b.number);
    }
    return Math.max(0, head - ((tail[0]?.number ?? 1) - 1));
  }

  private async sampleLoop(): Promise<void> {
    while (this.sampling) {
      const t0 = performance.now();
      try {
        const lag = await this.canonicalLag();
        if (this.phase === "starting" && lag <= LAG_LIMIT_BLOCKS) this.phase = "alone";
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
    this.mining = false;
    await this.miningDone;
    const head = await this.anvil.head();
    const since = performance.now();
    let catchUpMs: number | null = null;
    while (performance.now() - since < 120_000 && this.follower?.proc.exitCode === null) {
      const top = (await this.ledger.tail(1))[0];
      if (top && top.number === head && top.hash === (await this.hashAt(head))) {
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
      const canonical = await this.hashAt(n);
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
    const reorgWindows: Happening[] = this.done.map((e) => ({ fromMs: e.atMs, toMs: e.atMs, what: `${e.kind} ${e.depth} deep` }));
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
      mined: { blocks: this.mined.blocks, perSecond: this.mined.ms > 0 ? Math.round((10 * this.mined.blocks) / (this.mined.ms / 1000)) / 10 : 0, lateTicks: this.mined.lateTicks, mostAtOnce: this.mined.mostAtOnce },
      finalityDepth: FOLLOW_FINALITY_DEPTH,
      reorgs: { planned: this.planned, reorg: this.done.filter((e) => e.kind === "reorg").length, rollback: this.done.filter((e) => e.kind === "rollback").length, byDepth, tipHeld: this.tipHeld, orphanedBlocks: this.orphanedHashes.size, failed: this.reorgErrors },
      survived: { rewinds, statusReorgs: o.statusReorgs },
      lagAlone: lagFigures(of("alone"), LAG_LIMIT_BLOCKS),
      lagBaseline: lagFigures(of("baseline"), LAG_LIMIT_BLOCKS),
      lagFaulted,
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
    this.mining = false;
    await this.miningDone;
    this.stopping = true;
    await this.follower?.stop("SIGKILL");
    await this.store.close();
    await this.anvil.stop();
  }
}

/** formatFollowReport: the follower's part of the soak's report. */
export function formatFollowReport(f: FollowReport): string {
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
    `  lag alone on the cluster: ${lag(f.lagAlone)}`,
    `  lag beside the backfill, no faults: ${lag(f.lagBaseline)}`,
    `  lag under faults:   ${lag(f.lagFaulted)}`,
    `  lag limit ${LAG_LIMIT_BLOCKS} blocks: ${f.lagFaulted.max <= LAG_LIMIT_BLOCKS ? "held" : "NOT held"} under faults (reported, not asserted); excursions: ${during.length} during or just after a fault, ${reorgOnly.length} at a reorganisation only, ${none.length} with neither`,
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
