import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { channelFor } from "../../src/common/tls/grpc-tls";
import { SUB_IDENTITY_HEADER } from "../../src/common/tls/sub-identity";
import { compileTlsSetting } from "../../src/common/tls/tls-setting";
import { TaskState, type TaskSnapshot } from "../../src/gen/worker/v1/worker";
import { blockTableTask } from "../support/block-table-task";
import { TestCluster } from "../support/cluster";
import { TestCa, type TlsEnv } from "../support/test-ca";
import { WorkerClient, inputsTask } from "../support/worker-client";

// Issue 51, item 4, against the compiled binary under mTLS: a table belongs to the identity that
// created it (another identity's task cannot write it, nor delete its rows by returning none; an
// admin's may), and the Unix users behind one proxy are separate identities upstream (their own
// tables, their own executors).

const ca = TestCa.create();
const certs = ca.clusterCerts();
const tlsOf = (env: TlsEnv) => compileTlsSetting({ tlsCaFile: env.BLOCKX_TLS_CA_FILE, tlsCertFile: env.BLOCKX_TLS_CERT_FILE, tlsKeyFile: env.BLOCKX_TLS_KEY_FILE, insecure: "0" });
const workerAs = (who: TlsEnv) => {
  const c = channelFor(tlsOf(who), workerAddr, ["worker"]);
  return new WorkerClient(workerAddr, { credentials: c.credentials, options: { ...c.options, "grpc.use_local_subchannel_pool": 1 } });
};

const BLOCK_ROWS = "def main(ctx, input):\n    return [{'block': input['blockNumber'], 'who': 'alice'}]\n";
const NO_ROWS = "def main(ctx, input):\n    return []\n";
/** A function that tells which executor process ran it (a token drawn at import: executors are pid 2 in their namespace) and how many calls that process ran. */
const WHICH_EXECUTOR = "import os\ntoken = os.urandom(8).hex()\nseen = []\ndef main(ctx, x):\n    seen.append(x)\n    return {'token': token, 'calls': len(seen)}\n";

let cluster: TestCluster;
let workerAddr = "";
let socket = "";

beforeAll(async () => {
  cluster = new TestCluster();
  // One executor: two callers that are one owner would share it, warm; two owners never do.
  workerAddr = (await cluster.worker({ ...certs.worker, EXECUTOR_COUNT: "1" })).addr;
  await cluster.withFreeCapacity(1);
  const coordinator = (await cluster.coordinator({ ...certs.coordinator })).addr;
  socket = join(cluster.dir, "proxy.sock");
  await cluster.spawn("proxy", { ...certs.proxy, PROXY_SOCKET_PATH: socket, PROXY_SOCKET_MODE: "0666", BLOCKX_COORDINATOR_ADDRS: coordinator }).grpcAddr();
  writeFileSync(join(cluster.dir, "which.py"), WHICH_EXECUTOR);
  writeFileSync(join(cluster.dir, "event.py"), "def main(ctx, x):\n    return [{'x': x}]\n");
  chmodSync(join(cluster.dir, "which.py"), 0o644);
  chmodSync(join(cluster.dir, "event.py"), 0o644);
});

afterAll(async () => {
  await cluster?.stop();
});

/** run submits `task` as `who` (no slot) and waits for its end. */
async function run(who: TlsEnv, task: ReturnType<typeof inputsTask>): Promise<TaskSnapshot> {
  const c = workerAs(who);
  try {
    const submitted = await c.submitTask(task);
    if (!submitted.ok) throw new Error(`submit ${task.taskId}: ${grpc.status[submitted.code]} ${submitted.details}`);
    const w = await c.watch([task.taskId], false, true);
    return w.snapshots.at(-1)!;
  } finally {
    c.close();
  }
}

/** rows: the table's rows as plain SQL sees them. */
function rows(table: string): Record<string, unknown>[] {
  const db = new Database(cluster.tableStorePath, { readonly: true });
  try {
    return db.query(`SELECT * FROM "${table}" ORDER BY rowid`).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

function ownerOf(table: string): unknown {
  const db = new Database(cluster.tableStorePath, { readonly: true });
  try {
    return (db.query(`SELECT owner FROM _blockx_tables WHERE name = ?`).get(table) as { owner: unknown } | null)?.owner;
  } finally {
    db.close();
  }
}

describe("a table belongs to the identity that created it", () => {
  test("bob's task returning no rows for alice's blocks (which deleted them) and one writing rows there both fail NOT_OWNER and leave her rows; an admin's task may replace them", async () => {
    const mine = await run(certs.alice, blockTableTask("own-1", BLOCK_ROWS, 1, 3, "alice_blocks"));
    expect(mine.state).toBe(TaskState.SUCCEEDED);
    expect(ownerOf("alice_blocks")).toBe("client/alice");
    for (const [id, source] of [["own-2", NO_ROWS], ["own-3", BLOCK_ROWS]] as const) {
      const theirs = await run(certs.bob, blockTableTask(id, source, 2, 2, "alice_blocks"));
      expect([TaskState[theirs.state], theirs.error?.code]).toEqual(["FAILED", "NOT_OWNER"]);
      expect(theirs.error?.message).toContain("table alice_blocks belongs to client/alice: client/bob may not write it");
    }
    expect(rows("alice_blocks").map((r) => r.block)).toEqual([1, 2, 3]);
    const admin = await run(certs.root, blockTableTask("own-4", NO_ROWS, 2, 2, "alice_blocks"));
    expect(admin.state).toBe(TaskState.SUCCEEDED);
    expect(rows("alice_blocks").map((r) => r.block)).toEqual([1, 3]);
    expect(ownerOf("alice_blocks")).toBe("client/alice");
    // Alice still writes her table.
    expect((await run(certs.alice, blockTableTask("own-5", BLOCK_ROWS, 2, 2, "alice_blocks"))).state).toBe(TaskState.SUCCEEDED);
  }, 60_000);

  test("a sub-identity header is believed from a proxy's certificate only: from a client it is PERMISSION_DENIED", async () => {
    const c = workerAs(certs.alice);
    try {
      const md = new grpc.Metadata();
      md.set(SUB_IDENTITY_HEADER, "uid:0");
      const r = await new Promise<grpc.ServiceError | null>((resolve) => c.client.getTaskResult({ taskId: "anything" }, md, (err) => resolve(err)));
      expect(r && [grpc.status[r.code], r.details]).toEqual(["PERMISSION_DENIED", `GetTaskResult: client/alice may not name a sub-identity (${SUB_IDENTITY_HEADER} is believed from a proxy certificate only)`]);
    } finally {
      c.close();
    }
  });
});

describe("behind one proxy, each Unix user is an identity of its own", () => {
  /** asUser runs `blockx ARGS` as Unix user `uid` through the proxy's socket; its exit code and JSON output. */
  const asUser = (uid: number, args: string[]) => {
    const p = Bun.spawnSync(["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", cluster.binary, ...args, "--json"], {
      env: { PATH: "/usr/bin:/bin", HOME: "/tmp", PROXY_SOCKET_PATH: socket, BLOCKX_INSECURE: "1" },
      cwd: cluster.dir,
    });
    const out = p.stdout.toString();
    return { code: p.exitCode, out: (out.trim() ? JSON.parse(out) : null) as Record<string, unknown> | null, err: p.stderr.toString() };
  };

  test("two users' tasks run as proxy/gw/uid:UID upstream: never on each other's warm executor; one user's table is refused to the other", async () => {
    const returned = (uid: number) => {
      const r = asUser(uid, ["submit", "--function", "which.py", "--inputs", "[1]", "--return", "--cluster", "block", "--watch"]);
      if (r.code !== 0) throw new Error(`uid ${uid}: exit ${r.code}: ${r.err}`);
      return { taskId: r.out!.taskId as string, ...((r.out!.returnValues as unknown[])[0] as { token: string; calls: number }) };
    };
    const a1 = returned(1001);
    const a2 = returned(1001);
    const b1 = returned(1002);
    // The same user's second task reuses its warm executor (the module's state is still there)...
    expect([a2.token, a2.calls]).toEqual([a1.token, 2]);
    // ...another user's never does: a fresh process, nothing of the first user's calls in it.
    expect(b1.token).not.toBe(a1.token);
    expect(b1.calls).toBe(1);
    // Upstream, the Worker knows them apart: each task's owner names its Unix user.
    const admin = workerAs(certs.root);
    try {
      const listed = await new Promise<{ taskId: string; owner: string }[]>((resolve, reject) =>
        admin.client.listTasks({ limit: 0 }, (err, res) => (err ? reject(err) : resolve(res!.tasks.map((t) => ({ taskId: t.snapshot!.taskId, owner: t.owner }))))),
      );
      const ownerOfTask = (id: string) => listed.find((t) => t.taskId === id)?.owner;
      expect([ownerOfTask(a1.taskId), ownerOfTask(a2.taskId), ownerOfTask(b1.taskId)]).toEqual(["proxy/gw/uid:1001", "proxy/gw/uid:1001", "proxy/gw/uid:1002"]);
    } finally {
      admin.close();
    }
    // Tables: the first user's is refused to the second, who shares the proxy's certificate.
    const write = (uid: number) => asUser(uid, ["submit", "--function", "event.py", "--inputs", "[1]", "--table", "uid_events", "--cluster", "block", "--watch"]);
    expect(write(1001).code).toBe(0);
    expect(ownerOf("uid_events")).toBe("proxy/gw/uid:1001");
    const refused = write(1002);
    expect(refused.code).toBe(1);
    expect(JSON.stringify(refused.out)).toContain("table uid_events belongs to proxy/gw/uid:1001: proxy/gw/uid:1002 may not write it");
    expect(rows("uid_events").map((r) => r.x)).toEqual([1]);
  }, 90_000);
});
