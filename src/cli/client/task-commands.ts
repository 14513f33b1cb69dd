import { stateName } from "../../sdk/blockx-client";
import type { TaskRef } from "../../sdk/blockx-client";
import { UsageError } from "../exec-command";
import { flagValue, type ParsedArgs } from "./args";
import type { ClientCommandRun } from "./client-command";
import { EXIT, exitCodeOfState } from "./exit-codes";
import { resultJson, resultText } from "./result-format";
import { printResult, progressHandlers } from "./submit-command";

function taskRef(args: ParsedArgs, name: string): TaskRef {
  const [taskId, ...extra] = args.positional;
  const workerAddr = flagValue(args, "worker");
  if (!taskId || extra.length > 0 || !workerAddr) throw new UsageError(`usage: blockx ${name} TASK_ID --worker HOST:PORT (the Worker printed by submit)`);
  return { taskId, workerAddr };
}

export const watchRun: ClientCommandRun = async (args, client) => {
  const ref = taskRef(args, "watch");
  const handlers = progressHandlers(args);
  const result = await client.watch(ref, { onProgress: handlers.onProgress }).finally(() => handlers.display.finish());
  const state = stateName(result.snapshot?.state);
  return printResult(args, { result, attempts: 1, workers: [ref.workerAddr], cluster: "block", state });
};

export const resultRun: ClientCommandRun = async (args, client) => {
  const result = await client.result(taskRef(args, "result"));
  console.log(args.flags.has("json") ? JSON.stringify(resultJson(result)) : resultText(result));
  return exitCodeOfState(stateName(result.snapshot?.state));
};

export const cancelRun: ClientCommandRun = async (args, client) => {
  const snapshot = await client.cancel(taskRef(args, "cancel"), flagValue(args, "reason") ?? "cancelled from the CLI");
  const state = stateName(snapshot.state);
  console.log(args.flags.has("json") ? JSON.stringify({ taskId: snapshot.taskId, state }) : `task ${snapshot.taskId}: ${state}`);
  return EXIT.OK;
};
