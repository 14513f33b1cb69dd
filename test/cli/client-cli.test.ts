/**
 * The client commands as a person or a script runs them: the compiled binary against real
 * Coordinators and Workers, output read from pipes (and from a real terminal in tmux for the
 * progress bar), exit codes checked against the documented ones.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BLOCKX_BINARY, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";

let cluster: TestCluster;
let env: Record<string, string>;
let workerAddr: string;

const STATS = "import time\ndef main(ctx, input):\n    time.sleep(0.05)\n    n = input['blockNumber']\n    return [{'block': n, 'square': n * n}]\n";
const DOUBLE = "def main(ctx, x):\n    return {'twice': x * 2}\n";
const RAISES = "def main(ctx, x):\n    raise ValueError(f'bad input {x}')\n";
const SLEEPS = "import time\ndef main(ctx, x):\n    time.sleep(x)\n";

beforeAll(async () => {
  cluster = new TestCluster();
  workerAddr = (await cluster.worker()).addr;
  const coord = await cluster.coordinator();
  for (const [name, src] of Object.entries({ "stats.py": STATS, "double.py": DOUBLE, "raises.py": RAISES, "sleeps.py": SLEEPS })) writeFileSync(join(cluster.dir, name), src);
  env = {
    BLOCKX_COORDINATOR_ADDRS: coord.addr,
    BLOCKX_BUNDLE_COORDINATOR_ADDRS: coord.addr,
    ETCD_ENDPOINTS: cluster.etcd,
    TABLE_STORE_PATH: cluster.tableStorePath,
  };
}, 60_000);

afterAll(() => cluster.stop());

/** blockx runs the binary in the cluster's directory (so function files are found by name) and collects everything. */
async function blockx(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", BLOCKX_BINARY, ...args], {
    cwd: cluster.dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv({ ...env, ...extraEnv }, "client"), ...env, ...extraEnv },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

const json = (s: string) => JSON.parse(s.trim().split("\n").at(-1)!) as Record<string, unknown>;

describe("client CLI", () => {
  test("submit --watch to completion in a pipe: plain progress lines up to 100%, a result table, exit 0; table shows the rows", async () => {
    const out = await blockx(["submit", "--function", "stats.py", "--blocks", "10..49", "--table", "squares", "--watch"]);
    expect(out.code).toBe(0);
    expect(out.stderr).not.toContain("\r");
    expect(out.stderr).toContain("progress: 40/40 calls (100%)");
    expect(out.stdout).toMatch(/^state\s+SUCCEEDED$/m);
    expect(out.stdout).toMatch(/^wrote\s+40 rows from 40 calls to table squares \(block_table_write\)$/m);

    const rows = await blockx(["table", "squares", "--order", "block", "--limit", "3", "--json"]);
    expect(rows.code).toBe(0);
    expect((JSON.parse(rows.stdout) as { block: number; square: number }[]).map(({ block, square }) => ({ block, square }))).toEqual([
      { block: 10, square: 100 },
      { block: 11, square: 121 },
      { block: 12, square: 144 },
    ]);
    const human = await blockx(["table", "squares", "--limit", "2"]);
    expect(human.stdout.split("\n")[0]).toMatch(/^block\s+square/);
    expect((await blockx(["table", "no_such_table"])).code).toBe(1);
  }, 60_000);

  test("submit --many FILE.jsonl: every task through the batch path, one JSON line per task; a task that fails makes exit 1", async () => {
    const fn = { source: DOUBLE, entry: "main" };
    const lines = [
      ...[1, 2, 3].map((x) => ({ taskId: `many-${x}`, functionCallConfig: { function: fn, inputs: { inputs: [x] } }, outputs: [{ returnValue: {} }] })),
      { taskId: "many-raises", functionCallConfig: { function: { source: RAISES, entry: "main" }, inputs: { inputs: [7] } }, outputs: [{ returnValue: {} }] },
    ];
    writeFileSync(join(cluster.dir, "many.jsonl"), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n\n`);
    const out = await blockx(["submit", "--many", "many.jsonl", "--json", "--batch-size", "2", "--concurrency", "4"]);
    expect(out.code).toBe(1);
    const settled = out.stdout.trim().split("\n").map((l) => JSON.parse(l) as { taskId: string; state: string; workerAddr: string });
    expect(settled.map((l) => [l.taskId, l.state]).sort()).toEqual([
      ["many-1", "SUCCEEDED"],
      ["many-2", "SUCCEEDED"],
      ["many-3", "SUCCEEDED"],
      ["many-raises", "FAILED"],
    ]);
    expect(settled.every((l) => l.workerAddr === workerAddr)).toBe(true);
    const bad = await blockx(["submit", "--many", "many.jsonl", "--batch-size", "2000"]);
    expect({ code: bad.code, stderr: bad.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining("--batch-size: at most 1024") });
    writeFileSync(join(cluster.dir, "broken.jsonl"), `${JSON.stringify(lines[0])}\nnot json\n`);
    const broken = await blockx(["submit", "--many", "broken.jsonl"]);
    expect({ code: broken.code, stderr: broken.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining("broken.jsonl:2: not JSON") });
  }, 60_000);

  test("submit without --watch returns a handle; watch and result --json follow it; return values are decoded JSON", async () => {
    const sub = await blockx(["submit", "--function", "double.py", "--inputs", "[1, 2, 3]", "--return", "--json", "--task-id", "cli-handle"]);
    expect(sub.code).toBe(0);
    const handle = json(sub.stdout);
    expect(handle).toMatchObject({ taskId: "cli-handle", workerAddr, cluster: "block" });
    const watched = await blockx(["watch", "cli-handle", "--worker", workerAddr, "--json"]);
    expect(watched.code).toBe(0);
    expect(json(watched.stdout)).toMatchObject({ state: "SUCCEEDED", returnValues: [{ twice: 2 }, { twice: 4 }, { twice: 6 }] });
    const result = await blockx(["result", "cli-handle", "--worker", workerAddr, "--json"]);
    expect(result.code).toBe(0);
    expect(json(result.stdout)).toMatchObject({ taskId: "cli-handle", state: "SUCCEEDED", callsTotal: 3, returnValues: [{ twice: 2 }, { twice: 4 }, { twice: 6 }] });
    const table = await blockx(["result", "cli-handle", "--worker", workerAddr]);
    expect(table.stdout).toContain('[2] {"twice":6}');
  }, 60_000);

  test("a task file (proto3 JSON of worker.v1.Task, inputs as plain JSON) runs through the proxy, flags overriding the file", async () => {
    writeFileSync(
      join(cluster.dir, "task.json"),
      JSON.stringify({ taskId: "from-file", functionCallConfig: { function: { source: DOUBLE, entry: "main" }, inputs: { inputs: [10, 20] } }, outputs: [{ returnValue: {} }] }),
    );
    const socket = join(cluster.dir, "cli-proxy.sock");
    const proxy = cluster.spawn("proxy", { PROXY_SOCKET_PATH: socket, BLOCKX_COORDINATOR_ADDRS: env.BLOCKX_COORDINATOR_ADDRS! });
    await proxy.grpcAddr();
    const out = await blockx(["submit", "task.json", "--task-id", "from-file-2", "--watch", "--json"], { PROXY_SOCKET_PATH: socket });
    expect(out.code).toBe(0);
    expect(json(out.stdout)).toMatchObject({ taskId: "from-file-2", state: "SUCCEEDED", returnValues: [{ twice: 20 }, { twice: 40 }], attempts: 1 });
  }, 60_000);

  test("a failing task: submit --watch exits 1 with the first error; result --json is parsable and exits 1", async () => {
    const out = await blockx(["submit", "--function", "raises.py", "--inputs", "[7]", "--return", "--watch", "--json", "--task-id", "cli-fails"]);
    expect(out.code).toBe(1);
    const r = json(out.stdout);
    expect(r).toMatchObject({ state: "FAILED", firstError: { code: "USER_ERROR", message: "ValueError: bad input 7" } });
    const again = await blockx(["result", "cli-fails", "--worker", workerAddr, "--json"]);
    expect(again.code).toBe(1);
    expect(json(again.stdout)).toMatchObject({ state: "FAILED" });
    const human = await blockx(["result", "cli-fails", "--worker", workerAddr]);
    expect(human.stdout).toContain("first error  USER_ERROR: ValueError: bad input 7");
    expect(human.stdout).toContain("Traceback");
    // The file given to --function is named in the traceback (issue 14), not <blockx:main@digest>.
    expect(human.stdout).toContain('File "raises.py", line 2, in main');
    expect(human.stdout).not.toContain("<blockx:");
  }, 60_000);

  test("cancel: a long task is cancelled; its result then says CANCELLED and exits 1", async () => {
    const sub = await blockx(["submit", "--function", "sleeps.py", "--inputs", "[30]", "--return", "--json", "--task-id", "cli-cancel"]);
    expect(sub.code).toBe(0);
    const cancel = await blockx(["cancel", "cli-cancel", "--worker", workerAddr]);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout.trim()).toBe("task cli-cancel: CANCELLED");
    expect((await blockx(["result", "cli-cancel", "--worker", workerAddr])).code).toBe(1);
  }, 60_000);

  test("submit --watch says `task <id> on <worker>` before the bar; Ctrl-C says how to watch or cancel it, and the task keeps running", async () => {
    const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", BLOCKX_BINARY, "submit", "--function", "sleeps.py", "--inputs", "[3]", "--return", "--watch", "--task-id", "cli-ctrl-c"], {
      cwd: cluster.dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv(env, "client"), ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = new Response(proc.stdout).text();
    let stderr = "";
    const decoder = new TextDecoder();
    const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
    const announced = `task cli-ctrl-c on ${workerAddr}\n`;
    while (!stderr.includes(announced)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`submit ended without announcing the task:\n${stderr}`);
      stderr += decoder.decode(value);
    }
    proc.kill("SIGINT");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value);
    }
    expect(await proc.exited).toBe(130);
    expect(await stdout).toBe("");
    // The id and the Worker come first: nothing of the progress display precedes them.
    expect(stderr.startsWith(announced)).toBe(true);
    expect(stderr).toContain(`interrupted: task cli-ctrl-c keeps running on ${workerAddr}\n`);
    expect(stderr).toContain(`  follow it: blockx watch cli-ctrl-c --worker ${workerAddr}\n`);
    expect(stderr).toContain(`  cancel it: blockx cancel cli-ctrl-c --worker ${workerAddr}\n`);
    // The task was not cancelled by the interrupted CLI: following it as told ends SUCCEEDED.
    const watched = await blockx(["watch", "cli-ctrl-c", "--worker", workerAddr, "--json"]);
    expect(watched.code).toBe(0);
    expect(json(watched.stdout)).toMatchObject({ state: "SUCCEEDED", returnValues: [null] });
  }, 60_000);

  test("each client command's --help lists only the variables that command reads", async () => {
    const listed = async (cmd: string) => {
      const help = await blockx([cmd, "--help"]);
      expect(help.code).toBe(0);
      return [...help.stdout.matchAll(/^ {2}([A-Z][A-Z0-9_]+) /gm)].map((m) => m[1]).sort();
    };
    const dial = ["BLOCKX_KEEPALIVE_TIME_MS", "BLOCKX_RPC_TIMEOUT_MS", "PROXY_SOCKET_PATH"];
    // Reading the registry: etcd's endpoints and how to authenticate to it.
    const etcd = ["ETCD_ENDPOINTS", "ETCD_PASSWORD", "ETCD_PASSWORD_FILE", "ETCD_TLS_CA_FILE", "ETCD_TLS_CERT_FILE", "ETCD_TLS_KEY_FILE", "ETCD_USERNAME"];
    expect(await listed("table")).toEqual(["TABLE_STORE_CONNECT_TIMEOUT_MS", "TABLE_STORE_IDLE_IN_TRANSACTION_TIMEOUT_MS", "TABLE_STORE_PATH", "TABLE_STORE_STATEMENT_TIMEOUT_MS", "TABLE_STORE_TLS", "TABLE_STORE_TLS_CA", "TABLE_STORE_URL"]);
    expect(await listed("workers")).toEqual(["BLOCKX_RPC_TIMEOUT_MS", ...etcd].sort());
    expect(await listed("invoke")).toEqual(["BLOCKX_SYNCINVOKER_ADDR", ...dial].sort());
    expect(await listed("precheck")).toEqual(["BLOCKX_SYNCINVOKER_ADDR", ...dial].sort());
    // A task id alone is enough: without --worker these find the task's Worker through etcd.
    const byTask = [...dial, ...etcd];
    expect(await listed("result")).toEqual(byTask.sort());
    expect(await listed("cancel")).toEqual(byTask.sort());
    expect(await listed("logs")).toEqual(byTask.sort());
    expect(await listed("tasks")).toEqual(byTask.sort());
    expect(await listed("watch")).toEqual([...byTask, "BLOCKX_WORKER_LOST_AFTER_MS"].sort());
    expect(await listed("submit")).toEqual(
      ["BLOCKX_BUNDLE_COORDINATOR_ADDRS", "BLOCKX_COORDINATOR_ADDRS", "BLOCKX_MAX_ATTEMPTS", "BLOCKX_SLOT_TTL_MS", "BLOCKX_WORKER_LOST_AFTER_MS", ...dial].sort(),
    );
  }, 30_000);

  test("exit codes: 2 for usage and configuration errors, 3 for an unreachable cluster, 1 for an unknown task", async () => {
    const noFn = await blockx(["submit", "--blocks", "1..2", "--table", "t"]);
    expect(noFn.code).toBe(2);
    expect(noFn.stderr).toContain("no function: give --function FILE|NAME");
    const badRange = await blockx(["submit", "--function", "stats.py", "--blocks", "9..1", "--table", "t"]);
    expect(badRange).toMatchObject({ code: 2, stderr: expect.stringContaining("the range ends before it starts") });
    const badEnv = await blockx(["submit", "--function", "stats.py", "--blocks", "1..2", "--table", "t"], { BLOCKX_COORDINATOR_ADDRS: "not an address" });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toContain('BLOCKX_COORDINATOR_ADDRS: expected comma-separated host:port list, got "not an address"');
    const unknownFlag = await blockx(["result", "x", "--worker", workerAddr, "--colour", "red"]);
    expect(unknownFlag.code).toBe(2);
    const unreachable = await blockx(["submit", "--function", "double.py", "--inputs", "[1]", "--return", "--watch", "--deadline-ms", "1500"], { BLOCKX_COORDINATOR_ADDRS: "127.0.0.1:1" });
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain("UNREACHABLE");
    const unknownTask = await blockx(["result", "never-submitted", "--worker", workerAddr]);
    expect(unknownTask.code).toBe(1);
    expect(unknownTask.stderr).toContain("NOT_FOUND");
  }, 60_000);

  test("workers lists the live registry: address, cluster, free slots, CPU, memory, heartbeat age", async () => {
    const out = await blockx(["workers", "--json"]);
    expect(out.code).toBe(0);
    const mine = (JSON.parse(out.stdout) as { addr: string; cluster: string; prefix: string; freeSlots: number; heartbeatAgeMs: number }[]).find((w) => w.addr === workerAddr);
    expect(mine).toMatchObject({ cluster: "block", prefix: cluster.blockPrefix });
    expect(mine!.freeSlots).toBeGreaterThan(0);
    const human = await blockx(["workers", "--cluster", "block"]);
    expect(human.stdout.split("\n")[0]).toMatch(/^ADDRESS\s+CLUSTER\s+LANE\s+FREE\/SLOTS\s+RUNNING\s+CPU\s+MEMORY\s+ERRORS\s+HEARTBEAT$/);
    expect(human.stdout).toContain(workerAddr);
  }, 30_000);

  test("in a real terminal (tmux) the progress bar is one line redrawn in place and finishes at 100%", async () => {
    // A socket in the cluster's folder (removed with it), not tmux's default folder in /tmp.
    const sock = join(cluster.dir, "tmux.sock");
    const script = join(cluster.dir, "tty.sh");
    const exports = Object.entries({ ...transportEnv(env, "client"), ...env }).map(([k, v]) => `export ${k}='${v}'`).join("\n");
    writeFileSync(script, `${exports}\ncd '${cluster.dir}'\n'${BLOCKX_BINARY}' submit --function stats.py --blocks 100..159 --table tty_squares --watch > out.txt\necho "EXIT=$?"\nsleep 60\n`);
    try {
      expect(Bun.spawnSync(["tmux", "-S", sock, "new-session", "-d", "-s", "bar", "-x", "150", "-y", "12", `bash ${script}`]).exitCode).toBe(0);
      let pane = "";
      const frames: string[] = [];
      for (let i = 0; i < 600 && !pane.includes("EXIT="); i++) {
        await Bun.sleep(50);
        pane = Bun.spawnSync(["tmux", "-S", sock, "capture-pane", "-p", "-t", "bar"]).stdout.toString();
        frames.push(...pane.split("\n").filter((l) => l.includes(" calls ")));
      }
      // The bar was seen on its way (the 60 calls take at least 1.5 s), not only at the end.
      expect(frames.some((l) => /^\[#*\.+\] +\d+%  \d+\/60 calls .*RUNNING$/.test(l))).toBe(true);
      expect(pane).toContain("EXIT=0");
      const barLines = pane.split("\n").filter((l) => l.includes("calls"));
      expect(barLines).toHaveLength(1);
      expect(barLines[0]).toMatch(/^\[#{24}\] 100%  60\/60 calls  .*\/s  ETA 00:00  SUCCEEDED$/);
      expect(pane).not.toContain("progress:");
    } finally {
      Bun.spawnSync(["tmux", "-S", sock, "kill-server"]);
    }
  }, 90_000);
});
