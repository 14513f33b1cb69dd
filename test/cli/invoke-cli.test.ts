/**
 * `blockx invoke` and `blockx precheck` against a real Sync Invoker, directly and through the
 * proxy. The Sync Invoker is part of every build: when `blockx syncinvoker` is missing or does
 * not start, every test here fails (it used to skip the suite with a warning, so a broken Sync
 * Invoker passed).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BLOCKX_BINARY, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";

let cluster: TestCluster;
let env: Record<string, string>;
let socket: string;

beforeAll(async () => {
  cluster = new TestCluster();
  const si = cluster.spawn("syncinvoker", { SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "1" });
  const addr = await si.grpcAddr();
  socket = join(cluster.dir, "proxy.sock");
  await cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_SYNCINVOKER_ADDR: addr }).grpcAddr();
  writeFileSync(join(cluster.dir, "add.py"), "def main(ctx, x):\n    print('adding')\n    return x['a'] + x['b']\n");
  writeFileSync(join(cluster.dir, "broken.py"), "def main(ctx, x)\n    return 1\n");
  writeFileSync(join(cluster.dir, "raises.py"), "def main(ctx, x):\n    raise KeyError('nope')\n");
  env = { BLOCKX_SYNCINVOKER_ADDR: addr };
}, 60_000);

afterAll(() => cluster?.stop());

async function blockx(args: string[], extra: Record<string, string> = {}) {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", BLOCKX_BINARY, ...args], { cwd: cluster.dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv({ ...env, ...extra }, "client"), ...env, ...extra }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("invoke and precheck", () => {
  test("blockx syncinvoker is a command of this build and started", () => {
    const help = Bun.spawnSync([BLOCKX_BINARY, "syncinvoker", "--help"]);
    expect({ code: help.exitCode, stderr: help.stderr.toString() }).toEqual({ code: 0, stderr: "" });
    expect(env?.BLOCKX_SYNCINVOKER_ADDR).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  for (const via of ["direct", "proxy"] as const) {
    test(`invoke returns the value, --json is parsable (${via})`, async () => {
      const extra: Record<string, string> = via === "proxy" ? { PROXY_SOCKET_PATH: socket } : {};
      const out = await blockx(["invoke", "--function", "add.py", "--args", '{"a": 2, "b": 3}'], extra);
      expect(out.code).toBe(0);
      expect(out.stdout.trim()).toBe("5");
      const j = await blockx(["invoke", "--function", "add.py", "--args", '{"a": 2, "b": 3}', "--json", "--debug"], extra);
      expect(JSON.parse(j.stdout)).toMatchObject({ result: 5 });
    }, 30_000);
  }

  test("a raising call exits 1 with the error; precheck reports a syntax error with its line and exits 1", async () => {
    const bad = await blockx(["invoke", "--function", "raises.py", "--args", "1"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("KeyError");
    expect(bad.stdout).toContain('File "raises.py", line 2, in main');
    const pre = await blockx(["precheck", "--function", "broken.py"]);
    expect(pre.code).toBe(1);
    expect(pre.stdout).toMatch(/^1:\d+: error: /m);
    expect((await blockx(["precheck", "--function", "add.py"])).code).toBe(0);
  }, 30_000);
});

test("invoke against no Sync Invoker exits 3 (unreachable)", async () => {
  const proc = Bun.spawn([BLOCKX_BINARY, "invoke", "--function", "x", "--args", "1"], { env: { PATH: "/usr/bin:/bin", BLOCKX_INSECURE: "1", BLOCKX_SYNCINVOKER_ADDR: "127.0.0.1:1", BLOCKX_RPC_TIMEOUT_MS: "2000" }, stdout: "pipe", stderr: "pipe" });
  expect(await proc.exited).toBe(3);
  expect(await new Response(proc.stderr).text()).toContain("UNREACHABLE");
}, 30_000);
