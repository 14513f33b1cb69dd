import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { BlockxClient, type RunResult } from "../../src/sdk/blockx-client";
import { BlockxError } from "../../src/sdk/sdk-error";
import { checkPassed, checkTables, SOAK_CHAIN, type CheckResult } from "./checker";
import { countByKind, faultSchedule, type FaultEvent, type FaultKind } from "./fault-schedule";
import { faultsFor } from "./faults";
import { RssSampler } from "./rss-sampler";
import { childPids } from "../support/proc-scan";
import { SoakCluster, type SoakStore } from "./soak-cluster";
import { BLOCK_STATS, ERC20_TRANSFERS, type SoakTable } from "./soak-functions";

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
  readonly log?: (line: string) => void;
}

/** TaskOutcome: how one task of the backfill ended and what it took. */
export interface TaskOutcome {
  readonly taskId: string;
  readonly table: string;
  readonly fromBlock: number;
  readonly toBlock: number;
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
 */
export const RERUN_MAY_FOLLOW = {
  /** A FAILED task's first failing call. */
  callCodes: new Set(["EXECUTOR_CRASHED", "EXECUTOR_HUNG", "OOM_KILLED", "POOL_CLOSED", "BACKEND_RETRYABLE"]),
  /** BlockxError codes from the SDK. */
  sdkCodes: new Set(["UNREACHABLE", "NO_CAPACITY", "WORKER_LOST"]),
} as const;

function newOutcome(taskId: string, table: string, fromBlock: number, toBlock: number): TaskOutcome {
  return { taskId, table, fromBlock, toBlock, succeeded: false, runs: 0, resubmissions: 0, workers: [], failures: [], disallowed: [] };
}

const tableOf = (name: string): SoakTable => (name === ERC20_TRANSFERS.table ? ERC20_TRANSFERS : BLOCK_STATS);

export interface InjectedFault {
  readonly event: FaultEvent;
  readonly startedMs: number;
  readonly what: string;
  /** False when the fault hit nothing (no executor to kill, a process already down): not counted. */
  readonly effective: boolean;
}

export interface SoakReport {
  readonly seed: number;
  readonly store: SoakStore;
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
  readonly passed: boolean;
}

function taskFor(taskId: string, table: SoakTable, fromBlock: number, toBlock: number): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: table.source, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain: SOAK_CHAIN, fromBlock, toBlock } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: table.table } } }],
  });
}

function failureOf(run: RunResult): { text: string; allowed: boolean } {
  const e = run.result.firstError;
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

/**
 * runSoak starts the cluster, backfills consecutive ranges of the local test chain through the
 * SDK (alternating a one-row-per-block table and a many-rows-per-block table) while the seeded
 * fault schedule runs, lets in-flight tasks finish, then checks every row from the table store.
 */
export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const log = o.log ?? (() => {});
  const blocksPerTask = o.blocksPerTask ?? 100;
  const firstBlock = o.firstBlock ?? 15_000_000;
  const maxRuns = o.maxRunsPerTask ?? 10;
  const started = performance.now();
  const cluster = await SoakCluster.start({ store: o.store ?? "sqlite", workers: o.workers ?? 3, coordinators: o.coordinators ?? 2, executorsPerWorker: o.executorsPerWorker ?? 2, taskSlots: 8, workerEnv: o.workerEnv ?? {} });
  const client = new BlockxClient(cluster.clientConfig());
  const sampler = new RssSampler(() => [
    { name: "etcd", pids: cluster.etcd.pid === undefined ? [] : [cluster.etcd.pid] },
    ...[...cluster.coordinators, ...cluster.workers].map((m) => ({ name: m.name, pids: m.pid === undefined ? [] : [m.pid] })),
    ...cluster.workers.map((m) => ({ name: `${m.name} executors (each)`, pids: m.pid === undefined ? [] : childPids(m.pid) })),
    { name: "soak client (SDK, this process)", pids: [process.pid] },
  ]);
  sampler.start();
  try {
    const schedule = faultSchedule({ seed: o.seed, startMs: 3_000, endMs: o.durationMs, workers: cluster.workers.length, coordinators: cluster.coordinators.length, meanGapMs: 6_000 });
    const tasks: TaskOutcome[] = [];
    // Where each run in flight was submitted: Worker faults hit a Worker that is running tasks.
    const runningOn = new Map<string, string>();
    let nextRange = 0;
    const runOne = async (t: TaskOutcome, table: SoakTable) => {
      while (!t.succeeded && t.runs < maxRuns && t.disallowed.length === 0) {
        t.runs++;
        const taskId = t.runs === 1 ? t.taskId : `${t.taskId}-run${t.runs}`;
        try {
          const run = await client.runTask(taskFor(taskId, table, t.fromBlock, t.toBlock), {
            timeoutMs: o.runTimeoutMs ?? 120_000,
            onEvent: (e) => {
              // From the SubmitTask on: a short task's SubmitTask answers only at its end.
              if (e.kind === "submitting" || e.kind === "submitted") runningOn.set(taskId, e.workerAddr);
              if (e.kind === "workerLost") {
                runningOn.delete(taskId);
                log(`task ${taskId}: Worker ${e.workerAddr} lost (${e.reason}); resubmit: ${e.resubmit}`);
              }
            },
          });
          runningOn.delete(taskId);
          t.resubmissions += run.attempts - 1;
          t.workers.push(...run.workers);
          if (run.succeeded) t.succeeded = true;
          else {
            const f = failureOf(run);
            t.failures.push(f.text);
            if (!f.allowed) t.disallowed.push(f.text);
          }
        } catch (e) {
          runningOn.delete(taskId);
          const f = sdkFailureOf(e);
          t.failures.push(f.text);
          if (!f.allowed) {
            t.disallowed.push(f.text);
            log(whatTheWorkersSaid(cluster, taskId));
          }
          await Bun.sleep(1_000);
        }
        if (!t.succeeded) log(`task ${taskId} run ${t.runs} did not succeed: ${t.failures.at(-1)}`);
      }
    };
    const rerunDone = new Set<string>();
    let laneSteps = 0;
    /** backfill keeps `concurrency` tasks in flight for periodMs, then lets them finish. */
    const backfill = async (periodMs: number): Promise<{ blocks: number; seconds: number }> => {
      const since = performance.now();
      const first = tasks.length;
      const lane = async () => {
        while (performance.now() - since < periodMs) {
          // Every eighth task reruns a range already written (a user's rerun, under the same faults):
          // the replace path is then exercised for sure, so "no row twice" is not vacuous.
          const earlier = ++laneSteps % 8 === 0 ? tasks.find((e) => e.succeeded && !e.rerunOf && !rerunDone.has(e.taskId)) : undefined;
          if (earlier) {
            rerunDone.add(earlier.taskId);
            const t: TaskOutcome = { ...newOutcome(`${earlier.taskId}-rerun`, earlier.table, earlier.fromBlock, earlier.toBlock), rerunOf: earlier.taskId };
            tasks.push(t);
            await runOne(t, tableOf(earlier.table));
            continue;
          }
          const i = nextRange++;
          const table = i % 3 === 2 ? ERC20_TRANSFERS : BLOCK_STATS;
          const from = firstBlock + Math.floor(i / 3) * blocksPerTask * 3 + (i % 3) * blocksPerTask;
          const t = newOutcome(`soak-${o.seed}-${i}`, table.table, from, from + blocksPerTask - 1);
          tasks.push(t);
          await runOne(t, table);
        }
      };
      await Promise.all(Array.from({ length: o.concurrency ?? 6 }, lane));
      const blocks = tasks.slice(first).filter((t) => t.succeeded).reduce((sum, t) => sum + t.toBlock - t.fromBlock + 1, 0);
      return { blocks, seconds: (performance.now() - since) / 1000 };
    };

    // The same cluster without faults first: the figure the faulted rate is compared with.
    const baseline = o.baselineMs ? await backfill(o.baselineMs) : undefined;
    if (baseline) log(`baseline without faults: ${baseline.blocks} blocks in ${baseline.seconds.toFixed(1)} s`);
    const faults = faultsFor(cluster, (seeded) => busiestWorker(cluster, runningOn, seeded));
    const injected: InjectedFault[] = [];
    const faultsStart = performance.now();
    const elapsed = () => performance.now() - faultsStart;

    const driver = (async () => {
      for (const e of schedule) {
        if (e.atMs > elapsed()) await Bun.sleep(e.atMs - elapsed());
        const startedMs = Math.round(elapsed());
        const { what, effective } = await faults[e.kind].inject(e);
        injected.push({ event: e, startedMs, what, effective });
        log(`[${(startedMs / 1000).toFixed(1)} s] fault ${e.kind}: ${what}${effective ? "" : " (hit nothing: not counted)"}`);
      }
    })();

    const faulted = await backfill(o.durationMs);
    await driver;
    sampler.stop();

    const check = await checkTables(
      cluster.tableStore,
      tasks.map((t) => ({ table: tableOf(t.table), fromBlock: t.fromBlock, toBlock: t.toBlock })),
    );
    return {
      seed: o.seed,
      store: o.store ?? "sqlite",
      wallSeconds: (performance.now() - started) / 1000,
      backfillSeconds: faulted.seconds,
      faults: injected,
      faultsByKind: countByKind(injected.filter((f) => f.effective).map((f) => f.event)),
      tasks,
      blocks: faulted.blocks,
      blocksPerSecond: faulted.blocks / faulted.seconds,
      baselineBlocksPerSecond: baseline ? baseline.blocks / baseline.seconds : undefined,
      peakRssMb: Object.fromEntries([...sampler.peakKb].map(([k, v]) => [k, Math.round(v / 102.4) / 10])),
      check,
      resubmissions: tasks.reduce((sum, t) => sum + t.resubmissions, 0),
      rewrites: tasks.filter((t) => t.rerunOf && t.succeeded).length,
      passed: checkPassed(check) && tasks.every((t) => t.succeeded && t.disallowed.length === 0),
    };
  } finally {
    sampler.stop();
    client.close();
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
  const lines = [
    `BlockX soak, seed ${r.seed}, table store ${r.store === "postgres" ? "Postgres (every Worker its own host)" : "SQLite (one host, one file)"}: ${r.passed ? "PASSED" : "FAILED"}`,
    `wall ${r.wallSeconds.toFixed(1)} s, backfill under faults ${r.backfillSeconds.toFixed(1)} s`,
    "",
    "faults that took effect, by kind:",
    ...Object.entries(r.faultsByKind).map(([k, n]) => `  ${k.padEnd(20)} ${n}`),
    `  ${"total".padEnd(20)} ${r.faults.filter((f) => f.effective).length} (${r.faults.filter((f) => !f.effective).length} more hit nothing)`,
    "",
    `tasks: ${r.tasks.length} (${r.tasks.filter((t) => t.succeeded).length} succeeded, ${r.tasks.filter((t) => !t.succeeded).length} failed)`,
    `  resubmitted by the SDK after a lost Worker: ${resubmitted.length} tasks, ${resubmitted.reduce((s, t) => s + t.resubmissions, 0)} resubmissions`,
    `  rerun by the client after FAILED or an SDK error: ${retried.length} tasks, ${retried.reduce((s, t) => s + t.runs - 1, 0)} reruns`,
    `  ranges already written, rerun on purpose: ${r.rewrites} succeeded`,
    ...r.tasks.filter((t) => t.disallowed.length > 0).map((t) => `  NOT A FAULT'S DOING: ${t.taskId}: ${t.disallowed.join(" | ").slice(0, 300)}`),
    ...retried.slice(0, 10).map((t) => `    ${t.taskId} (${t.table} ${t.fromBlock}-${t.toBlock}): ${t.failures.join(" | ").slice(0, 300)}`),
    "",
    `blocks: ${r.blocks} in ${r.backfillSeconds.toFixed(1)} s = ${r.blocksPerSecond.toFixed(0)} blocks/s under faults` +
      (r.baselineBlocksPerSecond ? `; ${r.baselineBlocksPerSecond.toFixed(0)} blocks/s without (baseline, same run): ratio ${(r.blocksPerSecond / r.baselineBlocksPerSecond).toFixed(2)}` : ""),
    "",
    "peak RSS per process (MB):",
    ...Object.entries(r.peakRssMb).map(([k, v]) => `  ${k.padEnd(34)} ${v}`),
    "",
    `check: ${r.check.blocks} blocks, ${r.check.expectedRows} rows expected, ${r.check.foundRows} found; ` +
      `missing ${r.check.missingRows}, duplicated ${r.check.duplicatedRows}, unexpected ${r.check.unexpectedRows}`,
    ...r.check.problems.map((p) => `  ${p}`),
  ];
  return lines.join("\n");
}
