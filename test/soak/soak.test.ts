/**
 * The shortened soak inside `make test`: the full cluster (etcd, two Coordinators, three
 * Workers, one table store) backfilling through the SDK for 60 s under a fixed seed's
 * faults, at least one of each kind taking effect, with ranges rerun on purpose, then every row
 * of the store checked: none missing, none duplicated, none outside the ranges. `make soak` runs the same thing for 10 minutes or more.
 */
import { expect, test } from "bun:test";
import { FAULT_KINDS } from "./fault-schedule";
import { formatReport, runSoak } from "./soak-run";

test("short soak: every fault kind injected; every block's rows exactly once", async () => {
  // Faults and lost Workers are printed as they happen: if the test ever times out, they say where.
  const report = await runSoak({ seed: 20261129, durationMs: 60_000, runTimeoutMs: 45_000, log: (l) => console.log(l) });
  console.log(formatReport(report));
  // Every kind took effect at least once (a fault that hit nothing is not counted).
  for (const k of FAULT_KINDS) expect(report.faultsByKind[k]).toBeGreaterThanOrEqual(1);
  // Not vacuous: the SDK resubmitted after a lost Worker, and already written ranges were written again.
  expect(report.resubmissions).toBeGreaterThanOrEqual(1);
  expect(report.rewrites).toBeGreaterThanOrEqual(1);
  // Every failure a rerun followed is one the faults explain; a deadline hit or any other code fails here.
  expect(report.tasks.filter((t) => t.disallowed.length > 0).map((t) => `${t.taskId}: ${t.disallowed.join(" | ")}`)).toEqual([]);
  expect(report.tasks.filter((t) => !t.succeeded).map((t) => `${t.taskId}: ${t.failures.join(" | ")}`)).toEqual([]);
  expect(report.check.problems).toEqual([]);
  expect(report.check).toMatchObject({ missingRows: 0, duplicatedRows: 0, unexpectedRows: 0 });
  expect(report.check.foundRows).toBe(report.check.expectedRows);
  expect(report.check.blocks).toBeGreaterThan(0);
}, 170_000);
