/**
 * Tasks without addresses: `blockx tasks` lists the tasks of every registered Worker, and
 * `blockx logs|result|watch|cancel TASK` find the task's Worker themselves (saying which on
 * stderr, or that no Worker has it). The compiled binary against two real Workers.
 * Followers: `blockx tasks` shows the statuses followers publish in etcd above the tasks (a
 * stand-in follower puts them under a lease, as `blockx follow` does).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BLOCKX_BINARY, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import { followerStatusKey } from "../../src/follow/core/follower-status";
import { StandInFollower, testFollowerStatus } from "../support/follower-status";
import { inputsTask, WorkerClient } from "../support/worker-client";

let cluster: TestCluster;
let env: Record<string, string>;
let w1: string;
let w2: string;
const clients: WorkerClient[] = [];

const CHATTY = "import time\ndef main(ctx, x):\n    ctx.log(f'working on {x}')\n    print('printed', x)\n    time.sleep(0.2)\n    return x\n";
const SLEEPS = "import time\ndef main(ctx, x):\n    time.sleep(x)\n";

beforeAll(async () => {
  cluster = new TestCluster();
  // One executor on w1: its calls end in input order, so its log lines come in that order.
  [w1, w2] = (await Promise.all([cluster.worker({ EXECUTOR_COUNT: "1" }), cluster.worker()])).map((w) => w.addr) as [string, string];
  // Workers of other test files may still be registered for a lease TTL: do not wait 10 s on each.
  env = { ETCD_ENDPOINTS: cluster.etcd, BLOCKX_RPC_TIMEOUT_MS: "3000" };
}, 60_000);

afterAll(() => {
  for (const c of clients) c.close();
  return cluster.stop();
});

async function blockx(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", BLOCKX_BINARY, ...args], { cwd: cluster.dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...transportEnv(env, "client"), ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

async function submit(addr: string, taskId: string, source: string, inputs: unknown[]) {
  const c = new WorkerClient(addr);
  clients.push(c);
  const r = await c.submitTask(inputsTask(taskId, source, inputs));
  if (!r.ok) throw new Error(r.details);
}

describe("tasks without addresses", () => {
  test("blockx tasks lists the tasks of both Workers; logs --follow and result find the task's Worker themselves", async () => {
    await submit(w1, "cli-chatty", CHATTY, [0, 1, 2, 3, 4]);
    await submit(w2, "cli-sleeper", SLEEPS, [60]);

    // Followed without --worker: every call's lines, in order, tagged with the input; ends with the task.
    const logs = await blockx(["logs", "cli-chatty", "--follow"]);
    expect(logs.code).toBe(0);
    expect(logs.stderr).toContain(`task cli-chatty is on Worker ${w1}`);
    const lines = logs.stdout.trim().split("\n").map((l) => l.replace(/^\S+ /, "")); // without the timestamp
    expect(lines).toEqual([0, 1, 2, 3, 4].flatMap((i) => [`input ${i} [info] working on ${i}`, `input ${i} printed ${i}`]));
    const tail = await blockx(["logs", "cli-chatty", "--tail", "1", "--json"]);
    expect(JSON.parse(tail.stdout)).toMatchObject({ input: "input 4", stream: "stdout", text: "printed 4", seq: 10 });

    const result = await blockx(["result", "cli-chatty", "--json"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.trim().split("\n").at(-1)!)).toMatchObject({ state: "SUCCEEDED", returnValues: [0, 1, 2, 3, 4] });

    const listed = await blockx(["tasks", "--json"]);
    expect(listed.code).toBe(0);
    const mine = (JSON.parse(listed.stdout) as { taskId: string; workerAddr: string; state: string; owner: string; callsTotal: number }[]).filter((t) => t.taskId.startsWith("cli-"));
    expect(mine.map((t) => [t.taskId, t.workerAddr, t.state]).sort()).toEqual([
      ["cli-chatty", w1, "SUCCEEDED"],
      ["cli-sleeper", w2, "RUNNING"],
    ]);
    const human = await blockx(["tasks", "--state", "running"]);
    expect(human.stdout.split("\n")[0]).toMatch(/^TASK\s+STATE\s+PROGRESS\s+OWNER\s+FUNCTION\s+WORKER/);
    expect(human.stdout).toMatch(new RegExp(`^cli-sleeper\\s+RUNNING EXECUTE\\s+0/1\\s+\\S+\\s+inline:[0-9a-f]{12}\\s+${w2.replace(/\./g, "\\.")}`, "m"));
    expect(human.stdout).not.toContain("cli-chatty");
    expect((await blockx(["tasks", "--state", "sleeping"])).code).toBe(2);
  }, 120_000);

  test("cancel and watch find the Worker too; a task no Worker has is NOT_FOUND, naming how many Workers were asked", async () => {
    await submit(w2, "cli-cancel-me", SLEEPS, [60]);
    const cancelled = await blockx(["cancel", "cli-cancel-me"]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout.trim()).toBe("task cli-cancel-me: CANCELLED");
    expect(cancelled.stderr).toContain(`is on Worker ${w2}`);
    const watched = await blockx(["watch", "cli-cancel-me", "--json"]);
    expect(watched.code).toBe(1);
    expect(JSON.parse(watched.stdout.trim().split("\n").at(-1)!)).toMatchObject({ state: "CANCELLED" });

    const missing = await blockx(["logs", "no-such-task"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/NOT_FOUND: task no-such-task: none of the \d+ Workers registered in etcd at .* has it/);
    expect(missing.stdout).toBe("");
  }, 120_000);

  test("blockx tasks shows the followers above the tasks: head, lag and last reorg, a stopped follower's reason; a malformed status is skipped and named; --followers alone, --json as before", async () => {
    const etcd = await createEtcdClient({ endpoints: [cluster.etcd], dialTimeoutMs: 2_000 });
    const follower = await StandInFollower.start(etcd);
    try {
      const now = Date.now();
      const reorgAt = new Date(now - 4_000);
      await follower.publish(testFollowerStatus("cli_blocks", "mainnet", { position: 100, head: 103, lag: 3, lastReorg: { forkBlock: 97, orphanedFrom: 98, orphanedTo: 99, atMs: reorgAt.getTime() }, reorgs: 1, updatedAtMs: now - 2_000 }));
      await follower.publish(testFollowerStatus("cli_blocks", "sepolia", { state: "STOPPED", position: 500, head: 600, lag: 100, stoppedReason: "reorg of 80 blocks (421..500) is deeper than the finality depth 64" }));
      const bad = followerStatusKey("cli_blocks", "broken");
      await follower.putRaw(bad, '{"table": "cli_blocks", "chain": "broken", "head": "soon"}');

      const human = await blockx(["tasks"]);
      expect(human.code).toBe(0);
      const lines = human.stdout.split("\n");
      expect(lines[0]).toMatch(/^TABLE\s+CHAIN\s+STATE\s+POSITION\s+HEAD\s+LAG\s+LAST REORG\s+REORGS\s+UPDATED$/);
      const clock = reorgAt.toISOString().slice(11, 19);
      expect(human.stdout).toMatch(new RegExp(`^cli_blocks\\s+mainnet\\s+WRITING\\s+100\\s+103\\s+3\\s+blocks 98\\.\\.99 at (\\d{4}-\\d\\d-\\d\\d )?${clock}, fork 97\\s+1\\s+\\d s ago$`, "m"));
      expect(human.stdout).toMatch(/^cli_blocks\s+sepolia\s+STOPPED\s+500\s+600\s+100\s+-\s+0\s+/m);
      expect(human.stdout).toContain("follower of cli_blocks on sepolia stopped: reorg of 80 blocks (421..500) is deeper than the finality depth 64");
      expect(human.stdout).not.toContain("broken");
      expect(human.stderr).toContain(`1 follower status in etcd skipped (not a status of blockx follow for its key): ${bad}`);
      // The tasks follow the followers, under their own header.
      expect(lines.findIndex((l) => /^TASK\s+STATE/.test(l))).toBeGreaterThan(lines.findIndex((l) => l.startsWith("follower of cli_blocks on sepolia")));

      const only = await blockx(["tasks", "--followers"]);
      expect(only.code).toBe(0);
      expect(only.stdout).toContain("cli_blocks");
      expect(only.stdout).not.toMatch(/^TASK\s/m);
      const json = await blockx(["tasks", "--followers", "--json"]);
      const statuses = (JSON.parse(json.stdout) as { table: string; chain: string; head: number; lag: number; lastReorg: unknown; stoppedReason: string | null }[]).filter((f) => f.table === "cli_blocks");
      expect(statuses.map((f) => [f.chain, f.head, f.lag])).toEqual([
        ["mainnet", 103, 3],
        ["sepolia", 600, 100],
      ]);
      expect(statuses[0]!.lastReorg).toEqual({ forkBlock: 97, orphanedFrom: 98, orphanedTo: 99, atMs: reorgAt.getTime() });
      // Tasks' --json keeps its shape: an array of tasks, no follower in it.
      const tasks = JSON.parse((await blockx(["tasks", "--json"])).stdout) as Record<string, unknown>[];
      expect(tasks.length).toBeGreaterThan(0);
      expect(tasks.every((t) => typeof t.taskId === "string" && !("table" in t))).toBe(true);
    } finally {
      await follower.stop();
      etcd.close();
    }
    // Its lease revoked, the follower is gone from the listing.
    expect((await blockx(["tasks", "--followers"])).stdout).not.toContain("cli_blocks");
  }, 120_000);
});
