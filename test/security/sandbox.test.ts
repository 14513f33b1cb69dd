/**
 * The executor sandbox (EXECUTOR_SANDBOX=on), with real executors: a hostile function
 * (escape-probe.py) tries every escape, and each is refused. It runs twice: in a pool this
 * (root) test process starts, executors dropping to `nobody` inside bubblewrap; and through the
 * compiled binary run by `nobody` itself (`blockx exec`), where bubblewrap makes a user namespace.
 * A host without user namespaces is stood in for by a bwrap that fails as bwrap does there.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TCPSocketListener } from "bun";
import pino from "pino";
import { silentLogger } from "../../src/common/logging/logger";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { ExecutorStartError } from "../../src/runtime/executor/executor-start-error";
import type { JsonValue } from "../../src/runtime/json/raw-json";
import { BLOCKX_BINARY } from "../support/blockx-process";

const PROBE = readFileSync(join(import.meta.dir, "escape-probe.py"), "utf8");
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

type Attempt = { refused: boolean; how: string };
type Report = Record<string, Attempt> & { status: string[] };

let dir: string;
let secretFile: string;
let listener: TCPSocketListener<unknown>;
let connections = 0;

beforeAll(() => {
  // Everything here is open to `nobody` on the host: only the sandbox keeps executors out.
  dir = mkdtempSync(join(tmpdir(), "blockx-sandbox-"));
  chmodSync(dir, 0o755);
  secretFile = join(dir, "tables.sqlite");
  const db = new Database(secretFile);
  db.run("CREATE TABLE secrets (v TEXT)");
  db.run("INSERT INTO secrets VALUES ('another task''s rows')");
  db.close();
  chmodSync(secretFile, 0o644);
  listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { open: () => void connections++, data: () => {} } });
});

afterAll(() => {
  listener.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** expectAllRefused checks each escape of the report and that the kernel fences are on. */
function expectAllRefused(report: Report): void {
  const escapes = Object.keys(report).filter((k) => k !== "status");
  expect(escapes.length).toBeGreaterThanOrEqual(14);
  const through = escapes.filter((k) => !report[k]!.refused).map((k) => `${k}: ${report[k]!.how}`);
  expect(through).toEqual([]);
  // The kernel says no, not only the audit hook: seccomp's EPERM for a fresh _socket and a
  // re-imported _posixsubprocess, and paths that are not there at all.
  expect(report.tcp_connect!.how).toContain("Operation not permitted");
  expect(report.posixsubprocess_reimport!.how).toContain("Operation not permitted");
  expect(report.etc_passwd!.how).toContain("FileNotFoundError");
  expect(report.table_store!.how).toContain("FileNotFoundError");
  expect(report.worker_proc_environ!.how).toContain("FileNotFoundError");
  expect(report.status).toContain("NoNewPrivs:\t1");
  expect(report.status).toContain("Seccomp:\t2");
  expect(report.status).toContain("CapEff:\t0000000000000000");
  expect(connections).toBe(0);
}

describe("EXECUTOR_SANDBOX=on", () => {
  test("every escape is refused in a pool started by this process", async () => {
    const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2, sandbox: "on" }), silentLogger(), { waitForAll: true });
    try {
      const input = { secretFile, port: listener.port, workerPid: process.pid };
      const outcome = await pool.execute({ callId: "escape-1", fn: { source: PROBE, entry: "main" }, args: input as JsonValue });
      if (!outcome.ok) throw new Error(`the probe failed: ${outcome.error.message}\n${outcome.error.traceback}`);
      const report = outcome.value as unknown as Report;
      expectAllRefused(report);
      if (isRoot) expect(report.status.find((l) => l.startsWith("Uid:"))).toContain(String(NOBODY));
      // The pool (and so the Worker) keeps serving after the attempts.
      const after = await pool.execute({ callId: "escape-2", fn: { source: "def main(ctx, x):\n    return x * 2\n", entry: "main" }, args: 21 });
      expect(after.ok && after.value).toBe(42);
    } finally {
      await pool.close();
    }
  }, 60_000);

  test.skipIf(!isRoot)("every escape is refused when `nobody` runs the compiled binary (bubblewrap makes a user namespace)", async () => {
    // A folder nobody can read and write, holding a copy of the binary: the checkout may lie under /root.
    const home = join(dir, "nobody");
    mkdirSync(join(home, "cache"), { recursive: true });
    copyFileSync(BLOCKX_BINARY, join(home, "blockx"));
    chmodSync(join(home, "blockx"), 0o755);
    writeFileSync(join(home, "probe.py"), PROBE);
    for (const p of [home, join(home, "cache"), join(home, "probe.py")]) chownSync(p, NOBODY, NOBODY);
    const input = JSON.stringify({ secretFile, port: listener.port, workerPid: process.pid });
    const p = Bun.spawn(["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--", join(home, "blockx"), "exec", "probe.py", input], {
      cwd: home,
      // Debian's interpreter: a pyenv build under /root is out of nobody's reach.
      env: { PATH: "/usr/bin:/bin", EXECUTOR_PYTHON: "/usr/bin/python3", BLOCKX_CACHE_DIR: join(home, "cache"), TMPDIR: home, BLOCKX_LOG_LEVEL: "warn" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`blockx exec as nobody exited ${code}:\n${err}\n${out}`);
    const outcome = JSON.parse(out.slice(out.indexOf("{\n"))) as { value: Report };
    expectAllRefused(outcome.value);
    expect(outcome.value.status.find((l) => l.startsWith("Uid:"))).toContain(String(NOBODY));
  }, 90_000);
});

describe("where bubblewrap cannot make its namespaces", () => {
  function fakeBwrap(): string {
    // What bwrap says on a host with user namespaces disabled.
    const path = join(dir, "bwrap-without-userns");
    writeFileSync(path, "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n");
    chmodSync(path, 0o755);
    return path;
  }

  test("a role that runs user code refuses to start, naming the cause and EXECUTOR_SANDBOX=off", async () => {
    const err = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, sandbox: "on", bwrap: fakeBwrap() }), silentLogger()).then(
      (pool) => pool.close().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecutorStartError);
    expect((err as ExecutorStartError).code).toBe("EXECUTOR_SANDBOX_UNAVAILABLE");
    expect((err as Error).message).toContain("No permissions to creating new namespace");
    expect((err as Error).message).toContain("EXECUTOR_SANDBOX=off");
  }, 30_000);

  test("EXECUTOR_SANDBOX=off starts anyway, with a loud warning of what is lost", async () => {
    const lines: string[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => void lines.push(line) });
    const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1, sandbox: "off", bwrap: fakeBwrap() }), log);
    try {
      const o = await pool.execute({ callId: "off-1", fn: { source: "def main(ctx, x):\n    return x + 1\n", entry: "main" }, args: 1 });
      expect(o.ok && o.value).toBe(2);
      expect(lines.some((l) => l.includes("USER CODE IS NOT SANDBOXED"))).toBe(true);
    } finally {
      await pool.close();
    }
  }, 30_000);
});

describe("no sharing between owners (ownerKey)", () => {
  const SECRET = "owner-a-secret-7f3e";
  // Leaves its source (with the secret) in linecache, its arguments in live objects and a global.
  const ownerA = `import linecache, sys\nKEPT = []\ndef main(ctx, x):\n    KEPT.append(x)\n    sys.modules['__main__'].__dict__['left_behind'] = x\n    return len(linecache.cache)\n# ${SECRET}\n`;
  // Looks for it everywhere an interpreter keeps things.
  const ownerB = [
    "import gc, linecache, sys",
    "def main(ctx, secret):",
    "    found = [f for f, e in linecache.cache.items() if any(secret in l for l in (e[2] if len(e) > 2 else []))]",
    "    found += ['gc' for o in gc.get_objects() if isinstance(o, (list, dict)) and secret in repr(o)[:100000] and o is not locals()]",
    "    found += ['globals' for m in list(sys.modules.values()) if secret in repr(getattr(m, '__dict__', {}).get('left_behind'))]",
    "    return found",
    "",
  ].join("\n");

  test("a call of another owner finds nothing of the previous owner's source or arguments (linecache, gc, globals)", async () => {
    // One executor: owner B's call can only run where owner A's ran, after it is recycled.
    const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 1 }), silentLogger(), { waitForAll: true });
    try {
      const a = await pool.execute({ callId: "a-1", fn: { source: ownerA, entry: "main" }, args: { input: SECRET }, ownerKey: "A" });
      expect(a.ok).toBe(true);
      const sameOwner = await pool.execute({ callId: "a-2", fn: { source: ownerB, entry: "main" }, args: SECRET, ownerKey: "A" });
      // The same owner shares its executor (and so the test can see what there is to find).
      expect(sameOwner.ok && (sameOwner.value as string[]).length).toBeGreaterThan(0);
      const b = await pool.execute({ callId: "b-1", fn: { source: ownerB, entry: "main" }, args: SECRET, ownerKey: "B" });
      if (!b.ok) throw new Error(b.error.message);
      expect(b.value).toEqual([]);
      expect(b.executorId).not.toBe(a.executorId);
    } finally {
      await pool.close();
    }
  }, 60_000);

  test("a call cannot complete another owner's call by writing on its executor's socket", async () => {
    const pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), silentLogger(), { waitForAll: true });
    try {
      // The victim waits on IO until the forger has written its frame.
      let release: (v: { ok: true; value: string; ioMs: number }) => void = () => {};
      const ioGate = new Promise<{ ok: true; value: string; ioMs: number }>((r) => (release = r));
      const victim = pool.execute(
        { callId: "victim-1", fn: { source: "def main(ctx, x):\n    return ctx.io('b', 'op', x)\n", entry: "main" }, args: "genuine", ownerKey: "victim" },
        { io: () => ioGate as never },
      );
      const forger = [
        "import json, os, struct",
        "def main(ctx, x):",
        "    frame = json.dumps({'type': 'CallCompleted', 'callId': 'victim-1', 'result': 'forged', 'cpuMs': 0, 'output': '', 'logs': []}).encode()",
        "    sent = 0",
        "    for fd in os.listdir('/proc/self/fd'):",
        "        try:",
        "            target = os.readlink(f'/proc/self/fd/{fd}')",
        "        except OSError:",
        "            continue  # the listing's own descriptor, closed by now",
        "        if target.startswith('socket:'):",
        "            os.write(int(fd), struct.pack('>I', len(frame)) + frame)",
        "            sent += 1",
        "    return sent",
        "",
      ].join("\n");
      const forged = await pool.execute({ callId: "forger-1", fn: { source: forger, entry: "main" }, args: null, ownerKey: "forger" });
      if (!forged.ok) throw new Error(`the forger failed: ${forged.error.code} ${forged.error.message}`);
      expect(forged.value as number).toBeGreaterThan(0);
      release({ ok: true, value: "genuine", ioMs: 0 });
      const v = await victim;
      expect(v.ok && v.value).toBe("genuine");
    } finally {
      await pool.close();
    }
  }, 60_000);
});

