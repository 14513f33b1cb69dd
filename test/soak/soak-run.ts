import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient, type ClientEvent, type RunResult } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { checkPassed, checkRead, readStore, SOAK_CHAIN, type CheckResult } from "./checker";
import { countByKind, faultSchedule, kindsFor, type FaultEvent, type FaultKind, type Thresholds } from "./fault-schedule";
import { faultsFor } from "./faults";
import { anvilChain, DEFAULT_ALONE_MS, FOLLOW_CHAIN, FOLLOW_TABLE, FollowSoak, formatFollowReport, type FollowReport } from "./follow-soak";
import { AnvilNode } from "../support/anvil";
import { RssSampler } from "./rss-sampler";
import { childPids } from "../support/proc-scan";
import { PausedRuns, SdkEvents } from "./sdk-events";
import { SOAK_THRESHOLDS, SoakCluster, type SoakStore } from "./soak-cluster";
import { BLOCK_STATS, BUNDLE_STATS, ERC20_TRANSFERS, NORMAL_STATS, padded, tableNamed, type SoakTable } from "./soak-functions";

export interface SoakOptions {
  readonly seed: number;
  /** Where the rows go (default sqlite: one host, one shared file); see SoakStore. */
  readonly store?: SoakStore;
  /** How long tasks keep being submitted and faults injected; in-flight tasks then finish. */
  readonly durationMs: number;
  /** A fault-free backfill this long first, on the same cluster: the baseline rate. */
  readonly baselineMs?: number;
  readonly blocksPerTask?: number;
  readonly firstBlock?: number;
  /** Tasks in flight at once (the SDK runs each: reserve, submit, watch, resubmit). */
  readonly concurrency?: number;
  readonly workers?: number;
  readonly coordinators?: number;
  readonly executorsPerWorker?: number;
  /** Runs of one task by the harness after a FAILED result or an SDK error, at most. */
  readonly maxRunsPerTask?: number;
  /** Deadline of one runTask (retries and resubmissions included): a stuck run becomes an error and a rerun, not a hang. */
  readonly runTimeoutMs?: number;
  /** Extra environment of every Worker (e.g. IO_CACHE_MAX_BYTES=0). */
  readonly workerEnv?: Record<string, string>;
  /**
   * With reorganisations (`make soak REORGS=1`, issue 50): anvil mining every 100 ms, `blockx follow`
   * keeping a table current on the same cluster under the same faults, anvil reorganising at random;
   * see FollowSoak.
   */
  readonly follow?: boolean;
  /** How long the follower runs alone on the cluster (reorganisations and all) before the backfill; default DEFAULT_ALONE_MS. */
  readonly followAloneMs?: number;
  readonly log?: (line: string) => void;
}

/** TaskOutcome: how one range of the backfill ended and what it took. */
export interface TaskOutcome {
  readonly taskId: string;
  readonly table: string;
  readonly fromBlock: number;
  readonly toBlock: number;
  /** Every task id the harness ran this range under, in order (a rerun after FAILED takes a new id). */
  readonly taskIds: string[];
  /** Submitted first in a batch (runTasks: ReserveWorkerSlots, SubmitTasks), not by runTask. */
  readonly batched: boolean;
  succeeded: boolean;
  /** Runs started by the harness (1 + reruns after FAILED or an SDK error). */
  runs: number;
  /** Resubmissions the SDK made after a lost Worker, over all runs. */
  resubmissions: number;
  workers: string[];
  /** Why a run did not succeed, one entry per failed run. */
  failures: string[];
  /** Failures no fault explains (see RERUN_MAY_FOLLOW): each fails the soak, and the task is not rerun. */
  disallowed: string[];
  /** The task this one reruns over the same, already written blocks (a user's rerun), if any. */
  rerunOf?: string;
}

/**
 * The failures a rerun may follow: what the injected faults can cause once the Worker's own retries
 * and the SDK's resubmissions are used up. Anything else (a user error, a row mismatch, INTERNAL, a
 * TIMED_OUT or CANCELLED task, the harness's own deadline) is a bug, and fails the soak.
 * STORE_UNAVAILABLE: the store faults outlasting a call's retries. STALE_RUN: the run the client
 * followed was fenced off (its Worker was paused or cut off from the store past its lease).
 */
export const RERUN_MAY_FOLLOW = {
  /** A FAILED task's first failing call. */
  callCodes: new Set(["EXECUTOR_CRASHED", "EXECUTOR_HUNG", "OOM_KILLED", "POOL_CLOSED", "BACKEND_RETRYABLE", "STORE_UNAVAILABLE", "STALE_RUN"]),
  /** BlockxError codes from the SDK. */
  sdkCodes: new Set(["UNREACHABLE", "NO_CAPACITY", "WORKER_LOST"]),
} as const;

/**
 * Source sizes (the function padded with a comment): a SubmitTask of one soak task is between
 * SUBMIT_BYTES.single and SUBMIT_BYTES.batchFrom, a SubmitTasks of two batch tasks or more is past
 * batchFrom; the lost-answer faults aim at those sizes (the relays cannot read TLS).
 */
export const SINGLE_PAD_BYTES = 7_000;
export const BATCH_PAD_BYTES = 12_000;
/** Every BATCH_EVERY-th step of a lane submits a batch of BATCH_SIZE fresh ranges through runTasks. */
const BATCH_EVERY = 4;
const BATCH_SIZE = 3;

function newOutcome(taskId: string, table: string, fromBlock: number, toBlock: number, batched = false): TaskOutcome {
  return { taskId, table, fromBlock, toBlock, taskIds: [], batched, succeeded: false, runs: 0, resubmissions: 0, workers: [], failures: [], disallowed: [] };
}

export interface InjectedFault {
  readonly event: FaultEvent;
  readonly startedMs: number;
  /** When it was over (recovered), ms after the faults started. */
  readonly endedMs: number;
  readonly what: string;
  /** False when the fault hit nothing (no executor to kill, a process already down): not counted. */
  readonly effective: boolean;
}

/** What the client and the Workers did about the faults: counted from the SDK's events and the Workers' logs. */
export interface SoakEvidence {
  /** Runs the SDK gave up on (a lost Worker) and resubmitted, fencing them off. */
  readonly workersLost: number;
  /** SubmitTask / SubmitTasks failures after sending, followed on that Worker as uncertain. */
  readonly uncertainSubmits: { readonly single: number; readonly batch: number };
  /** Submissions a Worker refused naming the Worker whose run is current, followed there. */
  readonly attached: number;
  /** Uncertain submissions that had not landed (submitted again, plainly). */
  readonly notLanded: number;
  /** Runs that ended FAILED with STALE_RUN as the client saw them, by what the Worker said. */
  readonly staleRunFailures: { readonly leaseExpired: number; readonly superseded: number; readonly laterRows: number };
  /** How the runs paused Workers held ended once they resumed (see PausedRuns): `refused` is a run that came back superseded, stopped by the fence. */
  readonly pausedRuns: PausedRuns["counts"];
  /** Worker log lines: epochs lost (a lease expired), table store found unreachable, and of those the times a silent Postgres call was given up on (its pool replaced). */
  readonly epochsLost: number;
  readonly storeUnreachable: number;
  readonly poolsReplaced: number;
}

export interface SoakReport {
  readonly seed: number;
  readonly store: SoakStore;
  readonly thresholds: Thresholds;
  readonly wallSeconds: number;
  readonly backfillSeconds: number;
  readonly faults: InjectedFault[];
  /** Faults that took effect, by kind. */
  readonly faultsByKind: Record<FaultKind, number>;
  readonly tasks: TaskOutcome[];
  readonly blocks: number;
  /** Blocks of the tasks started while faults ran, per second of that phase. */
  readonly blocksPerSecond: number;
  /** The same cluster's rate without faults, measured first (baselineMs > 0). */
  readonly baselineBlocksPerSecond: number | undefined;
  readonly peakRssMb: Record<string, number>;
  readonly check: CheckResult;
  /** Resubmissions the SDK made after a lost Worker, over all tasks. */
  readonly resubmissions: number;
  /** Succeeded reruns of ranges already written (the replace path under faults). */
  readonly rewrites: number;
  readonly evidence: SoakEvidence;
  /** Processes of the cluster that exited without a fault killing them, and faults that threw (each fails the soak). */
  readonly crashes: string[];
  /** The follower variant's figures and check (SoakOptions.follow). */
  readonly follow?: FollowReport;
  readonly passed: boolean;
}

/** taskFor: the task of one range of a soak table, its source padded to `padBytes`. */
function taskFor(taskId: string, table: SoakTable, fromBlock: number, toBlock: number, padBytes: number): Task {
  const range = { chain: SOAK_CHAIN, fromBlock, toBlock };
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: padded(table.source, padBytes), entry: "main" },
      config: table.kind === "bundle" ? { $case: "blockBundle", blockBundle: { ...range, bundleSize: table.bundleSize! } } : { $case: "blockTable", blockTable: range },
    }),
    outputs: [table.kind === "normal" ? { handler: { $case: "normalTableWrite", normalTableWrite: { table: table.table } } } : { handler: { $case: "blockTableWrite", blockTableWrite: { table: table.table, recordScopes: false } } }],
  });
}

/** failureOf: why a run did not succeed: its first failing call's error, else the task's own (a run ended as a whole: STALE_RUN after its lease). */
function failureOf(run: RunResult): { text: string; allowed: boolean } {
  const e = run.result.firstError ?? run.result.snapshot?.error;
  const allowed = run.state === "FAILED" && e !== undefined && RERUN_MAY_FOLLOW.callCodes.has(e.code);
  return { text: `${run.state}${e ? `: ${e.code}: ${e.message}` : ""}`, allowed };
}

function sdkFailureOf(e: unknown): { text: string; allowed: boolean } {
  if (e instanceof BlockxError) return { text: e.message, allowed: RERUN_MAY_FOLLOW.sdkCodes.has(e.code) };
  return { text: String(e), allowed: false };
}

/**
 * busiestWorker: the index of the Worker running most of the soak's tasks now, the seeded one
 * when it runs as many as any other (so an idle cluster keeps the schedule's choice).
 */
function busiestWorker(cluster: SoakCluster, runningOn: ReadonlyMap<string, string>, seeded: number): number {
  const counts = cluster.workers.map((w) => [...runningOn.values()].filter((addr) => addr === w.addr).length);
  const most = Math.max(...counts);
  return counts[seeded] === most ? seeded : counts.indexOf(most);
}

/** The soak's tables in the order fresh ranges take them: one row per block, many per block, bundles, a normal table. */
const TABLE_CYCLE: readonly SoakTable[] = [BLOCK_STATS, ERC20_TRANSFERS, BUNDLE_STATS, NORMAL_STATS];

/**
 * runSoak starts the cluster (every Worker a host of its own behind its links), backfills
 * consecutive ranges of the local test chain through the SDK into block, bundle and normal tables
 * (runTask, and batches through runTasks) while the seeded fault schedule runs, lets in-flight
 * tasks finish, then checks every row from the table store, and which run wrote it.
 */
export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const log = o.log ?? (() => {});
  const store = o.store ?? "sqlite";
  const thresholds = SOAK_THRESHOLDS;
  const blocksPerTask = o.blocksPerTask ?? 100;
  const firstBlock = o.firstBlock ?? 15_000_000;
  const maxRuns = o.maxRunsPerTask ?? 10;
  const started = performance.now();
  // The follower's chain first: the Workers' CHAINS_CONFIG names it.
  const anvil = o.follow ? await AnvilNode.start() : undefined;
  const cluster = await SoakCluster.start({ store, workers: o.workers ?? 3, coordinators: o.coordinators ?? 2, executorsPerWorker: o.executorsPerWorker ?? 2, taskSlots: 8, workerEnv: o.workerEnv ?? {}, chains: anvil ? { [FOLLOW_CHAIN]: anvilChain(anvil) } : undefined }).catch(async (e: unknown) => {
    await anvil?.stop();
    throw e;
  });
  const follow = anvil ? new FollowSoak(cluster, anvil, log) : undefined;
  const client = new BlockxClient(cluster.clientConfig());
  const sdk = new SdkEvents();
  const paused = new PausedRuns();
  const sampler = new RssSampler(() => [
    { name: "etcd", pids: cluster.etcd.pid === undefined ? [] : [cluster.etcd.pid] },
    ...[...cluster.coordinators, ...cluster.workers].map((m) => ({ name: m.name, pids: m.pid === undefined ? [] : [m.pid] })),
    ...cluster.workers.map((m) => ({ name: `${m.name} executors (each)`, pids: m.pid === undefined ? [] : childPids(m.pid) })),
    { name: "soak client (SDK and relays, this process)", pids: [process.pid] },
  ]);
  sampler.start();
  try {
    // The plan first: a run too short for one fault of each kind says so before anything runs.
    const kinds = kindsFor(store);
    const schedule = faultSchedule({ seed: o.seed, startMs: 3_000, endMs: o.durationMs, workers: cluster.workers.length, coordinators: cluster.coordinators.length, meanGapMs: 6_000, thresholds, store });
    follow?.start();
    await follow?.alone(o.seed, o.followAloneMs ?? DEFAULT_ALONE_MS);
    const tasks: TaskOutcome[] = [];
    // Where each run in flight was submitted: Worker faults hit a Worker that is running tasks.
    const runningOn = new Map<string, string>();
    const staleRunFailures = { leaseExpired: 0, superseded: 0, laterRows: 0 };

    let nextRange = 0;
    const onEvent = (taskId: string | undefined, batched: boolean) => (e: ClientEvent) => {
      sdk.record(e, batched);
      const id = taskId ?? ("taskId" in e ? e.taskId : undefined);
      if (!id) return;
      // From the SubmitTask on: a short task's SubmitTask answers only at its end.
      if (e.kind === "submitting" || e.kind === "submitted") runningOn.set(id, e.workerAddr);
      if (e.kind === "attached") runningOn.set(id, e.runningOn);
      if (e.kind === "workerLost") {
        runningOn.delete(id);
        log(`task ${id}: Worker ${e.workerAddr} lost (${e.reason}); resubmit: ${e.resubmit}`);
      }
    };
    /** settle records how one run of `t` under `taskId` ended (a RunResult, or what runTask threw). */
    const settle = (t: TaskOutcome, taskId: string, outcome: { run: RunResult } | { error: unknown }) => {
      runningOn.delete(taskId);
      if ("run" in outcome) {
        const run = outcome.run;
        t.resubmissions += run.attempts - 1;
        t.workers.push(...run.workers);
        if (run.succeeded) {
          t.succeeded = true;
          return;
        }
        const f = failureOf(run);
        t.failures.push(f.text);
        if (!f.allowed) t.disallowed.push(f.text);
        const e = run.result.firstError ?? run.result.snapshot?.error;
        if (e?.code === "STALE_RUN") {
          if (e.message.includes("lease")) staleRunFailures.leaseExpired++;
          else if (e.message.includes("was resubmitted")) staleRunFailures.superseded++;
          else staleRunFailures.laterRows++;
        }
      } else {
        const f = sdkFailureOf(outcome.error);
        t.failures.push(f.text);
        if (!f.allowed) {
          t.disallowed.push(f.text);
          log(whatTheWorkersSaid(cluster, taskId));
        }
      }
      log(`task ${taskId} run ${t.runs} did not succeed: ${t.failures.at(-1)}`);
    };
    const nextTaskId = (t: TaskOutcome) => {
      t.runs++;
      const taskId = t.runs === 1 ? t.taskId : `${t.taskId}-run${t.runs}`;
      t.taskIds.push(taskId);
      return taskId;
    };
    /** runOne runs a range (again) through runTask until it succeeds, runs out of runs, or fails for no fault's reason. */
    const runOne = async (t: TaskOutcome) => {
      const table = tableNamed(t.table);
      while (!t.succeeded && t.runs < maxRuns && t.disallowed.length === 0) {
        const taskId = nextTaskId(t);
        try {
          const run = await client.runTask(taskFor(taskId, table, t.fromBlock, t.toBlock, t.batched ? BATCH_PAD_BYTES : SINGLE_PAD_BYTES), { cluster: "block", timeoutMs: o.runTimeoutMs ?? 120_000, onEvent: onEvent(taskId, t.batched) });
          settle(t, taskId, { run });
        } catch (e) {
          settle(t, taskId, { error: e });
          await Bun.sleep(1_000);
        }
      }
    };
    /** runBatch runs fresh ranges' first runs in one runTasks (ReserveWorkerSlots, SubmitTasks), then any rerun alone. */
    const runBatch = async (ts: TaskOutcome[]) => {
      const ids = ts.map(nextTaskId);
      const entries = await client.runTasks(
        ts.map((t, i) => taskFor(ids[i]!, tableNamed(t.table), t.fromBlock, t.toBlock, BATCH_PAD_BYTES)),
        { cluster: "block", concurrency: ts.length, batchSize: ts.length, timeoutMs: o.runTimeoutMs ?? 120_000, onEvent: onEvent(undefined, true) },
      );
      entries.forEach((e, i) => settle(ts[i]!, ids[i]!, e.ok ? { run: e.run } : { error: e.error }));
      await Promise.all(ts.map((t) => runOne(t)));
    };
    const freshRange = (batched: boolean): TaskOutcome => {
      const i = nextRange++;
      const table = TABLE_CYCLE[i % TABLE_CYCLE.length]!;
      const from = firstBlock + i * blocksPerTask;
      const t = newOutcome(`soak-${o.seed}-${i}`, table.table, from, from + blocksPerTask - 1, batched);
      tasks.push(t);
      return t;
    };
    const rerunDone = new Set<string>();
    let laneSteps = 0;
    /** backfill keeps `concurrency` lanes of tasks in flight for periodMs, then lets them finish. */
    const backfill = async (periodMs: number): Promise<{ blocks: number; seconds: number }> => {
      const since = performance.now();
      const first = tasks.length;
      const lane = async () => {
        while (performance.now() - since < periodMs) {
          const step = ++laneSteps;
          // Every eighth step reruns a range of a block or bundle table already written (a user's
          // rerun, under the same faults): the replace path is then exercised for sure, so "no row
          // twice" is not vacuous. (A normal table appends: a rerun under a new id adds rows by design.)
          const earlier = step % 8 === 0 ? tasks.find((e) => e.succeeded && !e.rerunOf && !rerunDone.has(e.taskId) && tableNamed(e.table).kind !== "normal") : undefined;
          if (earlier) {
            rerunDone.add(earlier.taskId);
            const t: TaskOutcome = { ...newOutcome(`${earlier.taskId}-rerun`, earlier.table, earlier.fromBlock, earlier.toBlock), rerunOf: earlier.taskId };
            tasks.push(t);
            await runOne(t);
            continue;
          }
          if (step % BATCH_EVERY === 0) {
            await runBatch(Array.from({ length: BATCH_SIZE }, () => freshRange(true)));
            continue;
          }
          await runOne(freshRange(false));
        }
      };
      await Promise.all(Array.from({ length: o.concurrency ?? 6 }, lane));
      const blocks = tasks.slice(first).filter((t) => t.succeeded).reduce((sum, t) => sum + t.toBlock - t.fromBlock + 1, 0);
      return { blocks, seconds: (performance.now() - since) / 1000 };
    };

    // The same cluster without faults first: the figure the faulted rate is compared with.
    const baseline = o.baselineMs ? await backfill(o.baselineMs) : undefined;
    if (baseline) log(`baseline without faults: ${baseline.blocks} blocks in ${baseline.seconds.toFixed(1)} s`);
    const faults = faultsFor(cluster, (seeded) => busiestWorker(cluster, runningOn, seeded), sdk, thresholds, { client, paused, sdk });
    const injected: InjectedFault[] = [];
    const faultErrors: string[] = [];
    const faultsStart = performance.now();
    const elapsed = () => performance.now() - faultsStart;

    const driver = (async () => {
      for (const e of schedule) {
        if (e.atMs > elapsed()) await Bun.sleep(e.atMs - elapsed());
        const startedMs = Math.round(elapsed());
        // A fault that throws (the harness's own error) is reported and fails the soak; the driver goes on.
        const { what, effective } = await faults[e.kind].inject(e).catch((err: unknown) => {
          faultErrors.push(`${e.kind} at ${startedMs} ms: ${String(err)}`);
          return { what: `injection failed: ${String(err)}`, effective: false };
        });
        injected.push({ event: e, startedMs, endedMs: Math.round(elapsed()), what, effective });
        log(`[${(startedMs / 1000).toFixed(1)} s] fault ${e.kind}: ${what}${effective ? "" : " (hit nothing: not counted)"}`);
      }
    })();

    const reorgs = follow?.faultsStarted(faultsStart, o.seed, o.durationMs, elapsed);

    const faulted = await backfill(o.durationMs);
    await driver;
    const followed = follow && reorgs ? await follow.finish(reorgs) : undefined;
    sampler.stop();
    await paused.settled();

    const read = await readStore(cluster.tableStore);
    const check = checkRead(
      read,
      tasks.map((t) => ({ table: tableNamed(t.table), fromBlock: t.fromBlock, toBlock: t.toBlock, taskIds: t.taskIds })),
      follow ? [FOLLOW_TABLE] : [],
    );
    const followReport =
      follow && followed
        ? follow.report({
            ...followed,
            happenings: injected.filter((f) => f.effective).map((f) => ({ fromMs: f.startedMs, toMs: f.endedMs, what: `${f.event.kind}: ${f.what}` })),
            check: await follow.check(read.tables.get(FOLLOW_TABLE) ?? [], followed.head),
            verify: await follow.verify(followed.head),
          })
        : undefined;
    const logged = (pred: (line: string) => boolean) => cluster.workers.reduce((n, w) => n + w.allLines().filter((l) => pred(JSON.stringify(l))).length, 0);
    const evidence: SoakEvidence = {
      workersLost: sdk.count("workerLost"),
      uncertainSubmits: { single: sdk.count("submitUncertain", { path: "single" }), batch: sdk.count("submitUncertain", { path: "batch" }) },
      attached: sdk.count("attached"),
      notLanded: sdk.count("submitNotLanded"),
      staleRunFailures,
      pausedRuns: paused.counts,
      epochsLost: logged((l) => l.includes("its runs are over; a new epoch takes the next tasks")),
      storeUnreachable: logged((l) => l.includes('"msg":"table store unreachable')),
      poolsReplaced: logged((l) => l.includes('"msg":"table store unreachable') && l.includes("closed and replaced")),
    };
    return {
      seed: o.seed,
      store,
      thresholds,
      wallSeconds: (performance.now() - started) / 1000,
      backfillSeconds: faulted.seconds,
      faults: injected,
      faultsByKind: countByKind(
        injected.filter((f) => f.effective).map((f) => f.event),
        kinds,
      ),
      tasks,
      blocks: faulted.blocks,
      blocksPerSecond: faulted.blocks / faulted.seconds,
      baselineBlocksPerSecond: baseline ? baseline.blocks / baseline.seconds : undefined,
      peakRssMb: Object.fromEntries([...sampler.peakKb].map(([k, v]) => [k, Math.round(v / 102.4) / 10])),
      check,
      resubmissions: tasks.reduce((sum, t) => sum + t.resubmissions, 0),
      rewrites: tasks.filter((t) => t.rerunOf && t.succeeded).length,
      evidence,
      crashes: [...[...cluster.workers, ...cluster.coordinators].flatMap((m) => m.crashes), ...faultErrors],
      follow: followReport,
      passed: (followReport?.passed ?? true) && checkPassed(check) && tasks.every((t) => t.succeeded && t.disallowed.length === 0) && faultErrors.length === 0 && [...cluster.workers, ...cluster.coordinators].every((m) => m.crashes.length === 0),
    };
  } finally {
    sampler.stop();
    client.close();
    await follow?.stop();
    await cluster.stop();
  }
}

/**
 * whatTheWorkersSaid: for a run that failed for no fault's reason, each Worker's log lines about
 * the task and its last warnings and errors (the cluster's logs are not kept after the soak).
 */
function whatTheWorkersSaid(cluster: SoakCluster, taskId: string): string {
  const out = [`what the Workers logged about ${taskId}:`];
  for (const m of cluster.workers) {
    const lines = m.proc?.lines ?? [];
    const about = lines.filter((l) => JSON.stringify(l).includes(taskId)).slice(-15);
    const trouble = lines.filter((l) => l.level === "warn" || l.level === "error" || l.level === "fatal" || l.level === "raw" || l.msg === "executor ready").slice(-25);
    out.push(`  ${m.name} (${m.addr}, ${lines.length} lines):`, ...[...about, ...trouble].map((l) => `    ${JSON.stringify(l).slice(0, 400)}`));
  }
  return out.join("\n");
}

/** formatReport: the report a person reads at the end of a soak. */
export function formatReport(r: SoakReport): string {
  const retried = r.tasks.filter((t) => t.runs > 1);
  const resubmitted = r.tasks.filter((t) => t.resubmissions > 0);
  const ev = r.evidence;
  const c = r.check;
  const rows = (kind: SoakTable["kind"]) => r.tasks.filter((t) => tableNamed(t.table).kind === kind).length;
  const lines = [
    `BlockX soak, seed ${r.seed}, table store ${r.store === "postgres" ? "Postgres (every Worker its own host)" : r.store === "parquet" ? "Parquet (one dataset folder on the Workers' host)" : "SQLite (one file on the Workers' host)"}, every Worker behind its links (clients, etcd${r.store === "postgres" ? ", Postgres" : ""}): ${r.passed ? "PASSED" : "FAILED"}`,
    `wall ${r.wallSeconds.toFixed(1)} s, backfill under faults ${r.backfillSeconds.toFixed(1)} s; thresholds: lease ${r.thresholds.leaseMs} ms, SDK lost-after ${r.thresholds.lostAfterMs} ms, statement timeout ${r.thresholds.statementMs} ms (given up on at ${r.thresholds.deadlineMs} ms)`,
    "",
    "faults that took effect, by kind:",
    ...Object.entries(r.faultsByKind).map(([k, n]) => `  ${k.padEnd(22)} ${n}`),
    `  ${"total".padEnd(22)} ${r.faults.filter((f) => f.effective).length} (${r.faults.filter((f) => !f.effective).length} more hit nothing)`,
    "",
    `tasks: ${r.tasks.length} ranges (${r.tasks.filter((t) => t.succeeded).length} succeeded, ${r.tasks.filter((t) => !t.succeeded).length} failed): ${rows("block")} block-table, ${rows("bundle")} bundle, ${rows("normal")} normal-table; ${r.tasks.filter((t) => t.batched).length} first submitted in batches`,
    `  resubmitted by the SDK after a lost Worker: ${resubmitted.length} tasks, ${resubmitted.reduce((s, t) => s + t.resubmissions, 0)} resubmissions`,
    `  rerun by the client after FAILED or an SDK error: ${retried.length} tasks, ${retried.reduce((s, t) => s + t.runs - 1, 0)} reruns`,
    `  ranges already written, rerun on purpose: ${r.rewrites} succeeded`,
    ...r.tasks.filter((t) => t.disallowed.length > 0).map((t) => `  NOT A FAULT'S DOING: ${t.taskId}: ${t.disallowed.join(" | ").slice(0, 300)}`),
    ...r.crashes.map((c) => `  CRASHED: ${c}`),
    ...retried.slice(0, 10).map((t) => `    ${t.taskId} (${t.table} ${t.fromBlock}-${t.toBlock}): ${t.failures.join(" | ").slice(0, 300)}`),
    "",
    "what the client and the Workers did about it:",
    `  runs given up on a lost Worker: ${ev.workersLost}; submissions followed as uncertain: ${ev.uncertainSubmits.single} SubmitTask, ${ev.uncertainSubmits.batch} SubmitTasks (${ev.notLanded} had not landed); attached to the Worker a refusal named: ${ev.attached}`,
    `  runs the client saw end STALE_RUN: ${ev.staleRunFailures.leaseExpired} lease expired, ${ev.staleRunFailures.superseded} superseded, ${ev.staleRunFailures.laterRows} over later rows`,
    `  runs of paused Workers, as those Workers say they ended: ${ev.pausedRuns.refused} came back superseded and had a commit refused, ${ev.pausedRuns.leaseEnded} ended with their lease, ${ev.pausedRuns.succeeded} succeeded, ${ev.pausedRuns.other} other or unanswered`,
    `  Workers: ${ev.epochsLost} epochs lost, table store unreachable ${ev.storeUnreachable} times, ${ev.poolsReplaced} of them a silent Postgres call given up on (its pool replaced); task ids in the store ${c.runs.taskIds}, ${c.runs.takenOver} taken over by a later run`,
    "",
    `blocks: ${r.blocks} in ${r.backfillSeconds.toFixed(1)} s = ${r.blocksPerSecond.toFixed(0)} blocks/s under faults` +
      (r.baselineBlocksPerSecond ? `; ${r.baselineBlocksPerSecond.toFixed(0)} blocks/s without (baseline, same run): ratio ${(r.blocksPerSecond / r.baselineBlocksPerSecond).toFixed(2)}` : ""),
    "",
    "peak RSS per process (MB):",
    ...Object.entries(r.peakRssMb).map(([k, v]) => `  ${k.padEnd(42)} ${v}`),
    "",
    `check: ${c.blocks} blocks, ${c.expectedRows} rows expected, ${c.foundRows} found; missing ${c.missingRows}, duplicated ${c.duplicatedRows}, unexpected ${c.unexpectedRows}, ` +
      `stale ${c.staleRows} (of a run other than the last current one), blocks or calls of mixed runs ${c.mixedRuns}, unsettled ${c.unsettled}; ` +
      `normal-table rows left by tasks that did not succeed ${c.leftByFailedRows}`,
    ...c.problems.map((p) => `  ${p}`),
    ...(r.follow ? ["", formatFollowReport(r.follow)] : []),
  ];
  return lines.join("\n");
}
