import type { BlockxClient, TaskRef } from "../../sdk/blockx-client";
import type { Cluster } from "../../sdk/core/cluster-selection";
import { UsageError } from "../usage-error";
import { flagValue, intFlag, type ParsedArgs } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { onInterrupt, progressHandlers } from "./progress-handlers";
import { printResult } from "./result-format";
import { taskFromArgs } from "./task-from-args";

function clusterFlag(args: ParsedArgs): Cluster | undefined {
  const c = flagValue(args, "cluster");
  if (c === undefined) return undefined;
  if (c !== "block" && c !== "bundle") throw new UsageError(`--cluster: expected block or bundle, got ${JSON.stringify(c)}`);
  return c;
}

async function submit(args: ParsedArgs, client: BlockxClient): Promise<number> {
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

export const submitRun: ClientCommandRun = (args, client) => submit(args, client);
