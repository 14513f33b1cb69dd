/**
 * `blockx doctor worker` on this machine, run as an operator would (the compiled binary, from an
 * empty folder): with a working setup every check passes and it exits 0; each broken thing the
 * issue names fails its own check, names the fix, and makes it exit 1: a private cache folder, etcd
 * down, a Python too old (a fake interpreter reporting 3.8), a skewed clock (CLOCK_TEST_OFFSET_MS).
 * A Worker on a skewed host keeps serving, logs an error and exports blockx_clock_offset_seconds.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY, BlockxProcess, transportEnv } from "../support/blockx-process";
import { freePort } from "../support/ports";
import { randomLanePrefix } from "../support/worker-double";

const isRoot = process.getuid?.() === 0;
const work = mkdtempSync(join(tmpdir(), "blockx-doctor-"));
chmodSync(work, 0o755);
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Report {
  role: string;
  ok: boolean;
  checks: { id: string; title: string; status: "pass" | "fail"; detail: string; fix: string }[];
}

/** A working Worker setup on this machine: the shared test etcd, a free port, a table store of its own. */
function workingEnv(): Record<string, string> {
  const dir = mkdtempSync(join(work, "w-"));
  chmodSync(dir, 0o755);
  return { ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!, WORKER_LISTEN: "127.0.0.1:0", TABLE_STORE_PATH: join(dir, "tables.sqlite") };
}

async function doctor(env: Record<string, string>, args: string[] = ["--json"]): Promise<{ code: number; out: string; report: Report | null }> {
  const cwd = mkdtempSync(join(work, "cwd-"));
  const p = Bun.spawn([BLOCKX_BINARY, "doctor", "worker", ...args], { cwd, env: { PATH: process.env.PATH!, ...transportEnv(env, "worker"), ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  let report: Report | null = null;
  try {
    report = JSON.parse(out) as Report;
  } catch {
    // text output
  }
  if (code !== 0 && code !== 1) throw new Error(`doctor exited ${code}: ${err}`);
  return { code, out: out + err, report };
}

const check = (r: Report, id: string) => {
  const c = r.checks.find((c) => c.id === id);
  if (!c) throw new Error(`no check ${id} in ${JSON.stringify(r.checks.map((c) => c.id))}`);
  return c;
};
const failed = (r: Report) => r.checks.filter((c) => c.status === "fail").map((c) => c.id);

describe("blockx doctor worker", () => {
  test.if(isRoot)("passes every check on this machine with a working setup, and exits 0", async () => {
    const { code, report } = await doctor(workingEnv());
    expect(report!.checks.map((c) => c.id)).toEqual(["config", "python", "isolation", "user-namespaces", "executor-code", "etcd", "clock", "listen", "chains", "table-store", "open-files"]);
    expect(failed(report!)).toEqual([]);
    expect(report!.ok).toBe(true);
    expect(code).toBe(0);
    expect(check(report!, "clock").detail).toMatch(/^offset -?\d+ ms ± \d+ ms from etcd /);
  }, 30_000);

  test("prints PASS/FAIL lines and the fix in text form", async () => {
    const { code, out } = await doctor({ ...workingEnv(), ETCD_ENDPOINTS: `127.0.0.1:${await freePort()}` }, []);
    expect(code).toBe(1);
    expect(out).toMatch(/^ {2}PASS {2}python +EXECUTOR_PYTHON /m);
    expect(out).toMatch(/^ {2}FAIL {2}etcd +127\.0\.0\.1:\d+: /m);
    expect(out).toMatch(/^ +fix: start etcd or fix ETCD_ENDPOINTS/m);
    expect(out).toMatch(/^\d+ of 11 checks failed$/m);
  }, 30_000);

  test.if(isRoot)("a cache folder EXECUTOR_USER cannot read fails executor-code, naming the folder and the fix", async () => {
    const privateDir = mkdtempSync(join(work, "private-")); // mode 0700
    const { code, report } = await doctor({ ...workingEnv(), BLOCKX_CACHE_DIR: join(privateDir, "cache") });
    expect(code).toBe(1);
    expect(failed(report!)).toEqual(["executor-code"]);
    expect(check(report!, "executor-code").detail).toContain(`${privateDir} is mode 0700`);
    expect(check(report!, "executor-code").fix).toContain("set BLOCKX_CACHE_DIR to a folder EXECUTOR_USER can reach");
  }, 30_000);

  test("etcd down fails etcd and clock, naming the endpoint and the fix", async () => {
    const down = `127.0.0.1:${await freePort()}`;
    const { code, report } = await doctor({ ...workingEnv(), ETCD_ENDPOINTS: down });
    expect(code).toBe(1);
    expect(failed(report!)).toEqual(expect.arrayContaining(["etcd", "clock"]));
    expect(check(report!, "etcd").detail).toStartWith(`${down}: `);
    expect(check(report!, "etcd").fix).toContain("start etcd");
    expect(check(report!, "clock").detail).toContain("no etcd endpoint answered");
  }, 30_000);

  test("a Python reporting 3.8 fails python, naming the version and the fix", async () => {
    const dir = mkdtempSync(join(work, "py-"));
    chmodSync(dir, 0o755);
    const fake = join(dir, "python3.8");
    // Answers the version probe as an old interpreter would.
    writeFileSync(fake, '#!/bin/sh\necho "$0"\necho 3.8\n');
    chmodSync(fake, 0o755);
    const { code, report } = await doctor({ ...workingEnv(), EXECUTOR_PYTHON: fake });
    expect(code).toBe(1);
    expect(failed(report!)).toContain("python");
    expect(check(report!, "python").detail).toBe(`EXECUTOR_PYTHON ${fake} is Python 3.8; 3.10 or newer is required`);
    expect(check(report!, "python").fix).toContain("install Python 3.10 or newer");
  }, 30_000);

  test("a clock 5 s ahead of etcd's fails clock with the measured offset; 1 s is within the 2.5 s tolerance", async () => {
    const skewed = await doctor({ ...workingEnv(), CLOCK_TEST_OFFSET_MS: "5000" });
    expect(skewed.code).toBe(1);
    expect(failed(skewed.report!)).toContain("clock");
    const c = check(skewed.report!, "clock");
    const offset = Number(/offset (-?\d+) ms/.exec(c.detail)![1]);
    expect(Math.abs(offset - 5000)).toBeLessThan(1000);
    expect(c.detail).toContain("tolerance ±2500 ms");
    expect(c.fix).toContain("synchronise the clock");
    const slight = await doctor({ ...workingEnv(), CLOCK_TEST_OFFSET_MS: "1000" });
    expect(check(slight.report!, "clock").status).toBe("pass");
  }, 30_000);

  test("a bad variable fails config, naming it, and checks nothing else", async () => {
    const { code, report } = await doctor({ ...workingEnv(), TASK_SLOTS: "many" });
    expect(code).toBe(1);
    expect(report!.checks.map((c) => [c.id, c.status])).toEqual([["config", "fail"]]);
    expect(report!.checks[0]!.detail).toContain("TASK_SLOTS");
  });

  test("--env-file reads the unit's environment file on top of the environment", async () => {
    const envFile = join(mkdtempSync(join(work, "env-")), "worker.env");
    writeFileSync(envFile, `# a comment\nTASK_SLOTS=many\n`);
    const { report } = await doctor(workingEnv(), ["--json", "--env-file", envFile]);
    expect(report!.checks[0]!.detail).toContain('TASK_SLOTS: expected an integer from 1 to 100000, got "many"');
  });
});

describe("clock skew on a running Worker", () => {
  test("a Worker 5 s ahead of etcd keeps serving, logs an error naming the offset and exports blockx_clock_offset_seconds", async () => {
    const metricsPort = await freePort();
    const dir = mkdtempSync(join(work, "wk-"));
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, "x"));
    const w = BlockxProcess.spawn(["worker"], {
      ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
      WORKER_LISTEN: "127.0.0.1:0",
      WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
      EXECUTOR_COUNT: "1",
      TABLE_STORE_PATH: join(dir, "tables.sqlite"),
      BLOCKX_PROMETHEUS_LISTEN_ADDR: `127.0.0.1:${metricsPort}`,
      CLOCK_TEST_OFFSET_MS: "5000",
    });
    try {
      await w.grpcAddr();
      const line = await w.waitForLog((l) => l.component === "clock" && l.level === "error");
      expect(Math.abs(Number(line.offsetMs) - 5000)).toBeLessThan(1000);
      expect(line.maxOffsetMs).toBe(2500);
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const gauge = Number(/^blockx_clock_offset_seconds (\S+)$/m.exec(text)![1]);
      expect(Math.abs(gauge - 5)).toBeLessThan(1);
    } finally {
      await w.stop("SIGKILL");
    }
  }, 60_000);
});
