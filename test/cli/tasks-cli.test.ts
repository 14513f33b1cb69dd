/**
 * Tasks without addresses: `blockx tasks` lists the tasks of every registered Worker, and
 * `blockx logs|result|watch|cancel TASK` find the task's Worker themselves (saying which on
 * stderr, or that no Worker has it). The compiled binary against two real Workers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BLOCKX_BINARY, transportEnv } from "../support/blockx-process";
import { TestCluster } from "../support/cluster";
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
});
