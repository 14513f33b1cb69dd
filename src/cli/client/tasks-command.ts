import { TaskPhase, TaskState } from "../../gen/worker/v1/worker";
import { stateName } from "../../sdk/blockx-client";
import { flagValue, intFlag } from "../args";
import { UsageError } from "../usage-error";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { followerTable } from "./follower-table";
import { textTable } from "./text-table";

const MAX_LIMIT = 10_000;
/** The states a task can be listed in: worker.v1's TaskState names but the placeholders. */
const STATES = Object.values(TaskState).filter((v): v is string => typeof v === "string" && v !== "TASK_STATE_UNSPECIFIED" && v !== "UNRECOGNIZED");

/**
 * `blockx tasks`: the followers publishing in etcd (a table above the tasks; `--followers`: only
 * them, a JSON array of their statuses with `--json`), then every registered Worker's tasks, newest
 * first. Workers that do not answer and follower statuses that do not parse are named on stderr.
 * `--json` without `--followers` prints the tasks alone, in the shape scripts parse.
 */
export const tasksRun: ClientCommandRun = async (args, client) => {
  const limit = intFlag(args, "limit", 1) ?? 1000;
  if (limit > MAX_LIMIT) throw new UsageError(`--limit: at most ${MAX_LIMIT}, got ${limit}`);
  const state = flagValue(args, "state")?.toUpperCase();
  if (state !== undefined && !STATES.includes(state)) throw new UsageError(`--state: one of ${STATES.join(", ")}, got ${JSON.stringify(state)}`);
  const onlyFollowers = args.flags.has("followers");
  const json = args.flags.has("json");
  const [{ followers, skippedKeys }, everywhere] = await Promise.all([
    json && !onlyFollowers ? { followers: [], skippedKeys: [] } : client.followers(),
    onlyFollowers ? null : client.tasksEverywhere(limit),
  ]);
  if (skippedKeys.length > 0) console.error(`blockx tasks: ${skippedKeys.length} follower status${skippedKeys.length === 1 ? "" : "es"} in etcd skipped (not a status of blockx follow for its key): ${skippedKeys.join(", ")}`);
  if (everywhere === null) {
    if (json) console.log(JSON.stringify(followers));
    else if (followers.length === 0) console.log("no follower publishes its status in etcd");
    else printFollowers(followers);
    return EXIT.OK;
  }
  const { tasks, unreachable, workers } = everywhere;
  for (const u of unreachable) console.error(`blockx tasks: Worker ${u.addr} did not answer: ${u.message}`);
  const shown = tasks.filter((t) => state === undefined || stateName(t.snapshot?.state) === state);
  if (args.flags.has("json")) {
    console.log(
      JSON.stringify(
        shown.map((t) => {
          const s = t.snapshot!;
          return {
            taskId: s.taskId,
            workerAddr: t.workerAddr,
            state: stateName(s.state),
            phase: TaskPhase[s.phase] ?? String(s.phase),
            callsTotal: s.callsTotal,
            callsSucceeded: s.callsSucceeded,
            callsFailed: s.callsFailed,
            owner: t.owner,
            function: t.function,
            acceptedAtMs: s.acceptedAtMs,
            finishedAtMs: s.finishedAtMs,
            error: s.error ?? null,
          };
        }),
      ),
    );
    return EXIT.OK;
  }
  if (followers.length > 0) {
    printFollowers(followers);
    console.log("");
  }
  if (shown.length === 0) {
    console.log(`no tasks on the ${workers.length} Worker${workers.length === 1 ? "" : "s"} registered in etcd`);
    return EXIT.OK;
  }
  const rows = [["TASK", "STATE", "PROGRESS", "OWNER", "FUNCTION", "WORKER", "STARTED", "ENDED"]];
  for (const t of shown) {
    const s = t.snapshot!;
    const progress = s.callsTotal > 0 ? `${s.callsSucceeded}/${s.callsTotal}${s.callsFailed > 0 ? ` (${s.callsFailed} failed)` : ""}` : "-";
    const phase = s.state === TaskState.RUNNING ? ` ${TaskPhase[s.phase] ?? ""}` : "";
    rows.push([s.taskId, `${stateName(s.state)}${phase}`, progress, t.owner || "-", t.function || "-", t.workerAddr, when(s.acceptedAtMs), when(s.finishedAtMs)]);
  }
  console.log(textTable(rows));
  return EXIT.OK;
};

/** printFollowers: the followers table, then a line per stopped follower with its reason. */
function printFollowers(followers: Parameters<typeof followerTable>[0]): void {
  const { rows, stopped } = followerTable(followers, Date.now());
  console.log(textTable(rows));
  for (const line of stopped) console.log(line);
}

function when(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "-";
}
