import { stateName } from "../../sdk/blockx-client";
import type { BlockxClient, TaskRef } from "../../sdk/blockx-client";
import type { TaskLogLine } from "../../gen/worker/v1/worker";
import { UsageError } from "../usage-error";
import { flagValue, intFlag, type ParsedArgs } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { onInterrupt, progressHandlers } from "./progress-handlers";
import { printResult } from "./result-format";

/**
 * taskRef: the task and its Worker. Without --worker the registered Workers are asked (the answer
 * goes to stderr, so stdout keeps only the command's output); NOT_FOUND says none has the task.
 */
async function taskRef(args: ParsedArgs, name: string, client: BlockxClient): Promise<TaskRef> {
  const taskId = args.positional[0]!; // exactly one: taskRefMeta's positionals
  if (!taskId) throw new UsageError(`usage: blockx ${name} TASK_ID [--worker HOST:PORT]`);
  const workerAddr = flagValue(args, "worker");
  if (workerAddr !== undefined) return { taskId, workerAddr };
  const ref = await client.locate(taskId);
  console.error(`task ${taskId} is on Worker ${ref.workerAddr}`);
  return ref;
}

export const watchRun: ClientCommandRun = async (args, client) => {
  const ref = await taskRef(args, "watch", client);
  const handlers = progressHandlers(ref);
  const removeInterrupt = onInterrupt(handlers);
  const result = await client.watch(ref, { onProgress: handlers.onProgress }).finally(() => {
    removeInterrupt();
    handlers.display.finish();
  });
  return printResult(args.flags.has("json"), result);
};

export const resultRun: ClientCommandRun = async (args, client) => {
  return printResult(args.flags.has("json"), await client.result(await taskRef(args, "result", client)));
};

export const cancelRun: ClientCommandRun = async (args, client) => {
  const snapshot = await client.cancel(await taskRef(args, "cancel", client), flagValue(args, "reason") ?? "cancelled from the CLI");
  const state = stateName(snapshot.state);
  console.log(args.flags.has("json") ? JSON.stringify({ taskId: snapshot.taskId, state }) : `task ${snapshot.taskId}: ${state}`);
  return EXIT.OK;
};

/** Lines of `--tail` at most (the Worker's bound). */
const MAX_TAIL = 100_000;

export const logsRun: ClientCommandRun = async (args, client) => {
  const ref = await taskRef(args, "logs", client);
  const tail = intFlag(args, "tail", 1) ?? 0;
  if (tail > MAX_TAIL) throw new UsageError(`--tail: at most ${MAX_TAIL}, got ${tail}`);
  const json = args.flags.has("json");
  await client.streamLogs(ref, { tail, follow: args.flags.has("follow") }, (l) => console.log(json ? JSON.stringify(logLineJson(l)) : formatLogLine(l)));
  return EXIT.OK;
};

/** formatLogLine: `2026-12-02T02:45:01.123Z block 1234 [warning] text`; a gap in the lines is said first. */
export function formatLogLine(l: TaskLogLine): string {
  const gap = l.droppedBefore > 0 ? `... ${l.droppedBefore} earlier line${l.droppedBefore === 1 ? "" : "s"} dropped (over the Worker's TASK_LOG_MAX_BYTES)\n` : "";
  const tag = l.stream === "log" ? `[${l.level}]` : l.stream === "stderr" ? "[stderr]" : "";
  const attempt = l.attempt > 1 ? ` (attempt ${l.attempt})` : "";
  return `${gap}${new Date(l.timeMs).toISOString()} ${l.input}${attempt} ${tag ? `${tag} ` : ""}${l.text}`;
}

function logLineJson(l: TaskLogLine) {
  return { seq: l.seq, timeMs: l.timeMs, callIndex: l.callIndex, attempt: l.attempt, input: l.input, stream: l.stream, level: l.level, text: l.text, droppedBefore: l.droppedBefore };
}
