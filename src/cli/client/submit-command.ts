import type { BlockxClient, TaskRef } from "../../sdk/blockx-client";
import type { Cluster } from "../../sdk/core/cluster-selection";
import { UsageError } from "../usage-error";
import { flagValue, intFlag, type ParsedArgs } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { onInterrupt, progressHandlers } from "./progress-handlers";
import { printResult } from "./result-format";
import { readTaskLines, taskFromArgs } from "./task-from-args";
import { MAX_BATCH_SIZE } from "../../sdk/batch-runner";
import { exitCodeOfError, exitCodeOfState } from "./exit-codes";

function clusterFlag(args: ParsedArgs): Cluster | undefined {
  const c = flagValue(args, "cluster");
  if (c === undefined) return undefined;
  if (c !== "block" && c !== "bundle") throw new UsageError(`--cluster: expected block or bundle, got ${JSON.stringify(c)}`);
  return c;
}

async function submit(args: ParsedArgs, client: BlockxClient): Promise<number> {
  const many = flagValue(args, "many");
  if (many !== undefined) return submitMany(args, client, many);
  for (const f of ["concurrency", "batch-size"]) if (args.flags.has(f)) throw new UsageError(`--${f} goes with --many`);
  const task = taskFromArgs(args, args.positional[0]);
  const cluster = clusterFlag(args);
  const timeoutMs = intFlag(args, "deadline-ms", 1);
  if (!args.flags.has("watch")) {
    const h = await client.submit(task, { cluster, timeoutMs });
    const ref: TaskRef & { slotId: string; cluster: Cluster } = { taskId: h.taskId, workerAddr: h.workerAddr, slotId: h.slotId, cluster: h.cluster };
    if (args.flags.has("json")) console.log(JSON.stringify(ref));
    else console.log(`submitted task ${h.taskId} to ${h.workerAddr} (${h.cluster} cluster)\nfollow it: blockx watch ${h.taskId} --worker ${h.workerAddr}`);
    return EXIT.OK;
  }
  const resubmit = args.flags.has("resubmit") ? true : args.flags.has("no-resubmit") ? false : undefined;
  const handlers = progressHandlers();
  const removeInterrupt = onInterrupt(handlers);
  const run = await client.runTask(task, { cluster, timeoutMs, resubmit, onProgress: handlers.onProgress, onEvent: handlers.onEvent }).finally(() => {
    removeInterrupt();
    handlers.display.finish();
  });
  return printResult(args.flags.has("json"), run.result, run);
}

/** What `submit --many` prints per task. */
interface ManyLine {
  readonly taskId: string;
  readonly state: string;
  readonly workerAddr: string;
  readonly attempts: number;
  readonly error?: string;
}

/**
 * submitMany runs every task of a JSON Lines file through the SDK's batch path (runTasks) and
 * prints one line per task as it settles (JSON Lines with --json), then a count. Exit code: the
 * worst of the tasks' (a failed task 1, an error its code's).
 */
async function submitMany(args: ParsedArgs, client: BlockxClient, path: string): Promise<number> {
  if (args.positional.length > 0) throw new UsageError("--many FILE.jsonl takes no TASK.json (the tasks are in the file)");
  const tasks = readTaskLines(path);
  const resubmit = args.flags.has("resubmit") ? true : args.flags.has("no-resubmit") ? false : undefined;
  const json = args.flags.has("json");
  let worst: number = EXIT.OK;
  let succeeded = 0;
  await client.runTasks(tasks, {
    cluster: clusterFlag(args),
    timeoutMs: intFlag(args, "deadline-ms", 1),
    resubmit,
    concurrency: intFlag(args, "concurrency", 1) ?? DEFAULT_MANY_CONCURRENCY,
    batchSize: batchSizeFlag(args),
    onSettled: (e) => {
      const line: ManyLine = e.ok
        ? { taskId: e.task.taskId, state: e.run.state, workerAddr: e.run.workers.at(-1) ?? "", attempts: e.run.attempts }
        : { taskId: e.task.taskId, state: "ERROR", workerAddr: "", attempts: 0, error: e.error.message };
      const code = e.ok ? exitCodeOfState(e.run.state) : exitCodeOfError(e.error.code);
      if (code === EXIT.OK) succeeded++;
      worst = Math.max(worst, code);
      console.log(json ? JSON.stringify(line) : `${line.taskId}\t${line.state}\t${line.error ?? line.workerAddr}`);
    },
  });
  if (!json) console.error(`${succeeded} of ${tasks.length} tasks succeeded`);
  return worst;
}

/** submit --many: tasks in flight at once by default (a few batches' worth, well under a Worker's 50 slots times a few Workers). */
const DEFAULT_MANY_CONCURRENCY = 64;

function batchSizeFlag(args: ParsedArgs): number | undefined {
  const n = intFlag(args, "batch-size", 1);
  if (n !== undefined && n > MAX_BATCH_SIZE) throw new UsageError(`--batch-size: at most ${MAX_BATCH_SIZE}, got ${n}`);
  return n;
}

export const submitRun: ClientCommandRun = (args, client) => submit(args, client);
