import type { TaskRef } from "../../sdk/blockx-client";
import type { Cluster } from "../../sdk/core/cluster-selection";
import { UsageError } from "../exec-command";
import type { BlockxClient, RunResult } from "../../sdk/blockx-client";
import { flagValue, intFlag, type ParsedArgs } from "./args";
import type { ClientCommandRun } from "./client-command";
import { exitCodeOfState, EXIT } from "./exit-codes";
import { ProgressDisplay } from "./progress-display";
import { resultJson, resultText } from "./result-format";
import { taskFromArgs } from "./task-from-args";

function clusterFlag(args: ParsedArgs): Cluster | undefined {
  const c = flagValue(args, "cluster");
  if (c === undefined) return undefined;
  if (c !== "block" && c !== "bundle") throw new UsageError(`--cluster: expected block or bundle, got ${JSON.stringify(c)}`);
  return c;
}

/** followWithDisplay runs or watches a task with a progress display on stderr. */
export function progressHandlers(args: ParsedArgs) {
  const display = new ProgressDisplay(process.stderr);
  let attempt = 1;
  return {
    display,
    onProgress: (progress: Parameters<ProgressDisplay["update"]>[0]["progress"], snapshot: { state: number }) => {
      const names = ["UNSPECIFIED", "ALLOCATED", "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"];
      display.update({ progress, state: names[snapshot.state] ?? "UNKNOWN", attempt });
    },
    onEvent: (e: { kind: string; attempt?: number; workerAddr?: string; reason?: string; resubmit?: boolean }) => {
      if (e.kind === "submitted") {
        attempt = e.attempt ?? attempt;
        if (!args.flags.has("json") && attempt === 1) process.stderr.write(`submitted to ${e.workerAddr}\n`);
      }
      if (e.kind === "workerLost") {
        display.finish();
        process.stderr.write(`worker ${e.workerAddr} lost (${e.reason})${e.resubmit ? "; resubmitting" : ""}\n`);
      }
    },
  };
}

export function printResult(args: ParsedArgs, run: Pick<RunResult, "result" | "attempts" | "workers" | "cluster" | "state">): number {
  console.log(args.flags.has("json") ? JSON.stringify(resultJson(run.result, run)) : resultText(run.result, run));
  return exitCodeOfState(run.state);
}

async function submit(args: ParsedArgs, client: BlockxClient): Promise<number> {
  if (args.positional.length > 1) throw new UsageError(`expected at most one task file, got ${args.positional.join(" ")}`);
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
  const handlers = progressHandlers(args);
  const run = await client.runTask(task, { cluster, timeoutMs, resubmit, onProgress: handlers.onProgress, onEvent: handlers.onEvent }).finally(() => handlers.display.finish());
  return printResult(args, run);
}

export const submitRun: ClientCommandRun = (args, client) => submit(args, client);
