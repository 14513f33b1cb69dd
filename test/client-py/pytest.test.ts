/**
 * Runs blockx-py's tests (client-py/tests, Debian's pytest under /usr/bin/python3) as part of
 * `make test`. They start a real `blockx dev` and private Coordinators and Workers from
 * dist/blockx. The suite must not shrink silently: a failure, an error, a skipped or xfailed
 * test, or fewer tests than the floor fails this test instead of passing.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TESTS = join(import.meta.dir, "..", "..", "client-py", "tests");
/** The suite's size when this floor was last raised; raise it when tests are added. */
const MIN_PYTEST_TESTS = 85;

/** pytestSummary reads pytest's closing line: "== 3 failed, 40 passed, 1 skipped in 12.3s ==" (or -q's bare form). */
export function pytestSummary(out: string): { passed: number; failed: number; errors: number; skipped: number; xfailed: number; xpassed: number; found: boolean } {
  const lines = out.trimEnd().split("\n");
  const last = [...lines].reverse().find((l) => / in [\d.]+s/.test(l) && /(passed|failed|error|skipped|no tests ran)/.test(l)) ?? "";
  const n = (word: string) => Number(new RegExp(`(\\d+) ${word}\\b`).exec(last)?.[1] ?? 0);
  return { passed: n("passed"), failed: n("failed"), errors: n("errors?"), skipped: n("skipped"), xfailed: n("xfailed"), xpassed: n("xpassed"), found: last !== "" };
}

test("the summary reader sees failures, errors, skips and an empty run", () => {
  expect(pytestSummary("....\n43 passed in 201.12s (0:03:21)\n")).toMatchObject({ passed: 43, failed: 0, skipped: 0, found: true });
  expect(pytestSummary("== 1 failed, 40 passed, 2 skipped, 1 error in 3.1s ==\n")).toMatchObject({ passed: 40, failed: 1, skipped: 2, errors: 1 });
  expect(pytestSummary("== 2 errors in 0.5s ==\n")).toMatchObject({ errors: 2, passed: 0 });
  expect(pytestSummary("no tests ran in 0.01s\n")).toMatchObject({ passed: 0, found: true });
  expect(pytestSummary("== 3 passed, 1 xfailed in 1.0s ==")).toMatchObject({ passed: 3, xfailed: 1 });
  expect(pytestSummary("ImportError while loading conftest").found).toBe(false);
});

test(`blockx-py's pytest suite passes: at least ${MIN_PYTEST_TESTS} run, none failed, skipped or xfailed`, async () => {
  // From another directory on purpose: the suite must not depend on the cwd.
  const cwd = mkdtempSync(join(tmpdir(), "blockx-py-pytest-"));
  try {
    const p = Bun.spawn(["/usr/bin/python3", "-m", "pytest", TESTS, "-q", "-p", "no:cacheprovider", "-rfEsxX"], {
      cwd,
      // Plaintext for the session's dev and the lanes' roles, which join its etcd without certificates;
      // test_tls.py starts a dev secure by default and runs blockx-py over mTLS, direct and through the proxy.
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", BLOCKX_INSECURE: "1", BLOCKX_TLS_CA_FILE: "", BLOCKX_TLS_CERT_FILE: "", BLOCKX_TLS_KEY_FILE: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const s = pytestSummary(out);
    const ok = code === 0 && s.found && s.failed === 0 && s.errors === 0 && s.skipped === 0 && s.xfailed === 0 && s.xpassed === 0 && s.passed >= MIN_PYTEST_TESTS;
    if (!ok) console.error(out.slice(-20_000), err.slice(-5_000));
    expect(s).toMatchObject({ found: true, failed: 0, errors: 0, skipped: 0, xfailed: 0, xpassed: 0 });
    expect(code).toBe(0);
    expect(s.passed).toBeGreaterThanOrEqual(MIN_PYTEST_TESTS);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}, 1_200_000);
