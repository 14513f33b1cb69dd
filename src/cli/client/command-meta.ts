import { TASK_FLAGS, TASK_FLAGS_HELP } from "./task-flags";
import type { ClientCommandMeta, ClientVarKey } from "./client-command";

/** What every command that dials a server reads: the proxy socket, keepalive and the RPC deadline. */
const DIAL: ClientVarKey[] = ["proxySocketPath", "rpcTimeoutMs", "keepaliveTimeMs"];
/** What every command that reads the Worker registry reads: etcd's endpoints and how to authenticate. */
const ETCD: ClientVarKey[] = ["etcdEndpoints", "etcdTlsCaFile", "etcdTlsCertFile", "etcdTlsKeyFile", "etcdUsername", "etcdPasswordFile", "etcdPassword"];

/** What `--help` shows for each client command, kept apart from the code so that help loads nothing heavy. */
export const invokeMeta: ClientCommandMeta = {
  name: "invoke",
  summary: "run one call now on the Sync Invoker: invoke --function FILE|NAME [--args JSON|@FILE] [--debug]",
  usage: [
    "usage: blockx invoke --function FILE|NAME [--entry NAME] [--args JSON|@FILE] [--timeout-ms N] [--debug] [--json]",
    "  --debug   DebugInvoke: also captured output, ctx.log lines, the IO trace and the traceback",
  ].join("\n"),
  flags: { function: "value", entry: "value", args: "value", "timeout-ms": "value", debug: "bool" },
  positionals: { optional: ["FILE|NAME"] },
  reads: ["syncInvokerAddr", ...DIAL],
};

export const precheckMeta: ClientCommandMeta = {
  name: "precheck",
  summary: "check a function without running it (syntax, entry, signature) on the Sync Invoker",
  usage: "usage: blockx precheck --function FILE|NAME [--entry NAME] [--json]",
  flags: { function: "value", entry: "value" },
  positionals: { optional: ["FILE|NAME"] },
  reads: ["syncInvokerAddr", ...DIAL],
};

export const submitMeta: ClientCommandMeta = {
  name: "submit",
  summary: "submit a task (function + call config from flags or a JSON task file); --watch follows it with a progress bar",
  usage: [
    "usage: blockx submit [TASK.json] [--function FILE|NAME --blocks A..B | --inputs JSON] [--table NAME | --return] [--watch] [--json]",
    "       blockx submit --many FILE.jsonl [--concurrency N] [--batch-size N] [--json]",
    "",
    "A task file is a worker.v1.Task in proto3 JSON (inputs may be plain JSON values); flags override its fields.",
    TASK_FLAGS_HELP,
    "  --cluster block|bundle override the cluster (default: block tables and return values -> block, bundles and inputs -> bundle)",
    "  --watch                wait for the end with a live progress bar (plain lines when not a terminal); resubmits if the Worker is lost",
    "  --resubmit             with --watch: resubmit when the Worker is lost (the default; the lost run is fenced off and each call's rows land once)",
    "  --no-resubmit          with --watch: never resubmit",
    "  --deadline-ms N        give up after N ms (default: the task timeout + 60 s)",
    "  --json                 one JSON object on stdout (the handle, or with --watch the result; with --many one per task)",
    "  --many FILE.jsonl      run every task of the file (one worker.v1.Task JSON object per line) through the batch path",
    "                         (ReserveWorkerSlots, SubmitTasks, one WatchTasks stream per Worker) and wait for all of them;",
    "                         prints one line per task as it ends (task id, state, Worker or error); exit code: the worst task's",
    "  --concurrency N        with --many: tasks in flight at once (default 64)",
    "  --batch-size N         with --many: tasks per batch (default 256, at most 1024)",
  ].join("\n"),
  flags: { ...TASK_FLAGS, cluster: "value", watch: "bool", resubmit: "bool", "no-resubmit": "bool", "deadline-ms": "value", many: "value", concurrency: "value", "batch-size": "value" },
  positionals: { optional: ["TASK.json"] },
  reads: ["coordinatorAddrs", "bundleCoordinatorAddrs", ...DIAL, "slotTtlMs", "workerLostAfterMs", "maxAttempts"],
};

export const tableMeta: ClientCommandMeta = {
  name: "table",
  summary: "print rows of a table from the table store (Postgres or SQLite): table NAME [--limit N] [--order COLUMN] [--json]",
  usage: [
    "usage: blockx table NAME [--limit N] [--order COLUMN] [--json]",
    "  reads TABLE_STORE_URL (the Workers' Postgres) when set, else TABLE_STORE_PATH (their SQLite file on this host); --limit default 20, 0 = all",
  ].join("\n"),
  flags: { limit: "value", order: "value" },
  positionals: { required: ["NAME"] },
  reads: ["tableStoreUrl", "tableStorePath", "tableStoreConnectTimeoutMs", "tableStoreStatementTimeoutMs", "tableStoreIdleInTransactionTimeoutMs", "tableStoreTls", "tableStoreTlsCa"],
};

/**
 * The commands that address one task share their shape: the task id, and the Worker's address
 * when known (without --worker, every Worker registered in etcd is asked which has the task).
 */
function taskRefMeta(name: string, what: string, reads: ClientVarKey[], extraUsage = "", extraFlags: ClientCommandMeta["flags"] = {}): ClientCommandMeta {
  return {
    name,
    summary: `${what}: ${name} TASK_ID [--worker ADDR]`,
    usage: `usage: blockx ${name} TASK_ID [--worker HOST:PORT]${extraUsage} [--json]\n\nWithout --worker, the Workers registered in etcd (ETCD_ENDPOINTS) are asked which one has the task.`,
    flags: { worker: "value", ...extraFlags },
    positionals: { required: ["TASK_ID"] },
    reads: [...reads, ...ETCD],
  };
}

export const watchMeta = taskRefMeta("watch", "follow a task until it ends, with a progress bar", [...DIAL, "workerLostAfterMs"]);
export const resultMeta = taskRefMeta("result", "print a task's result (a table, or --json)", DIAL);
export const cancelMeta = taskRefMeta("cancel", "cancel a task", DIAL, " [--reason TEXT]", { reason: "value" });
export const logsMeta = taskRefMeta(
  "logs",
  "print what a task's calls logged (ctx.log) and printed, tagged with each call's input; --follow until it ends",
  DIAL,
  " [--tail N] [--follow]",
  { tail: "value", follow: "bool" },
);

export const tasksMeta: ClientCommandMeta = {
  name: "tasks",
  summary: "list the followers (blockx follow: head, lag, last reorg) and the tasks across the cluster (every Worker registered in etcd)",
  usage: [
    "usage: blockx tasks [--limit N] [--state STATE] [--followers] [--json]",
    "",
    "  Above the tasks, the followers publishing their status in etcd (/blockx/followers/): TABLE, CHAIN,",
    "  STATE, POSITION (last block written), HEAD, LAG, LAST REORG, REORGS, UPDATED; a stopped follower's",
    "  reason under the table. --json prints the tasks only (a JSON array, as before).",
    "",
    "  --limit N      at most N tasks per Worker (default 1000)",
    "  --state STATE  only tasks in this state (ALLOCATED, RUNNING, SUCCEEDED, FAILED, TIMED_OUT, CANCELLED)",
    "  --followers    only the followers (with --json: a JSON array of their statuses)",
  ].join("\n"),
  flags: { limit: "value", state: "value", followers: "bool" },
  reads: [...DIAL, ...ETCD],
};

export const workersMeta: ClientCommandMeta = {
  name: "workers",
  summary: "list the live Workers from the etcd registry: address, cluster, free slots, CPU, memory, heartbeat age",
  usage: "usage: blockx workers [--cluster block|bundle] [--json]",
  flags: { cluster: "value" },
  reads: [...ETCD, "rpcTimeoutMs"],
};
