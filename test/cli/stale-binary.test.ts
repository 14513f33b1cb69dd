/**
 * The process tests refuse a stale dist/blockx: the binary embeds the digest of the sources it was
 * built from, and test/support/source-digest.ts computes the tree's the same way the Makefile does.
 */
import { afterAll, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY } from "../support/blockx-process";
import { binaryDigest, sourceDigest } from "../support/source-digest";

const REPO = join(import.meta.dir, "..", "..");
const copy = mkdtempSync(join(tmpdir(), "blockx-digest-"));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

test("the Makefile's digest, the tree's and the binary's agree (make test builds first)", () => {
  const make = Bun.spawnSync(["make", "-s", "--no-print-directory", "source-digest"], { cwd: REPO });
  expect(make.stdout.toString().trim()).toBe(sourceDigest(REPO));
  expect(binaryDigest(BLOCKX_BINARY)).toBe(sourceDigest(REPO));
});

test("a changed source changes the digest (the binary is then refused); a changed test or a README does not", () => {
  for (const d of ["src", "executor-py/blockx_executor", "client-py/blockx", "deploy/systemd"]) cpSync(join(REPO, d), join(copy, d), { recursive: true });
  cpSync(join(REPO, "package.json"), join(copy, "package.json"));
  const before = sourceDigest(copy);
  expect(before).toBe(sourceDigest(REPO));
  writeFileSync(join(copy, "src", "common", "deadline-heap.test.ts"), "// a test changed\n");
  writeFileSync(join(copy, "README.md"), "changed\n");
  expect(sourceDigest(copy)).toBe(before);
  writeFileSync(join(copy, "src", "common", "deadline-heap.ts"), "// a source changed\n", { flag: "a" });
  const afterTs = sourceDigest(copy);
  expect(afterTs).not.toBe(before);
  writeFileSync(join(copy, "executor-py", "blockx_executor", "__init__.py"), "# changed\n", { flag: "a" });
  const afterPy = sourceDigest(copy);
  expect(afterPy).not.toBe(afterTs);
  // blockx-py ships inside the binary too (executors import it).
  writeFileSync(join(copy, "client-py", "blockx", "__init__.py"), "# changed\n", { flag: "a" });
  expect(sourceDigest(copy)).not.toBe(afterPy);
});
