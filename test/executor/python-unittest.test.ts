/** Runs the executor's own Python unit tests (executor-py/tests) as part of `make test`. */
import { expect, test } from "bun:test";
import { join } from "node:path";

const EXECUTOR_PY = join(import.meta.dir, "..", "..", "executor-py");

test("executor-py unit tests pass under /usr/bin/python3", async () => {
  const p = Bun.spawn(["/usr/bin/python3", "-m", "unittest", "discover", "-s", join(EXECUTOR_PY, "tests"), "-t", EXECUTOR_PY], {
    cwd: EXECUTOR_PY,
    env: { PATH: process.env.PATH!, PYTHONDONTWRITEBYTECODE: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) console.error(out, err);
  expect(err).toMatch(/Ran \d+ tests/);
  expect(code).toBe(0);
}, 120_000);
