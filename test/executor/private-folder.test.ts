/**
 * A new user clones or installs into a private folder: `mktemp -d` and /root are mode 0700, and
 * executors run as EXECUTOR_USER (nobody) when the process is root. Executor code is always
 * served from a folder made for it, so calls run from such a folder, from source (as `bun test`
 * runs the pool) and from the compiled binary; a BLOCKX_CACHE_DIR out of nobody's reach stops
 * the start at once with a message naming the folder.
 */
import { afterAll, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY, BlockxProcess, transportEnv } from "../support/blockx-process";
import { roleOfCommand } from "../support/suite-tls";

const REPO = join(import.meta.dir, "..", "..");
const isRoot = process.getuid?.() === 0;
const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A fresh `mktemp -d` folder: mode 0700, owned by this user. */
function privateFolder(): string {
  const d = mkdtempSync(join(tmpdir(), "blockx-private-"));
  made.push(d);
  expect(statSync(d).mode & 0o777).toBe(0o700);
  return d;
}

async function run(argv: string[], cwd: string, env: Record<string, string> = {}) {
  const p = Bun.spawn(argv, { cwd, env: { PATH: process.env.PATH!, BLOCKX_LOG_LEVEL: "warn", ...(argv.includes("dev") ? {} : transportEnv(env, roleOfCommand(argv[1]))), ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

const FN = "def main(ctx, x):\n    return x + 1\n";

test("the compiled binary in a 0700 folder, with TMPDIR there too, runs a call (executors as nobody when root)", async () => {
  const dir = privateFolder();
  copyFileSync(BLOCKX_BINARY, join(dir, "blockx"));
  Bun.spawnSync(["chmod", "+x", join(dir, "blockx")]);
  writeFileSync(join(dir, "fn.py"), FN);
  // TMPDIR inside the private folder: the default executor code folder and the pool's socket
  // folder would be out of nobody's reach there; the pool moves both to /tmp.
  const tmp = join(dir, "tmp");
  Bun.spawnSync(["mkdir", "-m", "700", tmp]);
  const r = await run([join(dir, "blockx"), "exec", "fn.py", "41"], dir, { TMPDIR: tmp });
  expect(r.err).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.out.slice(r.out.indexOf("{")))).toMatchObject({ ok: true, value: 42 });
}, 60_000);

test("a checkout in a 0700 folder runs a call from source (the way bun test starts pools)", async () => {
  const clone = privateFolder();
  for (const part of ["src", "executor-py", "client-py", "deploy", "package.json", "tsconfig.json"]) cpSync(join(REPO, part), join(clone, part), { recursive: true });
  symlinkSync(realpathSync(join(REPO, "node_modules")), join(clone, "node_modules"));
  writeFileSync(join(clone, "fn.py"), FN);
  const r = await run([process.execPath, join(clone, "src", "main.ts"), "exec", "fn.py", "1"], clone);
  expect(r.err).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.out.slice(r.out.indexOf("{")))).toMatchObject({ ok: true, value: 2 });
}, 60_000);

test.if(isRoot)("as root, BLOCKX_CACHE_DIR inside a 0700 folder stops exec at once with exit 1, naming the folder", async () => {
  const dir = privateFolder();
  writeFileSync(join(dir, "fn.py"), FN);
  const r = await run([BLOCKX_BINARY, "exec", "fn.py", "1"], dir, { BLOCKX_CACHE_DIR: join(dir, "cache") });
  expect(r.code).toBe(1);
  expect(r.err).toContain(`BLOCKX_CACHE_DIR ${join(dir, "cache")} is not readable by EXECUTOR_USER nobody`);
  expect(r.err).toContain(`${dir} is mode 0700 owned by 0:0`);
  expect(r.err).not.toContain("did not start within");
}, 60_000);

test("blockx dev with its directory inside a 0700 folder runs a task on its Workers' executors", async () => {
  // DEV_DIR under a private folder: dev opens DEV_DIR itself (0755), but not the folders above it,
  // so the Workers' TMPDIR (<dev dir>/tmp) is out of nobody's reach when root.
  const outer = privateFolder();
  writeFileSync(join(outer, "fn.py"), "def main(ctx, input):\n    return [{'block': input['blockNumber'], 'txs': len(ctx.blockdb.block(input['blockNumber'], full=False)['transactions'])}]\n");
  const dev = BlockxProcess.spawn(["dev"], {
    ETCD_BIN: process.env.BLOCKX_ETCD_BIN!,
    DEV_DIR: join(outer, "dev"),
    DEV_WORKERS: "1",
    DEV_BUNDLE_WORKERS: "1",
    EXECUTOR_COUNT: "1",
    DEV_TERMINAL_LOG_LEVEL: "error",
  });
  try {
    const ready = (await dev.waitForLog((l) => l.msg === "dev ready", 90_000)) as unknown as { envFile: string };
    const r = await run(["bash", "-ec", `source '${ready.envFile}'; '${BLOCKX_BINARY}' submit --function fn.py --blocks 1..3 --table private_dev --watch`], outer);
    if (r.code !== 0) throw new Error(`submit exited ${r.code}:\n${r.out}\n${r.err}\n--- dev stderr\n${dev.stderr}`);
    expect(r.out).toMatch(/^state\s+SUCCEEDED$/m);
  } finally {
    await dev.stop("SIGINT");
  }
}, 150_000);
