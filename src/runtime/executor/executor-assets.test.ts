import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { executorPythonPath } from "./executor-assets";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function cacheDir(): string {
  const d = mkdtempSync(join(tmpdir(), "blockx-assets-"));
  chmodSync(d, 0o755);
  dirs.push(d);
  return d;
}
/** Each call's copy; an untrusted one is replaced by a fresh folder under /tmp (removed after the test). */
async function copyIn(dir: string): Promise<string> {
  const path = await executorPythonPath(dir);
  if (!path.startsWith(dir)) dirs.push(path);
  return path;
}
const main = (copy: string) => join(copy, "blockx_executor", "__main__.py");

describe("executor code copies", () => {
  test("a copy is made once and reused while it is ours and unchanged", async () => {
    const dir = cacheDir();
    const first = await copyIn(dir);
    expect(dirname(first)).toBe(dir);
    expect(existsSync(main(first))).toBe(true);
    expect(await copyIn(dir)).toBe(first);
  });

  test("a copy someone changed, opened to writers, or handed to another user is never imported", async () => {
    const dir = cacheDir();
    const copy = await copyIn(dir);
    const original = readFileSync(main(copy), "utf8");
    // Changed code: another copy, with the right bytes, is used instead.
    appendFileSync(main(copy), "\nimport os; os.system('echo planted')\n");
    const instead = await copyIn(dir);
    expect(instead).not.toBe(copy);
    expect(readFileSync(main(instead), "utf8")).toBe(original);
    // A folder anyone may write to.
    const dir2 = cacheDir();
    const copy2 = await copyIn(dir2);
    chmodSync(join(copy2, "blockx_executor"), 0o777);
    expect(await copyIn(dir2)).not.toBe(copy2);
    // A copy that belongs to another user (only root can hand it over).
    if (process.getuid?.() === 0) {
      const dir3 = cacheDir();
      const copy3 = await copyIn(dir3);
      chownSync(main(copy3), 65534, 65534);
      expect(await copyIn(dir3)).not.toBe(copy3);
    }
  });
});
