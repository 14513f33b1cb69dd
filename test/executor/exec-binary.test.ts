/**
 * The compiled binary carries the executor: copied alone into an empty directory, `blockx exec`
 * unpacks its Python files into a content-addressed cache folder and runs a call end to end.
 */
import { expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY } from "../support/blockx-process";

async function execIn(dir: string, args: string[], env: Record<string, string>) {
  const p = Bun.spawn([join(dir, "blockx"), "exec", ...args], { cwd: dir, env: { PATH: process.env.PATH!, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

test("a copied binary in an empty directory runs a call, with a sub-call, through its own executors", async () => {
  const dir = mkdtempSync(join(tmpdir(), "blockx-bin-"));
  const cache = join(dir, "cache");
  // Executors run as an unprivileged user when the tests run as root: they must reach the cache.
  Bun.spawnSync(["chmod", "755", dir]);
  try {
    copyFileSync(BLOCKX_BINARY, join(dir, "blockx"));
    Bun.spawnSync(["chmod", "+x", join(dir, "blockx")]);
    writeFileSync(join(dir, "inc.py"), "def main(ctx, x):\n    return x + 1\n");
    writeFileSync(join(dir, "fn.py"), "def main(ctx, x):\n    print('computing')\n    return {'double_inc': ctx.call('inc', x) * 2}\n");
    const env = { BLOCKX_CACHE_DIR: cache, BLOCKX_LOG_LEVEL: "warn" };
    const first = await execIn(dir, ["fn.py", "20"], env);
    expect(first.code).toBe(0);
    const outcome = JSON.parse(first.out.slice(first.out.indexOf("{\n")));
    expect(outcome).toMatchObject({ ok: true, value: { double_inc: 42 }, output: "computing\n", suspensions: 1 });
    // Unpacked once into a folder named by the files' hash, and reused by the next run.
    const unpacked = readdirSync(cache).filter((f) => f.startsWith("executor-"));
    expect(unpacked).toHaveLength(1);
    expect(existsSync(join(cache, unpacked[0]!, "blockx_executor", "__main__.py"))).toBe(true);
    const second = await execIn(dir, ["fn.py", "1"], env);
    expect(JSON.parse(second.out.slice(second.out.indexOf("{\n"))).value).toEqual({ double_inc: 4 });
    expect(readdirSync(cache).filter((f) => f.startsWith("executor-"))).toEqual(unpacked);

    const failing = await execIn(dir, ["missing.py"], env);
    expect(failing.code).toBe(2);
    expect(failing.err).toContain("no such file: missing.py");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
