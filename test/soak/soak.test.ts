/**
 * The shortened soak inside `make test`, once per table store: the full cluster (etcd, two
 * Coordinators, three Workers, each Worker a host of its own behind TCP fault relays to its clients,
 * etcd and Postgres) backfilling block, bundle and normal tables through the SDK (runTask, and
 * batches through runTasks) for 120 s under a fixed seed's faults, at least one of each kind taking
 * effect (the threshold faults included: partitions past the lease and past the SDK's patience, a
 * silent and a severed store, lost SubmitTask and SubmitTasks answers, pauses past the lease, past
 * the statement timeout and past the SDK's patience within the lease, two at once), with ranges rerun on purpose, then every row of the
 * store checked: none missing, none duplicated, none outside the ranges, none of a run other than
 * the last one the cluster considered current. With SQLite the Workers share one host's file; with
 * Postgres each Worker is a host of its own (its own folders, nothing shared on disk) and the rows
 * meet only in the run's Postgres. `make soak` runs the same thing for 10 minutes or more
 * (STORE=postgres for the second).
 */
import { expect, test } from "bun:test";
import { kindsFor } from "./fault-schedule";
import { formatReport, runSoak } from "./soak-run";

// With Postgres every commit of a table, from any Worker, waits for that table's lock, held over
// several round trips to the server (bench/tables/store-backfill.ts: a third of SQLite's rows/s on
// this 2-core box): tasks of 25 blocks there, 4 at a time, so that tasks still end, and a written
// range is rerun, within the window on a loaded machine.
const RUNS = [
  { store: "sqlite", seed: 20261129, blocksPerTask: 100, concurrency: 6 },
  { store: "postgres", seed: 20261202, blocksPerTask: 25, concurrency: 4 },
] as const;

for (const { store, seed, blocksPerTask, concurrency } of RUNS) test(`short soak (${store}): every fault kind injected, threshold faults between hosts included; every block's rows exactly once, from the last current run`, async () => {
  // Faults and lost Workers are printed as they happen: if the test ever times out, they say where.
  // A run's deadline is generous (a task takes seconds even under the faults): a run that hits it
  // is a hang, and fails the soak, not a slow machine's verdict.
  const report = await runSoak({ seed, store, blocksPerTask, concurrency, durationMs: 120_000, runTimeoutMs: 100_000, log: (l) => console.log(l) });
  console.log(formatReport(report));
  // Every kind took effect at least once (a fault that hit nothing is not counted).
  expect(kindsFor(store).filter((k) => !(report.faultsByKind[k] >= 1))).toEqual([]);
  // Not vacuous: the SDK resubmitted after a lost Worker, already written ranges were written again,
  // a lost answer left a submission uncertain, and a pause past the lease ended a Worker's epoch.
  expect(report.resubmissions).toBeGreaterThanOrEqual(1);
  expect(report.rewrites).toBeGreaterThanOrEqual(1);
  expect(report.evidence.uncertainSubmits.single + report.evidence.uncertainSubmits.batch).toBeGreaterThanOrEqual(1);
  expect(report.evidence.epochsLost).toBeGreaterThanOrEqual(1);
  // A run was taken over by a later run of its task id (a resubmission after a lost Worker). Whether a
  // paused Worker's own run came back superseded and had a commit refused is reported, not required:
  // on a loaded machine the SDK does not always give the paused Worker up within the pause (it failed
  // this check 4 times in about 10 short Postgres soaks, with every row still exactly once);
  // test/worker/gray-faults-process.test.ts case 2 proves that refusal deterministically.
  expect(report.check.runs.takenOver).toBeGreaterThanOrEqual(1);
  if (report.evidence.pausedRuns.refused === 0) console.log("soak: no paused run came back superseded this time (see test/worker/gray-faults-process.test.ts case 2)");
  // The silent store was given up on by the Worker's own deadline (Postgres: its pool replaced), and reported.
  expect(report.evidence.storeUnreachable).toBeGreaterThanOrEqual(1);
  if (store === "postgres") expect(report.evidence.poolsReplaced).toBeGreaterThanOrEqual(1);
  // No process of the cluster died but those the faults killed.
  expect(report.crashes).toEqual([]);
  // Every failure a rerun followed is one the faults explain; a deadline hit or any other code fails here.
  expect(report.tasks.filter((t) => t.disallowed.length > 0).map((t) => `${t.taskId}: ${t.disallowed.join(" | ")}`)).toEqual([]);
  expect(report.tasks.filter((t) => !t.succeeded).map((t) => `${t.taskId}: ${t.failures.join(" | ")}`)).toEqual([]);
  expect(report.check.problems).toEqual([]);
  expect(report.check).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 0, staleRows: 0, mixedRuns: 0, unsettled: 0 });
  expect(report.check.foundRows).toBe(report.check.expectedRows);
  expect(report.check.blocks).toBeGreaterThan(0);
}, 360_000);
