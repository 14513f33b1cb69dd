import { stateName } from "../../sdk/blockx-client";
import type { TaskRef } from "../../sdk/blockx-client";
import { UsageError } from "../usage-error";
import { flagValue, type ParsedArgs } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { onInterrupt, progressHandlers } from "./progress-handlers";
import { printResult } from "./result-format";

function taskRef(args: ParsedArgs, name: string): TaskRef {
  const taskId = args.positional[0]!; // exactly one: taskRefMeta's positionals
  const workerAddr = flagValue(args, "worker");
  if (!taskId || !workerAddr) throw new UsageError(`usage: blockx ${name} TASK_ID --worker HOST:PORT (the Worker printed by submit)`);
  return { taskId, workerAddr };
}

export const watchRun: ClientCommandRun = async (args, client) => {
  const ref = taskRef(args, "watch");
  const handlers = progressHandlers(ref);
  const removeInterrupt = onInterrupt(handlers);
  const result = await client.watch(ref, { onProgress: handlers.onProgress }).finally(() => {
    removeInterrupt();
    handlers.display.finish();
  });
  return printResult(args.flags.has("json"), result);
};

export const resultRun: ClientCommandRun = async (args, client) => {
  return printResult(args.flags.has("json"), await client.result(taskRef(args, "result")));
};

export const cancelRun: ClientCommandRun = async (args, client) => {
  const snapshot = await client.cancel(taskRef(args, "cancel"), flagValue(args, "reason") ?? "cancelled from the CLI");
  const state = stateName(snapshot.state);
  console.log(args.flags.has("json") ? JSON.stringify({ taskId: snapshot.taskId, state }) : `task ${snapshot.taskId}: ${state}`);
  return EXIT.OK;
};
