/**
 * Runs the executor's own Python unit tests (executor-py/tests) as part of `make test`. The suite
 * must not shrink silently: a run of fewer tests than it has today, a skipped test, or an
 * expected failure fails this test instead of passing as "OK".
 */
import { expect, test } from "bun:test";
import { join } from "node:path";

const EXECUTOR_PY = join(import.meta.dir, "..", "..", "executor-py");
/** The suite's size when this floor was last raised; raise it when tests are added. */
const MIN_PYTHON_TESTS = 98;

/** unittestSummary reads unittest's closing lines: "Ran N tests" and "OK (skipped=K)" / "FAILED (...)". */
export function unittestSummary(stderr: string): { ran: number; ok: boolean; skipped: number; expectedFailures: number } {
  const ran = Number(/^Ran (\d+) tests? in /m.exec(stderr)?.[1] ?? -1);
  const status = /^(OK|FAILED)(?: \(([^)]*)\))?$/m.exec(stderr);
  const counts = Object.fromEntries((status?.[2] ?? "").split(", ").filter(Boolean).map((kv) => [kv.split("=")[0], Number(kv.split("=")[1])]));
  return { ran, ok: status?.[1] === "OK", skipped: counts.skipped ?? 0, expectedFailures: counts["expected failures"] ?? 0 };
}

test("the summary reader sees skips, expected failures and an empty run", () => {
  expect(unittestSummary("...\n----\nRan 68 tests in 1.2s\n\nOK\n")).toEqual({ ran: 68, ok: true, skipped: 0, expectedFailures: 0 });
  expect(unittestSummary("Ran 3 tests in 0.1s\n\nOK (skipped=1, expected failures=1)\n")).toEqual({ ran: 3, ok: true, skipped: 1, expectedFailures: 1 });
  expect(unittestSummary("Ran 0 tests in 0.000s\n\nOK\n").ran).toBe(0);
  expect(unittestSummary("Ran 2 tests in 0.1s\n\nFAILED (failures=1)\n").ok).toBe(false);
  expect(unittestSummary("Traceback ... ImportError").ran).toBe(-1);
});

test(`executor-py unit tests pass under /usr/bin/python3: at least ${MIN_PYTHON_TESTS} run, none skipped`, async () => {
  const p = Bun.spawn(["/usr/bin/python3", "-m", "unittest", "discover", "-s", join(EXECUTOR_PY, "tests"), "-t", EXECUTOR_PY], {
    cwd: EXECUTOR_PY,
    env: { PATH: process.env.PATH!, PYTHONDONTWRITEBYTECODE: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const summary = unittestSummary(err);
  if (code !== 0 || !summary.ok || summary.skipped > 0) console.error(out, err);
  expect(code).toBe(0);
  expect(summary).toMatchObject({ ok: true, skipped: 0, expectedFailures: 0 });
  expect(summary.ran).toBeGreaterThanOrEqual(MIN_PYTHON_TESTS);
}, 120_000);
